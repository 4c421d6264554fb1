"""The LambdaRank drivers (customobj/objectives/_lambdarank_kernels.py): the count pass, the pair
fill, the fused gradient + couplings pass (GRAD_FILL) and the fused gradient + loss pass (GRAD_LOSS)
give the same values as separate calls (GRAD_LOSS's loss within its tabled softplus' stated bound, its
gradients GRAD's bits from the vector terms of customobj/objectives/_lambdarank_loss_rows.py),
keep the pair order, write into caller buffers, and do not depend on the thread count; an unknown
metric code is signalled by every driver (customobj/objectives/_lambdarank_records.py holds the codes)."""
import numba
import numpy as np
import pytest

from _objective_cases import random_queries

from customobj import Groups, LambdaRank, RankNet
from customobj.objectives._lambdarank_terms import SOFTPLUS_TABLE_ERROR


# LambdaRank's options that pick a different pair loop (truncation, k, norm, sigma, metric)
FUSED_OPTIONS = [{}, {"truncation": 3}, {"k": 4, "norm": True}, {"sigma": 2.5, "norm": True, "truncation": 2},
                 {"metric": "err", "truncation": 3}, {"metric": "map", "norm": True}, {"metric": "mrr", "k": 3}]
fused_cases = pytest.mark.parametrize("scale, weighted", [(sc, w) for sc in (1.0, 1e3) for w in (False, True)],
                                      ids=lambda v: repr(v))  # 1e3: exp table underflows, general pair loop


def _separate_and_fused(obj, s, y, sizes, w=None):
    prep = obj.prepare(y, sizes, w)
    g, h = obj.grad_hess_prepared(s, prep)
    i, j, c = obj.pair_couplings_prepared(s, prep)
    fg, fh, (fi, fj, fc) = obj.grad_hess_couplings_prepared(s, prep)
    return (g, h, i, j, c), (fg, fh, fi, fj, fc)


@pytest.mark.parametrize("opts", FUSED_OPTIONS + [{"gain": [0.0, 1.0, 3.0, 7.0, 15.0, 31.0]}], ids=repr)
@fused_cases
def test_fused_grad_hess_couplings_equal_separate_calls(opts, scale, weighted):
    rng = np.random.default_rng(11)
    s, y, sizes = random_queries(rng, n_queries=40, max_size=25, tie_scores=True)
    s = s * scale
    w = rng.uniform(0.5, 1.5, size=len(s)) if weighted else None
    sep, fused = _separate_and_fused(LambdaRank(**opts), s, y, sizes, w)
    for a, b in zip(sep, fused):
        assert a.dtype == b.dtype and np.array_equal(a, b)


@pytest.mark.parametrize("opts", FUSED_OPTIONS + [{"convention": "xgboost"}], ids=repr)
@fused_cases
def test_fused_grad_hess_loss_equals_separate_calls(opts, scale, weighted):
    rng = np.random.default_rng(13)
    s, y, sizes = random_queries(rng, n_queries=40, max_size=25, tie_scores=True)
    s = s * scale
    w = np.repeat(rng.uniform(0.5, 1.5, size=len(sizes)), sizes) if weighted else None  # per query: every convention
    obj = LambdaRank(**opts)
    prep = obj.prepare(y, sizes, w)
    g, h = obj.grad_hess_prepared(s, prep)
    loss = obj.loss_prepared(s, prep)
    fg, fh = np.zeros(len(s)), np.zeros(len(s))
    fused = obj._grad_hess_loss(s, prep, prep.state_for(obj), fg, fh)
    assert np.array_equal(fg, g) and np.array_equal(fh, h)  # the gradients: the same bits
    # the loss: each pair's softplus tabled, within E per unit of its factor w |dZ|; their sum is at most
    # loss(sigma -> 0) / log 2 (softplus(0) = log 2; the norm factor is largest, 1 / ln 2, as sigma -> 0)
    tiny = LambdaRank(**{**opts, "sigma": 1e-9})
    w_dz = tiny.loss_prepared(s, tiny.prepare(y, sizes, w)) / np.log(2.0) * (1 + 1e-6)
    assert loss > 0 and abs(fused - loss) <= SOFTPLUS_TABLE_ERROR * w_dz + 1e-12 * loss
    obj._grad_hess_loss(s, prep, prep.state_for(obj), fg, fh)  # adds into its outputs
    np.testing.assert_allclose(fg, 2 * g, rtol=1e-15, atol=0)


