"""customobj.objectives._pairwise_kernels: the label-pair walk, the pair-weight arithmetic and
MPBoost's exponential clip, at the kernel level (the objectives built on them:
test_objectives_pairwise.py)."""
import math

import numpy as np
import pytest

from customobj import label_pairs
from customobj.objectives import MPBoost
from customobj.objectives import _pairwise_kernels as PK

from _objective_cases import LABELS, N, PTR, SIZES


def test_mpboost_clip_continues_the_loss_along_its_tangent():
    obj = MPBoost()
    y, grp = np.array([1.0, 0.0]), [2]
    big = PK.EXP_CLIP + 10.0
    s = np.array([-big, 0.0])  # x = -D d = big > clip
    loss = obj.loss(s, y, grp)
    assert loss == pytest.approx(math.exp(PK.EXP_CLIP) * (1 + big - PK.EXP_CLIP))
    g, h = obj.grad_hess(s, y, grp)
    fd = (obj.loss(s + [1e-3, 0], y, grp) - obj.loss(s - [1e-3, 0], y, grp)) / 2e-3
    assert g[0] == pytest.approx(fd, rel=1e-9) and g[0] == pytest.approx(-math.exp(PK.EXP_CLIP))
    assert h[0] == pytest.approx(math.exp(PK.EXP_CLIP))
    # Below the clip the exact exponential is used.
    assert obj.loss(np.array([-3.0, 0.0]), y, grp) == pytest.approx(math.exp(3.0))


def test_label_order_visits_exactly_the_label_pairs():
    rng = np.random.default_rng(9)
    y = rng.integers(0, 4, 200).astype(float)
    sizes = np.array([0, 1, 17, 50, 2, 0, 80, 50])
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    order, lower = np.empty(200, np.int64), np.empty(200, np.int64)
    PK.label_order_kernel(y, ptr, order, lower)
    m = sum(ptr[np.searchsorted(ptr, a, side="right")] - lower[a] for a in range(200))
    pi, pj, th = np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m)
    assert PK.label_pair_list_kernel(y, ptr, order, lower, PK.THETA_DIFF, 0.0, pi, pj, th) == m
    ri, rj, rd = label_pairs(y, sizes)
    assert sorted(zip(pi.tolist(), pj.tolist())) == sorted(zip(ri.tolist(), rj.tolist()))
    np.testing.assert_array_equal(th, y[pi] - y[pj])


@pytest.mark.parametrize("kind", [PK.LOGISTIC, PK.SQ_HINGE, PK.EXPONENTIAL])
def test_pair_weight_is_halved_before_adding(kind):
    """(w_i + w_j) / 2 overflowed for two weights of 1.7e308; w_i/2 + w_j/2 does not (and is the same
    number whenever the sum fits: halving is exact)."""
    order = np.empty(N, np.int64)
    lower = np.empty(N, np.int64)
    PK.label_order_kernel(LABELS, PTR, order, lower)
    s = np.linspace(-1, 1, N)
    for w, must_match in ((np.full(N, 1.7e308), False), (np.linspace(0.5, 3.0, N), True)):
        g, h = np.zeros(N), np.zeros(N)
        PK.label_pairs_grad_hess(s, LABELS, PTR, order, lower, w, True, kind, PK.THETA_CONST, 1.0, 1e-300, 1.0, g, h)
        assert np.all(np.isfinite(g)) and np.all(np.isfinite(h))
        if must_match:  # a reference with the old arithmetic
            gr, hr = np.zeros(N), np.zeros(N)
            for q in range(SIZES.size):
                for a in range(PTR[q], PTR[q + 1]):
                    for b in range(PTR[q], PTR[q + 1]):
                        if LABELS[a] > LABELS[b]:
                            gg, c = PK.pair_grad(kind, s[a] - s[b], 1.0)
                            pw = 1e-300 * (0.5 * (w[a] + w[b]))
                            gr[a] += pw * gg
                            gr[b] -= pw * gg
                            hr[a] += pw * c
                            hr[b] += pw * c
            np.testing.assert_allclose(g, gr, rtol=1e-12)
            np.testing.assert_allclose(h, hr, rtol=1e-12)
