"""The composites' GPU routes (``Sum``, ``Scaled``: their ``device_route()``): each part's own route
into the same outputs, or into scratch then scaled (kernels: ``_pointwise_cuda``). See ``_launch`` for
what a route is.

Their costs (``DeviceRoute.grad_hess_loss``, ``MultiObjective``'s per-label GPU costs): a query's cost is
the same combination of the parts' costs of that query. The CPU combines the parts' totals
(``Sum._grad_hess_loss``: ``sum_k L_k``; ``Scaled``: ``c L``), the card the per-query costs
(``sum_q sum_k L_kq``, ``sum_q c L_q``): equal to rounding, each addition and product within half an ulp.

Their pair couplings (``DeviceRoute.grad_hess_couplings``: ``TreeBooster(device="cuda", criterion="ole")``,
and a composite label of ``MultiObjective``): as the CPU's ``Sum._grad_hess_couplings`` /
``Scaled._grad_hess_couplings``, each part's pairs written right after its own gradient launches (a part's
coupling kernels read the per-query scratch its gradient launches leave, which the next part of the same
family overwrites: so a fused driver, not ``couplings`` after all the parts' gradients). A ``Sum``'s pairs
are the parts' concatenated in part order (a pair in two parts appears twice; a lone pairwise part writes
straight into the caller's buffer), a ``Scaled``'s its child's times ``factor`` in place
(``_pointwise_cuda.place_scaled``): the CPU's ``factor * c``, so nested factors multiply in the CPU's
order. Each leaf's pairs are what its own route writes (a listed-pair loss: those of coupling > 0, which
the CPU booster keeps). Nothing more is read than each pairwise leaf's own pair count.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .._validation import check_pair_budget
from ._launch import PairBuffer, flat, launch, zero


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


def part_pairs(part: Any, s: Any, prep: Any, data: Any, g: Any, h: Any, pair_buffer: Optional[PairBuffer],
               per_query: Any = None) -> Optional[tuple]:
    """A part's gradients added into ``g`` / ``h`` (with ``per_query``: its ``grad_hess_loss``, each query's
    cost written there), then, for a pairwise part when ``pair_buffer`` is given, its pairs ``(i, j, c)``
    written to ``pair_buffer`` right after its own launches (its fused ``grad_hess_couplings`` where it has
    one); ``None`` for a pointwise part or without ``pair_buffer``. ``MultiObjective``'s labels take this too
    (``multi._round_route``)."""
    prep.state_for(part)
    route = part.device_route()
    wants_pairs = pair_buffer is not None and part.pairwise
    if wants_pairs and route.grad_hess_couplings is not None:  # a composite, Unbiased: its own fused driver
        extra = () if per_query is None else (per_query,)
        return route.grad_hess_couplings(part, s, prep, data, g, h, pair_buffer, *extra)
    if per_query is None:
        route.grad_hess(part, s, prep, data, g, h)
    else:
        route.grad_hess_loss(part, s, prep, data, g, h, per_query)
    if not wants_pairs:
        return None
    assert route.couplings is not None  # couplings_reason(part) is None: the composite's device_route said so
    return route.couplings(part, s, prep, data, pair_buffer)


def concat_pairs(pieces: list, pair_buffer: PairBuffer, what: str) -> tuple:
    """``pieces`` (device pairs) one after the other in ``pair_buffer``, copied (``place_scaled`` times 1.0:
    the same bits) from their offsets; every count is known here, nothing is read. The joined list honours
    the CPU's pair budget (``what`` names it)."""
    from . import _pointwise_cuda as CW

    sizes = [int(p[0].shape[0]) for p in pieces]
    check_pair_budget(sum(sizes), what, hint="use fewer pairwise parts, or smaller queries")
    out = pair_buffer(sum(sizes))
    base = 0
    for piece, size in zip(pieces, sizes):
        if size > 0:
            launch(CW.place_scaled, size, *piece, 1.0, base, *out)
        base += size
    return out


def sum_parts_couplings(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any, pair_buffer: PairBuffer,
                        per_query: Any = None) -> tuple:
    """``Sum``'s ``grad_hess_couplings``: each part into the same outputs (its per-query costs added in part
    order, as :func:`sum_parts_loss`, when ``per_query`` is given), its pairs right after it; the parts' pairs
    concatenated in part order (one pairwise part: straight into ``pair_buffer``)."""
    from . import _pointwise_cuda as CW

    pairwise = [n for n, part in enumerate(obj.parts) if part.pairwise]
    if per_query is not None:
        zero(per_query)
    pieces = []
    for n, part in enumerate(obj.parts):
        buffer = pair_buffer if len(pairwise) == 1 else (lambda m, n=n: data.pair_scratch(("sum_pairs", obj, n), m))
        pq = None if per_query is None else data.scratch(("composite_loss", (obj, n)), per_query.shape, np.float64)
        got = part_pairs(part, s, prep, data, g, h, buffer if part.pairwise else None, pq)
        if pq is not None:
            launch(CW.add_scaled, per_query.shape[0], per_query, pq, 1.0)
        if got is not None:
            pieces.append(got)
    if len(pieces) == 1:
        return pieces[0]
    return concat_pairs(pieces, pair_buffer, "pair_couplings of a Sum")


def scaled_couplings(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any, pair_buffer: PairBuffer,
                     per_query: Any = None) -> tuple:
    """``Scaled``'s ``grad_hess_couplings``: the child's gradients into scratch (``out += factor * scratch``,
    as :func:`scaled`; ``per_query = factor * `` the child's per-query costs, as :func:`scaled_loss`), its
    pairs into ``pair_buffer``, their couplings then times ``factor`` in place."""
    from . import _pointwise_cuda as CW

    child = obj.objective
    cg = data.scratch(("scaled_grad", obj), g.shape, np.float64)
    ch = data.scratch(("scaled_hess", obj), h.shape, np.float64)
    zero(cg, ch)
    if per_query is None:
        pairs = part_pairs(child, s, prep, data, cg, ch, pair_buffer)
    else:
        zero(per_query)
        pq = data.scratch(("composite_loss", obj), per_query.shape, np.float64)
        pairs = part_pairs(child, s, prep, data, cg, ch, pair_buffer, pq)
        launch(CW.add_scaled, per_query.shape[0], per_query, pq, obj.factor)
    for dst, src in ((g, cg), (h, ch)):
        launch(CW.add_scaled, dst.size, flat(dst), flat(src), obj.factor)
    assert pairs is not None  # Scaled is pairwise when its child is
    if pairs[0].shape[0] > 0:
        launch(CW.place_scaled, pairs[0].shape[0], *pairs, obj.factor, 0, *pairs)
    return pairs
