"""NDCG's grade walk (customobj/objectives/_lambdarank_grades.py): the lists against a brute-force reading of the
gains, the gate (too many gains, too many pairs of different gains), each upper row's walk over its lower rows
of another gain giving the every-pair walk's sums, scatters, couplings and costs bit for bit
(customobj/objectives/_lambdarank_pass.py's ``_ndcg_row``, damped and not), and whole passes on data where the
walk is taken against the slow reference and the labels' driver."""
import numpy as np
import pytest
from numba import njit

from customobj import LambdaRank
from customobj.objectives import _lambdarank_grades as GR
from customobj.objectives import _lambdarank_pass as P
from customobj.objectives._lambdarank_records import MAX_GRADES, Channel, IntChannel, Query, block_scratch_arrays


def _brute(g, share):
    """``(G, lists)`` as the walk reads them, or ``(0, None)`` where the walk over every pair is taken."""
    n = len(g)
    values = list(dict.fromkeys(g.tolist()))  # distinct gains in order of first position
    pairs = n * (n - 1) // 2
    different = sum(1 for a in range(n) for b in range(a + 1, n) if g[a] != g[b])
    if len(values) > MAX_GRADES or different > share * pairs:
        return 0, None
    return len(values), [[r for r in range(n) if g[r] != v] for v in values]


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("share", [0.6, 0.7, 1.0])
def test_the_lists_are_each_grades_other_positions_in_order(seed, share):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    grades = int(rng.integers(1, MAX_GRADES + 3))
    probs = rng.dirichlet(np.full(grades, 0.3))  # skewed: most queries mostly one grade, as LETOR's
    g = np.array([0.0, 1.0, 3.0, 7.0, 15.0, 31.0, 63.0, 127.0, 255.0, 511.0])[rng.choice(grades, n, p=probs)]
    F, I = block_scratch_arrays(n)
    F[Channel.GAIN, :n] = g
    got = GR.grade_lists(n, F, I, share)
    want, lists = _brute(g, share)
    assert got == want
    if not got:
        return
    grade, above = I[IntChannel.GRADE], I[IntChannel.SAME_ABOVE]
    for k, others in enumerate(lists):
        assert I[IntChannel.OTHERS + k, :len(others)].tolist() == others
    for a in range(n):  # a's lower rows of another gain start where its upper ones end
        k = int(grade[a])
        assert g[I[IntChannel.GRADE_FIRST, k]] == g[a]
        upper = sum(1 for r in range(a) if g[r] != g[a])
        assert a - above[a] == upper and int(I[IntChannel.GRADE_COUNT, k]) + len(lists[k]) == n


def test_the_gate():
    F, I = block_scratch_arrays(12)
    assert 0 < GR.WALK_SHARE_FILL <= GR.WALK_SHARE_LOSS <= GR.WALK_SHARE_GRAD <= 1.0
    assert 0 < GR.WALK_SHARE_FUSED < 1.0
    for gains, share, walks in (([2.0] * 12, 0.0, True),  # one gain: no pair to walk, an empty list
                                ([3.0] + [0.0] * 11, 0.2, True),  # 11 of 66 pairs differ
                                ([1.0, 0.0] * 6, 0.5, False),  # 36 of 66: more than the share
                                ([1.0, 0.0] * 6, 0.6, True),
                                (list(range(MAX_GRADES + 1)) + [0.0] * 3, 1.0, False)):  # too many gains
        F[Channel.GAIN, :12] = gains
        assert (GR.grade_lists(12, F, I, share) > 0) == walks, (gains, share)
    assert GR.grade_count(np.array([5.0]), 1, I, 1.0) == 1  # one row: no pair, nothing to walk


@njit
def _rows(walk, damp, inp, q, order, F, I):
    """Every upper row's ``_ndcg_row`` (gradients, couplings and costs at once) by one walk: per row its sums,
    couplings and cost, and the scattered lambdas."""
    n = q.n
    zscale = inp.sigma * (1.0 / 64.0)
    F[Channel.LAMBDA_G, :n] = 0.0
    F[Channel.LAMBDA_H, :n] = 0.0
    sums = np.zeros((n, 4))
    pairs = np.zeros((n, n, 3))
    counts = np.zeros(n, dtype=np.int64)
    for a in range(n - 1):
        k = I[IntChannel.GRADE, a]
        lower = I[IntChannel.OTHERS + k]
        t0, t1 = (a - I[IntChannel.SAME_ABOVE, a], n - I[IntChannel.GRADE_COUNT, k]) if walk else (a + 1, n)
        if walk and damp:
            acc_g, acc_h, lam, m, cost = P._ndcg_row((True, True, True, True, True), a, t0, t1, lower, q, inp.sigma,
                                                     zscale, inp.disc, order, F, I)
        elif walk:
            acc_g, acc_h, lam, m, cost = P._ndcg_row((True, True, True, False, True), a, t0, t1, lower, q, inp.sigma,
                                                     zscale, inp.disc, order, F, I)
        elif damp:
            acc_g, acc_h, lam, m, cost = P._ndcg_row((True, True, True, True, False), a, t0, t1, lower, q, inp.sigma,
                                                     zscale, inp.disc, order, F, I)
        else:
            acc_g, acc_h, lam, m, cost = P._ndcg_row((True, True, True, False, False), a, t0, t1, lower, q, inp.sigma,
                                                     zscale, inp.disc, order, F, I)
        sums[a, 0], sums[a, 1], sums[a, 2], sums[a, 3] = acc_g, acc_h, lam, cost
        counts[a] = m
        for t in range(m):
            pairs[a, t, 0] = I[IntChannel.LOCAL_I, t]
            pairs[a, t, 1] = I[IntChannel.LOCAL_J, t]
            pairs[a, t, 2] = F[Channel.LOCAL_C, t]
    return sums, pairs, counts, F[Channel.LAMBDA_G, :n].copy(), F[Channel.LAMBDA_H, :n].copy()


