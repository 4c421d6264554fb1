"""numba.cuda kernels of ``MultiObjective``'s pair couplings on the GPU (``_round_route.grad_hess_couplings``,
``TreeBooster(device="cuda", criterion="ole" | "ole_fast" | "ole_float64")``): each label's pairs, weighted
by the round's solve, written one label after the other into the round's pair buffer, as the CPU's
``objective._weighted_pairs`` concatenates them.

- Every method but "stochastic": label ``k``'s pairs ``(i, j, w_k c)`` from offset ``base``
  (``objectives._pointwise_cuda.place_scaled``, a thread per pair, which the composites' pairs share; the
  host knows every label's pair count, so nothing is counted or read). A label of weight 0 is left out, as
  the CPU's booster drops its zero couplings.
- "stochastic": the pairs of the queries that drew label ``k``, couplings unscaled. Counted per chunk of
  ``CHUNK`` pairs (``count_picked``), the chunks of all labels scanned together (label order, then
  chunk order) and placed from their offsets (``place_picked``): stable, so in the CPU's order.
"""
from .._cuda_runtime import cuda_module
from ..objectives._block_cuda import grid_item

cuda = cuda_module()

#: Pairs per thread of ``count_picked`` / ``place_picked`` (their result does not depend on it).
CHUNK = 1024


@cuda.jit(device=True)
def _chunk(s, n):
    lo = s * CHUNK
    return lo, min(n, lo + CHUNK)


@cuda.jit(cache=True)
def count_picked(pi, draws, qid, label, counts):
    """``counts[s]``: the pairs of chunk ``s`` whose query (its first row's) drew ``label``."""
    s = grid_item(counts.shape[0])
    if s < 0:
        return
    lo, hi = _chunk(s, pi.shape[0])
    c = 0
    for t in range(lo, hi):
        if draws[qid[pi[t]]] == label:
            c += 1
    counts[s] = c


@cuda.jit(cache=True)
def place_picked(pi, pj, pc, draws, qid, label, offsets, out_i, out_j, out_c):
    """Chunk ``s``: the pairs ``count_picked`` counts, in order, from ``offsets[s]``."""
    s = grid_item(offsets.shape[0] - 1)
    if s < 0:
        return
    lo, hi = _chunk(s, pi.shape[0])
    t = offsets[s]
    for k in range(lo, hi):
        if draws[qid[pi[k]]] == label:
            out_i[t] = pi[k]
            out_j[t] = pj[k]
            out_c[t] = pc[k]
            t += 1


def chunks(m: int) -> int:
    """Chunks of :data:`CHUNK` pairs covering ``m`` pairs."""
    return (m + CHUNK - 1) // CHUNK
