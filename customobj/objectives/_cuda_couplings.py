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
has a coupling kernel (``_cuda_lambdarank.count_pairs`` / ``fill_pairs``, one thread per query:
every pair of nonzero ``|dZ|``, as the CPU writes them), and so do the listed-pair losses RankNet,
RankSVM, MPBoost, QBRank and PreferencePairs (``_cuda_pairwise.count_kept_pairs`` /
``fill_kept_pairs``, one thread per chunk of the pair list: the pairs of coupling > 0, which the CPU
booster keeps of the objective's list), as does LambdaLoss (its label pair list with the pair weights
its gradient launch computed this round) and YetiRank (``_cuda_sampled_pairs.yetirank_count_pairs`` /
``yetirank_fill_pairs``, one thread per query: the pairs its gradient launch sampled this round), and the
dense ones of QueryRMSE, ListNet, QuerySoftMax and XENDCG (``_cuda_listwise.dense_count_pairs`` /
``dense_fill_pairs``, one thread per query: every pair of coupling > 0). Composites (``Sum``,
``Scaled``) and subclasses have none: :func:`couplings_reason` says so.

Examples
--------
>>> import customobj
>>> couplings_reason(customobj.LambdaRank()) is None
True
>>> couplings_reason(customobj.LambdaRank() + customobj.RankNet())
'the pair couplings of Sum have no GPU kernel'
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from .base import Objective, Prepared
from .lambdaloss import LambdaLoss
from .yetirank import YetiRank
from .query_rmse import QueryRMSE
from .softmax import ListNet, QuerySoftMax
from .xendcg import XENDCG
from .listwise import LambdaRank, _METRICS
from ._pairwise_kernels import PairKind
from ._arrays import kernel_weights
from .pairwise import _EXPLICIT_SPEC, MPBoost, PreferencePairs, QBRank, RankNet, RankSVM, _LabelPairLoss
from . import devices

__all__ = ["COUPLING_KERNELS", "couplings_reason", "grad_hess_couplings_prepared", "in_bag_pairs"]

#: ``m -> (i, j, c)``: device arrays of length ``m`` the pairs are written to.
PairBuffer = Callable[[int], tuple]
#: Listed pairs per thread of the list kernels (their result does not depend on it: stable, in order).
LIST_CHUNK = 1024


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
    offsets, out = _sized(_segments(data, nq), pair_buffer, CL.count_pairs, nq, data.ptr, qnorm, disc, metric, F, Q)
    if out[0].shape[0] > 0:
        devices._launch(CL.fill_pairs, nq, data.ptr, order, qnorm, disc, metric, obj.sigma, 1 if obj.norm else 0,
                        F, Q, factor, offsets, *out)
    return out


def _sized(scratch: tuple, pair_buffer: PairBuffer, count: Any, n_seg: int, *args: Any) -> tuple:
    """``(offsets, pair buffers)``: ``count`` (one thread per segment, ``args`` then the counts) gives
    each segment's pairs, one thread scans them into offsets; only the total comes back, to size the
    buffers. ``scratch``: the ``(counts, offsets)`` arrays, ``n_seg`` (at least 1) and ``n_seg + 1``."""
    from . import _cuda_lambdarank as CL

    counts, offsets = scratch
    devices._launch(count, n_seg, *args, counts)
    CL.scan_pairs[1, 1](counts, n_seg, offsets)
    return offsets, pair_buffer(int(offsets[n_seg:n_seg + 1].copy_to_host()[0]))


def _chunks(m: int) -> int:
    return (m + LIST_CHUNK - 1) // LIST_CHUNK


def _segments(data: Any, n_seg: int) -> tuple:
    """The ``(counts, offsets)`` scratch of ``n_seg`` segments, reused every round (a fixed count per fit)."""
    return (data.scratch("pair_counts", (max(n_seg, 1),), np.int64),
            data.scratch("pair_offsets", (n_seg + 1,), np.int64))


def _listed(s: Any, data: Any, pair_buffer: PairBuffer, pairs: Optional[tuple], pair_w: Any, use_pw: bool,
            kind: int, scale: float) -> tuple:
    """The listed pairs ``(i, j, theta)`` (device arrays) of coupling > 0, in list order
    (``_cuda_pairwise.count_kept_pairs`` / ``fill_kept_pairs``, a chunk of the list a thread)."""
    from . import _cuda_pairwise as CP

    if pairs is None:  # no pairs at all (QBRank without label or explicit pairs)
        return pair_buffer(0)
    n_seg = _chunks(pairs[0].shape[0])
    args = (s, *pairs, pair_w, use_pw, data.weights, data.use_weights, int(kind), scale, LIST_CHUNK)
    offsets, out = _sized(_segments(data, n_seg), pair_buffer, CP.count_kept_pairs, n_seg, *args)
    if out[0].shape[0] > 0:
        devices._launch(CP.fill_kept_pairs, n_seg, *args, offsets, *out)
    return out


def _label_pair_loss(obj: _LabelPairLoss, s: Any, prep: Prepared, data: Any, pair_buffer: PairBuffer) -> tuple:
    """RankNet, RankSVM, MPBoost: their label pair list (``LabelPairs.pair_list``)."""
    spec = obj._spec()
    lp = prep.state_for(obj)
    pairs = data.arrays((obj._cache_key(), "pair_list"),
                        lambda: lp.pair_list(prep.labels, prep.ptr, spec.theta_mode, spec.p))
    return _listed(s, data, pair_buffer, pairs, data.weights, False, spec.kind, spec.scale)


