"""customobj.ole.cuda._partitions_kernels: the GPU row and pair partitions give the CPU's order (stable,
[left | right] rows, [both left | both right | split] pairs) and sides for any segment count and any
block width (a block of lanes per segment, lanes with empty runs included), NaN rows included (the
lanes' fixed-order scan and sum, _scan2 / _sum2, against numpy's cumsum); the pair counts' totals are
the CPU's. Without a GPU they run on numba's CUDA simulator (tests/conftest.py): small data."""
import numpy as np
import pytest
from numba import cuda, int64

from customobj.ole.binning import BinMapper
from customobj.ole.pair_partition import partition_pairs
from customobj.ole.partition import partition_rows

from _cuda_cases import needs_gpu
from _ole_cases import make_X, random_pairs

pytestmark = needs_gpu


def _cuda():
    from numba import cuda
    from customobj.ole.cuda import _partitions_kernels as P, _reduce_kernels as R
    return cuda, P, R


@pytest.mark.parametrize("threads", [1, 2, 8, 32])
def test_the_lanes_scan_and_sum_in_lane_order(threads):
    _, P, _ = _cuda()

    @cuda.jit  # the module's ``cuda``: the simulator swaps a kernel's global numba.cuda
    def scan(vals, counts, b, out):
        sh = cuda.shared.array((2, 3 * 32), dtype=int64)
        t, nt = cuda.threadIdx.x, cuda.blockDim.x
        a, c = P._base(counts, b, t, nt)
        sa, sc = P._sum2(sh, t, nt, a, c)  # the earlier segments' counts, then a scan in the other slots
        ia, ic, ta, tc = P._scan2(sh, t, nt, vals[t, 0], vals[t, 1])
        out[t, 0], out[t, 1], out[t, 2], out[t, 3], out[t, 4], out[t, 5] = ia, ic, ta, tc, sa, sc

    rng = np.random.default_rng(threads)
    vals, counts = rng.integers(0, 50, size=(threads, 2)), rng.integers(0, 50, size=(70, 2))
    out = cuda.to_device(np.full((threads, 6), -1, np.int64))
    scan[1, threads](cuda.to_device(vals), cuda.to_device(counts), 61, out)
    got = out.copy_to_host()
    np.testing.assert_array_equal(got[:, :2], np.cumsum(vals, axis=0))
    np.testing.assert_array_equal(got[:, 2:4], np.broadcast_to(vals.sum(axis=0), (threads, 2)))
    np.testing.assert_array_equal(got[:, 4:], np.broadcast_to(counts[:61].sum(axis=0), (threads, 2)))


@pytest.mark.parametrize("nb,threads", [(1, 1), (3, 4), (7, 2), (2, 32)])  # 32 lanes: some with no rows
@pytest.mark.parametrize("nan_left", [False, True])
def test_the_row_partition_is_the_cpus(nb, threads, nan_left):
    cuda, P, R = _cuda()
    X = make_X(5, n=150, n_features=3, nan_frac=0.2)
    mapper = BinMapper.fit(X, 8)
    fm = mapper.bins_feature_major(X)
    f, tbin, start, end = 0, 2, 9, 140
    order = np.random.default_rng(1).permutation(150).astype(np.int64)
    want, go = order.copy(), np.zeros(150, np.bool_)
    nl = partition_rows(fm[f], want, start, end, tbin, int(mapper.n_bins[f]), nan_left, go, np.empty(150, np.int64))
    d_order, d_go, tmp = cuda.to_device(order), cuda.to_device(np.zeros(150, np.bool_)), cuda.device_array(150, np.int64)
    counts = cuda.device_array((nb, 2), np.int64)
    n = end - start
    P.mark_rows_blocks[nb + 1, threads](cuda.to_device(fm[f]), d_order, start, n, nb, tbin,  # a block past
                                        int(mapper.n_bins[f]), nan_left, d_go, tmp, counts)  # returns whole
    P.place_rows_blocks[nb + 1, threads](tmp, d_order, start, n, nb, nl, d_go, counts)
    assert counts.copy_to_host()[:, 0].sum() == nl and 0 < nl < n
    np.testing.assert_array_equal(d_order.copy_to_host(), want)  # untouched outside start:end too
    rows = order[start:end]
    np.testing.assert_array_equal(d_go.copy_to_host()[rows], go[rows])


