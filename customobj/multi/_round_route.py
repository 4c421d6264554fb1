"""``MultiObjective`` on the GPU for every method but "linear" (``MultiObjective.device_route``): the per-label
gradients stay on the card, one small read a round brings what the method's solve needs to the host.

A round:

1. each label's own GPU route adds its gradient and hessian into row ``k`` of ``(m, n)`` device
   buffers and, for a method that reads costs, its per-query losses into row ``k`` of ``(m, n_queries)``
   (``DeviceRoute.grad_hess_loss``; LambdaRank: ``objectives._lambdarank_loss_cuda``);
2. the Gram matrix of the gradients (the methods that read it) and each label's loss, summed on the card
   in a fixed order (``_combine_cuda``: per-chunk partials, then the chunks in order);
3. one blocking read of those ``m^2 + m`` numbers (``LaunchCount.reads``); the host solves the round with
   the CPU's own code (``MultiObjective._choose``: pooled over workers, the method's step, its smoothing,
   duals and fallbacks, the round recorded for ``fitted_attributes``);
4. the weights written back (``m`` numbers) and the combination on the card (``_combine_cuda``).

With pairs (``grad_hess_couplings``, ``TreeBooster(device="cuda", criterion="ole")``, every method, "linear"
included): each pairwise label's couplings are written right after its gradients (its route's ``couplings``,
which read its pair count; a composite's or ``Unbiased``'s fused ``grad_hess_couplings``: one read per
pairwise leaf), and after the solve the round's pairs, label after label (``_pairs_cuda``).

"stochastic" reads nothing (with pairs: their total): its per-query draws (the CPU's generator, the same draws) are written to the
card and each row takes its query's label. The recorded weights, costs and duals equal the CPU route's;
the costs to the bit for data of at most ``_combine_cuda.QUERY_CHUNK`` queries, the Gram matrix to
rounding (the CPU's is a BLAS product).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..objectives._composite_route import part_pairs
from ._weighted_route import label_data

__all__ = ["grad_hess", "grad_hess_couplings"]


def grad_hess(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any) -> None:
    """The route of :meth:`customobj.multi.MultiObjective.device_route` for every method but "linear"."""
    _round(obj, s, prep, data, g, h, None)


def grad_hess_couplings(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any, pair_buffer: Any) -> tuple:
    """The fused route (``DeviceRoute.grad_hess_couplings``, every method, "linear" included): the round of
    :func:`grad_hess`, each pairwise label's couplings written after its own gradient launches (its route's
    ``couplings``, into a buffer of its own), then the round's pairs ``(i, j, c)`` in ``pair_buffer``:
    each label's pairs times its weight, label after label (stochastic: the pairs of the queries that drew
    the label), as the CPU's ``MultiObjective._grad_hess_couplings`` (``_pairs_cuda``)."""
    return _round(obj, s, prep, data, g, h, pair_buffer)


