"""``StructuredDCG``'s GPU route (``StructuredDCG.device_route()``): each query's loss-augmented
assignment on the device (kernels: ``_structured_cuda``). See ``_launch`` for what a route is.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._launch import launch


def structured(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any, per_query: Any = None) -> None:
    """One round of ``obj`` (a ``StructuredDCG``) into ``g`` / ``h``; given ``per_query`` (its ``grad_hess_loss``,
    ``MultiObjective``'s per-label GPU cost), each query's loss ``w_q R_q`` from the same launch, the CPU's
    per-query value (``_structured_kernels.structured_dcg_loss``, which adds them in query order)."""
    from . import _structured_cuda as CS

    state = prep.state_for(obj)
    gain = data.array((obj, "row_gain"), lambda: state.row_gain)
    n, nq = data.n_rows, data.n_queries
    star = data.scratch("star", (max(n, 1),), np.int64)
    SF = data.scratch("structured_f", (CS.N_SF, n + nq + 1), np.float64)
    SI = data.scratch("structured_i", (CS.N_SI, n + nq + 1), np.int64)
    failed = data.scratch("structured_failed", (max(nq, 1),), np.int64)
    if per_query is None:  # the kernel writes each query's loss either way: a row of scratch
        per_query = data.scratch("structured_loss", (max(nq, 1),), np.float64)
    launch(CS.ideal_rank_rows, n, s, gain, data.ptr, data.qid, star)
    rows = CS.Rows(gain, data.ptr, data.weights, data.use_weights, star)
    launch(CS.structured_queries, nq, s, rows, obj.k, obj.hess, SF, SI, g, h, failed, per_query)
    obj._raise_if_failed(failed.copy_to_host()[:nq] != 0)  # the CPU's guard, same message
