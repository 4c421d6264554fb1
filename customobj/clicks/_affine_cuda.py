"""numba.cuda kernel of the affine correction (Vardasbi, Oosterhuis, de Rijke, CIKM 2020): the GPU
driver of ``_affine_kernels.affine_pairs``, calling the CPU's own per-pair scalar math
(``pair_multiplier``, ``pair_factor``, ``pair_lambda``, ``norm_factor``, ``pair_step``) via
``device_function``. The route that launches it is ``_affine_route``.

``affine_queries`` runs a block per query (``objectives._block_cuda.QUERY_THREADS``, one warp;
``_launch.launch_per_segment``) and a thread per row, as LambdaRank's ``pair_rows`` does (issue 42, item 2): a one-thread-per-query loop
over a query's ``n (n - 1) / 2`` pairs made the longest session set the launch's time (``O(n^2)``
serial steps); a row's walk is ``O(n)``. A pair adds to both of its rows, so each of its two rows
computes it (twice the pair math, no atomics), and each row adds its own terms in the CPU's order:

1. the ranks (a LambdaRank record): each thread counts its rows' places by descending score, ties by
   row order (the CPU's stable argsort), ``O(n)`` a row;
2. the norm's sum ``S`` (``norm``): each row's part (its pairs with the rows after it, in order), then
   the parts in row order by the block's first thread (``add_staged``): the CPU's order
   (``query_pairs``), so ``S`` is its bits;
3. the terms: row ``r`` starts from its gradient and hessian as they are, adds its pairs with the rows
   before it (as their lower row, ``-g``), then with the rows after it (``+g``; it writes these pairs'
   couplings), each in row order: the order ``query_pairs`` adds them into that row;
4. with ``with_loss`` (``MultiObjective``'s per-label GPU cost, ``_affine_route.grad_hess_loss``): each
   row's loss terms of its pairs with the rows after it, then those parts in row order by thread 0
   (``add_staged``), written to ``per_query[q]``: ``query_pairs``' order, its bits.

The running sums a thread keeps in registers use ``add_rn`` (``__nv_dadd_rn`` on a card): numba-cuda
would fuse ``acc += m * x`` into an ``fma``, which the CPU does not round the same. No atomics, float64,
results independent of the launch; the CPU's bits up to the device's ``exp`` / ``log``.
"""
from numba import float64

from .._cuda_runtime import cuda_module, device_function
from ..objectives._block_cuda import QUERY_THREADS, add_rn, add_staged, broadcast, query_block
from ..objectives._lambdarank_cuda import rank_in_query
from . import _affine_kernels as AK

cuda = cuda_module()

_multiplier, _pair_lambda = device_function(AK.pair_multiplier), device_function(AK.pair_lambda)
_norm_factor, _pair_step = device_function(AK.norm_factor), device_function(AK.pair_step)


@cuda.jit(device=True)
def _rank_rows(scores, a, n, rank):
    """``rank[a + r]``: the 0-based rank of row ``r`` of the query by descending score, ties by row
    order, by the block's threads (a row each in turn); then a barrier (the walks read every rank)."""
    for r in range(cuda.threadIdx.x, n, cuda.blockDim.x):
        rank[a + r] = rank_in_query(scores, False, scores, a, a + n, a + r)
    cuda.syncthreads()


@cuda.jit(device=True)
def _lambda_part(loss, rows, rank, a, n, r):
    """Row ``r``'s part of the query's norm sum ``S``: the lambdas with unit estimates of its pairs with
    the rows after it, in row order (``query_pairs``' inner loop)."""
    part = 0.0
    for jj in range(r + 1, n):
        m = _multiplier(loss, rows, rank, a, a, r, jj)
        if m != 0.0:
            part = add_rn(part, _pair_lambda(loss, m, rows.scores[a + r] - rows.scores[a + jj], 1.0, 1.0))
    return part


