"""customobj/objectives/_lambdarank_fused.py: the fused NDCG pair pass of m LambdaRank labels (issue 41).

Each label's gradients, hessians and GRAD_LOSS cost from the fused pass equal those of its own single-label
call bit for bit (random data with tied scores, queries of one row, queries without a relevant row, queries
whose exp table underflows, truncation, cutoffs, ``norm``, weights, both conventions; MQ2008 Fold 1); labels
whose options differ fall back to the per-label walk with the same bits; one thread or two give the same
bits; the driver's gate (the fused pass for GRAD only, on queries of at least ``FUSED_MIN_ROWS`` rows:
benchmarks/fused_gate.py) gives the same bits as the pass on every query."""
import numpy as np
import pytest

from _objective_cases import random_queries
from customobj import LambdaRank, MultiObjective
from customobj.objectives import _lambdarank_fused as FU, _lambdarank_kernels as LK


def _own_calls(objs, preps, s, with_loss):
    """Each label's single-label pass: (grads, hess, losses)."""
    n = s.size
    grads, hess, losses = np.zeros((len(objs), n)), np.zeros((len(objs), n)), np.zeros(len(objs))
    for k, (o, p) in enumerate(zip(objs, preps)):
        if with_loss:
            losses[k] = o._grad_hess_loss(s, p, None, grads[k], hess[k])
        else:
            o._grad_hess(s, p, None, grads[k], hess[k])
    return grads, hess, losses


def _check(objs, labels, sizes, s, weights, with_loss, fused):
    preps = [o.prepare(y, group=sizes, weight=w) for o, y, w in zip(objs, labels, weights)]
    L = LK.label_inputs(tuple(o.pass_inputs(s, p) for o, p in zip(objs, preps)))
    assert L.fused == fused
    assert (L.fused_min_rows, L.fused_loss) == (FU.FUSED_MIN_ROWS, FU.FUSED_LOSS)  # the driver's gate
    n = s.size
    g, h, ell = _own_calls(objs, preps, s, with_loss)
    # the gate as the driver runs it, and the fused pass on every query in both modes (the same bits)
    for stacked in (L, L._replace(fused_min_rows=0, fused_loss=True)):
        grads, hess = np.zeros((len(objs), n)), np.zeros((len(objs), n))
        losses, status = LK.lambdarank_stacked_labels(stacked, with_loss, grads, hess)
        assert status == 0
        np.testing.assert_array_equal(grads, g)
        np.testing.assert_array_equal(hess, h)
        np.testing.assert_array_equal(losses, ell)
    assert np.abs(g).sum() > 0 and (not with_loss or np.all(ell > 0))


def _random(seed, m, n_queries=25, max_size=30):
    rng = np.random.default_rng(seed)
    sizes = random_queries(rng, n_queries=n_queries, max_size=max_size)[2]
    sizes[:2] = 1  # single-row queries
    sizes[2] = max(sizes[2], 3)
    n = int(np.sum(sizes))
    s = rng.integers(0, 4, n) * 0.5 + np.where(rng.random(n) < 0.5, 0.0, rng.normal(size=n))  # ties
    s[sizes[0] + sizes[1]:sizes[0] + sizes[1] + sizes[2]] *= 800.0  # a query whose exp table underflows
    labels = [rng.integers(0, 5, n).astype(float) for _ in range(m)]
    labels[0][2:2 + sizes[2]] = 0.0  # no relevant row in query 2 for label 0: qnorm 0
    return s, labels, sizes, rng.uniform(0.5, 2.0, n), rng


def _per_query(w, sizes):
    """XGBoost's convention takes one weight a query: each query's first row's."""
    return np.repeat(w[np.concatenate([[0], np.cumsum(sizes)[:-1]])], sizes)


# Settings every label shares (fusable), with one gain table per label where the option allows it.
SHARED = [{}, {"k": 3}, {"truncation": 5}, {"k": 4, "truncation": 2}, {"norm": True}, {"norm": True, "k": 5},
          {"sigma": 2.5}, {"convention": "xgboost"}]


