"""numba.cuda reductions of the OLE grower: the grid of :mod:`.fixed_point` computed on the
card, exact sums of on-grid values (:func:`block_sums`, also the partitions' totals) and the best
split across features.

Every kernel is a grid-stride loop (any grid size gives the same result), then a tree reduction
in shared memory (``THREADS`` per block, a power of two), then one atomic per block. The atomics do
not make the results depend on the order the blocks finish in: a maximum is order-free, int64
additions are exact, and the float64 sums here add values already on their grid
(:mod:`.fixed_point`), whose every partial sum is exact. A sum of ``n`` items costs one read each
and one atomic per block: no thread walks more than ``n / (blocks x THREADS)`` items.

Per array pair ``(a, b)`` (a tree's gradients and hessians, or its couplings twice: a
:class:`GridItems`), the grid takes three passes (its accumulators zeroed before: a tree's row of
the backend's ring), and a tree's two grids share their launches: :func:`grid_max` (``stats[0:2]``:
``max |a|``, ``max |b|``; a tree's first also clears the pool's histograms), :func:`grid_units`
(``units``: the int64 unit sums ``T``) and :func:`grid_round` (the values rounded, ``stats[2:4]``:
the grid steps, ``sums``: their exact sums; ``ole_fast``'s per-query tops of the rounded couplings,
:class:`QueryTops`). Items are ``a[idx[k]]`` with ``use_idx`` (a node's rows), else ``a[k]``.
"""
from typing import Any, NamedTuple

from numba import float64, int64

from ..._cuda_runtime import THREADS, cuda_module, device_function
from ..common import SPLIT_FEATURE, SPLIT_SIZE
from ..fixed_point import fold_abs_max, grid_step, magnitude_units, pow2_at_least, to_grid
from ..pair_pruning_kernels import _KEY_SHIFT

cuda = cuda_module()

__all__ = ["GridItems", "QueryTops", "grid_max", "grid_units", "grid_round", "coupling_sums", "pick_best",
           "best_feature", "block_sums", "last_block"]

_fold, _units, _pow2 = device_function(fold_abs_max), device_function(magnitude_units), device_function(pow2_at_least)
_step, _grid = device_function(grid_step), device_function(to_grid)


@cuda.jit(device=True)
def _tree(sh, t, op):
    """Reduce ``sh[0:blockDim]`` into ``sh[0]`` in a fixed pairwise order (``op`` 0: add, 1: max)."""
    s = cuda.blockDim.x // 2
    while s > 0:
        cuda.syncthreads()
        if t < s:
            if op == 0:
                sh[t] += sh[t + s]
            elif sh[t + s] > sh[t]:
                sh[t] = sh[t + s]
        s //= 2
    cuda.syncthreads()


@cuda.jit(device=True)
def _block_result(sh, va, vb, op, out, i0):
    """The block's ``va`` and ``vb`` reduced (``op`` 0: sums, 1: maxima) into ``out[i0]``, ``out[i0 + 1]``
    with one atomic each."""
    t = cuda.threadIdx.x
    sh[0, t] = va
    sh[1, t] = vb
    _tree(sh[0], t, op)
    _tree(sh[1], t, op)
    if t == 0:
        if op == 0:
            cuda.atomic.add(out, i0, sh[0, 0])
            cuda.atomic.add(out, i0 + 1, sh[1, 0])
        else:
            cuda.atomic.max(out, i0, sh[0, 0])
            cuda.atomic.max(out, i0 + 1, sh[1, 0])


@cuda.jit(device=True)
def block_sums(sh, va, vb, out):
    """The block's sums of ``va`` and ``vb`` added to ``out[0]``, ``out[1]`` (one atomic each; ``sh``:
    ``(2, THREADS)`` shared, of their dtype; every thread of the block must call it)."""
    _block_result(sh, va, vb, 0, out, 0)


class GridItems(NamedTuple):
    """One array pair's grid (:mod:`.fixed_point`): the items ``a[idx[k]]``, ``b[idx[k]]`` (``use_idx``,
    a node's rows) or ``a[k]``, ``b[k]``, ``k < n`` (0: none); ``stats`` float64[4] (``max |a|``,
    ``max |b|``, the two steps), ``units`` int64[2] (the unit sums ``T``), the rounded values into
    ``oa``, ``ob`` (in place when ``oa is a``) and their exact sums into ``sums[0:2]``; every
    accumulator zeroed before."""

    a: Any
    b: Any
    idx: Any
    use_idx: bool
    n: int
    stats: Any
    units: Any
    oa: Any
    ob: Any
    sums: Any


