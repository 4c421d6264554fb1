"""customobj.ole.cuda.partitions: the GPU backend's row and pair partitions and coupling sums equal
the CPU's (partition.partition_rows, pair_partition.partition_pairs) under the
simulator, in one block and in many; the pair counts stay on the card in the partition's record
(DevicePairCounts: read only when asked, once); the accumulator ring is cleared when it wraps."""
import numpy as np
import pytest

from customobj.ole.cuda import partitions
from customobj.ole.common import PART_N_LEFT, PART_N_RIGHT
from customobj.ole.fixed_point import grid_step_of, round_range
from customobj.ole.pair_partition import partition_pairs
from customobj.ole.partition import partition_rows

from _cuda_cases import needs_gpu
from _ole_cases import random_pairs

pytestmark = needs_gpu


def _parts(n_rows):
    from customobj._cuda_runtime import cuda_module
    from customobj.ole.cuda import _histograms_kernels, _partitions_kernels, _reduce_kernels
    from customobj.ole.cuda.memory import DeviceMemory
    from customobj.ole.cuda.stats import CountedKernels
    mem = DeviceMemory(cuda_module())
    return mem, partitions.DevicePartitions(mem, CountedKernels(_partitions_kernels, mem.counter), _reduce_kernels,
                                                 _histograms_kernels.zero, n_rows=n_rows)


@pytest.mark.parametrize("block, wait", [(128, False), (7, False), (7, True)])
def test_rows_then_pairs_equal_the_cpu(monkeypatch, block, wait):
    # wait: the pairs' placing waits (ole_fast: for the smaller child's row histogram, one launch) and
    # is launched alone by place_sides(None); a row histogram with nothing waiting is refused
    monkeypatch.setattr(partitions, "PARTITION_BLOCK", block)  # 7: many blocks
    pi, pj, pc, _ = random_pairs(1, n_queries=4, max_rows=9)
    pi, pj = pi.astype(np.int32), pj.astype(np.int32)
    n = int(max(pi.max(), pj.max())) + 1
    round_range(pc, 0, pc.size, grid_step_of(pc, 0, pc.size))  # on the grid: exact sums in any order
    col = np.random.default_rng(0).integers(0, 4, n).astype(np.uint8)  # bin 3: NaN
    order = np.arange(n, dtype=np.int64)[::-1].copy()
    mem, parts = _parts(n)
    dev_order = mem.upload(order)
    parts.go_left.copy_to_device(np.zeros(n, dtype=np.bool_))  # rows outside the range: right, as on the host
    go_left, tmp, host = np.zeros(n, dtype=np.bool_), np.zeros(n, dtype=np.int64), order.copy()
    want_left = partition_rows(col, host, 2, n, 1, 3, True, go_left, tmp)
    parts.rows(mem.upload(col), dev_order, 2, n - 2, 1, 3, True, want_left)
    parts.flush()  # placed now (else with the pairs' counting: test_rows_and_pairs_share_a_launch)
    order = host
    np.testing.assert_array_equal(mem.read(dev_order), order)
    np.testing.assert_array_equal(mem.read(parts.go_left)[order[2:]], go_left[order[2:]])
    src = tuple(mem.upload(a) for a in (pi, pj, pc))
    dst = tuple(mem.array(a.shape, a.dtype) for a in (pi, pj, pc))
    reads = mem.counter.stats().outside.reads
    launches = mem.counter.stats().outside.launches
    got = parts.pairs(src, 1, pi.size, dst, wait=wait)
    assert mem.counter.stats().outside.launches - launches == (1 if wait else 2)  # counting (, placing)
    if wait:
        parts.place_sides(None)
        assert mem.counter.stats().outside.launches - launches == 2
        parts.place_sides(None)  # nothing waits now: nothing launched
        assert mem.counter.stats().outside.launches - launches == 2
        with pytest.raises(RuntimeError, match="waiting pair placing"):
            parts.place_sides(("bins", "tables", "build", "shape"))
    assert mem.counter.stats().outside.reads == reads  # the counts stay on the card
    oi, oj, oc = (np.zeros_like(a) for a in (pi, pj, pc))
    nl, nr = partition_pairs(pi, pj, pc, 1, pi.size, go_left, oi, oj, oc)
    assert _record(mem, got) == (nl, nr) and want_left >= 0
    assert got.counts == (nl, nr)  # asked for: read on their own
    assert mem.counter.stats().outside.reads == reads + 2  # the record above, the counts
    for d, h in zip(dst, (oi, oj, oc)):
        np.testing.assert_array_equal(mem.read(d)[1:], h[1:])


def _record(mem, counts):
    """A pair partition's counts in its record on the card."""
    rec = mem.read(counts.record)
    return int(rec[PART_N_LEFT]), int(rec[PART_N_RIGHT])