@pytest.mark.parametrize("with_loss", [False, True])
@pytest.mark.parametrize("kw", SHARED)
@pytest.mark.parametrize("m", [2, 4])
def test_fused_labels_are_each_labels_own_pass_bit_for_bit(m, kw, with_loss):
    s, labels, sizes, w, rng = _random(31 + m, m)
    objs = [LambdaRank(**kw) for _ in range(m)]
    if kw.get("convention") == "xgboost":
        w = _per_query(w, sizes)
    if m == 4:  # a gain table of its own: the gains are per label
        objs[3] = LambdaRank(gain=[0.0, 1.0, 2.0, 5.0, 9.0], **kw)
    other = _per_query(rng.uniform(0.1, 3.0, s.size), sizes)
    weights = [w] * m if m == 2 else [w, None, other, w]  # per-label weights too
    _check(objs, labels, sizes, s, weights, with_loss, True)


def test_fused_labels_of_like_lightgbm_and_like_xgboost():
    s, labels, sizes, w, _ = _random(5, 3)
    for make in (LambdaRank.like_lightgbm, LambdaRank.like_xgboost):
        for with_loss in (False, True):
            _check([make() for _ in range(3)], labels, sizes, s, [_per_query(w, sizes)] * 3, with_loss, True)


def test_labels_of_two_conventions_share_the_pass():
    """Without a cutoff the conventions' discounts agree; their hessian scales are per label."""
    s, labels, sizes, w, _ = _random(9, 2)
    objs = [LambdaRank(), LambdaRank(convention="xgboost")]
    _check(objs, labels, sizes, s, [_per_query(w, sizes)] * 2, True, True)


# One label's options differ from the others': the labels are walked one by one (the stop-49 driver).
DIFFER = [({}, {"sigma": 2.0}), ({}, {"metric": "err"}), ({}, {"metric": "map"}), ({}, {"metric": "mrr"}),
          ({}, {"k": 3}), ({}, {"truncation": 4}), ({}, {"norm": True}),
          ({"k": 5}, {"k": 5, "convention": "xgboost"})]  # the same k, another discount row


@pytest.mark.parametrize("base, kw", DIFFER)
def test_labels_with_different_options_fall_back_with_the_same_bits(base, kw):
    s, labels, sizes, w, _ = _random(7, 3)
    w = _per_query(w, sizes)
    objs = [LambdaRank(**base), LambdaRank(**base), LambdaRank(**kw)]
    for with_loss in (False, True):
        _check(objs, labels, sizes, s, [w, None, w], with_loss, False)


def test_fusable_reads_every_shared_option():
    ones, two = np.ones(2, np.int64), np.array([0, 0])
    disc = np.ones((2, 4))
    assert FU.fusable(two, ones, ones, np.ones(2), np.zeros(2, bool), disc)
    assert not FU.fusable(two[:1], ones[:1], ones[:1], np.ones(1), np.zeros(1, bool), disc[:1])  # one label
    assert not FU.fusable(np.array([0, 1]), ones, ones, np.ones(2), np.zeros(2, bool), disc)
    assert not FU.fusable(two, np.array([1, 2]), ones, np.ones(2), np.zeros(2, bool), disc)
    assert not FU.fusable(two, ones, np.array([1, 2]), np.ones(2), np.zeros(2, bool), disc)
    assert not FU.fusable(two, ones, ones, np.array([1.0, 2.0]), np.zeros(2, bool), disc)
    assert not FU.fusable(two, ones, ones, np.ones(2), np.array([True, False]), disc)
    disc[1, 3] = 0.5
    assert not FU.fusable(two, ones, ones, np.ones(2), np.zeros(2, bool), disc)


def test_fused_query_leaves_an_underflowing_query_to_the_caller():
    """fused_query returns False, writing nothing, where the exp table underflows; True and the labels' sums
    otherwise (the driver's other tests hold the bits)."""
    rng = np.random.default_rng(3)
    n = 12
    objs = [LambdaRank(), LambdaRank()]
    labels = [rng.integers(0, 3, n).astype(float) for _ in objs]
    labels[0][0] = labels[1][0] = 4.0
    for scale, done in ((1.0, True), (900.0, False)):
        s = rng.normal(size=n) * scale
        preps = [o.prepare(y, group=[n]) for o, y in zip(objs, labels)]
        L = LK.label_inputs(tuple(o.pass_inputs(s, p) for o, p in zip(objs, preps)))
        order = np.argsort(-s, kind="mergesort")
        Xl, X = FU.scratch(2, n)
        grads, hess, per_query = np.zeros((2, n)), np.zeros((2, n)), np.zeros((2, 1))
        assert FU.fused_query(True, L, 0, n, order, Xl, X, np.empty((2, 2)), grads, hess, per_query) == done
        assert (np.abs(grads).sum() > 0 and np.all(per_query > 0)) == done
        assert done or not (grads.any() or hess.any() or per_query.any())