@pytest.mark.parametrize("nb,threads", [(1, 1), (4, 2), (9, 4), (3, 32)])
def test_the_pair_partition_and_its_totals_are_the_cpus(nb, threads):
    cuda, P, R = _cuda()
    pi, pj, pc, ptr = random_pairs(2, n_queries=10, max_rows=12)
    n_rows = int(ptr[-1])
    go = np.random.default_rng(3).random(n_rows) < 0.5
    start, end = 5, pi.size - 3
    want = tuple(np.zeros_like(a) for a in (pi, pj, pc))
    tl, tr = partition_pairs(pi, pj, pc, start, end, go, *want)
    src = tuple(cuda.to_device(a) for a in (pi, pj, pc))
    dst = tuple(cuda.to_device(np.zeros_like(a)) for a in (pi, pj, pc))
    counts, d_go = cuda.device_array((nb, 2), np.int64), cuda.to_device(go)
    totals = cuda.to_device(np.zeros(2, np.int64))
    n = end - start
    P.count_sides_blocks[nb, threads](src[0], src[1], start, n, nb, d_go, counts, totals)
    assert tuple(totals.copy_to_host()) == (tl, tr) and tl > 0 and tr > 0
    # each row's coupling sum over the range's pairs: the split pairs' are taken out (rho of the children)
    rho0 = np.zeros(n_rows)
    np.add.at(rho0, pi[start:end], pc[start:end])
    np.add.at(rho0, pj[start:end], pc[start:end])
    rho = cuda.to_device(rho0)
    P.place_sides_blocks[nb + 1, threads](P.PairSides(*src, start, n, nb, counts, totals), d_go, P.PairPlace(*dst, rho))
    assert tuple(counts.copy_to_host().sum(axis=0)) == (tl, tr)
    for got, w in zip(dst, want):
        np.testing.assert_array_equal(got.copy_to_host(), w)
    kept = np.zeros(n_rows)  # the children's pairs only: [both left | both right]
    np.add.at(kept, want[0][start:start + tl + tr], want[2][start:start + tl + tr])
    np.add.at(kept, want[1][start:start + tl + tr], want[2][start:start + tl + tr])
    np.testing.assert_allclose(rho.copy_to_host(), kept, rtol=0, atol=1e-12)


