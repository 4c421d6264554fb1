"""numba.cuda reductions of the OLE grower: the grid of :mod:`.fixed_point` computed on the
card, exact sums of on-grid values (:func:`block_sums`, also the partitions' totals) and the best
split across features.

Every kernel is a grid-stride loop (any grid size gives the same result), then a tree reduction
in shared memory (``THREADS`` per block, a power of two), then one atomic per block. The atomics do
not make the results depend on the order the blocks finish in: a maximum is order-free, int64
additions are exact, and the float64 sums here add values already on their grid
(:mod:`.fixed_point`), whose every partial sum is exact. A sum of ``n`` items costs one read each
and one atomic per block: no thread walks more than ``n / (blocks x THREADS)`` items.

Per array pair ``(a, b)`` (a tree's gradients and hessians, or its couplings twice), the grid
takes three launches (its accumulators zeroed before: a tree's row of the backend's ring):
:func:`grid_max` (``stats[0:2]``: ``max |a|``, ``max |b|``; a tree's first also clears the pool's
histograms), :func:`grid_units` (``units``: the int64 unit sums ``T``) and :func:`grid_round`
(the values rounded, ``stats[2:4]``: the grid steps, ``sums``: their exact sums). Items are
``a[idx[k]]`` with ``use_idx`` (a node's rows), else ``a[k]``.
"""
from numba import float64, int64

from .._cuda_runtime import THREADS, cuda_module, device_function
from .common import SPLIT_FEATURE, SPLIT_SIZE
from .fixed_point import fold_abs_max, grid_step, magnitude_units, pow2_at_least, to_grid

cuda = cuda_module()

__all__ = ["grid_max", "grid_units", "grid_round", "coupling_sums", "pick_best", "best_feature",
           "block_sums", "last_block"]

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


@cuda.jit(cache=True)
def grid_max(a, b, idx, use_idx, n, stats, clear):
    """``stats[0] = max |a|``, ``stats[1] = max |b|`` over the items (``stats`` reset to 0 first);
    ``clear[:] = 0`` on the way (a tree's first launch clears the pool's histograms: no launch of
    their own; empty: nothing)."""
    sh = cuda.shared.array((2, THREADS), dtype=float64)
    for i in range(cuda.grid(1), clear.shape[0], cuda.gridsize(1)):
        clear[i] = 0.0
    ma = 0.0
    mb = 0.0
    for k in range(cuda.grid(1), n, cuda.gridsize(1)):
        r = idx[k] if use_idx else k
        ma = _fold(ma, a[r])
        mb = _fold(mb, b[r])
    _block_result(sh, ma, mb, 1, stats, 0)


@cuda.jit(cache=True)
def grid_units(a, b, idx, use_idx, n, stats, units):
    """``units[0], units[1]``: the int64 unit sums ``T`` of ``a`` and ``b`` (:mod:`.fixed_point`)."""
    sh = cuda.shared.array((2, THREADS), dtype=int64)
    pa = _pow2(stats[0])
    pb = _pow2(stats[1])
    ua = 0
    ub = 0
    for k in range(cuda.grid(1), n, cuda.gridsize(1)):
        r = idx[k] if use_idx else k
        ua += _units(a[r], pa)
        ub += _units(b[r], pb)
    _block_result(sh, ua, ub, 0, units, 0)


@cuda.jit(cache=True)
def grid_round(a, b, idx, use_idx, n, stats, units, oa, ob, sums):
    """``oa[r], ob[r]``: ``a[r], b[r]`` on their grids (in place when ``oa is a``); ``stats[2:4]``: the
    grid steps; ``sums[0:2]``: the rounded values' sums (exact: on-grid values, ``sums`` reset first)."""
    sh = cuda.shared.array((2, THREADS), dtype=float64)
    sa = _step(stats[0], units[0])
    sb = _step(stats[1], units[1])
    if cuda.grid(1) == 0:
        stats[2] = sa
        stats[3] = sb
    ga = 0.0
    gb = 0.0
    for k in range(cuda.grid(1), n, cuda.gridsize(1)):
        r = idx[k] if use_idx else k
        va = _grid(a[r], sa)
        vb = _grid(b[r], sb)
        oa[r] = va
        ob[r] = vb
        ga += va
        gb += vb
    _block_result(sh, ga, gb, 0, sums, 0)


@cuda.jit(cache=True)
def coupling_sums(pc, start, n, sums):
    """``sums[0]`` += the couplings ``pc[start:start+n]`` (on their grid: exact, in any order)."""
    sh = cuda.shared.array((2, THREADS), dtype=float64)
    c = 0.0
    for k in range(cuda.grid(1), n, cuda.gridsize(1)):
        c += pc[start + k]
    _block_result(sh, c, 0.0, 0, sums, 0)


@cuda.jit(device=True)
def best_feature(per, gains, res, shg, shi):
    """The block's body of :func:`pick_best` (shared scratch ``shg``, ``shi`` of ``blockDim`` items);
    returns the chosen feature (-1: none). Also called by ``_cuda_node_kernels.search_nodes``."""
    t = cuda.threadIdx.x
    best = 0.0
    bi = -1
    for f in range(t, gains.shape[0], cuda.blockDim.x):
        if gains[f] > best:
            best = gains[f]
            bi = f
    shg[t] = best
    shi[t] = bi
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
    f = shi[0]
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

