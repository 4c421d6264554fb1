"""customobj/multi/_epo_terms.py: EPO's compiled round terms against the numpy reference
(customobj.multi.solvers.epo_adjustments and the scaled Gram matrix), on random rounds and degenerate ones (a zero
Gram matrix, parallel and opposite gradients, zero and negative costs, every cost zero)."""
import numpy as np
import pytest

from customobj.multi._epo_terms import epo_terms
from customobj.multi.solvers import TINY, epo_adjustments


def _reference(costs, gram, pref):
    top = float(np.max(np.diag(gram)))
    c = gram / top if top > 0 else np.zeros_like(gram)
    rl, mu, a = epo_adjustments(costs, pref)
    return c, rl, mu, a, c @ a


def _cases():
    rng = np.random.default_rng(0)
    for m in (2, 3, 4, 7):
        g = rng.normal(size=(m, 50))
        yield f"random m={m}", rng.uniform(0.1, 3.0, m), g @ g.T, rng.dirichlet(np.ones(m))
    g = rng.normal(size=50)
    yield "parallel", np.array([1.0, 2.0]), np.outer([1.0, 3.0], [1.0, 3.0]) * (g @ g), np.array([0.3, 0.7])
    yield "opposite", np.array([1.0, 0.5]), np.array([[1.0, -1.0], [-1.0, 1.0]]), np.array([0.5, 0.5])
    yield "zero gram", np.array([1.0, 0.5, 2.0]), np.zeros((3, 3)), np.full(3, 1 / 3)
    yield "a zero cost", np.array([0.0, 1.5]), np.eye(2), np.array([0.5, 0.5])
    yield "a negative cost", np.array([-1.0, 1.5]), np.eye(2), np.array([0.5, 0.5])
    yield "every cost zero", np.zeros(2), np.eye(2), np.array([0.5, 0.5])


@pytest.mark.parametrize("name, costs, gram, pref", list(_cases()), ids=[c[0] for c in _cases()])
def test_the_compiled_terms_are_the_references(name, costs, gram, pref):
    got = epo_terms(costs, gram, pref, TINY)
    want = _reference(costs, gram, pref)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-14, err_msg=name)
    assert all(np.all(np.isfinite(v)) for v in got), name
