"""numba.cuda kernels of LambdaRank's loss beside its gradients (``LambdaRank.device_route().grad_hess_loss``):
the cost ``MultiObjective``'s cost-reading methods read each round on the GPU, the CPU's GRAD_LOSS
(``_lambdarank_kernels.lambdarank_grad_hess_loss``) query by query, with the same bits.

Two launches after the five of the gradients (``_lambdarank_cuda``), reading the scratch they left:

1. ``loss_rows`` (one thread per row, as the upper position ``a`` of its pairs): the sum over its lower
   positions ``b`` in increasing order of ``w_ab |dZ_ab| softplus(-sigma d_ab)``, each pair's softplus
   from the CPU's table (``_lambdarank_terms.softplus_sorted``), ``|dZ|`` damped as the gradient's.
2. ``loss_queries`` (one thread per query): the upper positions' sums added in position order, times
   the query's norm factor (``finish_queries``' ``factor[0]``, the CPU's bits).

The CPU's GRAD_LOSS sums each upper row's pairs first in the same way (``_lambdarank_pass``), so a
query's cost equals the CPU's bit for bit wherever the gradients do. The pairs are walked a second
time here (not inside ``pair_rows``) so that the gradient-only pass pays nothing for the loss.
"""
from .._cuda_runtime import cuda_module, device_function
from . import _lambdarank_terms as LT
from ._lambdarank_cuda import Q_LIM, S, _cut, _pair_dz, _pair_parts
from ._block_cuda import grid_item

cuda = cuda_module()

_softplus_sorted = device_function(LT.softplus_sorted)


@cuda.jit(cache=True)
def loss_rows(inp, pos, F, Q, out):
    """Row ``i`` at sorted position ``a``: ``out[start + a]`` = its pairs' losses with the lower
    positions, summed in position order (0 past the truncation, the last position, a skipped query)."""
    i = grid_item(inp.qid.shape[0])
    if i < 0:
        return
    c = _cut(inp, inp.qid[i], F, Q)
    a = pos[i]
    total = 0.0
    if c.lim >= 0 and a < c.lim:
        zscale = inp.sigma * (1.0 / LT.SOFTPLUS_STEP)  # the CPU's per-pass expression: the same bits
        for b in range(a + 1, c.n):
            dz = _pair_dz(inp, F, c, a, b)
            if dz == 0.0:
                continue  # the CPU adds an exact 0 for it
            sg, _, dz, _, pw, _ = _pair_parts(inp, F, c, a, b, dz)
            total += pw * dz * _softplus_sorted(F[S, c.start + a] - F[S, c.start + b], sg > 0.0, inp.sigma, zscale)
    out[c.start + a] = total


@cuda.jit(cache=True)
def loss_queries(inp, Q, factor, rows, per_query):
    """Query ``q``: ``per_query[q]`` = its upper positions' ``rows`` added in position order, times its
    norm factor (0 for a skipped query)."""
    q = grid_item(inp.ptr.shape[0] - 1)
    if q < 0:
        return
    total = 0.0
    if Q[Q_LIM, q] >= 0:
        start = inp.ptr[q]
        for a in range(min(inp.ptr[q + 1] - start - 1, Q[Q_LIM, q])):
            total += rows[start + a]
    per_query[q] = total * factor[0, q]