@pytest.mark.parametrize("with_loss", [False, True])
def test_fused_labels_on_mq2008_are_each_labels_own_pass(mq2008_fold1, with_loss):
    """MQ2008 Fold 1's training queries (9,630 rows), its relevance and three labels graded from features
    (PageRank, a BM25, a URL length: quantiles per query), LambdaRank's defaults and LightGBM's."""
    X, y, group = mq2008_fold1["train"]
    rng = np.random.default_rng(0)
    s = X[:, 0] * 0.7 - X[:, 10] + 0.01 * rng.normal(size=y.size)
    ptr = np.concatenate([[0], np.cumsum(group)])

    def graded(col):
        out = np.zeros(y.size)
        for a, b in zip(ptr[:-1], ptr[1:]):
            out[a:b] = np.searchsorted(np.quantile(X[a:b, col], [0.5, 0.8]), X[a:b, col], side="right")
        return out

    labels = [y, graded(40), graded(24), graded(44)]
    for make in (LambdaRank, LambdaRank.like_lightgbm):
        for m in (2, 4):
            _check([make() for _ in range(m)], labels[:m], group, s, [None] * m, with_loss, True)


@pytest.mark.parametrize("method, kw", [("linear", {}), ("epsilon_constraint", {"bounds": [2.0]}), ("epo", {})])
def test_multiobjective_rounds_through_the_fused_pass(method, kw, monkeypatch):
    """MultiObjective with two LambdaRank labels of one setting: the combined gradients, hessians, weights and
    costs of three rounds equal those of per-label calls (a LambdaRank subclass takes those). The gate opened
    (every query fused, in both modes): these queries are below FUSED_MIN_ROWS."""
    monkeypatch.setattr(FU, "FUSED_MIN_ROWS", 0)
    monkeypatch.setattr(FU, "FUSED_LOSS", True)
    class OwnCalls(LambdaRank):
        pass

    s, labels, sizes, w, _ = _random(11, 2, n_queries=12, max_size=15)
    fused = MultiObjective([LambdaRank(norm=True), LambdaRank(norm=True)], labels=[None, labels[1]], method=method,
                           **kw)
    own = MultiObjective([OwnCalls(norm=True), OwnCalls(norm=True)], labels=[None, labels[1]], method=method, **kw)
    for t in range(3):
        for a, b in zip(fused.grad_hess(s + 0.1 * t, labels[0], sizes, weight=w),
                        own.grad_hess(s + 0.1 * t, labels[0], sizes, weight=w)):
            np.testing.assert_array_equal(a, b)
    fa, fb = fused.fitted_attributes(), own.fitted_attributes()
    for key in fa:
        np.testing.assert_array_equal(fa[key], fb[key])


def test_fused_labels_are_the_same_on_one_thread_and_two(two_threads):
    """Several work items (``query_chunks``), each with its own scratch: the same bits for any thread count."""
    import numba

    rng = np.random.default_rng(19)
    sizes = rng.integers(2, 60, size=300)
    n = int(sizes.sum())
    s = rng.normal(size=n)
    labels = [rng.integers(0, 4, n).astype(float) for _ in range(2)]
    objs = [LambdaRank(truncation=5, norm=True) for _ in labels]
    preps = [o.prepare(y, group=sizes) for o, y in zip(objs, labels)]
    L = LK.label_inputs(tuple(o.pass_inputs(s, p) for o, p in zip(objs, preps)))._replace(fused_min_rows=0)
    assert L.fused and LK.query_chunks(L.ptr, 5, LK.CHUNK_ROWS).size > 3
    saved = numba.get_num_threads()
    runs = []
    try:
        for t in (1, two_threads):
            numba.set_num_threads(t)
            grads, hess = np.zeros((2, n)), np.zeros((2, n))
            losses, _ = LK.lambdarank_stacked_labels(L, True, grads, hess)
            runs.append((grads, hess, losses))
    finally:
        numba.set_num_threads(saved)
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)