def test_the_default_grad_hess_loss_is_the_two_calls():
    rng = np.random.default_rng(14)
    s, y, sizes = random_queries(rng, n_queries=10, max_size=8)
    obj = RankNet()
    prep = obj.prepare(y, sizes)
    g, h = np.zeros(len(s)), np.zeros(len(s))
    assert obj._grad_hess_loss(s, prep, prep.state_for(obj), g, h) == obj.loss_prepared(s, prep)
    rg, rh = obj.grad_hess_prepared(s, prep)
    assert np.array_equal(g, rg) and np.array_equal(h, rh)


def test_fused_couplings_keep_pair_order_and_add_into_outputs():
    rng = np.random.default_rng(12)
    s, y, sizes = random_queries(rng, n_queries=30, max_size=20)
    obj = LambdaRank(truncation=4)
    prep = obj.prepare(y, sizes)
    out_g, out_h = np.full(len(s), 7.0), np.full(len(s), 7.0)  # zeroed by the call
    g, h, (i, j, c) = obj.grad_hess_couplings_prepared(s, prep, out_g, out_h)
    assert g is out_g and h is out_h
    rg, rh = obj.grad_hess_prepared(s, prep)
    assert np.array_equal(g, rg) and np.array_equal(h, rh)
    # grouped by query, then by the upper row's sorted position
    ptr = Groups.from_sizes(sizes).ptr
    q = np.searchsorted(ptr, i, side="right") - 1
    assert np.all(np.diff(q) >= 0) and np.array_equal(q, np.searchsorted(ptr, j, side="right") - 1)
    for qq in np.unique(q):
        rows = np.arange(ptr[qq], ptr[qq + 1])
        pos = np.empty(len(s), dtype=np.int64)
        pos[rows[np.argsort(-s[rows], kind="mergesort")]] = np.arange(rows.size)
        upper = np.minimum(pos[i[q == qq]], pos[j[q == qq]])
        assert np.all(np.diff(upper) >= 0) and upper.max() < 4
    # the base-class fallback (separate calls) gives the same result
    from customobj.objectives.base import Objective
    fi, fj, fc = Objective._grad_hess_couplings(obj, s, prep, prep.state_for(obj), np.zeros(len(s)), np.zeros(len(s)))
    assert np.array_equal(fi, i) and np.array_equal(fj, j) and np.array_equal(fc, c)


@pytest.mark.parametrize("metric", ["ndcg", "err"])
def test_fused_couplings_written_into_a_pair_buffer(metric):
    # the OLE booster hands LambdaRank a reusable int32 buffer: same pairs, same bits, no allocation
    rng = np.random.default_rng(15)
    s, y, sizes = random_queries(rng, n_queries=30, max_size=20)
    obj = LambdaRank(metric=metric, truncation=6)
    prep = obj.prepare(y, sizes)
    g, h, (i, j, c) = obj.grad_hess_couplings_prepared(s, prep)
    store = (np.full(10_000, -1, np.int32), np.full(10_000, -1, np.int32), np.full(10_000, -1.0))
    asked = []

    def pair_buffer(m):
        asked.append(m)
        return tuple(a[:m] for a in store)

    bg, bh, (bi, bj, bc) = obj.grad_hess_couplings_prepared(s, prep, pair_buffer=pair_buffer)
    assert asked == [i.size] and bi.dtype == np.int32 and np.shares_memory(bc, store[2])
    assert np.array_equal(bg, g) and np.array_equal(bh, h)
    assert np.array_equal(bi, i) and np.array_equal(bj, j) and np.array_equal(bc, c)
    assert np.all(store[2][i.size:] == -1.0)  # nothing written past the pairs
    # objectives that cannot count first ignore the buffer
    other = RankNet()
    _, _, (oi, _, _) = other.grad_hess_couplings_prepared(s, other.prepare(y, sizes), pair_buffer=pair_buffer)
    assert len(asked) == 1 and oi.dtype == np.int64


@pytest.mark.parametrize("m", [0, 1, 2, 3, 1001])
def test_int64_pair_rows_are_written_as_int32_and_widened_in_place(m):
    # the couplings' int64 rows come from the one int32 pass (LK._NO_PAIRS) written into their own memory
    from customobj.objectives import _lambdarank_kernels as LK
    rows_i, rows_j = LK.int64_pair_rows(m, n_rows=10)
    assert rows_i.written.dtype == np.int32 and rows_i.rows.dtype == np.int64 and rows_i.written.size == m
    assert m == 0 or np.shares_memory(rows_i.written, rows_i.rows) and not np.shares_memory(rows_i.rows, rows_j.rows)
    values = np.random.default_rng(m).integers(-2**31, 2**31, size=m).astype(np.int32)
    values[:min(m, 2)] = [2**31 - 1, -2**31][:min(m, 2)]
    rows_i.written[:] = values
    widened = rows_i.widened()
    assert widened is rows_i.rows and np.array_equal(widened, values.astype(np.int64))
    big = LK.int64_pair_rows(m, n_rows=2**31 - 1)[0]  # past int32's range the pass writes int64 itself
    assert big.written is big.rows and big.widened() is big.rows


