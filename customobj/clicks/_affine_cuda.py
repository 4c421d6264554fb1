"""numba.cuda kernel of the affine correction (Vardasbi, Oosterhuis, de Rijke, CIKM 2020): the GPU
driver of ``_affine_kernels.affine_pairs``, calling the CPU's own per-query function ``query_pairs``
(and through it the per-pair scalar math ``pair_factor``, ``pair_lambda``, ``norm_factor``,
``pair_step``) via ``device_function``. The route that launches it is ``_affine_route``.

``affine_queries`` runs one thread per query, not a block, for three reasons: it then runs the CPU's
own per-query source (one definition of the loop, the weights and the norm); the query's norm sum
``S`` must be the CPU's running sum over its pairs in order (a block's tree reduction differs in the
last bits, and LambdaRank's ranks of tied scores turn such a bit into another ranking some rounds
later, as ``_unbiased_cuda`` found), so a block would wait on one thread for it anyway; and a pair
adds to both of its rows, so threads per pair would need atomics (an order that is not the CPU's),
and threads per row would compute every pair twice. The results are the CPU's bit for bit up to the
device's ``exp`` / ``log``. No atomics, float64, results independent of the launch. A block per
query (rows split over its threads, the ranks counted in parallel) is the next step if the
quadratic per-query loop of long sessions shows in profiles.
"""
from .._cuda_runtime import cuda_module, device_function
from . import _affine_kernels as AK

cuda = cuda_module()

_query_pairs = device_function(AK.query_pairs)


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


@cuda.jit(cache=True)
def affine_queries(rows, ptr, pair_ptr, loss, rank, out):
    """One thread per query: ``_affine_kernels.affine_pairs`` of its pairs (``rows``: an
    ``AffineRows`` record) into ``out`` (a ``PairOutputs`` record: gradients and hessians added,
    ``c[pair_ptr[q]:pair_ptr[q + 1]]`` written, each pair's coupling, 0 for a pair of factor 0).
    ``rank``: a row's scratch (read only for a LambdaRank record)."""
    q = cuda.grid(1)
    if q >= ptr.shape[0] - 1:
        return
    a = ptr[q]
    n = ptr[q + 1] - a
    if loss.lambdarank:
        _ranks(rows.scores, a, n, rank)
    _query_pairs(loss, rows, rank, a, a, n, pair_ptr[q], out, 0.0)