class QueryTops(NamedTuple):
    """``ole_fast``'s first pruning step done as its couplings are rounded (:func:`grid_round`): per
    query ``q`` of the pairs' first rows ``pi``, ``tops[q]`` the largest key ``bits >> 50`` of its
    positive rounded couplings (``bits``: their int64 view) and ``totals[q]`` their sum (``on``
    False: nothing; ``_pruning_kernels.query_tops``' work)."""

    pi: Any
    bits: Any
    query_of_row: Any
    tops: Any
    totals: Any
    on: bool


@cuda.jit(device=True)
def _item(g, k):
    return g.idx[k] if g.use_idx else k


@cuda.jit(device=True)
def _max_of(g):
    ma = 0.0
    mb = 0.0
    for k in range(cuda.grid(1), g.n, cuda.gridsize(1)):
        r = _item(g, k)
        ma = _fold(ma, g.a[r])
        mb = _fold(mb, g.b[r])
    return ma, mb


@cuda.jit(cache=True)
def grid_max(x, y, clear, rho):
    """``stats[0] = max |a|``, ``stats[1] = max |b|`` of two grids' items (:class:`GridItems`: a tree's
    rows and its couplings in one launch); ``clear[:] = 0`` and ``rho[:] = 0`` on the way (a tree's
    first launch clears the pool's histograms and the rows' coupling sums, which the root's row
    histogram launch then adds: no launch of their own; empty: nothing)."""
    sh = cuda.shared.array((2, THREADS), dtype=float64)
    for i in range(cuda.grid(1), clear.shape[0], cuda.gridsize(1)):
        clear[i] = 0.0
    for i in range(cuda.grid(1), rho.shape[0], cuda.gridsize(1)):
        rho[i] = 0.0
    ma, mb = _max_of(x)
    _block_result(sh, ma, mb, 1, x.stats, 0)
    ma, mb = _max_of(y)
    _block_result(sh, ma, mb, 1, y.stats, 0)


@cuda.jit(device=True)
def _units_of(g):
    pa = _pow2(g.stats[0])
    pb = _pow2(g.stats[1])
    ua = 0
    ub = 0
    for k in range(cuda.grid(1), g.n, cuda.gridsize(1)):
        r = _item(g, k)
        ua += _units(g.a[r], pa)
        ub += _units(g.b[r], pb)
    return ua, ub


@cuda.jit(cache=True)
def grid_units(x, y):
    """Each grid's ``units[0], units[1]``: the int64 unit sums ``T`` of ``a`` and ``b`` (:mod:`.fixed_point`)."""
    sh = cuda.shared.array((2, THREADS), dtype=int64)
    ua, ub = _units_of(x)
    _block_result(sh, ua, ub, 0, x.units, 0)
    ua, ub = _units_of(y)
    _block_result(sh, ua, ub, 0, y.units, 0)


@cuda.jit(device=True)
def add_top(q, k, c):
    """Pair ``k``'s positive coupling ``c`` into its query's top key and mass (:class:`QueryTops` ``q``):
    the one update of :func:`grid_round` and ``_pruning_kernels.query_tops``."""
    p = q.query_of_row[q.pi[k]]
    cuda.atomic.max(q.tops, p, q.bits[k] >> _KEY_SHIFT)
    cuda.atomic.add(q.totals, p, c)  # on the grid: exact in any order


@cuda.jit(device=True)
def _round(g, q, with_tops):
    sa = _step(g.stats[0], g.units[0])
    sb = _step(g.stats[1], g.units[1])
    if cuda.grid(1) == 0:
        g.stats[2] = sa
        g.stats[3] = sb
    ga = 0.0
    gb = 0.0
    for k in range(cuda.grid(1), g.n, cuda.gridsize(1)):
        r = _item(g, k)
        va = _grid(g.a[r], sa)
        vb = _grid(g.b[r], sb)
        g.oa[r] = va
        g.ob[r] = vb
        ga += va
        gb += vb
        if with_tops and va > 0.0:  # the rounded coupling's key: its bits, as this thread just wrote them
            add_top(q, r, va)
    return ga, gb