@cuda.jit(device=True)
def _norm(sh, loss, rows, rank, a, n):
    """The query's norm factor ``log2(1 + S) / S`` in every thread: the rows' parts staged a block's
    width at a time and added in row order by thread 0 (``add_staged``)."""
    total = 0.0
    for r0 in range(0, n, cuda.blockDim.x):
        r = r0 + cuda.threadIdx.x
        sh[cuda.threadIdx.x] = _lambda_part(loss, rows, rank, a, n, r) if r < n else 0.0
        total = add_staged(sh, total, min(cuda.blockDim.x, n - r0))
    return broadcast(sh, _norm_factor(loss, total))


@cuda.jit(device=True)
def _row_terms(loss, rows, rank, a, n, r, f, p, out):
    """Row ``r``'s terms at norm factor ``f`` added into its gradient and hessian, in ``query_pairs``'
    order: its pairs with the rows before it (the lower row: ``-g``), then with the rows after it (the
    upper row: ``+g``, their couplings written from ``out.c[p]``, 0 for a pair of factor 0). Returns the
    loss terms of the pairs with the rows after it, added in row order (``query_pairs``' row part)."""
    scores, rhat = rows.scores, rows.rhat
    part = 0.0
    i = a + r
    g = out.grad[i]
    h = out.hess[i]
    for ii in range(r):
        m = _multiplier(loss, rows, rank, a, a, ii, r) * f
        if m != 0.0:
            gp, hp, _ = _pair_step(loss, m, scores[a + ii] - scores[i], rhat[a + ii], rhat[i])
            g = add_rn(g, -gp)
            h = add_rn(h, hp)
    for jj in range(r + 1, n):
        m = _multiplier(loss, rows, rank, a, a, r, jj) * f
        c = 0.0
        if m != 0.0:
            gp, c, cost = _pair_step(loss, m, scores[i] - scores[a + jj], rhat[i], rhat[a + jj])
            g = add_rn(g, gp)
            h = add_rn(h, c)
            part = add_rn(part, cost)
        out.c[p] = c
        p += 1
    out.grad[i] = g
    out.hess[i] = h
    return part


@cuda.jit(device=True)
def _pair_start(pair_ptr, q, n, r):
    """Where row ``r``'s pairs with the rows after it start: the pairs before them, sum over ii < r of (n - 1 - ii)."""
    return pair_ptr[q] + r * n - r * (r + 1) // 2


@cuda.jit(cache=True)
def affine_queries(rows, ptr, pair_ptr, loss, rank, out, with_loss, per_query):
    """Block ``q`` (a thread per row): ``_affine_kernels.affine_pairs`` of query ``q``'s pairs (``rows``: an
    ``AffineRows`` record) into ``out`` (a ``PairOutputs`` record: gradients and hessians added,
    ``c[pair_ptr[q]:pair_ptr[q + 1]]`` written, each pair's coupling, 0 for a pair of factor 0).
    ``rank``: a row's scratch (written and read only for a LambdaRank record). With ``with_loss``, the
    query's loss written to ``per_query[q]`` (``query_pairs``' order: the rows' parts in row order);
    without, ``per_query`` is not touched."""
    sh = cuda.shared.array(QUERY_THREADS, dtype=float64)
    q, a, b = query_block(ptr)
    if q < 0:
        return  # the whole block: no thread reaches a barrier
    n = b - a
    if loss.lambdarank:
        _rank_rows(rows.scores, a, n, rank)
    f = _norm(sh, loss, rows, rank, a, n) if loss.norm else 1.0
    if not with_loss:
        for r in range(cuda.threadIdx.x, n, cuda.blockDim.x):
            _row_terms(loss, rows, rank, a, n, r, f, _pair_start(pair_ptr, q, n, r), out)
        return
    total = 0.0  # every thread takes every step: the staged sums' barriers
    for r0 in range(0, n, cuda.blockDim.x):
        r = r0 + cuda.threadIdx.x
        sh[cuda.threadIdx.x] = _row_terms(loss, rows, rank, a, n, r, f, _pair_start(pair_ptr, q, n, r), out) \
            if r < n else 0.0
        total = add_staged(sh, total, min(cuda.blockDim.x, n - r0))
    if cuda.threadIdx.x == 0:
        per_query[q] = total