@pytest.mark.parametrize("damp", [False, True])
@pytest.mark.parametrize("opts", [{}, {"k": 5}, {"sigma": 2.0}], ids=repr)
def test_each_rows_walk_is_the_every_pair_walk_bit_for_bit(damp, opts):
    rng = np.random.default_rng(3)
    n = 30
    y = np.where(rng.random(n) < 0.8, 0.0, rng.integers(1, 4, n)).astype(float)  # mostly 0, as MQ2008
    s = np.round(rng.normal(size=n), 1)  # ties too
    obj = LambdaRank(**opts)
    inp = obj.pass_inputs(s, obj.prepare(y, group=np.array([n]), weight=rng.uniform(0.5, 2.0, n)))
    q = Query(n, float(inp.qnorm[0]), min(inp.k, n), min(inp.k, n, inp.trunc), 0)
    order = np.argsort(-s, kind="mergesort")
    F, I = block_scratch_arrays(n)
    P._sorted_scores(inp, q, order, F)
    assert GR.grade_lists(n, F, I, GR.WALK_SHARE_FILL) > 0
    walked = _rows(True, damp, inp, q, order, F, I)
    every = _rows(False, damp, inp, q, order, F, I)
    for w, e in zip(walked, every):
        np.testing.assert_array_equal(w, e)
    assert walked[2].sum() > 0 and walked[0][:, 3].sum() > 0  # pairs written and costs added


@pytest.mark.parametrize("opts", [{}, {"norm": True, "truncation": 4}, {"k": 3}], ids=repr)
def test_passes_on_mostly_one_grade_match_the_slow_reference(opts):
    from test_objectives_listwise import ref_lambdarank

    rng = np.random.default_rng(5)
    sizes = [25, 2, 40, 7]
    n = sum(sizes)
    y = np.where(rng.random(n) < 0.85, 0.0, rng.integers(1, 3, n)).astype(float)
    s, w = rng.normal(size=n), rng.uniform(0.5, 2.0, n)
    obj = LambdaRank(**opts)
    g, h = obj.grad_hess(s, y, sizes, w)
    rg, rh, rloss, coup = ref_lambdarank(s, y, sizes, truncation=opts.get("truncation"), k=opts.get("k"),
                                         norm=opts.get("norm", False), w=w)
    np.testing.assert_allclose(g, rg, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(h, rh, rtol=1e-10, atol=1e-12)
    i, j, c = obj.pair_couplings(s, y, sizes)
    _, _, _, coup = ref_lambdarank(s, y, sizes, truncation=opts.get("truncation"), k=opts.get("k"),
                                   norm=opts.get("norm", False))
    assert {(int(a), int(b)): v for a, b, v in zip(i, j, c)} == pytest.approx(coup, rel=1e-10)


@pytest.mark.parametrize("with_loss", [False, True])
def test_the_labels_driver_walks_each_label_with_its_own_bits(with_loss):
    from customobj.objectives import _lambdarank_kernels as LK

    rng = np.random.default_rng(7)
    sizes = np.array([60, 45, 3, 80])
    n = int(sizes.sum())
    s = rng.normal(size=n)
    mostly_zero = [np.where(rng.random(n) < 0.85, 0.0, rng.integers(1, 4, n)).astype(float) for _ in range(2)]
    uniform = rng.integers(0, 5, n).astype(float)  # 0.8 of its pairs differ: alone, the fused pass's
    for labels in (mostly_zero, mostly_zero[:1] + [uniform], [uniform, uniform[::-1].copy()]):
        objs = [LambdaRank() for _ in labels]
        inps = tuple(o.pass_inputs(s, o.prepare(y, group=sizes)) for o, y in zip(objs, labels))
        L = LK.label_inputs(inps)._replace(fused_min_rows=0, fused_loss=True)  # the fused pass wherever it may go
        G, H = np.zeros((len(labels), n)), np.zeros((len(labels), n))
        losses, status = LK.lambdarank_stacked_labels(L, with_loss, G, H)
        assert status == 0
        for k, inp in enumerate(inps):
            g, h = np.zeros(n), np.zeros(n)
            if with_loss:
                loss, _ = LK.lambdarank_grad_hess_loss(inp, g, h)
                assert losses[k] == loss
            else:
                LK.lambdarank_grad_hess(inp, g, h)
            np.testing.assert_array_equal(G[k], g)
            np.testing.assert_array_equal(H[k], h)
