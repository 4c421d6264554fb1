"""numba.cuda kernels of the OLE grower's row and pair partitions and coupling sums: the GPU twins of
:func:`customobj.ole.partition.partition_rows`, :func:`customobj.ole.pairhist.partition_pairs`,
``sum_couplings`` and ``split_coupling_sums``.

Like the CPU's parallel versions, a range is cut into blocks whose number depends only on its size
(:func:`customobj.ole.cuda_backend.n_blocks`); one thread per block runs the CPU's own per-block code
(``partition._mark_rows`` / ``_place_rows``, ``pairhist._count_sides`` / ``_place_sides``, compiled
as device functions; their Python source under the simulator, as in :mod:`._cuda_split_kernels`),
:func:`scan_counts` turns the blocks' counts into their offsets (one thread, blocks in order), and
each block places its items at its offsets. The partitions are
stable, so their result is the CPU's whatever the block count: [left | right] rows and [both left |
both right | split] pairs, each in node order. The coupling sums add each block in pair order and
then the blocks in order (:func:`._cuda_split_kernels.ordered_sums`): one block is the CPU's sum bit
for bit, more differ from it by float64 rounding only.
"""
from .._cuda_runtime import cuda_module, device_function
from ..objectives._query_kernels import range_sum
from .pairhist import _count_sides, _place_sides, split_coupling_sums
from .partition import _mark_rows, _place_rows

cuda = cuda_module()

__all__ = ["mark_rows_blocks", "scan_counts", "place_rows_blocks", "copy_rows", "count_sides_blocks",
           "place_sides_blocks", "coupling_blocks", "split_coupling_blocks"]


_mark, _place, _count, _sides = device_function(_mark_rows), device_function(_place_rows), device_function(_count_sides), device_function(_place_sides)
_range_sum, _split_sums = device_function(range_sum), device_function(split_coupling_sums)


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
def scan_counts(counts, nb, before):
    """One thread: ``before[b] = counts[:b].sum(axis=0)`` for ``b`` in ``0..nb`` (``before[nb]``: the totals)."""
    if cuda.grid(1) != 0:
        return
    a = 0
    c = 0
    for b in range(nb):
        before[b, 0] = a
        before[b, 1] = c
        a += counts[b, 0]
        c += counts[b, 1]
    before[nb, 0] = a
    before[nb, 1] = c


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


@cuda.jit(cache=True)
def coupling_blocks(pc, start, n, nb, part):
    """Thread ``b``: ``part[b] = (sum of its block's couplings in order, 0)``."""
    b = cuda.grid(1)
    if b < nb:
        lo, hi = _block(b, start, n, nb)
        part[b, 0] = _range_sum(pc, lo, hi)
        part[b, 1] = 0.0


@cuda.jit(cache=True)
def split_coupling_blocks(pi, pj, pc, start, n, nb, go_left, part):
    """Thread ``b``: ``part[b]`` = its block's couplings of pairs with both rows left, both right."""
    b = cuda.grid(1)
    if b < nb:
        lo, hi = _block(b, start, n, nb)
        cl, cr = _split_sums(pi, pj, pc, lo, hi, go_left)
        part[b, 0] = cl
        part[b, 1] = cr
