"""The pointwise losses' GPU route (SquaredError, Logistic, SquaredHinge, McRank: their
``device_route()``): one thread per row (kernels: ``_pointwise_cuda``). See ``_launch`` for what a
route is.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from ._launch import launch
from ._pointwise_terms import RowKind


def _row_weights(obj: Any, prep: Any, data: Any) -> tuple:
    state = prep.state_for(obj)
    if state is None:
        return data.weights, data.use_weights
    return data.array((obj, "weight"), lambda: state), True  # Logistic(balanced=True): its state is the row weights


def pointwise(kind: RowKind, param: Optional[str] = None) -> Callable:
    """The route of a pointwise loss: one thread per row of ``_pointwise_cuda.pointwise_rows`` with
    its :class:`~._pointwise_terms.RowKind` and the objective's attribute ``param``. Given ``per_query``
    (its ``grad_hess_loss``), also each query's loss: the rows' losses added in row order per query (the
    CPU's ``_loss`` adds all rows in one running sum: equal to rounding)."""
    def route(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any, per_query: Any = None) -> None:
        from . import _pointwise_cuda as CW

        w, use_w = _row_weights(obj, prep, data)
        p = float(getattr(obj, param)) if param is not None else 0.0
        launch(CW.pointwise_rows, data.n_rows, int(kind), s, data.labels, w, use_w, p, g, h)
        if per_query is not None:
            rows = data.scratch("pointwise_loss_rows", (max(data.n_rows, 1),), np.float64)
            launch(CW.pointwise_loss_rows, data.n_rows, int(kind), s, data.labels, w, use_w, p, rows)
            launch(CW.query_sums, data.n_queries, data.ptr, rows, per_query)
    return route


SQUARED_ERROR = pointwise(RowKind.SQUARED_ERROR)
LOGISTIC = pointwise(RowKind.LOGISTIC, "sigma")
SQUARED_HINGE = pointwise(RowKind.SQUARED_HINGE, "C")


def mcrank(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any) -> None:
    """McRank's route: one thread per row of ``_pointwise_cuda.mcrank_rows`` (a softmax over its outputs)."""
    from . import _pointwise_cuda as CW

    launch(CW.mcrank_rows, data.n_rows, s, data.labels, *_row_weights(obj, prep, data), g, h)
