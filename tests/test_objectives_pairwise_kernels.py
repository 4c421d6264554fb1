"""customobj.objectives._pairwise_kernels: the label-pair walk, the pair-weight arithmetic and
MPBoost's exponential clip, at the kernel level (the objectives built on them:
test_objectives_pairwise.py)."""
import math

import numpy as np
import pytest

from customobj import label_pairs
from customobj._kernel_status import KernelStatus
from customobj.objectives import MPBoost, RankNet
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
    assert PK.label_pair_list_kernel(y, ptr, order, lower, int(PK.Theta.DIFF), 0.0, pi, pj, th) == (m, KernelStatus.OK)
    ri, rj, rd = label_pairs(y, sizes)
    assert sorted(zip(pi.tolist(), pj.tolist())) == sorted(zip(ri.tolist(), rj.tolist()))
    np.testing.assert_array_equal(th, y[pi] - y[pj])


@pytest.mark.parametrize("kind", list(PK.PairKind))
def test_pair_weight_is_halved_before_adding(kind):
    """(w_i + w_j) / 2 overflowed for two weights of 1.7e308; w_i/2 + w_j/2 does not (and is the same
    number whenever the sum fits: halving is exact)."""
    order = np.empty(N, np.int64)
    lower = np.empty(N, np.int64)
    PK.label_order_kernel(LABELS, PTR, order, lower)
    s = np.linspace(-1, 1, N)
    for w, must_match in ((np.full(N, 1.7e308), False), (np.linspace(0.5, 3.0, N), True)):
        g, h = np.zeros(N), np.zeros(N)
        spec = PK.pair_spec(kind, PK.Theta.CONST, 1.0, 1e-300)
        assert PK.label_pairs_grad_hess_parallel(s, LABELS, PTR, order, lower, w, True, spec, g, h) == KernelStatus.OK
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


# --- unknown dispatch codes: refused in Python, signalled (never computed as another case) by the kernels
def _label_pair_arrays():
    order = np.empty(N, np.int64)
    lower = np.empty(N, np.int64)
    PK.label_order_kernel(LABELS, PTR, order, lower)
    return order, lower


def test_pair_spec_refuses_unknown_codes():
    with pytest.raises(ValueError, match="kind must be a PairKind code"):
        PK.pair_spec(3, PK.Theta.CONST, 1.0, 1.0)
    with pytest.raises(ValueError, match="theta_mode must be a Theta code"):
        PK.pair_spec(PK.PairKind.LOGISTIC, 5, 1.0, 1.0)
    with pytest.raises(TypeError, match="kind"):
        PK.pair_spec(True, PK.Theta.CONST, 1.0, 1.0)
    spec = PK.pair_spec(PK.PairKind.EXPONENTIAL, PK.Theta.LOGITDD, 2.0, 0.5, 2.0)
    assert spec == (2, 4, 2.0, 0.5, 2.0) and all(type(c) is int for c in spec[:2])


@pytest.mark.parametrize("kind, theta_mode", [(3, 0), (-1, 0), (0, 5), (2, -1)])
def test_every_driver_signals_an_unknown_code_and_writes_nothing(kind, theta_mode):
    """Before: an unknown kind ran the exponential loss, an unknown theta_mode MPBoost's logitdd."""
    order, lower = _label_pair_arrays()
    s = np.linspace(-1, 1, N)
    spec = PK.PairSpec(kind, theta_mode, 1.0, 1.0, 1.0)  # built past pair_spec, as a buggy caller would
    pi, pj, th = np.array([0, 3]), np.array([1, 2]), np.ones(2)
    g, h, c = np.zeros(N), np.zeros(N), np.full(2, -7.0)
    bad = KernelStatus.UNKNOWN_CODE
    assert PK.label_pairs_grad_hess_parallel(s, LABELS, PTR, order, lower, s, False, spec, g, h) == bad
    assert PK.label_pairs_loss(s, LABELS, PTR, order, lower, s, False, spec) == (0.0, bad)
    assert PK.pair_list_grad_hess(s, pi, pj, th, th, False, s, False, spec, g, h) == bad
    assert PK.pair_list_loss(s, pi, pj, th, th, False, s, False, spec) == (0.0, bad)
    assert PK.pair_list_couplings(s, pi, pj, th, th, False, s, False, spec, c) == bad
    assert not g.any() and not h.any() and np.all(c == -7.0)
    if theta_mode not in list(PK.Theta):
        out = np.zeros(200, np.int64), np.zeros(200, np.int64), np.zeros(200)
        assert PK.label_pair_list_kernel(LABELS, PTR, order, lower, theta_mode, 1.0, *out) == (0, bad)


def test_pair_helpers_return_nan_for_an_unknown_code():
    assert all(math.isnan(v) for v in PK.pair_terms(3, 0.5, 1.0))
    assert all(math.isnan(v) for v in PK.pair_grad(3, 0.5, 1.0))
    assert math.isnan(PK.pair_theta(5, 2.0, 1.0, 1.0))
    assert PK.pair_grad(int(PK.PairKind.EXPONENTIAL), 0.5, 1.0) == pytest.approx((-math.exp(-0.5), math.exp(-0.5)))


def test_an_objective_raises_when_its_kernel_signals(monkeypatch):
    obj = RankNet()
    monkeypatch.setattr(obj, "pair_spec", lambda: PK.PairSpec(9, 0, 1.0, 1.0, 1.0))
    s, y = np.linspace(-1, 1, N), LABELS
    for call in (obj.grad_hess, obj.loss):
        with pytest.raises(ValueError, match="RankNet: the kernel met a dispatch code it does not know"):
            call(s, y, SIZES)


def test_pair_list_query_losses_are_the_pair_list_loss_query_by_query():
    """``pair_list_query_losses``: each query's entry the pair-list loss of that query's pairs alone (the same
    terms in list order), the total those entries added in query order; the bad-code status as the others'."""
    rng = np.random.default_rng(5)
    s = rng.normal(size=N)
    pi, pj = (a.astype(np.int64) for a in label_pairs(LABELS, SIZES)[:2])
    theta, pw, w = rng.uniform(0.5, 2.0, pi.size), rng.uniform(0.0, 3.0, pi.size), rng.uniform(0.5, 2.0, N)
    query = np.searchsorted(PTR, pi, side="right") - 1
    assert (np.diff(query) >= 0).all()  # label_pairs lists them query by query
    offsets = np.concatenate([[0], np.cumsum(np.bincount(query, minlength=len(SIZES)))]).astype(np.int64)
    spec = PK.pair_spec(PK.PairKind.LOGISTIC, PK.Theta.CONST, 0.0, 1.5)
    out = np.full(len(SIZES), np.nan)
    total, status = PK.pair_list_query_losses(s, pi, pj, theta, pw, True, w, True, spec, offsets, out)
    assert status == KernelStatus.OK
    for q in range(len(SIZES)):
        k = slice(offsets[q], offsets[q + 1])
        assert out[q] == PK.pair_list_loss(s, pi[k], pj[k], theta[k], pw[k], True, w, True, spec)[0]
    acc = 0.0
    for v in out:
        acc += v
    assert total == acc and total == pytest.approx(PK.pair_list_loss(s, pi, pj, theta, pw, True, w, True, spec)[0])
    bad = PK.PairSpec(99, 0, 0.0, 1.0, 1.0)
    assert PK.pair_list_query_losses(s, pi, pj, theta, pw, True, w, True, bad, offsets, out)[1] == \
        KernelStatus.UNKNOWN_CODE