@pytest.mark.parametrize("block", [128, 5])
def test_rows_and_pairs_share_a_launch(monkeypatch, block):
    """A split's row placing waits for its pairs' counting (place_rows_count_sides): the same order,
    pairs and counts, one launch fewer."""
    monkeypatch.setattr(partitions, "PARTITION_BLOCK", block)  # 5: more pair blocks than row blocks
    pi, pj, pc, _ = random_pairs(4, n_queries=4, max_rows=9)
    pi, pj = pi.astype(np.int32), pj.astype(np.int32)
    n = int(max(pi.max(), pj.max())) + 1
    round_range(pc, 0, pc.size, grid_step_of(pc, 0, pc.size))
    col = np.random.default_rng(1).integers(0, 3, n).astype(np.uint8)
    order, go_left = np.arange(n, dtype=np.int64), np.zeros(n, dtype=np.bool_)
    nl = partition_rows(col, order, 0, n, 0, 9, False, go_left, np.zeros(n, dtype=np.int64))
    want = tuple(np.zeros_like(a) for a in (pi, pj, pc))
    counts = partition_pairs(pi, pj, pc, 0, pi.size, go_left, *want)
    mem, parts = _parts(n)
    dev_order = mem.upload(np.arange(n, dtype=np.int64))
    src = tuple(mem.upload(a) for a in (pi, pj, pc))
    dst = tuple(mem.array(a.shape, a.dtype) for a in (pi, pj, pc))
    parts.rows(mem.upload(col), dev_order, 0, n, 0, 9, False, nl)
    got = parts.pairs(src, 0, pi.size, dst)
    assert _record(mem, got) == counts and 0 < nl < n
    reads = mem.counter.stats().outside.reads
    assert got.counts == counts and mem.counter.stats().outside.reads == reads + 1  # asked for: one read
    np.testing.assert_array_equal(mem.read(dev_order), order)
    for d, h in zip(dst, want):
        np.testing.assert_array_equal(mem.read(d), h)
    parts.flush()  # nothing waits: the order stays
    np.testing.assert_array_equal(mem.read(dev_order), order)


def test_the_coupling_ring_is_cleared_when_it_wraps(monkeypatch):
    monkeypatch.setattr(partitions, "ACC_RING", 2)
    pc = np.array([0.5, 0.25, 1.0, 2.0])
    mem, parts = _parts(4)
    sums = [parts.coupling_sum(mem.upload(pc), s, 4) for s in (0, 1, 2, 3, 0)]
    assert sums == [3.75, 3.25, 3.0, 2.0, 3.75]



def _level_case(seed):
    """Rows split into four disjoint leaves of a level (``order`` ranges), each leaf's pairs among its own
    rows: leaf 0's in pair buffer 0, leaf 1's in buffer 1, leaves 2 and 3 without pairs."""
    rng = np.random.default_rng(seed)
    n = 60
    order = rng.permutation(n).astype(np.int64)
    bins = rng.integers(0, 5, (3, n)).astype(np.uint8)  # 3 features, bin 4: NaN
    ranges = [(0, 17), (17, 40), (40, 52), (52, 60)]
    bufs = [[np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0)] for _ in range(2)]
    pair_ranges = []
    for leaf in (0, 1):  # leaf k's pairs in buffer k, after buffer k's earlier pairs
        rows = order[ranges[leaf][0]:ranges[leaf][1]]
        m = 40 + 13 * leaf
        pi, pj = rng.choice(rows, m).astype(np.int32), rng.choice(rows, m).astype(np.int32)
        pc = rng.integers(1, 9, m) / 8.0  # on a grid: exact sums in any order
        pad = 5 * (1 + leaf)  # the leaf's pairs start past other leaves' in its buffer
        for buf in range(2):
            filler = [np.zeros(pad, np.int32), np.zeros(pad, np.int32), np.zeros(pad)]
            got = (pi, pj, pc) if buf == leaf else tuple(np.zeros(m, a.dtype) for a in (pi, pj, pc))
            bufs[buf] = [np.r_[filler[c], got[c], np.zeros(7, got[c].dtype)] for c in range(3)]
        pair_ranges.append((leaf, pad, pad + m))
    size = max(b[0].size for b in bufs)  # both buffers one size (the pool's)
    bufs = [[np.r_[a, np.zeros(size - a.size, a.dtype)] for a in b] for b in bufs]
    splits = [partitions.LevelSplit(f, s, e - s, tbin, 4, nan_left, 0, rows, pr)
              for (s, e), f, tbin, nan_left, rows, pr in zip(ranges, (0, 2, 1, 0), (1, 2, 0, 3), (True, False, True, False),
                                                          (True, True, True, False), pair_ranges + [None, None])]
    return order, bins, bufs, splits


