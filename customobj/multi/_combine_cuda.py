"""numba.cuda kernels of ``MultiObjective``'s GPU round (``_round_route``): the round's sums over rows and
queries, and the combination of the per-label gradients, on the card.

The Gram matrix ``G_kl = sum_i g_k[i] g_l[i]`` and each label's loss ``sum_q L_k[q]`` are reduced in a
fixed order, so a round's numbers never depend on the launch or on timing (no atomics):

1. ``round_partials`` (one thread per chunk ``c``): the Gram entries over rows ``c ROW_CHUNK`` to
   ``(c + 1) ROW_CHUNK`` (the upper triangle, each entry's rows in order) and each label's losses over
   queries ``c QUERY_CHUNK`` onwards, in query order, into row ``c`` of ``partial``.
2. ``finish_sums`` (one thread per entry): the chunks' partials added in chunk order; an entry below
   the diagonal reads its mirror's, so the matrix is symmetric bit for bit.

A data set of at most ``QUERY_CHUNK`` queries has its losses in one chunk: summed in the CPU's order
(``_lambdarank_kernels._serial_sum``), the same bits. The Gram matrix is the CPU's BLAS product
(``grads @ grads.T``) to rounding: BLAS adds in an order of its own.

``add_weighted_rows`` adds ``_combine_kernels.weighted_row`` per row (the CPU's formula, the same bits);
``add_picked_rows`` adds each row's drawn label's entry ("stochastic", a label per query).
"""
from .._cuda_runtime import cuda_module, device_function
from ..objectives._block_cuda import grid_item
from . import _combine_kernels as K

cuda = cuda_module()

#: Rows per chunk of the Gram matrix's partial sums (``m^2 / 2`` products per row).
ROW_CHUNK = 256
#: Queries per chunk of the losses' partial sums: up to this many, one chunk, the CPU's serial order.
QUERY_CHUNK = 4096

_weighted_row = device_function(K.weighted_row)


@cuda.jit(cache=True)
def round_partials(parts, per_query, n_queries, with_gram, partial):
    """Chunk ``c``: ``partial[c, k m + l]`` (``l >= k``; 0 below the diagonal and without ``with_gram``)
    the products of labels ``k`` and ``l`` over its rows, ``partial[c, m^2 + k]`` label ``k``'s losses
    ``per_query[k, :n_queries]`` over its queries."""
    c = grid_item(partial.shape[0])
    if c < 0:
        return
    m = parts.shape[0]
    lo = c * ROW_CHUNK
    hi = min(parts.shape[1], lo + ROW_CHUNK)
    for k in range(m):
        for l in range(m):
            acc = 0.0
            if with_gram and l >= k:
                for i in range(lo, hi):
                    acc += parts[k, i] * parts[l, i]
            partial[c, k * m + l] = acc
    qlo = c * QUERY_CHUNK
    qhi = min(n_queries, qlo + QUERY_CHUNK)
    for k in range(m):
        acc = 0.0
        for q in range(qlo, qhi):
            acc += per_query[k, q]
        partial[c, m * m + k] = acc


@cuda.jit(cache=True)
def finish_sums(partial, m, out):
    """Entry ``e`` of ``out`` (``m^2`` Gram entries row by row, then ``m`` losses): the chunks' partials
    of the entry (of its mirror above the diagonal) added in chunk order."""
    e = grid_item(out.shape[0])
    if e < 0:
        return
    src = e
    if e < m * m:
        k = e // m
        l = e - k * m
        if l < k:
            src = l * m + k
    acc = 0.0
    for c in range(partial.shape[0]):
        acc += partial[c, src]
    out[e] = acc


@cuda.jit(cache=True)
def add_weighted_rows(parts, weights, out):
    """``out[i] += sum_k weights[k] parts[k, i]`` (the CPU's ``add_weighted``, row by row)."""
    i = grid_item(out.shape[0])
    if i >= 0:
        out[i] += _weighted_row(parts, weights, i)


@cuda.jit(cache=True)
def add_picked_rows(parts, draws, qid, out):
    """``out[i] += parts[draws[q], i]``, ``q`` row ``i``'s query (the CPU's ``add_picked``)."""
    i = grid_item(out.shape[0])
    if i >= 0:
        out[i] += parts[draws[qid[i]], i]


def chunks(n_rows: int, n_queries: int) -> int:
    """Chunks (threads of ``round_partials``) covering the rows and the queries (at least one)."""
    return max(1, -(-n_rows // ROW_CHUNK), -(-n_queries // QUERY_CHUNK))
