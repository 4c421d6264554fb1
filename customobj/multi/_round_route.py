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

"stochastic" reads nothing: its per-query draws (the CPU's generator, the same draws) are written to the
card and each row takes its query's label. The recorded weights, costs and duals equal the CPU route's;
the costs to the bit for data of at most ``_combine_cuda.QUERY_CHUNK`` queries, the Gram matrix to
rounding (the CPU's is a BLAS product).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._weighted_route import label_data

__all__ = ["grad_hess"]


def grad_hess(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any) -> None:
    """The route of :meth:`customobj.multi.MultiObjective.device_route` for every method but "linear"."""
    from ..objectives._launch import LaunchCount, launch, zero
    from . import _combine_cuda as CM

    state = prep.state_for(obj)
    spec, m = obj._settings.spec, obj._settings.m
    n, nq = data.n_rows, data.n_queries
    grads = data.scratch("multi_grads", (m, n), np.float64)
    hess = data.scratch("multi_hess", (m, n), np.float64)
    per_query = data.scratch("multi_costs", (m, max(nq, 1)), np.float64)  # written whole by the cost routes
    zero(grads, hess)
    for k, part in enumerate(obj.objectives):
        sub = state.preps[k]
        sub_data = label_data(prep, sub, data)
        sub.state_for(part)
        route = part.device_route()
        if spec.needs_costs:
            assert route.grad_hess_loss is not None  # device_route refused a loss without one
            route.grad_hess_loss(part, s, sub, sub_data, grads[k], hess[k], per_query[k])
        else:
            route.grad_hess(part, s, sub, sub_data, grads[k], hess[k])
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
