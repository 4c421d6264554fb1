"""customobj.multi.highs_lp: EPO's LP on one HiGHS model kept across rounds gives scipy's HiGHS weights."""
import threading

import numpy as np
import pytest

pytest.importorskip("highspy")

from customobj.multi.highs_lp import SimplexLP, model_for  # noqa: E402
from customobj.multi.solvers import epo_lp, simplex_lp_highs, solve_simplex_lp  # noqa: E402

from test_multi_solvers import KINDS, gradients  # noqa: E402


def epo_rounds(m, rng, count):
    """EPO's LPs (its rows and its relaxed rows) on random and degenerate gradients (test_multi_solvers'
    kinds, and all labels' gradients identical), balance and descent."""
    for trial in range(count):
        kind = (KINDS + ["identical"])[trial % (len(KINDS) + 1)]
        g = gradients(kind, m, rng)
        if kind == "identical":
            g[1:] = g[0]
        pref = rng.uniform(0.2, 1, m)
        pref /= pref.sum()
        costs = rng.uniform(0.5, 2, m) if trial % 2 == 0 else (1.3 / pref) * (1 + rng.normal(scale=1e-3, size=m))
        lp = epo_lp(costs, g @ g.T, pref)
        yield lp, (lp.lhs, lp.rhs)
        yield lp, lp.relaxed


@pytest.mark.parametrize("m", [3, 4, 6])
def test_kept_model_gives_scipys_highs_weights(m):
    """The same weights as scipy's HiGHS (milp, a fresh model per call) on every round whose optimum is
    a point (parallel, opposite and zero gradients included), and the same infeasible rounds; where every
    point is optimal (identical gradients: a flat objective, any weights give the same gradient) a
    feasible point as good as scipy's. Both modes are met."""
    rng = np.random.default_rng(70 + m)
    lp_model = SimplexLP(m)
    modes, solved = set(), 0
    for lp, (lhs, rhs) in epo_rounds(m, rng, 60):
        ours, scipys = lp_model.solve(lp.objective, lhs, rhs), simplex_lp_highs(lp.objective, lhs, rhs)
        assert (ours is None) == (scipys is None)
        if ours is None:
            continue
        assert ours.min() >= 0 and ours.sum() == pytest.approx(1.0, abs=1e-14)
        if np.ptp(lp.objective) > 1e-9:
            solved += 1
            modes.add(lp.balance)
            np.testing.assert_allclose(ours, scipys, rtol=0, atol=1e-12)
        else:
            assert np.all(lhs @ ours >= rhs - 1e-7) and lp.objective @ ours >= lp.objective @ scipys - 1e-12
    assert modes == {True, False} and solved >= 60


def test_weights_do_not_depend_on_earlier_rounds():
    """The basis is cleared before every solve: an LP gives the same weights (to 1e-15: the rows' storage
    after ``deleteRows`` may round differently) first, after other LPs (rows more, fewer, none) and again."""
    rng = np.random.default_rng(5)
    rounds = [(lp.objective, lhs, rhs) for lp, (lhs, rhs) in epo_rounds(4, rng, 20)]
    fresh = [SimplexLP(4).solve(*r) for r in rounds]
    kept = SimplexLP(4)
    for order in (range(len(rounds)), reversed(range(len(rounds)))):
        for i in order:
            x = kept.solve(*rounds[i])
            assert (x is None) == (fresh[i] is None)
            if x is not None:
                np.testing.assert_allclose(x, fresh[i], rtol=0, atol=1e-15)
    assert kept.solve(np.array([3.0, 1.0, 2.0, 0.0]), np.zeros((0, 4)), np.zeros(0)).tolist() == [1.0, 0, 0, 0]


def test_infeasible_and_bad_shapes():
    lp = SimplexLP(3)
    assert lp.solve(np.ones(3), np.ones((1, 3)), np.array([1.5])) is None  # sum x >= 1.5 on the simplex
    x = lp.solve(np.array([0.0, 0.0, 1.0]), -np.eye(3)[2:], np.array([-0.2]))  # x3 <= 0.2
    np.testing.assert_allclose(x[2], 0.2, atol=1e-12)
    with pytest.raises(ValueError, match="objective"):
        lp.solve(np.ones(4), np.zeros((0, 4)), np.zeros(0))
    with pytest.raises(ValueError, match="rhs"):
        lp.solve(np.ones(3), np.ones((2, 3)), np.zeros(1))
    with pytest.raises(ValueError, match="m must"):
        SimplexLP(0)


def test_one_model_per_thread_and_m():
    assert model_for(3) is model_for(3) and model_for(3) is not model_for(4)
    other = []
    t = threading.Thread(target=lambda: other.append(model_for(3)))
    t.start()
    t.join()
    assert other[0] is not model_for(3)


def test_solve_simplex_lp_takes_the_kept_model_for_three_weights(monkeypatch):
    import customobj.multi.highs_lp as H
    import customobj.multi.solvers as S

    calls = []
    real = H.model_for
    monkeypatch.setattr(H, "model_for", lambda m: calls.append(m) or real(m))
    monkeypatch.setattr(S, "simplex_lp_highs", lambda *a: pytest.fail("scipy called"))
    assert solve_simplex_lp(np.array([0.0, 1.0, 0.0]), np.eye(3)[:1], np.zeros(1)).tolist() == [0.0, 1.0, 0.0]
    assert calls == [3]


def test_without_highspy_scipy_solves(monkeypatch):
    import customobj.multi.highs_lp as H

    def missing(m):
        raise ImportError("no highspy")

    monkeypatch.setattr(H, "model_for", missing)
    x = solve_simplex_lp(np.array([0.0, 1.0, 0.0]), np.eye(3)[:1], np.zeros(1))
    assert x.tolist() == [0.0, 1.0, 0.0]


def test_the_first_model_prints_no_banner():
    """HiGHS' first model in a process prints its banner to the C-level stdout; a user's training must not."""
    import subprocess
    import sys

    code = ("from customobj.multi.highs_lp import SimplexLP\n"
            "import numpy as np\n"
            "print('before', flush=True)\n"
            "x = SimplexLP(3).solve(np.array([1.0, 2.0, 0.0]), np.array([[1.0, 0.0, 0.0]]), np.array([0.25]))\n"
            "print('after', round(float(x[0]), 6))\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout == "before\nafter 0.25\n"
