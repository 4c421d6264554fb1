"""customobj/objectives/_block_cuda.py under the simulator: the block primitives of the block-per-query
kernels, on kernels of the test's own. ``add_staged`` sums floats in index order, bit for bit the CPU's
running sum, on values where another order rounds otherwise; ``block_max`` skips NaN; ``block_sum`` /
``block_scan`` are the integer sum and exclusive scan; ``query_block`` / ``grid_item`` give -1 past the
last query / item; ``place_kept`` writes the kept pairs in thread order; and the module compiles to PTX."""
from __future__ import annotations

import numpy as np
import pytest

from _cuda_cases import STATUS, needs_gpu, to_device

pytestmark = needs_gpu

LANES = 8

if STATUS.available:  # kernels of the test's own (the simulator swaps ``cuda`` among its module's globals)
    from numba import cuda, float64, int64

    from customobj.objectives import _block_cuda as CB

    @cuda.jit
    def _ordered(values, ptr, out):
        sh = cuda.shared.array(LANES, dtype=float64)
        q, lo, hi = CB.query_block(ptr)
        if q < 0:
            return
        total = 0.0
        for base in range(lo, hi, cuda.blockDim.x):
            if base + cuda.threadIdx.x < hi:
                sh[cuda.threadIdx.x] = values[base + cuda.threadIdx.x]
            total = CB.add_staged(sh, total, min(cuda.blockDim.x, hi - base))
        total = CB.broadcast(sh, total)
        out[q, cuda.threadIdx.x] = total  # every thread has the sum

    @cuda.jit
    def _maximum(values, out):
        sh = cuda.shared.array(LANES, dtype=float64)
        out[cuda.blockIdx.x] = CB.block_max(sh, values[cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x])

    @cuda.jit
    def _integers(flags, out_sum, out_before, out_total):
        sh = cuda.shared.array(LANES, dtype=int64)
        t = cuda.threadIdx.x
        out_sum[t] = CB.block_sum(sh, flags[t])
        out_before[t], out_total[t] = CB.block_scan(sh, flags[t])

    @cuda.jit
    def _place(c, start, out_i, out_j, out_c, out_t):
        sh = cuda.shared.array(LANES, dtype=int64)
        t = cuda.threadIdx.x
        out_t[t] = CB.place_kept(sh, start, t, 100 + t, c[t], (out_i, out_j, out_c))

    @cuda.jit
    def _items(n, out):
        i = CB.grid_item(n)
        out[cuda.grid(1)] = i


def test_add_staged_sums_in_index_order_bit_for_bit():
    # 1e16 + 1 + 1 ... rounds each 1 away in order; a tree over the lanes would keep some of them
    values = np.array([1e16] + [1.0] * 18 + [-1e16, 0.1, 0.2, 0.3] + [3.0, 1e-300, -2.5], dtype=np.float64)
    ptr = np.array([0, 23, 23, 26], dtype=np.int64)  # 23 rows (three steps of 8), an empty query, 3 rows
    out = to_device(np.full((3, LANES), np.nan))
    _ordered[3, LANES](to_device(values), to_device(ptr), out)
    got = out.copy_to_host()
    for q in range(3):
        want = 0.0
        for v in values[ptr[q]:ptr[q + 1]]:
            want += v
        assert np.all(got[q] == want), (q, got[q], want)
    assert got[0, 0] != np.sum(values[:23])  # numpy's pairwise sum rounds otherwise: the order matters here


def test_block_max_skips_nan_and_returns_minus_inf_for_none():
    values = np.array([1.0, np.nan, 7.5, -3.0, 7.5, np.nan, 2.0, -np.inf] + [np.nan] * 4 + [-np.inf] * 4)
    out = to_device(np.zeros(2))
    _maximum[2, LANES](to_device(values), out)
    np.testing.assert_array_equal(out.copy_to_host(), [7.5, -np.inf])


def test_block_sum_and_scan_are_the_integer_sum_and_exclusive_scan():
    flags = np.array([1, 0, 3, 1, 0, 0, 2, 1], dtype=np.int64)
    outs = [to_device(np.zeros(LANES, np.int64)) for _ in range(3)]
    _integers[1, LANES](to_device(flags), *outs)
    total, before, scanned_total = (o.copy_to_host() for o in outs)
    assert np.all(total == flags.sum()) and np.all(scanned_total == flags.sum())
    np.testing.assert_array_equal(before, np.cumsum(flags) - flags)


def test_place_kept_writes_the_kept_pairs_in_thread_order():
    c = np.array([0.0, 2.0, -1.0, 0.5, 0.0, 3.0, 0.0, 1.0])
    outs = [to_device(np.full(12, -1, np.int64)), to_device(np.full(12, -1, np.int64)), to_device(np.zeros(12)),
            to_device(np.zeros(LANES, np.int64))]
    _place[1, LANES](to_device(c), 4, *outs)
    i, j, cc, t = (o.copy_to_host() for o in outs)
    kept = np.flatnonzero(c > 0)
    np.testing.assert_array_equal(i[4:4 + kept.size], kept)
    np.testing.assert_array_equal(j[4:4 + kept.size], 100 + kept)
    np.testing.assert_array_equal(cc[4:4 + kept.size], c[kept])
    assert np.all(i[:4] == -1) and np.all(i[4 + kept.size:] == -1) and np.all(t == 4 + kept.size)


def test_query_block_and_grid_item_say_minus_one_past_the_last():
    ptr = np.array([0, 2, 5], dtype=np.int64)
    out = to_device(np.zeros((4, LANES)))
    _ordered[4, LANES](to_device(np.ones(5)), to_device(ptr), out)  # blocks 2 and 3 have no query: untouched
    np.testing.assert_array_equal(out.copy_to_host()[:, 0], [2.0, 3.0, 0.0, 0.0])
    items = to_device(np.zeros(16, np.int64))
    _items[2, LANES](11, items)
    np.testing.assert_array_equal(items.copy_to_host(), list(range(11)) + [-1] * 5)


@pytest.mark.skipif(not STATUS.simulator, reason="the kernels above are simulator-sized; compiled in the PTX test")
def test_the_device_functions_compile_to_ptx():
    from _isolated import run_isolated

    out = run_isolated("""
import os
os.environ.pop("NUMBA_ENABLE_CUDASIM", None)
import types as pytypes
import numba.cuda.dispatcher as dispatcher
dispatcher.get_current_device = lambda: pytypes.SimpleNamespace(compute_capability=(8, 0))
from numba import cuda, float64, int64, types as T
try:
    from customobj.objectives import _block_cuda as CB
    def k(values, ptr, flags, out, outi):
        sh = cuda.shared.array(32, dtype=float64)
        shi = cuda.shared.array(32, dtype=int64)
        q, lo, hi = CB.query_block(ptr)
        if q < 0:
            return
        t = CB.add_staged(sh, 0.0, hi - lo)
        out[q] = CB.broadcast(sh, t) + CB.block_max(sh, values[lo])
        outi[q] = CB.block_sum(shi, flags[q]) + CB.place_kept(shi, 0, q, q, out[q], (outi, outi, out))
        outi[q] += CB.grid_item(5)
    f1, i1 = T.float64[::1], T.int64[::1]
    cuda.compile_ptx(k, T.void(f1, i1, i1, f1, i1), cc=(8, 0))
    print("COMPILED")
except Exception as exc:
    print("NO-NVVM" if "nvvm" in repr(exc).lower() else "ERROR", type(exc).__name__, exc)
""", timeout=600)
    if "NO-NVVM" in out:
        pytest.skip("NVIDIA's NVVM library is not installed")
    assert "COMPILED" in out, out
