"""Gradients, hessians and pair couplings on the GPU in one call: the device twin of
``Objective.grad_hess_couplings_prepared`` for the objectives listed in :data:`COUPLING_KERNELS`.

``TreeBooster(device="cuda")`` with ``criterion="ole" | "ole_fast" | "ole_float64"`` needs each round's
pairs ``(i, j, c)`` (rows ``i``, ``j`` and their hessian coupling ``h_ij = c``) next to the gradients
(Xia, Zhai, Wang: a child's second derivative is ``sum h_i - 2 sum h_ij`` over its pairs). Here they are
computed where the scores are: the objective's gradient launches (``devices.grad_hess_prepared``),
then, reading the per-query scratch those left on the device, one thread per query counts its pairs,
one thread scans the counts into offsets, and one thread per query writes its pairs. No atomics, all
float64; the pairs come in the CPU's order (by query, by upper then lower sorted position) with the
CPU's values (the same float64 operations; a device ``exp`` may differ in the last bit on a GPU), so
the trees grown from them are the CPU's.

Only the pair count crosses the bus (one integer a round), to size the output.

LambdaRank (every metric and convention: ``LambdaRank()``, ``like_lightgbm()``, ``like_xgboost()``)
has a coupling kernel (``_cuda_lambdarank.count_pairs`` / ``fill_pairs``: every pair of nonzero
``|dZ|``, as the CPU writes them), and so do the label-pair losses RankNet, RankSVM and MPBoost
(``_cuda_pairwise.count_kept_pairs`` / ``fill_kept_pairs``: the pairs of coupling > 0, which the CPU
booster keeps of the objective's list). QBRank and PreferencePairs (explicit pairs) have none yet:
:func:`couplings_reason` says so.

Examples
--------
>>> import customobj
>>> couplings_reason(customobj.LambdaRank()) is None
True
>>> couplings_reason(customobj.PreferencePairs([[0, 1]]))
'the pair couplings of PreferencePairs have no GPU kernel'
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from .base import Objective, Prepared
from .listwise import LambdaRank, _METRICS
from .pairwise import MPBoost, RankNet, RankSVM, _LabelPairLoss
from . import devices

__all__ = ["COUPLING_KERNELS", "couplings_reason", "grad_hess_couplings_prepared", "in_bag_pairs"]

#: ``m -> (i, j, c)``: device arrays of length ``m`` the pairs are written to.
PairBuffer = Callable[[int], tuple]


def _lambdarank(obj: LambdaRank, s: Any, prep: Prepared, data: Any, pair_buffer: PairBuffer) -> tuple:
    """LambdaRank's pairs from the scratch its gradient launches just filled (``_cuda_lambdarank``)."""
    from . import _cuda_lambdarank as CL

    state = prep.state_for(obj)
    key = obj._cache_key()
    qnorm = data.array((key, "qnorm"), lambda: state.qnorm)
    disc = data.array((key, "disc"), lambda: state.disc)
    nq = data.n_queries
    order, _, F, Q, factor = CL.scratch(data, data.n_rows, nq)
    metric = int(_METRICS[obj.metric])
    offsets, out = _sized(data, pair_buffer, CL.count_pairs, data.ptr, qnorm, disc, metric, F, Q)
    if out[0].shape[0] > 0:
        devices._launch(CL.fill_pairs, nq, data.ptr, order, qnorm, disc, metric, obj.sigma, 1 if obj.norm else 0,
                        F, Q, factor, offsets, *out)
    return out


def _sized(data: Any, pair_buffer: PairBuffer, count: Any, *args: Any, name: str = "pair_offsets") -> tuple:
    """``(offsets, pair buffers)``: ``count`` (one thread per query, ``args`` then the counts) gives each
    query's pairs, one thread scans them into offsets (the scratch ``name``); only the total comes back,
    to size the buffers."""
    from . import _cuda_lambdarank as CL

    nq = data.n_queries
    counts = data.scratch("pair_counts", (max(nq, 1),), np.int64)
    offsets = data.scratch(name, (nq + 1,), np.int64)
    devices._launch(count, nq, *args, counts)
    CL.scan_pairs[1, 1](counts, nq, offsets)
    return offsets, pair_buffer(int(offsets[nq:nq + 1].copy_to_host()[0]))


def _query_pair_offsets(lp: Any, ptr: np.ndarray) -> np.ndarray:
    """Where each query's pairs start in the label pair list (size n_queries + 1)."""
    ends = np.repeat(ptr[1:], np.diff(ptr))  # end of each sorted position's query
    before = np.zeros(ptr[-1] + 1, dtype=np.int64)
    np.cumsum(ends - lp.lower, out=before[1:])
    return before[ptr]