@pytest.mark.parametrize("nb,threads,chunks", [(1, (1, 1), 1), (9, (2, 2), 1), (3, (2, 4), 5), (13, (2, 4), 1)])
def test_the_fused_pair_placing_and_row_histogram_are_the_separate_launches(nb, threads, chunks):
    # ole_fast's place_sides_row_hist: blocks (x, 0, 1) place segments x k ... x k + k - 1 (k = ceil(nb /
    # blocks): 3 of 9 in 3 blocks, 7 then 6 of 13 in 2) as one range, as place_sides_blocks would (the
    # block's 2-D threads as one row of lanes; more chunks than segments: blocks past return), blocks
    # of depth 0 build the rows' histogram as row_hist_shared (the CPU's, bit for bit, on a grid)
    from customobj.ole.common import HIST_CHANNELS
    from customobj.ole.cuda import _histograms_kernels as K
    from customobj.ole.cuda.histograms import RowBuild
    from customobj.ole.histogram import build_row_hist_fm
    cuda, P, R = _cuda()
    pi, pj, pc, ptr = random_pairs(2, n_queries=10, max_rows=12)
    n_rows = int(ptr[-1])
    rng = np.random.default_rng(5)
    go = rng.random(n_rows) < 0.5
    start, end = 5, pi.size - 3
    n = end - start
    want = tuple(np.zeros_like(a) for a in (pi, pj, pc))
    tl, tr = partition_pairs(pi, pj, pc, start, end, go, *want)
    X = make_X(1, n=n_rows, n_features=3)
    mapper = BinMapper.fit(X, 8)
    fm = mapper.bins_feature_major(X)
    rows = np.flatnonzero(go).astype(np.int64)
    g, h = np.round(rng.normal(size=n_rows) * 64) / 64, np.round(rng.uniform(0.5, 2.0, n_rows) * 64) / 64
    cpu = build_row_hist_fm(fm, rows, 0, rows.size, g, h, mapper.offsets, mapper.n_slots)
    groups, members, smap = K.feature_groups(mapper.offsets, mapper.n_bins.astype(np.int64),
                                             np.arange(fm.shape[0], dtype=np.int64))
    src = tuple(cuda.to_device(a) for a in (pi, pj, pc))
    dst = tuple(cuda.to_device(np.zeros_like(a)) for a in (pi, pj, pc))
    counts, d_go = cuda.device_array((nb, 2), np.int64), cuda.to_device(go)
    totals = cuda.to_device(np.zeros(2, np.int64))
    P.count_sides_blocks[nb, 4](src[0], src[1], start, n, nb, d_go, counts, totals)
    rho = cuda.to_device(np.zeros(n_rows))
    out = cuda.to_device(np.zeros((mapper.n_slots, HIST_CHANNELS)))
    build = RowBuild(cuda.to_device(rows), rows.size, cuda.to_device(g), cuda.to_device(h),
                     cuda.to_device(np.array([1 / 64, 1 / 64])), out)
    grid = (max(chunks, -(-nb // (threads[0] * threads[1]))), groups.shape[0], 2)  # partitions.place_sides' grid
    P.place_sides_row_hist[grid, threads](cuda.to_device(np.ascontiguousarray(fm.T)), cuda.to_device(groups),
                                          cuda.to_device(members), cuda.to_device(smap), build,
                                          P.PairSides(*src, start, n, nb, counts, totals), d_go,
                                          P.PairPlace(*dst, rho))
    for got, w in zip(dst, want):
        np.testing.assert_array_equal(got.copy_to_host(), w)
    split = want[2][start + tl + tr:end]  # the split pairs' couplings, out of their rows' sums
    taken = np.zeros(n_rows)
    np.add.at(taken, want[0][start + tl + tr:end], -split)
    np.add.at(taken, want[1][start + tl + tr:end], -split)
    np.testing.assert_allclose(rho.copy_to_host(), taken, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(out.copy_to_host(), cpu)


@pytest.mark.parametrize("threads,blocks", [(1, (1, 3, 2)), (2, (4, 1, 5)), (8, (7, 2, 3)), (32, (1, 2, 1))])
def test_a_levels_partitions_are_each_splits_in_two_launches(threads, blocks):
    # mark_rows_level and place_rows_count_sides_level on a table of three splits (disjoint rows, each
    # with its own feature, bin, NaN side and block count, blocks at their own rows of one scratch;
    # split 1's pairs in buffer 1, split 2 has none): the CPU's partitions, split by split
    from customobj.ole.common import PART_N_LEFT, PART_N_RIGHT, PART_RECORD
    cuda, P, _ = _cuda()
    X = make_X(7, n=90, n_features=3, nan_frac=0.2)
    mapper = BinMapper.fit(X, 8)
    fm = mapper.bins_feature_major(X)
    rng = np.random.default_rng(threads)
    order = rng.permutation(90).astype(np.int64)
    ranges, feats, tbins, nan_lefts = [(0, 30), (30, 70), (70, 90)], (0, 2, 1), (2, 3, 1), (True, False, True)
    bufs = [[np.zeros(80, np.int32), np.zeros(80, np.int32)] for _ in range(2)]
    pranges = [(0, 4, 50), (1, 10, 75), None]  # (buffer, start, end)
    for k, pr in enumerate(pranges[:2]):
        rows = order[ranges[k][0]:ranges[k][1]]
        buf, s, e = pr
        bufs[buf][0][s:e], bufs[buf][1][s:e] = rng.choice(rows, e - s), rng.choice(rows, e - s)
    want, go, tmp = order.copy(), np.zeros(90, np.bool_), np.zeros(90, np.int64)
    table = np.zeros((3, P.LEVEL_COLUMNS), np.int64)
    base, pbase, totals = 0, 0, []
    for k, ((s, e), f, tbin, nl_side, pr, nb) in enumerate(zip(ranges, feats, tbins, nan_lefts, pranges, blocks)):
        nl = partition_rows(fm[f], want, s, e, tbin, int(mapper.n_bins[f]), nl_side, go, tmp)
        row = table[k]
        row[[P.LV_START, P.LV_N, P.LV_NB, P.LV_BASE, P.LV_N_LEFT]] = s, e - s, nb, base, nl
        row[[P.LV_FEATURE, P.LV_TBIN, P.LV_NAN_BIN, P.LV_NAN_LEFT, P.LV_PBUF]] = f, tbin, mapper.n_bins[f], nl_side, -1
        base += nb
        if pr is not None:
            buf, ps, pe = pr
            out = [np.zeros(80, np.int32) for _ in range(2)] + [np.zeros(80)]
            totals.append(partition_pairs(*bufs[buf], np.zeros(80), ps, pe, go, *out))
            row[[P.LV_PBUF, P.LV_PSTART, P.LV_PN, P.LV_PNB, P.LV_PBASE, P.LV_RECORD]] = buf, ps, pe - ps, nb + 1, pbase, k
            pbase += nb + 1
    d_order, d_go = cuda.to_device(order), cuda.to_device(np.zeros(90, np.bool_))
    counts, pair_counts = cuda.device_array((base, 2), np.int64), cuda.device_array((pbase, 2), np.int64)
    records = cuda.to_device(np.zeros((3, PART_RECORD), np.int64))
    d_table, tmp_d = cuda.to_device(table), cuda.device_array(90, np.int64)
    grid = max(blocks) + 1  # a block per segment of the split with most; the others' past ones return
    P.mark_rows_level[(grid, 3), threads](d_table, cuda.to_device(fm), d_order, d_go, tmp_d, counts)
    sources = P.PairSources(*(cuda.to_device(a) for b in bufs for a in b))
    P.place_rows_count_sides_level[(grid, 3, 2), threads](d_table, d_order, tmp_d, counts, sources, pair_counts,
                                                           records, d_go)
    np.testing.assert_array_equal(d_order.copy_to_host(), want)
    np.testing.assert_array_equal(d_go.copy_to_host(), go)
    got = records.copy_to_host()
    assert [tuple(got[k, [PART_N_LEFT, PART_N_RIGHT]]) for k in range(2)] == totals and not got[2].any()
    assert all(0 < t[0] and 0 < t[1] for t in totals)
