"""numba.cuda kernels of the OLE grower's row and pair partitions and coupling sums: the GPU twins of
:func:`customobj.ole.partition.partition_rows` and :func:`customobj.ole.pair_partition.partition_pairs`.

Like the CPU's parallel versions, a range is cut into blocks whose number depends only on its size
(``CUDABackend._partition_blocks``); one thread per block runs the CPU's own per-block code
(``partition._mark_rows`` / ``_place_rows``, ``pair_partition._count_sides`` / ``_place_sides``, compiled
as device functions; their Python source under the simulator, as in :mod:`._cuda_split_kernels`),
:func:`._cuda_reduce_kernels.scan_counts` turns the blocks' counts into their offsets (a block-wide
scan), and each block places its items at its offsets. The partitions are
stable, so their result is the CPU's whatever the block count: [left | right] rows and [both left |
both right | split] pairs, each in node order. The coupling sums are
:func:`._cuda_reduce_kernels.coupling_sums` (exact: the couplings are on their grid).
"""
from .._cuda_runtime import cuda_module, device_function
from .pair_partition import _count_sides, _place_sides
from .partition import _mark_rows, _place_rows

cuda = cuda_module()

__all__ = ["mark_rows_blocks", "place_rows_blocks", "copy_rows", "count_sides_blocks", "place_sides_blocks"]


_mark, _place, _count, _sides = device_function(_mark_rows), device_function(_place_rows), device_function(_count_sides), device_function(_place_sides)


@cuda.jit(device=True)
def _block(b, start, n, nb):
    return start + (n * b) // nb, start + (n * (b + 1)) // nb


@cuda.jit(cache=True)
def mark_rows_blocks(col, order, start, n, nb, tbin, nan_bin, nan_left, go_left, counts):
    """Thread ``b``: mark ``go_left`` for its block of ``order[start:start+n]``; ``counts[b, 0]``: its left rows."""
    b = cuda.grid(1)
    if b < nb:
        lo, hi = _block(b, start, n, nb)
        counts[b, 0] = _mark(col, order, lo, hi, tbin, nan_bin, nan_left, go_left)
        counts[b, 1] = 0


@cuda.jit(cache=True)
def place_rows_blocks(order, start, n, nb, go_left, before, tmp):
    """Thread ``b``: copy its block's rows to ``tmp[0:n]``, left ones after the earlier blocks' left
    rows, right ones after every left row and the earlier blocks' right rows (``before``: :func:`scan_counts`)."""
    b = cuda.grid(1)
    if b >= nb:
        return
    ml = before[b, 0]
    lo, hi = _block(b, start, n, nb)
    _place(order, lo, hi, go_left, tmp, ml, before[nb, 0] + (lo - start) - ml)


@cuda.jit(cache=True)
def copy_rows(tmp, order, start, n):
    """``order[start:start+n] = tmp[:n]`` (one thread per row)."""
    i = cuda.grid(1)
    if i < n:
        order[start + i] = tmp[i]


@cuda.jit(cache=True)
def count_sides_blocks(pi, pj, start, n, nb, go_left, counts):
    """Thread ``b``: ``counts[b] = (pairs with both rows left, with both rows right)`` in its block."""
    b = cuda.grid(1)
    if b < nb:
        lo, hi = _block(b, start, n, nb)
        nl, nr = _count(pi, pj, lo, hi, go_left)
        counts[b, 0] = nl
        counts[b, 1] = nr


@cuda.jit(cache=True)
def place_sides_blocks(pi, pj, pc, start, n, nb, go_left, before, oi, oj, oc):
    """Thread ``b``: copy its block's pairs to ``(oi, oj, oc)``, stably, as [both left | both right |
    split] (``before``: :func:`scan_counts` of :func:`count_sides_blocks`)."""
    b = cuda.grid(1)
    if b >= nb:
        return
    tl = before[nb, 0]
    tr = before[nb, 1]
    bl = before[b, 0]
    br = before[b, 1]
    lo, hi = _block(b, start, n, nb)
    _sides(pi, pj, pc, lo, hi, go_left, start + bl, start + tl + br, start + tl + tr + (lo - start - bl - br),
           oi, oj, oc)
