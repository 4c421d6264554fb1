"""numba.cuda kernel of the affine correction (Vardasbi, Oosterhuis, de Rijke, CIKM 2020): the GPU
driver of ``_affine_kernels.affine_pairs``, calling the CPU's own per-pair scalar math
(``pair_factor``, ``pair_lambda``, ``norm_factor``, ``pair_step``, through ``device_function``). The
route that launches it is ``_affine_route``.

``affine_queries`` runs one thread per query, not a block: each row's gradient and hessian receive
their pairs' terms in the CPU's order (pair ``(i, j)`` adds to both rows, so a thread per pair or
per row would need atomics, whose order is not the CPU's), and the query's norm sum ``S`` is the
CPU's running sum over its pairs in order (a block's tree reduction differs in the last bits, and
LambdaRank's ranks of tied scores turn such a bit into another ranking some rounds later, as
``_cuda_unbiased`` found). So the results are the CPU's bit for bit up to the device's ``exp`` /
``log``. No atomics, float64, results independent of the launch.
"""
from .._cuda_runtime import cuda_module, device_function
from . import _affine_kernels as AK

cuda = cuda_module()

_pair_factor, _pair_lambda = device_function(AK.pair_factor), device_function(AK.pair_lambda)
_norm_factor, _pair_step = device_function(AK.norm_factor), device_function(AK.pair_step)


@cuda.jit(device=True)
def _ranks(scores, a, n, rank):
    """``rank[a + r]``: the 0-based rank of row ``r`` of the query by descending score, ties by row
    order (the CPU's stable argsort of ``-scores``), by counting the rows ranked above it."""
    for r in range(n):
        s = scores[a + r]
        above = 0
        for t in range(n):
            u = scores[a + t]
            if u > s or (u == s and t < r):
                above += 1
        rank[a + r] = above


@cuda.jit(device=True)
def _pair_mass(loss, scores, rank, w, use_w, a, ii, jj):
    """``_affine_kernels._pair_mass`` with the ranks at the query's offset ``a``."""
    i = a + ii
    j = a + jj
    m = loss.scale * _pair_factor(loss, rank[i], rank[j])
    if use_w:
        m *= 0.5 * w[i] + 0.5 * w[j]
    return m, scores[i] - scores[j]


@cuda.jit(cache=True)
def affine_queries(scores, ptr, pair_ptr, rhat, w, use_w, loss, rank, out_grad, out_hess, out_c):
    """One thread per query: ``_affine_kernels.affine_pairs`` of its pairs into ``out_grad`` /
    ``out_hess`` (added) and ``out_c[pair_ptr[q]:pair_ptr[q + 1]]`` (written: each pair's coupling, 0
    for a pair of factor 0). ``rank``: a row's scratch (read only for a LambdaRank record)."""
    q = cuda.grid(1)
    if q >= ptr.shape[0] - 1:
        return
    a = ptr[q]
    n = ptr[q + 1] - a
    if loss.lambdarank:
        _ranks(scores, a, n, rank)
    total = 0.0
    if loss.norm:
        for ii in range(n):
            for jj in range(ii + 1, n):
                m, d = _pair_mass(loss, scores, rank, w, use_w, a, ii, jj)
                if m != 0.0:
                    total += _pair_lambda(loss, m, d, rhat[a + ii], rhat[a + jj])
    f = _norm_factor(loss, total)
    p = pair_ptr[q]
    for ii in range(n):
        for jj in range(ii + 1, n):
            m, d = _pair_mass(loss, scores, rank, w, use_w, a, ii, jj)
            m *= f
            out_c[p] = 0.0
            p += 1
            if m == 0.0:
                continue
            i = a + ii
            j = a + jj
            g, h, _ = _pair_step(loss, m, d, rhat[i], rhat[j])
            out_grad[i] += g
            out_grad[j] -= g
            out_hess[i] += h
            out_hess[j] += h
            out_c[p - 1] = h