def _round(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any, pair_buffer: Any) -> Any:
    from ..objectives._launch import LaunchCount, launch, zero
    from . import _combine_cuda as CM

    state = prep.state_for(obj)
    spec, m = obj._settings.spec, obj._settings.m
    n, nq = data.n_rows, data.n_queries
    grads = data.scratch("multi_grads", (m, n), np.float64)
    hess = data.scratch("multi_hess", (m, n), np.float64)
    per_query = data.scratch("multi_costs", (m, max(nq, 1)), np.float64)  # written whole by the cost routes
    zero(grads, hess)
    pairs: list = [None] * m
    for k, part in enumerate(obj.objectives):
        sub = state.preps[k]
        sub_data = label_data(prep, sub, data)
        # its gradients (and costs: device_route refused a loss without a GPU cost), its pairs right after them,
        # whose launches they read (a composite's or Unbiased's: their own fused driver; device_route offers
        # the fused route only when every pairwise label has pairs on the card)
        buffer = None if pair_buffer is None else (lambda size, k=k: data.pair_scratch(("multi_pairs", k), size))
        pairs[k] = part_pairs(part, s, sub, sub_data, grads[k], hess[k], buffer,
                              per_query[k] if spec.needs_costs else None)
    losses, gram = np.zeros(m), np.zeros((m, m))
    if spec.needs_costs or spec.needs_gram:
        partial = data.scratch("multi_partial", (CM.chunks(n, nq), m * m + m), np.float64)
        sums = data.scratch("multi_sums", (m * m + m,), np.float64)
        launch(CM.round_partials, partial.shape[0], grads, per_query, nq, bool(spec.needs_gram), partial)
        launch(CM.finish_sums, sums.size, partial, m, sums)
        LaunchCount.reads += 1  # the round's one blocking read: m^2 + m numbers
        got = sums.copy_to_host()
        gram = got[:m * m].reshape(m, m)
        if spec.needs_costs:
            losses = got[m * m:]
    weights, draws = obj._choose(prep, state, losses, gram)
    picked = None
    if draws is None:
        w = data.scratch("multi_weights", (m,), np.float64)
        w.copy_to_device(np.ascontiguousarray(weights, dtype=np.float64))
        for out, parts in ((g, grads), (h, hess)):
            launch(CM.add_weighted_rows, n, parts, w, out)
    else:
        picked = data.scratch("multi_draws", (max(nq, 1),), np.int64)
        picked.copy_to_device(np.resize(draws, max(nq, 1)))  # one query at least (0 rows: never read)
        for out, parts in ((g, grads), (h, hess)):
            launch(CM.add_picked_rows, n, parts, picked, data.qid, out)
    if pair_buffer is None:
        return None
    if picked is None:
        return _scaled_pairs(pairs, weights, pair_buffer)
    return _picked_pairs(data, pairs, picked, pair_buffer)


def _scaled_pairs(pairs: list, weights: np.ndarray, pair_buffer: Any) -> tuple:
    """Each label's pairs times its weight, label after label; a label of weight 0 left out (the CPU's
    booster drops zero couplings). Every count is known here: nothing is read."""
    from ..objectives import _pointwise_cuda as CW
    from ..objectives._launch import launch

    kept = [k for k, p in enumerate(pairs) if p is not None and weights[k] > 0.0]
    out = pair_buffer(sum(pairs[k][0].shape[0] for k in kept))
    base = 0
    for k in kept:
        size = pairs[k][0].shape[0]
        if size > 0:
            launch(CW.place_scaled, size, *pairs[k], float(weights[k]), base, *out)
        base += size
    return out


def _picked_pairs(data: Any, pairs: list, picked: Any, pair_buffer: Any) -> tuple:
    """"stochastic": each label's pairs in the queries that drew it, label after label; their chunks counted,
    scanned together in one block (``_lambdarank_cuda.scan_pairs``) and the total read: the round's one read."""
    from ..objectives import _lambdarank_cuda as CL
    from ..objectives._launch import LaunchCount, launch, scan_threads
    from . import _pairs_cuda as CP

    labels = [(k, p) for k, p in enumerate(pairs) if p is not None]
    segs = [CP.chunks(p[0].shape[0]) for _, p in labels]
    n_seg = sum(segs)
    if n_seg == 0:
        return pair_buffer(0)
    cuda = data.cuda  # the pair counts change from round to round: fresh (small) counts
    counts, offsets = cuda.device_array(n_seg, np.int64), cuda.device_array(n_seg + 1, np.int64)
    start = 0
    for (k, p), seg in zip(labels, segs):
        if seg > 0:
            launch(CP.count_picked, seg, p[0], picked, data.qid, k, counts[start:start + seg])
        start += seg
    LaunchCount.launches += 1
    CL.scan_pairs[1, scan_threads()](counts, n_seg, offsets)
    LaunchCount.reads += 1  # the total, to size the round's pair buffer
    out = pair_buffer(int(offsets[n_seg:n_seg + 1].copy_to_host()[0]))
    start = 0
    for (k, p), seg in zip(labels, segs):
        if seg > 0 and out[0].shape[0] > 0:
            launch(CP.place_picked, seg, *p, picked, data.qid, k, offsets[start:start + seg + 1], *out)
        start += seg
    return out