@cuda.jit(cache=True)
def grid_round(x, y, tops):
    """Each grid's items rounded into ``oa``, ``ob``, its steps into ``stats[2:4]`` and the rounded
    values' sums into ``sums[0:2]`` (exact: on-grid values); ``tops``: :class:`QueryTops` of ``y``'s."""
    sh = cuda.shared.array((2, THREADS), dtype=float64)
    ga, gb = _round(x, tops, False)
    _block_result(sh, ga, gb, 0, x.sums, 0)
    ga, gb = _round(y, tops, tops.on)
    _block_result(sh, ga, gb, 0, y.sums, 0)


@cuda.jit(cache=True)
def coupling_sums(pc, start, n, sums):
    """``sums[0]`` += the couplings ``pc[start:start+n]`` (on their grid: exact, in any order)."""
    sh = cuda.shared.array((2, THREADS), dtype=float64)
    c = 0.0
    for k in range(cuda.grid(1), n, cuda.gridsize(1)):
        c += pc[start + k]
    _block_result(sh, c, 0.0, 0, sums, 0)


@cuda.jit(device=True)
def first_best(shg, shi, gain, key):
    """``(gain, key)`` of the block: the largest ``gain`` > 0 of one per thread, on equal gains the lowest
    ``key`` (-1: none), in every thread: a tree in shared memory (``shg``, ``shi``: ``blockDim`` items),
    the same pick in any order. The features' pick (:func:`best_feature`) and a feature's thresholds'
    (``_split_kernels``)."""
    t = cuda.threadIdx.x
    shg[t] = gain
    shi[t] = key
    s = cuda.blockDim.x // 2
    while s > 0:
        cuda.syncthreads()
        if t < s:
            og = shg[t + s]
            oi = shi[t + s]
            if og > shg[t] or (oi >= 0 and og == shg[t] and (shi[t] < 0 or oi < shi[t])):
                shg[t] = og
                shi[t] = oi
        s //= 2
    cuda.syncthreads()
    best, k = shg[0], shi[0]
    cuda.syncthreads()  # the scratch free again for the caller
    return best, k


@cuda.jit(device=True)
def best_feature(per, gains, res, shg, shi):
    """The block's body of :func:`pick_best` (shared scratch ``shg``, ``shi`` of ``blockDim`` items);
    returns the chosen feature (-1: none). Also called by ``_search_kernels.search_nodes``."""
    t = cuda.threadIdx.x
    best = 0.0
    bi = -1
    for f in range(t, gains.shape[0], cuda.blockDim.x):
        if gains[f] > best:
            best = gains[f]
            bi = f
    _, f = first_best(shg, shi, best, bi)
    for k in range(t, SPLIT_SIZE, cuda.blockDim.x):
        res[k] = per[f, k] if f >= 0 else (-1.0 if k == SPLIT_FEATURE else 0.0)
    return f


@cuda.jit(cache=True)
def pick_best(per, gains, res):
    """One block: ``res`` = the record of the first feature with the strictly largest gain > 0 (the
    CPU's tie-breaking: the lowest feature), else zeros with feature -1. Each thread keeps the first
    best of its strided features, then a tree reduction keeps the larger gain, on equal gains the
    lower feature."""
    shg = cuda.shared.array(THREADS, dtype=float64)
    shi = cuda.shared.array(THREADS, dtype=int64)
    best_feature(per, gains, res, shg, shi)


@cuda.jit(device=True)
def last_block(done, flag):
    """Whether this block is the grid's last to get here (every thread of every block calls it once):
    each block fences its writes and takes a ticket from the counter ``done[0]`` (one atomic), so the
    last one sees every block's results (and fences again before reading them); ``flag`` is a one-int64
    shared array. The last block puts ``done[0]`` back to 0 for the next launch, so no launch clears it."""
    cuda.threadfence()  # this block's results are visible to every block before its ticket is taken
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        blocks = cuda.gridDim.x * cuda.gridDim.y * cuda.gridDim.z
        flag[0] = 1 if cuda.atomic.add(done, 0, 1) == blocks - 1 else 0
    cuda.syncthreads()
    if flag[0] == 0:
        return False
    cuda.threadfence()
    if cuda.threadIdx.x == 0:
        done[0] = 0
    return True

