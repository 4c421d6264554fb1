"""LambdaRank's GPU route (``LambdaRank.device_route()``): its passes on the device (kernels:
``_lambdarank_cuda``), its couplings, and its debiased pair terms for ``clicks.Unbiased``. See
``_launch`` for what a route is.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._launch import PairBuffer, launch, segments, sized


def _lambdarank_inputs(obj: Any, s: Any, prep: Any, data: Any) -> tuple:
    """``(device Inputs record, hess_scale)`` from the objective's own ``pass_inputs``."""
    from . import _lambdarank_cuda as CL

    inp = obj.pass_inputs(s, prep)
    row_gain, qnorm, disc = data.arrays((obj, "lambdarank"), lambda: (inp.row_gain, inp.qnorm, inp.disc))
    if prep.state_for(obj).weight is None:  # the row weights, already on the device
        w, use_w = data.weights, data.use_weights
    else:  # a convention's per-query weights
        w, use_w = data.array((obj, "weight"), lambda: inp.weights), True
    return CL.Inputs(data.ptr, data.qid, row_gain, qnorm, disc, w, use_w, int(inp.metric), int(inp.k),
                     int(inp.trunc), float(inp.sigma), bool(inp.norm)), float(inp.hess_scale)


def _lambdarank_setup(obj: Any, s: Any, prep: Any, data: Any) -> tuple:
    """The first two launches of every LambdaRank pass (each query sorted, its tables filled);
    returns ``(Inputs, hess_scale, scratch)``."""
    from . import _lambdarank_cuda as CL

    inp, hess_scale = _lambdarank_inputs(obj, s, prep, data)
    n, nq = data.n_rows, data.n_queries
    scratch = CL.scratch(data, n, nq)
    order, pos, F, Q, _ = scratch
    launch(CL.rank_rows, n, s, data.ptr, data.qid, order, pos)
    launch(CL.setup_queries, nq, s, inp, order, F, Q)
    return inp, hess_scale, scratch


def _lambdarank_grads(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any) -> tuple:
    """The gradient launches; returns ``(Inputs, scratch)`` for what reads their scratch after them."""
    from . import _lambdarank_cuda as CL

    inp, hess_scale, scratch = _lambdarank_setup(obj, s, prep, data)
    _, pos, F, Q, factor = scratch
    n, nq = data.n_rows, data.n_queries
    launch(CL.pair_rows, n, inp, pos, F, Q)
    launch(CL.finish_queries, nq, inp, hess_scale, F, Q, factor)
    launch(CL.write_rows, n, data.qid, pos, data.ptr, F, Q, factor, g, h)
    return inp, scratch


def lambdarank(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any) -> None:
    _lambdarank_grads(obj, s, prep, data, g, h)


def lambdarank_loss(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any, per_query: Any) -> None:
    """:func:`lambdarank`, then each query's loss into the device array ``per_query`` (``n_queries``): the
    CPU's ``_grad_hess_loss`` per query, the same bits (kernels: ``_lambdarank_loss_cuda``)."""
    from . import _lambdarank_loss_cuda as CC

    inp, (_, pos, F, Q, factor) = _lambdarank_grads(obj, s, prep, data, g, h)  # its inputs made once a round
    n = data.n_rows
    rows = data.scratch("lambdarank_loss_rows", (max(n, 1),), np.float64)
    launch(CC.loss_rows, n, inp, pos, F, Q, rows)
    launch(CC.loss_queries, data.n_queries, inp, Q, factor, rows, per_query)


def lambdarank_couplings(obj: Any, s: Any, prep: Any, data: Any, pair_buffer: PairBuffer) -> tuple:
    """LambdaRank's pairs from the scratch its gradient launches just filled (``_lambdarank_cuda``)."""
    from . import _lambdarank_cuda as CL

    inp, _ = _lambdarank_inputs(obj, s, prep, data)
    n = data.n_rows
    order, _, F, Q, factor = CL.scratch(data, n, data.n_queries)
    offsets, out = sized(segments(data, n, "position_pair"), pair_buffer, CL.count_pairs, n, inp, F, Q)
    if out[0].shape[0] > 0:
        launch(CL.fill_pairs, n, inp, order, F, Q, factor, offsets, False, _debias(data, 0), *out)
    return out


def _debias(data: Any, m: int, position: Any = None, tplus: Any = None, tminus: Any = None,
            swapped: bool = False) -> Any:
    """A ``_lambdarank_records.Debias`` of device arrays for ``m`` pairs' terms; without ``position``
    (plain couplings) one-entry stand-ins the kernel never reads, kept across rounds."""
    from ._lambdarank_records import Debias

    if position is None:
        pos, stand_in = data.scratch("no_debias_pos", (1,), np.int64), data.scratch("no_debias", (1,), np.float64)
        return Debias(pos, stand_in, stand_in, False, stand_in, stand_in, stand_in)
    return Debias(position, tplus, tminus, bool(swapped),
                  *(data.cuda.device_array(max(m, 1), np.float64) for _ in range(3)))


def lambdarank_debiased_terms(obj: Any, s: Any, prep: Any, data: Any, position: Any, tplus: Any, tminus: Any,
                              swapped: bool, pair_buffer: PairBuffer) -> tuple:
    """``(i, j, h, Debias)``: ``LambdaRank.debiased_pair_terms`` on the device (device ``position``,
    ``tplus``, ``tminus``), pairs by query from ``segments(data, n_queries)[1]``."""
    from . import _lambdarank_cuda as CL

    inp, hess_scale, (order, _, F, Q, factor) = _lambdarank_setup(obj, s, prep, data)
    n, nq = data.n_rows, data.n_queries
    offsets, out = sized(segments(data, n, "position_pair"), pair_buffer, CL.count_pairs, n, inp, F, Q)
    launch(CL.query_offsets, nq + 1, data.ptr, offsets, segments(data, nq)[1])  # the pairs by query
    m = out[0].shape[0]
    deb = _debias(data, m, position, tplus, tminus, swapped)
    if m > 0:
        from . import _pointwise_cuda as CW

        launch(CW.fill, nq, factor[1], hess_scale)  # no norm factor: the hessian scale alone scales the terms
        launch(CL.fill_pairs, n, inp, order, F, Q, factor, offsets, True, deb, *out)
    return (*out, deb)
