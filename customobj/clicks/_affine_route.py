"""``Affine``'s GPU route (``Affine.device_route()``): the affine-corrected pair terms on the device
(kernel: ``_affine_cuda.affine_queries``, a block per query, a thread per row), and its pair couplings
for ``TreeBooster(device="cuda")``'s OLE criteria.

Per round, for each leaf of the wrapped loss, in the CPU's order (``Affine._run``): a pairwise leaf
(its ``AffinePairLoss`` record) adds its terms into the outputs and writes its couplings into
scratch, added into the round's couplings (the CPU's ``couplings += c``); a pointwise part of a sum
runs its own GPU route into scratch, added times its factor (as ``Unbiased``'s route does). Only
label-only arrays go up, once per data set: each row's corrected relevance, the query offsets of the
pairs, the pair rows (for the couplings).

``grad_hess_loss`` (``MultiObjective``'s per-label GPU cost) also writes each query's loss: a pairwise
leaf's from the same launch (``affine_queries(with_loss=True)``, ``query_pairs``' order), a pointwise
part's from its own ``grad_hess_loss``, added times its factor, leaf by leaf. With one pairwise leaf the
queries' losses are the CPU's bits (``Affine._grad_hess_loss``; summed in query order, its total); the
parts of a wrapped sum are added query by query, where the CPU adds their totals (equal to rounding).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..objectives import _launch as R
from ._unbiased_route import _add_part

__all__ = ["grad_hess", "grad_hess_loss", "couplings"]


def _pair_ptr(prep: Any) -> np.ndarray:
    """Query ``q``'s pairs are ``pair_ptr[q]:pair_ptr[q + 1]`` of the list (``affine_pairs``' order)."""
    sizes = prep.groups.sizes.astype(np.int64)
    return np.concatenate([[0], np.cumsum(sizes * (sizes - 1) // 2)]).astype(np.int64)


def _couplings_scratch(obj: Any, data: Any, m: int) -> Any:
    return data.scratch(("affine_couplings", obj), (max(m, 1),), np.float64)


def grad_hess(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any) -> None:
    """One round of ``obj`` (an ``Affine``) at device scores ``s`` into the device outputs (``base.DeviceRoute``);
    the round's pair couplings stay on the device for :func:`couplings`."""
    _round(obj, s, prep, data, g, h, None)


def grad_hess_loss(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any, per_query: Any) -> None:
    """:func:`grad_hess`, and each query's loss at the same scores into ``per_query`` (``base.DeviceRoute``)."""
    _round(obj, s, prep, data, g, h, per_query)


def _round(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any, per_query: Any) -> None:
    """One round of ``obj``; each query's loss into ``per_query`` unless it is None."""
    from ..objectives import _pointwise_cuda as CW
    from . import _affine_cuda as CA, _affine_kernels as AK

    state = obj._trained_state(prep)
    host_ptr = _pair_ptr(prep)
    rhat, pair_ptr = data.arrays((obj, "affine_rows"), lambda: (state.rhat, host_ptr))
    m = int(host_ptr[-1])
    total = _couplings_scratch(obj, data, m)
    part_c = data.scratch(("affine_part_couplings", obj), total.shape, np.float64)
    rank = data.scratch("affine_rank", (max(data.n_rows, 1),), np.int64)
    with_loss = per_query is not None
    loss = data.scratch(("affine_loss", obj), (max(data.n_queries, 1),), np.float64)  # untouched without with_loss
    R.zero(total)
    if with_loss:
        R.zero(per_query)
    for n, (part, record, scale) in enumerate(obj._leaf_records()):
        prep.state_for(part)
        if record is None:
            route = part.device_route()
            _add_part((obj, n), route.grad_hess_loss if with_loss else route.grad_hess, part, scale, s, prep, data,
                      g, h, per_query)
            continue
        rows = AK.AffineRows(s, rhat, data.weights, data.use_weights)
        R.launch_per_segment(CA.affine_queries, data.n_queries, rows, data.ptr, pair_ptr, record, rank,
                             AK.PairOutputs(g, h, part_c), with_loss, loss)
        if m:
            R.launch(CW.add_scaled, m, total, part_c, 1.0)
        if with_loss:  # 0 + 1 x is x: one pairwise leaf gives the CPU's per-query losses' bits
            R.launch(CW.add_scaled, per_query.shape[0], per_query, loss, 1.0)


def couplings(obj: Any, s: Any, prep: Any, data: Any, pair_buffer: Any) -> tuple:
    """The pairs of coupling > 0 of the round :func:`grad_hess` just ran, in the CPU's order (every ``i < j``
    of each query), written to ``pair_buffer(m)``: what the CPU booster keeps of ``Affine``'s list."""
    from ..objectives._couplings_route import in_bag_pairs

    m = int(_pair_ptr(prep)[-1])
    if m == 0:
        return pair_buffer(0)
    pi, pj = data.arrays((obj, "affine_pair_rows"), lambda: obj._pair_rows(prep))
    every_row = data.array((obj, "affine_every_row"), lambda: np.ones(data.n_rows, dtype=np.bool_))
    return in_bag_pairs((pi, pj, _couplings_scratch(obj, data, m)), every_row, pair_buffer)