def test_public_couplings_are_int64_and_equal_the_int32_pass():
    from customobj.objectives import _lambdarank_kernels as LK
    rng = np.random.default_rng(16)
    s, y, sizes = random_queries(rng, n_queries=20, max_size=30)
    obj = LambdaRank(truncation=8)
    prep = obj.prepare(y, sizes)
    store = (np.empty(20_000, np.int32), np.empty(20_000, np.int32), np.empty(20_000))
    _, _, (bi, bj, bc) = obj.grad_hess_couplings_prepared(s, prep, pair_buffer=lambda m: tuple(a[:m] for a in store))
    for i, j, c in (obj.grad_hess_couplings_prepared(s, prep)[2], obj.pair_couplings(s, y, sizes),
                    LK.lambdarank_couplings(obj.pass_inputs(s, prep), True, np.zeros(s.size), np.zeros(s.size))[:3]):
        assert i.dtype == j.dtype == np.int64 and i.flags.c_contiguous and i.size > 100
        assert np.array_equal(i, bi) and np.array_equal(j, bj) and np.array_equal(c, bc)


def test_every_pass_runs_the_one_compiled_block_loop():
    # the gradient, loss and count passes, the public couplings, the OLE booster's int32 buffer and the
    # debiased terms (read-only or writable positions) share one signature of _run_blocks and of the
    # general pair loop: each other one was a compilation of ~25 s on a cold cache (the suite's time)
    from customobj.objectives import _lambdarank_kernels as LK, _lambdarank_pass as P
    rng = np.random.default_rng(17)
    s, y, sizes = random_queries(rng, n_queries=6, max_size=9)
    for obj in (LambdaRank(), LambdaRank(metric="err")):  # NDCG's own pair loops; ERR's general one
        prep = obj.prepare(y, sizes)
        obj.grad_hess_prepared(s, prep)
        blocks = set(LK._run_blocks.signatures)
        assert len(blocks) >= 1
        obj.loss_prepared(s, prep)
        obj.grad_hess_couplings_prepared(s, prep)
        obj.pair_couplings(s, y, sizes)
        store = (np.empty(5000, np.int32), np.empty(5000, np.int32), np.empty(5000))
        obj.grad_hess_couplings_prepared(s, prep, pair_buffer=lambda m: tuple(a[:m] for a in store))
        position, t = np.arange(s.size) % 4, np.ones(4)
        frozen = LK.read_only(position)
        for pos in (position, frozen):
            i, j, _, terms = obj.debiased_pair_terms(s, prep, pos, t, t, False)
            assert i.dtype == j.dtype == np.int64 and not terms.pos.flags.writeable
        assert position.flags.writeable  # the caller's array is left as it was
        assert set(LK._run_blocks.signatures) == blocks
    # the general pair loop's mode and spread as query_grad passes them (compiled callees are listed
    # on a cold cache; a warm one loads _run_blocks whole and lists none)
    assert {(str(sig[0]), str(sig[5])) for sig in P._metric_pairs.signatures} <= {("int64", "bool")}


def test_fused_inside_sum_and_scaled():
    rng = np.random.default_rng(13)
    s, y, sizes = random_queries(rng, n_queries=10, max_size=12)
    obj = 0.5 * LambdaRank(truncation=3) + LambdaRank(metric="err")
    sep, fused = _separate_and_fused(obj, s, y, sizes)
    for a, b in zip(sep, fused):
        assert np.array_equal(a, b)


def test_fused_bit_identical_across_thread_counts(two_threads):
    import numba
    rng = np.random.default_rng(14)
    s, y, sizes = random_queries(rng, n_queries=300, max_size=60)  # several work items (CHUNK_ROWS)
    from customobj.objectives import _lambdarank_kernels as LK
    assert LK.query_chunks(Groups.from_sizes(sizes).ptr, 5, LK.CHUNK_ROWS).size > 3
    obj = LambdaRank(truncation=5, norm=True)
    prep = obj.prepare(y, sizes)
    saved = numba.get_num_threads()
    runs = []
    try:
        for t in (1, two_threads):
            numba.set_num_threads(t)
            g, h, cpl = obj.grad_hess_couplings_prepared(s, prep)
            runs.append((g, h) + tuple(cpl))
    finally:
        numba.set_num_threads(saved)
    for a, b in zip(*runs):
        assert np.array_equal(a, b)