def _label_pair_loss(obj: _LabelPairLoss, s: Any, prep: Prepared, data: Any, pair_buffer: PairBuffer) -> tuple:
    """The label pairs of coupling > 0 (the CPU booster keeps those), in the CPU's list order."""
    from . import _cuda_pairwise as CP

    spec = obj._spec()
    lp = prep.state_for(obj)
    key = obj._cache_key()
    pairs = data.arrays((key, "pair_list"), lambda: lp.pair_list(prep.labels, prep.ptr, spec.theta_mode, spec.p))
    qoff = data.array((key, "pair_list_offsets"), lambda: _query_pair_offsets(lp, np.asarray(prep.ptr)))
    args = (s, *pairs, data.weights, data.use_weights, int(spec.kind), spec.scale, qoff)
    offsets, out = _sized(data, pair_buffer, CP.count_kept_pairs, *args)
    if out[0].shape[0] > 0:
        devices._launch(CP.fill_kept_pairs, data.n_queries, *args, offsets, *out)
    return out


#: The objectives whose pair couplings have a GPU kernel (exact classes, as ``devices.CUDA_KERNELS``).
COUPLING_KERNELS: dict = {LambdaRank: _lambdarank, RankNet: _label_pair_loss, RankSVM: _label_pair_loss,
                          MPBoost: _label_pair_loss}


def couplings_reason(obj: Objective) -> Optional[str]:
    """Why ``obj``'s pair couplings cannot be computed on the GPU, or None when they can."""
    if type(obj) not in COUPLING_KERNELS:
        return f"the pair couplings of {type(obj).__name__} have no GPU kernel"
    try:
        devices.kernels_for(obj, devices.Device.CUDA)
    except NotImplementedError as exc:  # pragma: no cover - every COUPLING_KERNELS class has a gradient route
        return str(exc)
    return None


def grad_hess_couplings_prepared(obj: Objective, scores: Any, prep: Prepared, out_grad: Any = None,
                                 out_hess: Any = None, pair_buffer: Optional[PairBuffer] = None,
                                 index_dtype: type = np.int64) -> tuple:
    """``(grad, hess, (i, j, c))`` at device ``scores``, all numba device arrays (float64; the rows of
    ``index_dtype``), equal to the CPU's ``obj.grad_hess_couplings_prepared(host scores, prep)``.

    ``out_grad`` / ``out_hess`` as for ``devices.grad_hess_prepared``; ``pair_buffer(m)`` returns the
    device arrays the ``m`` pairs are written to (default: new arrays of ``index_dtype``).

    Raises
    ------
    NotImplementedError
        ``obj`` has no coupling kernel (:func:`couplings_reason`).
    """
    why = couplings_reason(obj)
    if why is not None:
        raise NotImplementedError(f"{why}: pass host (numpy) scores to compute them on the CPU")
    grad, hess = devices.grad_hess_prepared(obj, scores, prep, out_grad, out_hess)
    data = devices.device_data(prep, None)  # made by grad_hess_prepared: the cuda module is not used
    s = devices._device_scores(obj, scores, prep, data, data.cuda)  # the float64 copy the gradients read
    if pair_buffer is None:
        cuda = data.cuda
        index = np.dtype(index_dtype)

        def pair_buffer(m: int) -> tuple:
            return cuda.device_array(m, index), cuda.device_array(m, index), cuda.device_array(m, np.float64)
    return grad, hess, COUPLING_KERNELS[type(obj)](obj, s, prep, data, pair_buffer)


def in_bag_pairs(prep: Prepared, pairs: tuple, in_bag: Any, pair_buffer: PairBuffer) -> tuple:
    """The pairs of the last :func:`grad_hess_couplings_prepared` call on ``prep`` with coupling > 0 and
    both rows in the bag (``in_bag``: a bool device array per row), in order, written to
    ``pair_buffer(m)``: what the CPU booster keeps of them under ``bagging_fraction < 1``."""
    from . import _cuda_pairwise as CP

    data = devices.device_data(prep, None)
    offsets = data.scratch("pair_offsets", (data.n_queries + 1,), np.int64)  # the pairs' queries
    kept, out = _sized(data, pair_buffer, CP.count_in_bag, *pairs, in_bag, offsets, name="pair_kept_offsets")
    if out[0].shape[0] > 0:
        devices._launch(CP.place_in_bag, data.n_queries, *pairs, in_bag, offsets, kept, *out)
    return out
