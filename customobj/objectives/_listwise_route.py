"""The GPU routes of the query-level losses (QueryRMSE, ListNet, QuerySoftMax, XENDCG, LambdaLoss,
YetiRank): what each uploads once per prepared data set and which kernels it launches a round.

A route has the signature of a ``base.DeviceRoute``'s ``grad_hess``, ``(objective, scores, prep, data,
out_grad, out_hess)``: ``scores`` the checked float64 device scores, ``data`` the prepared data's
``devices.DeviceData`` (uploads and scratch kept on it), the outputs zeroed device arrays the route
adds into. Label-only state (targets, query weights, pair lists) is the CPU objective's own
``_state``, uploaded once; per-round values (XENDCG's noise, LambdaLoss's ranks, YetiRank's
sampled pairs) are computed on the device: one integer (the round) crosses the bus, never an array.
The kernels live in ``_listwise_cuda`` and ``_sampled_pairs_cuda`` (the costs of ``grad_hess_loss``:
``_listwise_loss_cuda``), their math in ``_listwise_terms``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._launch import PairBuffer, launch, query_pairs
from ._pairwise_route import kept_pairs

__all__ = ["query_rmse", "query_rmse_loss", "softmax", "softmax_loss", "xendcg", "xendcg_loss", "lambdaloss",
           "lambdaloss_device_pairs", "yetirank", "yetirank_device_state", "lambdaloss_couplings", "yetirank_couplings",
           "query_rmse_couplings", "softmax_couplings", "xendcg_couplings"]


def _padded(a: np.ndarray) -> np.ndarray:
    """``a``, or a length-1 stand-in the kernels never read when it is empty (no empty uploads)."""
    return a if a.size else np.ones(1)


def query_rmse(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any) -> None:
    """QueryRMSE: per query its mean residual and ``W``, then per row its terms."""
    from . import _listwise_cuda as CQ

    stats = data.scratch("query_rmse_stats", (CQ.N_RMSE, max(data.n_queries, 1)), np.float64)
    launch(CQ.query_rmse_queries, data.n_queries, s, data.labels, data.ptr, data.weights, data.use_weights, stats)
    launch(CQ.query_rows, data.n_rows, CQ.RMSE_ROWS, s, data.qid, data.labels, data.weights, data.use_weights, 0.0,
           stats, g, h)


def query_rmse_loss(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any, per_query: Any) -> None:
    """QueryRMSE's ``grad_hess_loss``: :func:`query_rmse`, then each query's loss from the mean residuals it
    left (``_listwise_loss_cuda``: the CPU's per-query values, the same bits)."""
    from . import _listwise_cuda as CQ
    from . import _listwise_loss_cuda as CQL

    query_rmse(obj, s, prep, data, g, h)
    stats = data.scratch("query_rmse_stats", (CQ.N_RMSE, max(data.n_queries, 1)), np.float64)
    launch(CQL.query_rmse_loss_queries, data.n_queries, s, data.labels, data.ptr, data.weights, data.use_weights,
           stats, per_query)


def _softmax_ce(s: Any, data: Any, mass: Any, vw: Any, use_vw: bool, beta: float, g: Any, h: Any) -> None:
    from . import _listwise_cuda as CQ

    stats = data.scratch("softmax_stats", (CQ.N_SM, max(data.n_queries, 1)), np.float64)
    launch(CQ.softmax_queries, data.n_queries, s, data.ptr, mass, vw, use_vw, beta, stats)
    launch(CQ.query_rows, data.n_rows, CQ.SOFTMAX_ROWS, s, data.qid, mass, vw, use_vw, beta, stats, g, h)


def softmax_loss(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any, per_query: Any) -> None:
    """ListNet's, QuerySoftMax's ``grad_hess_loss``: :func:`softmax`, then each query's cross-entropy
    (``_listwise_loss_cuda``: the CPU's per-query values, the same bits)."""
    from . import _listwise_cuda as CQ
    from . import _listwise_loss_cuda as CQL

    mass, vw, use_vw, beta = _softmax_targets(obj, prep, data)
    _softmax_ce(s, data, mass, vw, use_vw, beta, g, h)
    stats = data.scratch("softmax_stats", (CQ.N_SM, max(data.n_queries, 1)), np.float64)
    launch(CQL.softmax_ce_loss_queries, data.n_queries, s, data.ptr, mass, vw, use_vw, beta, stats, per_query)


def _softmax_targets(obj: Any, prep: Any, data: Any) -> "tuple[Any, Any, bool, float]":
    """ListNet's, QuerySoftMax's device ``(mass, vw, use_vw, beta)``: label-only, uploaded once."""
    state = prep.state_for(obj)
    mass, vw = data.arrays((obj._cache_key(), "softmax_targets"), lambda: (_padded(state.mass), _padded(state.vw)))
    return mass, vw, state.use_vw, state.beta


def softmax(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any) -> None:
    """ListNet, QuerySoftMax: their label-only targets (``_Targets``)."""
    _softmax_ce(s, data, *_softmax_targets(obj, prep, data), g, h)


def _xendcg_mass(obj: Any, prep: Any, data: Any, rnd: int) -> Any:
    """XENDCG's target masses of round ``rnd``, drawn on the device (its gradients' and couplings')."""
    from . import _listwise_cuda as CQ

    state = prep.state_for(obj)
    qweight = data.array((obj._cache_key(), "qweight"), lambda: _padded(state.qweight))
    mass = data.scratch("xendcg_mass", (max(data.n_rows, 1),), np.float64)
    launch(CQ.xendcg_mass_queries, data.n_queries, data.labels, data.ptr, qweight, rnd, obj.seed, mass)
    return mass


def _xendcg_round(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any) -> "tuple[int, Any]":
    """XENDCG's round into ``g`` / ``h``; returns ``(round, masses)``, the masses None under LightGBM's
    convention (its gradients draw none), else the round's, with their softmax statistics in
    ``softmax_stats`` (``_softmax_ce``'s)."""
    from . import _listwise_cuda as CQ

    rnd = obj._round(prep.state_for(obj), True)
    if obj._lightgbm:
        stats = data.scratch("xendcg_stats", (CQ.N_XE, max(data.n_queries, 1)), np.float64)
        launch(CQ.xendcg_lightgbm_queries, data.n_queries, s, data.labels, data.ptr, rnd, obj.seed, stats)
        launch(CQ.xendcg_lightgbm_rows, data.n_rows, s, data.labels, data.ptr, data.qid, rnd, obj.seed, data.weights,
                data.use_weights, stats, g, h)
        return rnd, None
    mass = _xendcg_mass(obj, prep, data, rnd)
    _softmax_ce(s, data, mass, mass, False, 1.0, g, h)
    return rnd, mass


def xendcg(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any) -> None:
    """XENDCG: a new round (as the CPU's ``grad_hess``), its noise drawn on the device from the same
    per-query generators; LightGBM's gradients or the softmax cross-entropy against the noisy masses."""
    _xendcg_round(obj, s, prep, data, g, h)


def xendcg_loss(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any, per_query: Any) -> None:
    """XENDCG's ``grad_hess_loss``: :func:`xendcg` (a new round), then each query's softmax cross-entropy against
    the round's noisy masses (the CPU's ``_loss`` after its ``_grad_hess``, either convention; the same bits)."""
    from . import _listwise_cuda as CQ
    from . import _listwise_loss_cuda as CQL

    rnd, mass = _xendcg_round(obj, s, prep, data, g, h)
    stats = data.scratch("softmax_stats", (CQ.N_SM, max(data.n_queries, 1)), np.float64)
    if mass is None:  # LightGBM's gradients drew no masses: the round's, and their softmax statistics
        mass = _xendcg_mass(obj, prep, data, rnd)
        launch(CQ.softmax_queries, data.n_queries, s, data.ptr, mass, mass, False, 1.0, stats)  # M: which queries count
    launch(CQL.softmax_ce_loss_queries, data.n_queries, s, data.ptr, mass, mass, False, 1.0, stats, per_query)


def _softmax_factors(s: Any, data: Any, mass: Any, vw: Any, use_vw: bool, beta: float) -> tuple:
    """The device ``(p, qscale)`` of the softmax's dense couplings ``qscale_q p_a p_b`` at ``s``."""
    from . import _listwise_cuda as CQ

    stats = data.scratch("softmax_stats", (CQ.N_SM, max(data.n_queries, 1)), np.float64)
    p = data.scratch("coupling_p", (max(data.n_rows, 1),), np.float64)
    qscale = data.scratch("coupling_qscale", (max(data.n_queries, 1),), np.float64)
    launch(CQ.softmax_queries, data.n_queries, s, data.ptr, mass, vw, use_vw, beta, stats)
    launch(CQ.softmax_probs_rows, data.n_rows, s, data.qid, vw, use_vw, beta, stats, p)
    launch(CQ.softmax_qscale_queries, data.n_queries, stats, beta, data.n_queries, qscale)
    return p, qscale


def lambdaloss_device_pairs(obj: Any, prep: Any, data: Any) -> tuple:
    """LambdaLoss's device arrays: ``(pi, pj, theta, inc_ptr, inc_pair, inc_sign, gain, inv_idcg)`` (its
    label pair list, each row's incidence, the gains and ``1/IDCG``, uploaded once per data set) and the
    pair weights' scratch (this round's weights once :func:`lambdaloss` ran; the couplings read them)."""
    from . import _pairwise_kernels as PK
    from ._pair_sets import row_incidence

    state = prep.state_for(obj)

    def build() -> tuple:
        pi, pj, theta = state.pairs.pair_list(prep.labels, prep.ptr, PK.Theta.CONST, obj.sigma)
        return (pi, pj, theta, *row_incidence(pi, pj, prep.n_rows), _padded(state.row_gain), _padded(state.inv_idcg))

    arrays = data.arrays((obj._cache_key(), "lambdaloss_pairs"), build)
    return arrays, data.scratch("lambdaloss_pair_w", (max(arrays[0].shape[0], 1),), np.float64)


def lambdaloss(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any, per_query: Any = None) -> None:
    """LambdaLoss: a round ranks the rows, weighs the label pairs and sums each row's pairs
    (``_sampled_pairs_cuda``). Given ``per_query`` (its ``grad_hess_loss``), each query's loss at those
    weights: each pair's at its first row, the rows in order (the CPU keeps one running sum over the pair
    list: equal to rounding)."""
    from . import _lambdarank_cuda as CL
    from . import _pairwise_cuda as CP
    from . import _sampled_pairs_cuda as CS
    from . import _pairwise_kernels as PK
    from ._sampled_pairs_kernels import WEIGHTINGS

    (pi, pj, theta, inc_ptr, inc_pair, inc_sign, gain, inv_idcg), pair_w = lambdaloss_device_pairs(obj, prep, data)
    n = data.n_rows
    order = data.scratch("lambdaloss_order", (max(n, 1),), np.int64)
    pos = data.scratch("lambdaloss_pos", (max(n, 1),), np.int64)
    launch(CL.rank_rows, n, s, data.ptr, data.qid, order, pos)
    launch(CS.lambdaloss_weights, pi.shape[0], pi, pj, pos, gain, inv_idcg, WEIGHTINGS[obj.weighting], obj.mu,
            pair_w)
    plist = CP.PairList(pi, pj, theta, pair_w, True, data.weights, data.use_weights)
    spec = PK.PairSpec(int(PK.LOGISTIC), int(PK.Theta.CONST), obj.sigma, 1.0, 1.0)  # theta is listed per pair
    launch(CP.pair_list_rows, n, s, plist, inc_ptr, inc_pair, inc_sign, spec, g, h)
    if per_query is not None:
        from . import _pointwise_cuda as CW

        rows = data.scratch("lambdaloss_loss_rows", (max(n, 1),), np.float64)
        launch(CP.pair_list_loss_rows, n, s, plist, inc_ptr, inc_pair, inc_sign, spec, rows)
        launch(CW.query_sums, data.n_queries, data.ptr, rows, per_query)


def yetirank_device_state(obj: Any, prep: Any, data: Any) -> tuple:
    """YetiRank's device ``(qweight, sampled)``: the query weights (uploaded once) and the sampled
    permutations (a ``_sampled_pairs_cuda.Sampled``: this round's once :func:`yetirank` ran; the
    couplings read them) with the table of ``decay`` powers (uploaded once)."""
    from . import _sampled_pairs_cuda as CS
    from ._listwise_terms import yetirank_decays

    state = prep.state_for(obj)
    qweight = data.array((obj._cache_key(), "qweight"), lambda: _padded(state.qweight))
    n_max = int(prep.groups.sizes.max(initial=0))
    decays = data.array((obj._cache_key(), "yetirank_decays"), lambda: yetirank_decays(obj.decay, n_max - 1))
    size = (max(data.n_rows * obj.permutations, 1),)
    return qweight, CS.Sampled(obj.permutations, data.scratch("yetirank_order", size, np.int64),
                               data.scratch("yetirank_rank", size, np.int64), decays)


def yetirank(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any, per_query: Any = None) -> None:
    """YetiRank: a new round (as the CPU's ``grad_hess``, within the same pair budget), its permutations
    sampled on the device from the same per-query streams, then each row's pairs summed. Given ``per_query``
    (its ``grad_hess_loss``), each query's loss at the round's sampled pairs (the CPU's ``_grad_hess_loss``
    per query, its bits)."""
    from . import _sampled_pairs_cuda as CS

    rnd = prep.state_for(obj).rounds.advance()
    obj._pair_offsets(prep)  # the CPU's pair budget, refused the same way
    qweight, sampled = yetirank_device_state(obj, prep, data)
    launch(CS.yetirank_ranks, data.n_rows * obj.permutations, s, data.ptr, data.qid, sampled, obj.seed, rnd)
    launch(CS.yetirank_rows, data.n_rows, s, data.labels, data.ptr, data.qid, qweight, sampled, g, h)
    if per_query is not None:
        launch(CS.yetirank_query_losses, data.n_queries, s, data.labels, data.ptr, qweight, sampled, per_query)


# --- pair couplings (``device_route().couplings``, for TreeBooster(device="cuda")'s OLE criteria) ------
def lambdaloss_couplings(obj: Any, s: Any, prep: Any, data: Any, pair_buffer: PairBuffer) -> tuple:
    """LambdaLoss: its label pairs with the weights its gradient launch just computed."""
    from . import _pairwise_cuda as CP
    from . import _pairwise_kernels as PK

    arrays, pair_w = lambdaloss_device_pairs(obj, prep, data)
    plist = CP.PairList(arrays[0], arrays[1], arrays[2], pair_w, True, data.weights, data.use_weights)
    return kept_pairs(s, data, pair_buffer, plist, PK.PairSpec(int(PK.LOGISTIC), int(PK.Theta.CONST), 0.0, 1.0, 1.0))


def yetirank_couplings(obj: Any, s: Any, prep: Any, data: Any, pair_buffer: PairBuffer) -> tuple:
    """YetiRank: the pairs its gradient launch sampled this round (``_sampled_pairs_cuda``)."""
    from . import _sampled_pairs_cuda as CS

    qweight, sampled = yetirank_device_state(obj, prep, data)
    return query_pairs(data, pair_buffer, CS.yetirank_count_pairs, CS.yetirank_fill_pairs,
                       s, data.labels, data.ptr, qweight, sampled)


def _dense(data: Any, pair_buffer: PairBuffer, factor: Any, qscale: Any) -> tuple:
    """Every pair of a query of coupling ``qscale_q f_a f_b > 0`` (``_listwise_cuda``), in the CPU's order."""
    from . import _listwise_cuda as CQ

    return query_pairs(data, pair_buffer, CQ.dense_count_pairs, CQ.dense_fill_pairs, data.ptr, data.qid, factor,
                       qscale, per_position=True)


def query_rmse_couplings(obj: Any, s: Any, prep: Any, data: Any, pair_buffer: PairBuffer) -> tuple:
    """QueryRMSE: its label-only dense couplings (factors uploaded once)."""
    return _dense(data, pair_buffer, *data.arrays((obj._cache_key(), "coupling_factors"),
                                                  lambda: tuple(_padded(a) for a in obj._coupling_factors(prep))))


def softmax_couplings(obj: Any, s: Any, prep: Any, data: Any, pair_buffer: PairBuffer) -> tuple:
    """ListNet, QuerySoftMax: the softmax's ``p`` and ``beta^2 M`` at ``s``."""
    return _dense(data, pair_buffer, *_softmax_factors(s, data, *_softmax_targets(obj, prep, data)))


def xendcg_couplings(obj: Any, s: Any, prep: Any, data: Any, pair_buffer: PairBuffer) -> tuple:
    """XENDCG: the softmax couplings with the noise of its latest round (as the CPU's ``pair_couplings``)."""
    mass = _xendcg_mass(obj, prep, data, prep.state_for(obj).rounds.current)
    return _dense(data, pair_buffer, *_softmax_factors(s, data, mass, mass, False, 1.0))