@pytest.mark.parametrize("block, wait", [(128, False), (4, False), (4, True)])
def test_a_levels_splits_partition_in_two_launches_as_one_by_one(monkeypatch, block, wait):
    # issue 42, item 3: a breadth-first level's row partitions (marked, placed) and pair countings in two
    # launches (mark_rows_level, place_rows_count_sides_level), each split's pairs placed at its turn
    # (placed): the order, sides, pairs, counts and rho are the CPU's split-by-split partitions'
    monkeypatch.setattr(partitions, "PARTITION_BLOCK", block)  # 4: many blocks a split, offsets in one scratch
    order, bins, bufs, splits = _level_case(block)
    n = order.size
    go, host, tmp = np.zeros(n, np.bool_), order.copy(), np.zeros(n, np.int64)
    rho0 = np.zeros(n)
    for buf, s, e in (sp.pairs for sp in splits if sp.pairs is not None):
        np.add.at(rho0, bufs[buf][0][s:e], bufs[buf][2][s:e])
        np.add.at(rho0, bufs[buf][1][s:e], bufs[buf][2][s:e])
    want_pairs, rho = [], rho0.copy()
    for k, sp in enumerate(splits):
        if sp.rows:  # the CPU's split by split
            nl = partition_rows(bins[sp.feature], host, sp.start, sp.start + sp.n, sp.tbin, sp.nan_bin, sp.nan_left,
                                go, tmp)
            splits[k] = sp._replace(n_left=nl)
            assert 0 < nl < sp.n
        if sp.pairs is not None:
            buf, s, e = sp.pairs
            out = tuple(np.zeros_like(a) for a in bufs[1 - buf])
            tl, tr = partition_pairs(*bufs[buf], s, e, go, *out)
            split_pairs = slice(s + tl + tr, e)
            np.add.at(rho, out[0][split_pairs], -out[2][split_pairs])
            np.add.at(rho, out[1][split_pairs], -out[2][split_pairs])
            want_pairs.append(((tl, tr), out, (s, e)))
    mem, parts = _parts(n)
    parts = partitions.DevicePartitions(mem, parts._kernels, parts._reduce_kernels, parts._zero, n_rows=n, splits=4)
    dev_order, dev_bins = mem.upload(order), mem.upload(bins)
    dev_bufs = tuple(tuple(mem.upload(a) for a in b) for b in bufs)
    dsts = [tuple(mem.upload(np.zeros_like(a)) for a in b) for b in bufs]
    parts.rho.copy_to_device(rho0)
    before = mem.counter.stats().outside
    got = parts.level(dev_bins, dev_order, splits, dev_bufs)
    after = mem.counter.stats().outside
    assert (after.launches - before.launches, after.reads - before.reads) == (2, 0)  # nothing read
    assert [g is None for g in got] == [False, False, True, True]
    np.testing.assert_array_equal(mem.read(dev_order), host)  # leaf 3's rows untouched (not partitioned)
    moved = host[:52]
    np.testing.assert_array_equal(mem.read(parts.go_left)[moved], go[moved])
    for k, (counts, (totals, out, (s, e))) in enumerate(zip(got, want_pairs)):
        assert _record(mem, counts) == totals
        parts.placed(k, dsts[1 - splits[k].pairs[0]], wait=wait)
        if wait:  # ole_fast: waits for the smaller child's row histogram (or for place_sides(None))
            assert parts.children_rows == (splits[k].start, splits[k].start + splits[k].n_left,
                                           splits[k].start + splits[k].n)
            parts.place_sides(None)
        for d, h in zip(dsts[1 - splits[k].pairs[0]], out):
            np.testing.assert_array_equal(mem.read(d)[s:e], h[s:e])
    assert mem.counter.stats().outside.launches - after.launches == 2  # a placing a split with pairs
    np.testing.assert_array_equal(mem.read(parts.rho), rho)
    with pytest.raises(ValueError, match="no pairs counted"):
        parts.placed(2, dsts[0])
    with pytest.raises(ValueError, match="1 to 4 splits"):
        parts.level(dev_bins, dev_order, splits + splits[:1], dev_bufs)


def test_a_levels_blocks_fit_the_block_scratch():
    assert partitions.level_blocks([0, 1, 128, 129]) == [0, 1, 1, 2]
    big = partitions.level_blocks([10 ** 9, 10 ** 6, 3, 0])
    assert sum(big) <= partitions.MAX_PARTITION_BLOCKS and big[-1] == 0 and min(big[:3]) >= 1 and big[0] > big[1]


@pytest.mark.parametrize("n", [1, 127, 129, 4000, 16384, 16385, 10 ** 5, 3_800_000, 60_000_000])
def test_segments_grow_as_the_square_root_past_a_block_squared(n):
    # a segment's block sums the counts of the segments before it and its lanes share its items: past
    # PARTITION_BLOCK ** 2 items both are about sqrt(n); below, segments of PARTITION_BLOCK items
    nb, block = partitions.partition_segments(n), partitions.PARTITION_BLOCK
    size = -(-n // nb)
    assert 1 <= nb <= partitions.MAX_PARTITION_BLOCKS
    if n <= block * block:
        assert nb == -(-n // block)
    else:
        root = int(np.sqrt(n))
        assert root <= size <= root + 2 and nb <= root + 3  # n < (root + 1) ** 2
    lanes = partitions.segment_threads(size)
    assert lanes & (lanes - 1) == 0 and min(size, 8) <= lanes <= partitions.WARP