# --- work items -------------------------------------------------------------------------------------
def _chunk_costs(sizes, lim, bounds):
    cost = sizes * (1.0 + np.minimum(sizes, lim))
    return np.array([cost[a:b].sum() for a, b in zip(bounds[:-1], bounds[1:])]), cost


@pytest.mark.parametrize("lim", [5, 10**9])
def test_query_chunks_cover_every_query_once_with_balanced_work(lim):
    from customobj.objectives import _lambdarank_kernels as LK
    rng = np.random.default_rng(21)
    sizes = np.concatenate([rng.integers(1, 40, size=400), [900], rng.integers(1, 300, size=50)])
    ptr = Groups.from_sizes(sizes).ptr
    bounds = LK.query_chunks(ptr, lim, 512)
    assert bounds[0] == 0 and bounds[-1] == sizes.size and np.all(np.diff(bounds) >= 0)
    assert bounds.size - 1 == min(sizes.size, -(-int(sizes.sum()) // 512))
    per_item, cost = _chunk_costs(sizes, lim, bounds)
    # greedy cuts: no item exceeds the mean by more than one query's work
    assert per_item.max() <= cost.sum() / per_item.size + cost.max()


def test_query_chunks_balance_work_where_equal_query_counts_do_not():
    from customobj.objectives import _lambdarank_kernels as LK
    rng = np.random.default_rng(22)
    sizes = np.concatenate([rng.integers(1, 40, size=400), rng.integers(100, 300, size=50)])  # small, then large
    bounds = LK.query_chunks(Groups.from_sizes(sizes).ptr, 30, 512)
    per_item, _ = _chunk_costs(sizes, 30, bounds)
    by_count = np.linspace(0, sizes.size, per_item.size + 1).astype(int)  # the former fixed blocks of queries
    assert _chunk_costs(sizes, 30, by_count)[0].max() > 2 * per_item.max()


def test_query_chunks_of_degenerate_data():
    from customobj.objectives import _lambdarank_kernels as LK
    assert LK.query_chunks(np.zeros(1, np.int64), 30, 2048).tolist() == [0, 0]  # no query
    assert LK.query_chunks(np.array([0, 5000]), 30, 2048).tolist() == [0, 1]  # one query, many rows
    assert LK.query_chunks(np.array([0, 1, 2, 3]), 30, 1).tolist() == [0, 1, 2, 3]  # one item per query
    assert LK.query_chunks(np.array([0, 0, 0, 4]), 30, 1).tolist()[-1] == 3  # empty queries


# --- unknown dispatch codes: every driver signals them before any work ------------------------------
def _inputs(metric, n_queries=5):
    from customobj.objectives import _lambdarank_kernels as LK
    rng = np.random.default_rng(16)
    s, y, sizes = random_queries(rng, n_queries=n_queries, max_size=8)
    ptr = Groups.from_sizes(sizes).ptr
    disc = LK.discount_table(int(np.max(sizes)), 10**6)
    gain = np.exp2(y) - 1.0
    idcg = LK.ideal_dcg(gain, ptr, disc)
    qnorm = np.divide(1.0, idcg, out=np.zeros_like(idcg), where=idcg > 0)
    return LK.PassInputs(s, ptr, gain, qnorm, disc, np.zeros(0), False, metric, 10**6, 10**6, 1.0, False, 1.0)


@pytest.mark.parametrize("metric", [4, -1, 99])
def test_every_driver_signals_an_unknown_metric_and_writes_nothing(metric):
    """Before: an unknown metric ran MRR's |dZ| in the pair loop."""
    from customobj._kernel_status import KernelStatus
    from customobj.objectives import _lambdarank_kernels as LK
    inp = _inputs(metric)
    n = inp.scores.size
    bad = KernelStatus.UNKNOWN_CODE
    g, h = np.zeros(n), np.zeros(n)
    assert LK.lambdarank_grad_hess(inp, g, h) == bad
    assert LK.lambdarank_loss(inp) == (0.0, bad)
    assert LK.lambdarank_grad_hess_loss(inp, g, h) == (0.0, bad)
    ok = _inputs(int(LK.Metric.NDCG))
    for with_loss in (False, True):  # one unknown label refuses all, before any work
        losses, status = LK.lambdarank_labels((ok, inp), with_loss, np.zeros((2, n)), np.zeros((2, n)))
        assert status == bad and not losses.any()
    order = np.full(n, -1, np.int64)
    offsets, status = LK.lambdarank_pair_offsets(inp, order)
    assert status == bad and offsets[-1] == 0 and np.all(order == -1)
    out = LK.PassOutputs(g, h, np.zeros(4, np.int32), np.zeros(4, np.int32), np.zeros(4))  # the compiled pass's
    assert LK.lambdarank_pair_fill(inp, True, out, np.arange(n), np.zeros(len(inp.qnorm) + 1, np.int64)) == bad
    i, j, c, status = LK.lambdarank_couplings(inp, True, g, h)
    assert status == bad and i.size == j.size == c.size == 0
    assert not g.any() and not h.any() and not out.pair_c.any()


def test_known_metric_codes_drive_the_same_kernels_as_the_objective():
    from customobj._kernel_status import KernelStatus
    from customobj.objectives import _lambdarank_kernels as LK
    inp = _inputs(int(LK.Metric.NDCG))
    n = inp.scores.size
    g, h = np.zeros(n), np.zeros(n)
    assert LK.lambdarank_grad_hess(inp, g, h) == KernelStatus.OK
    sizes = np.diff(inp.ptr)
    y = np.log2(inp.row_gain + 1.0)
    rg, rh = LambdaRank().grad_hess(inp.scores, y, sizes)
    assert np.array_equal(g, rg) and np.array_equal(h, rh)


def test_lambdarank_raises_when_its_kernel_signals(monkeypatch):
    from customobj.objectives import listwise
    rng = np.random.default_rng(17)
    s, y, sizes = random_queries(rng, n_queries=4, max_size=6)
    obj = LambdaRank()
    prep = obj.prepare(y, sizes)
    inputs = obj.pass_inputs
    monkeypatch.setattr(obj, "pass_inputs", lambda *a: inputs(*a)._replace(metric=7))
    for call in (obj.grad_hess_prepared, obj.loss_prepared, obj.pair_couplings_prepared):
        with pytest.raises(ValueError, match="LambdaRank: the kernel met a dispatch code"):
            call(s, prep)
    # and the Python boundary refuses a code that is no Metric
    monkeypatch.setitem(listwise._METRICS, "ndcg", 7)
    monkeypatch.delattr(obj, "pass_inputs")  # the class method again
    with pytest.raises(ValueError, match="metric must be a Metric code"):
        obj.grad_hess_prepared(s, prep)


@pytest.mark.parametrize("with_loss", [False, True])
def test_labels_driver_is_each_labels_own_pass_bit_for_bit(with_loss):
    """lambdarank_labels (one sort per query for every label, MultiObjective's LambdaRank labels): each
    label's gradients, hessians and GRAD_LOSS cost are those of its own call, bit for bit, with labels
    of different metrics, options and weights, queries of one row and queries that contribute nothing. The driver
    writes every row (MultiObjective does not zero its buffers first): what they held, NaN here, is not read."""
    from customobj.objectives import _lambdarank_kernels as LK
    rng = np.random.default_rng(23)
    s, y, sizes = random_queries(rng, n_queries=30, max_size=25)
    sizes[:2] = 1  # single-row queries
    n = int(np.sum(sizes))
    s, y = rng.normal(size=n) * np.where(rng.random(n) < 0.3, 400.0, 1.0), rng.integers(0, 4, n).astype(float)
    y[:5] = 0.0  # a query without relevant rows: qnorm 0
    w = rng.uniform(0.5, 2.0, n)
    objs = [LambdaRank(), LambdaRank(metric="err", norm=True), LambdaRank(metric="map", truncation=3, sigma=2.0),
            LambdaRank.like_xgboost()]
    labels = [y, rng.integers(0, 3, n).astype(float), y[::-1].copy(), rng.integers(0, 5, n).astype(float)]
    per_query = np.repeat(rng.uniform(0.5, 2.0, len(sizes)), sizes)  # XGBoost's convention: one weight a query
    weights = [None, w, None, per_query]
    preps = [o.prepare(c, group=sizes, weight=wk) for o, c, wk in zip(objs, labels, weights)]
    grads, hess = np.full((4, n), np.nan), np.full((4, n), np.nan)
    losses, status = LK.lambdarank_labels(tuple(o.pass_inputs(s, p) for o, p in zip(objs, preps)), with_loss,
                                          grads, hess)
    assert status == 0
    for k, (o, p) in enumerate(zip(objs, preps)):
        g, h = np.zeros(n), np.zeros(n)
        if with_loss:
            assert losses[k] == o._grad_hess_loss(s, p, None, g, h) and losses[k] > 0
        else:
            o._grad_hess(s, p, None, g, h)
            assert losses[k] == 0.0
        np.testing.assert_array_equal(grads[k], g)
        np.testing.assert_array_equal(hess[k], h)
