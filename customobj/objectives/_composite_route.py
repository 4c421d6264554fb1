"""The composites' GPU routes (``Sum``, ``Scaled``: their ``device_route()``): each part's own route
into the same outputs, or into scratch then scaled (kernels: ``_pointwise_cuda``). See ``_launch`` for
what a route is.

Their costs (``DeviceRoute.grad_hess_loss``, ``MultiObjective``'s per-label GPU costs): a query's cost is
the same combination of the parts' costs of that query. The CPU combines the parts' totals
(``Sum._grad_hess_loss``: ``sum_k L_k``; ``Scaled``: ``c L``), the card the per-query costs
(``sum_q sum_k L_kq``, ``sum_q c L_q``): equal to rounding, each addition and product within half an ulp.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._launch import flat, launch, zero


def sum_parts(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any) -> None:
    """``Sum``: each part's route adds into the same outputs."""
    for part in obj.parts:
        prep.state_for(part)
        part.device_route().grad_hess(part, s, prep, data, g, h)


def scaled(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any) -> None:
    """``Scaled``: the child's route into scratch, then ``out += factor * scratch``."""
    from . import _pointwise_cuda as CW

    child = obj.objective
    prep.state_for(child)
    cg = data.scratch(("scaled_grad", obj), g.shape, np.float64)  # equal Scaled parts run one after the other
    ch = data.scratch(("scaled_hess", obj), h.shape, np.float64)
    zero(cg, ch)
    child.device_route().grad_hess(child, s, prep, data, cg, ch)
    for dst, src in ((g, cg), (h, ch)):
        launch(CW.add_scaled, dst.size, flat(dst), flat(src), obj.factor)


def _part_loss(key: Any, route: Any, part: Any, s: Any, prep: Any, data: Any, g: Any, h: Any, per_query: Any,
               factor: float) -> None:
    """``per_query += factor * (the part's per-query costs)``, the part's gradients added by its own ``route``
    (its ``grad_hess_loss``) into ``g`` / ``h``."""
    from . import _pointwise_cuda as CW

    prep.state_for(part)
    pq = data.scratch(("composite_loss", key), per_query.shape, np.float64)
    route(part, s, prep, data, g, h, pq)
    launch(CW.add_scaled, per_query.shape[0], per_query, pq, factor)


def sum_parts_loss(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any, per_query: Any) -> None:
    """``Sum``'s ``grad_hess_loss``: each part's into the same outputs, its per-query costs added in part order."""
    zero(per_query)
    for n, part in enumerate(obj.parts):
        _part_loss((obj, n), part.device_route().grad_hess_loss, part, s, prep, data, g, h, per_query, 1.0)


def scaled_loss(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any, per_query: Any) -> None:
    """``Scaled``'s ``grad_hess_loss``: the child's into scratch, then ``out += factor * scratch`` and
    ``per_query = factor * (the child's per-query costs)``."""
    from . import _pointwise_cuda as CW

    child = obj.objective
    cg = data.scratch(("scaled_grad", obj), g.shape, np.float64)
    ch = data.scratch(("scaled_hess", obj), h.shape, np.float64)
    zero(cg, ch, per_query)
    _part_loss(obj, child.device_route().grad_hess_loss, child, s, prep, data, cg, ch, per_query, obj.factor)
    for dst, src in ((g, cg), (h, ch)):
        launch(CW.add_scaled, dst.size, flat(dst), flat(src), obj.factor)
