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