def _qbrank(obj: QBRank, s: Any, prep: Prepared, data: Any, pair_buffer: PairBuffer) -> tuple:
    """QBRank: its label and explicit pairs (``QBRank._pair_couplings``); none with the upper-bound hessian."""
    state = prep.state_for(obj)
    spec = obj._spec()
    if obj.hessian == "upper_bound":
        return pair_buffer(0)
    host = state.pair_list(prep, spec.theta_mode, spec.p)
    pairs = None if host is None else data.arrays((obj._cache_key(), "pair_list"), lambda: host)
    return _listed(s, data, pair_buffer, pairs, data.weights, False, spec.kind, spec.scale)


def _preference_pairs(obj: PreferencePairs, s: Any, prep: Prepared, data: Any, pair_buffer: PairBuffer) -> tuple:
    """PreferencePairs: its pairs with their own weights (``PreferencePairs._pair_couplings``)."""
    state = prep.state_for(obj)
    key = obj._cache_key()
    pairs = data.arrays((key, "pair_list"), lambda: (state.pi, state.pj, state.theta))
    pw, use_pw = kernel_weights(obj.weight)
    pair_w = data.array((key, "coupling_pair_w"), lambda: pw if use_pw else np.ones(1))
    return _listed(s, data, pair_buffer, pairs, pair_w, use_pw, _EXPLICIT_SPEC.kind, _EXPLICIT_SPEC.scale)


def _lambdaloss(obj: LambdaLoss, s: Any, prep: Prepared, data: Any, pair_buffer: PairBuffer) -> tuple:
    """LambdaLoss: its label pairs with the weights its gradient launch just computed (``_listwise_routes``)."""
    from ._listwise_routes import lambdaloss_device_pairs

    arrays, pair_w = lambdaloss_device_pairs(obj, prep, data)
    return _listed(s, data, pair_buffer, arrays[:3], pair_w, True, PairKind.LOGISTIC, 1.0)


def _yetirank(obj: YetiRank, s: Any, prep: Prepared, data: Any, pair_buffer: PairBuffer) -> tuple:
    """YetiRank: the pairs its gradient launch sampled this round (``_cuda_sampled_pairs``)."""
    from . import _cuda_sampled_pairs as CS
    from ._listwise_routes import yetirank_device_state

    nq = data.n_queries
    qweight, order = yetirank_device_state(obj, prep, data)
    args = (s, data.labels, data.ptr, qweight, obj.permutations, obj.decay, order)
    offsets, out = _sized(_segments(data, nq), pair_buffer, CS.yetirank_count_pairs, nq, *args)
    if out[0].shape[0] > 0:
        devices._launch(CS.yetirank_fill_pairs, nq, *args, offsets, *out)
    return out


def _dense(obj: Objective, s: Any, prep: Prepared, data: Any, pair_buffer: PairBuffer) -> tuple:
    """QueryRMSE, ListNet, QuerySoftMax, XENDCG: every pair of a query, ``qscale f_a f_b`` (``_cuda_listwise``)."""
    from . import _cuda_listwise as CQ
    from ._listwise_routes import dense_coupling_factors

    args = (data.ptr, *dense_coupling_factors(obj, s, prep, data))
    offsets, out = _sized(_segments(data, data.n_queries), pair_buffer, CQ.dense_count_pairs, data.n_queries, *args)
    if out[0].shape[0] > 0:
        devices._launch(CQ.dense_fill_pairs, data.n_queries, *args, offsets, *out)
    return out


#: The objectives whose pair couplings have a GPU kernel (exact classes, as ``devices.CUDA_KERNELS``).
COUPLING_KERNELS: dict = {LambdaRank: _lambdarank, RankNet: _label_pair_loss, RankSVM: _label_pair_loss,
                          MPBoost: _label_pair_loss, QBRank: _qbrank, PreferencePairs: _preference_pairs,
                          LambdaLoss: _lambdaloss, YetiRank: _yetirank, QueryRMSE: _dense, ListNet: _dense,
                          QuerySoftMax: _dense, XENDCG: _dense}


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
    # the float64 scores the gradient kernels read (converted and checked once) and their scratch
    grad, hess, s, data = devices.grad_hess_scores(obj, scores, prep, out_grad, out_hess)
    if pair_buffer is None:
        cuda = data.cuda
        index = np.dtype(index_dtype)

        def pair_buffer(m: int) -> tuple:
            return cuda.device_array(m, index), cuda.device_array(m, index), cuda.device_array(m, np.float64)
    return grad, hess, COUPLING_KERNELS[type(obj)](obj, s, prep, data, pair_buffer)


def in_bag_pairs(pairs: tuple, in_bag: Any, pair_buffer: PairBuffer) -> tuple:
    """``pairs`` (device arrays) with coupling > 0 and both rows in the bag (``in_bag``: a bool device
    array per row), in order, written to ``pair_buffer(m)``: what the CPU booster keeps of the
    objective's pairs under ``bagging_fraction < 1`` (``compact_pairs``)."""
    from numba import cuda

    from . import _cuda_pairwise as CP

    n_seg = _chunks(pairs[0].shape[0])
    # the pair count changes from round to round: fresh (small) counts, not a scratch kept per count
    scratch = (cuda.device_array(max(n_seg, 1), np.int64), cuda.device_array(n_seg + 1, np.int64))
    offsets, out = _sized(scratch, pair_buffer, CP.count_in_bag, n_seg, *pairs, in_bag, LIST_CHUNK)
    if out[0].shape[0] > 0:
        devices._launch(CP.place_in_bag, n_seg, *pairs, in_bag, LIST_CHUNK, offsets, *out)
    return out
