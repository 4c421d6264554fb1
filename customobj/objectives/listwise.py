"""Listwise objectives: LambdaRank / LambdaMART (Burges 2010 sec. 3, 4, 7). Chapelle's structured-output
DCG loss is in :mod:`customobj.objectives.structured_dcg`."""
from __future__ import annotations

from typing import Any, NamedTuple, Optional, Sequence

import numpy as np

from .._kernel_status import as_code, check_status, checked_value
from .._validation import (
    ERR_MAX_GAIN,
    ERR_MAX_LABEL,
    MAX_ROWS,
    as_gain_table,
    check_bool,
    check_choice,
    check_exp_gain_labels,
    check_int,
    check_pair_budget,
    check_positive,
)
from ._arrays import kernel_weights, query_sums
from .base import DeviceRoute, Objective, PairSource, Prepared, RelevancePairs
from . import _lambdarank_kernels as LK
from . import _parity as P

__all__ = ["LambdaRank"]

_EMPTY = np.zeros(0, dtype=np.float64)
_METRICS = {"ndcg": LK.Metric.NDCG, "err": LK.Metric.ERR, "map": LK.Metric.MAP, "mrr": LK.Metric.MRR}
_NO_CUTOFF = np.iinfo(np.int64).max // 4


class _LambdaRankState(NamedTuple):
    """LambdaRank's label-only state, built once per data set (see ``_lambdarank_kernels``)."""

    row_gain: np.ndarray  # per row: NDCG gain G(y), ERR probability R, MAP/MRR binary relevance
    qnorm: np.ndarray  # per query: 1/IDCG@k (NDCG), 1/#relevant (MAP), 1 (ERR, MRR); 0 = no contribution
    disc: np.ndarray  # the pair loop's position discount D (NDCG), else a dummy of length 1
    weight: Optional[np.ndarray]  # row weights of the parity convention, or None for the data's own


def _max_query_size(prep):
    sizes = prep.groups.sizes
    return int(sizes.max()) if sizes.size else 0


def _check_gain(gain):
    if gain is None:
        return None
    if isinstance(gain, (str, bytes)) or np.ndim(gain) != 1:
        raise TypeError("gain must be a 1-D sequence of per-grade gains (LightGBM's label_gain)")
    arr = as_gain_table(gain, "gain", nondecreasing=True)
    return tuple(float(v) for v in arr)


def _pair_budget(offsets):
    """Refuse, before any pair array is allocated, more pairs than the one budget (MAX_PAIRS)."""
    return check_pair_budget(int(offsets[-1]), "LambdaRank couplings",
                             hint="gradients need no pair list; use truncation= or k= to keep fewer pairs, "
                                  "or split very large queries")


class LambdaRank(Objective):
    r"""LambdaRank / LambdaMART gradients: RankNet's pair gradients weighted by the metric's change.

    Per query, rows sorted by current score (stable, ties by row order); for each pair with
    ``y_i > y_j``:

    .. math::

        \lambda_{ij} = \sigma |\Delta Z_{ij}| \rho_{ij}, \qquad
        h_{ij} = \sigma^2 |\Delta Z_{ij}| \rho_{ij} (1 - \rho_{ij}), \qquad
        \rho_{ij} = \frac{1}{1 + e^{\sigma (s_i - s_j)}}

    ``grad_i -= lambda_ij``, ``grad_j += lambda_ij`` and ``h_ij`` is added to ``hess_i`` and
    ``hess_j``; ``|dZ_ij|`` is the change of ``metric`` when ``i`` and ``j`` swap rank positions:

    - ``"ndcg"``: ``|G(y_i) - G(y_j)| |D(r_i) - D(r_j)| / IDCG@k``, ``D(r) = 1/log2(1 + r)`` for
      ``r <= k`` else 0, ``G`` = ``gain[y]`` (LightGBM's ``label_gain``) or ``2^y - 1``.
      Queries with ``IDCG@k = 0`` contribute nothing.
    - ``"err"``: Burges' O(n^2) swap formula (sec. 3), ``R_i = G(y_i) / (1 + G(y_max))``
      (``= (2^y_i - 1) / 2^y_max`` for the default gain), ``y_max`` the largest training label;
      with ``k``, ERR@k.
    - ``"map"``, ``"mrr"``: change of average precision / reciprocal rank, relevance ``y > 0``;
      with ``k``, AP@k normalised by ``min(#relevant, k)`` and RR@k.

    ``grad`` is the derivative of Burges' utility, with ``|dZ|`` frozen at the current sort (what
    :meth:`loss` returns) and the pair weight ``w_ij = (w_i + w_j) / 2``:

    .. math::

        C(s) = \sum_q \sum_{i, j \in q,\, y_i > y_j} w_{ij} |\Delta Z_{ij}|
        \log\bigl(1 + e^{-\sigma (s_i - s_j)}\bigr)

    Options (keyword-only):

    - ``k``: metric cutoff (``None``: the whole list).
    - ``sigma``: sigmoid steepness (LightGBM's ``sigmoid``).
    - ``truncation``: LightGBM's ``lambdarank_truncation_level``: only pairs with at least one
      row ranked in the top ``truncation`` positions. Note: LightGBM also uses it as the cutoff
      of IDCG; here the cutoff of the metric (IDCG and ``D``) is ``k`` alone.
    - ``gain``: per-grade gain table (``metric`` ndcg or err; labels must be integer grades below
      ``len(gain)``).
    - ``norm``: LightGBM's ``lambdarank_norm`` (``rank_objective.hpp``): when the query's scores
      are not all equal each ``|dZ|`` is divided by ``0.01 + |s_i - s_j|``, and the query's
      gradients and hessians are multiplied by ``log2(1 + S) / S`` with ``S = sum_pairs 2 lambda_ij``
      (unweighted). :meth:`loss` applies the same frozen factors, so ``grad`` stays its derivative.
      Default ``False`` (LightGBM's default is ``True``).
    - ``convention``: ``"customobj"`` (default, as above), ``"lightgbm"`` or ``"xgboost"``: NDCG
      the way that library computes it (the lower row of a pair keeps its untruncated ``D``;
      XGBoost doubles the hessian; weights per query). Start from :meth:`like_lightgbm` /
      :meth:`like_xgboost`; see ``docs/parity.md``.

    Limits (``customobj._validation``): with the exponential gain, labels up to 700
    (``EXP_GAIN_MAX_LABEL``) for ``"ndcg"`` and up to 53 (``ERR_MAX_LABEL``) for ``"err"``; a gain
    table up to ``2**700`` per entry (``2**53 - 1`` with ``"err"``); ``k`` and ``truncation`` up to
    ``2**40``. :meth:`pair_couplings` and the OLE pair buffers refuse more than ``MAX_PAIRS`` pairs.

    References
    ----------
    Burges (2010), "From RankNet to LambdaRank to LambdaMART: an overview": section 4 (LambdaRank),
    section 7 (LambdaMART: the utility ``C``, its hessian, model adaptation), section 3 (ERR's swap).

    Examples
    --------
    >>> from customobj import LambdaRank
    >>> grad, hess = LambdaRank(metric="ndcg").grad_hess([0.0, 1.0], [1, 0], group=[2])
    >>> grad.round(4).tolist(), hess.round(4).tolist()  # |dZ| = 1 - 1/log2(3), rho = 1/(1 + e^-1)
    ([-0.2698, 0.2698], [0.0726, 0.0726])
    """

    pairwise = True
    needs_group = True

    def __init__(self, *, metric: str = "ndcg", k: int | None = None, sigma: float = 1.0,
                 truncation: int | None = None, gain: Sequence[float] | None = None, norm: bool = False,
                 convention: str = P.DEFAULT_CONVENTION) -> None:
        self.metric = check_choice(metric, "metric", set(_METRICS))
        self.k = check_int(k, "k", minimum=1, maximum=MAX_ROWS, allow_none=True, hint="k=None means the whole list")
        self.sigma = check_positive(sigma, "sigma")
        self.truncation = check_int(truncation, "truncation", minimum=1, maximum=MAX_ROWS, allow_none=True,
                                    hint="truncation=None means no truncation")
        self.norm = check_bool(norm, "norm")
        self.gain = _check_gain(gain)
        if self.gain is not None and self.metric not in ("ndcg", "err"):
            raise ValueError(f"gain applies to metric 'ndcg' or 'err', not {self.metric!r}")
        if self.gain is not None and self.metric == "err" and max(self.gain) > ERR_MAX_GAIN:
            raise ValueError(f"gain entries must be <= 2**53 - 1 with metric='err' (R = G / (1 + G_max) must stay "
                             f"below 1 in float64), got {max(self.gain):g}")
        self.convention = P.check_convention(convention, self.metric)

    @classmethod
    def like_lightgbm(cls, **lightgbm_params: Any) -> LambdaRank:
        """The LambdaRank that trains the same model as LightGBM's ``objective="lambdarank"``.

        Parameters
        ----------
        **lightgbm_params
            LightGBM's own names and defaults: ``lambdarank_truncation_level`` (30),
            ``lambdarank_norm`` (True), ``sigmoid`` (1.0), ``label_gain`` (``2^i - 1``); also
            ``objective="lambdarank"``. Anything else raises ``ValueError``.

        Returns
        -------
        LambdaRank
            ``k`` = truncation level, ``convention="lightgbm"``; through
            ``customobj.adapters.lightgbm_objective`` the trees equal the native ones
            (``deterministic=True``) up to LightGBM's sigmoid table (docs/parity.md).

        Examples
        --------
        >>> import customobj
        >>> customobj.LambdaRank.like_lightgbm(lambdarank_truncation_level=10)
        LambdaRank(convention='lightgbm', gain=None, k=10, metric='ndcg', norm=True, sigma=1.0, truncation=None)
        """
        return cls(**P.lightgbm_options(lightgbm_params))

    @classmethod
    def like_xgboost(cls, **xgboost_params: Any) -> LambdaRank:
        """The LambdaRank that trains the same model as XGBoost's ``objective="rank:ndcg"``.

        Parameters
        ----------
        **xgboost_params
            XGBoost's own names and defaults: ``lambdarank_pair_method`` ("topk"; "mean" samples
            pairs at random and raises ``ValueError``), ``lambdarank_num_pair_per_sample`` (32),
            ``lambdarank_normalization`` and ``lambdarank_score_normalization`` (True, both or
            neither), ``ndcg_exp_gain`` (True), ``lambdarank_unbiased`` (must be False); also
            ``objective="rank:ndcg"``. Anything else raises ``ValueError``.

        Returns
        -------
        LambdaRank
            ``k`` = pairs per sample, ``sigma=1``, ``convention="xgboost"``; train it with
            ``customobj.adapters.xgboost_objective`` and ``xgboost_params`` (docs/parity.md).

        Examples
        --------
        XGBoost's pairs per document become ``k``; its sigmoid is fixed at ``sigma=1``:

        >>> from customobj import LambdaRank
        >>> obj = LambdaRank.like_xgboost(lambdarank_num_pair_per_sample=8)
        >>> obj.k, obj.sigma, obj.truncation, obj.convention
        (8, 1.0, None, 'xgboost')
        """
        return cls(**P.xgboost_options(xgboost_params))

    @property
    def integer_labels(self) -> bool:  # type: ignore[override]  # depends on the options
        return self.metric == "err" or self.gain is not None

    def check_prepared(self, prep: Prepared) -> None:
        if self.gain is not None and prep.labels.size and prep.labels.max() >= len(self.gain):
            raise ValueError(
                f"labels go up to {prep.labels.max():g} but gain has only {len(self.gain)} entries "
                "(one per grade 0, 1, ...)"
            )
        if self.gain is None and self.metric == "ndcg":
            check_exp_gain_labels(prep.labels)
        if self.gain is None and self.metric == "err":
            check_exp_gain_labels(prep.labels, limit=ERR_MAX_LABEL,
                                  what="LambdaRank(metric='err') (R = 1 - 2**-y must stay below 1 in float64)")
        super().check_prepared(prep)

    def _row_gain(self, y):
        if self.gain is not None:
            return np.asarray(self.gain, dtype=np.float64)[y.astype(np.int64)]
        return np.exp2(y) - 1.0

    def _state(self, prep):
        y = prep.labels
        ptr = prep.ptr
        k = self.k if self.k is not None else _NO_CUTOFF
        sizes = prep.groups.sizes
        disc = np.zeros(1, dtype=np.float64)
        if self.metric == "ndcg":
            row_gain = self._row_gain(y)
            disc = LK.discount_table(_max_query_size(prep), k)
            idcg = LK.ideal_dcg(row_gain, ptr, disc)
            qnorm = np.zeros_like(idcg)
            np.divide(1.0, idcg, out=qnorm, where=idcg > 0)
            if self.convention != P.DEFAULT_CONVENTION:  # IDCG@k above; the pairs' D may go beyond k
                code = as_code(P.CONVENTIONS[self.convention].discount, LK.Discount, "discount")
                disc = checked_value(LK.pair_discount_table(_max_query_size(prep), k, code),
                                     "LambdaRank pair discount")
        elif self.metric == "err":
            g = self._row_gain(y)
            top = g.max() if g.size else 0.0
            row_gain = g / (1.0 + top)  # < 1, so every T_i = 1 - R_i > 0 in Burges' formula
            qnorm = np.ones(sizes.size)
        else:
            row_gain = (y > 0).astype(np.float64)
            n_rel = query_sums(sizes, row_gain)
            if self.metric == "map":
                n_rel = np.minimum(n_rel, k)
                qnorm = np.zeros(sizes.size)
                np.divide(1.0, n_rel, out=qnorm, where=n_rel > 0)
            else:
                qnorm = (n_rel > 0).astype(np.float64)
        return _LambdaRankState(
            row_gain=np.ascontiguousarray(row_gain, dtype=np.float64),
            qnorm=np.ascontiguousarray(qnorm, dtype=np.float64),
            disc=disc,
            weight=P.convention_weights(prep, self.convention),
        )

    def pass_inputs(self, scores: Any, prep: Prepared) -> LK.PassInputs:
        """What the LambdaRank kernels read (CPU pass and GPU drivers): ``scores`` and ``prep``'s
        label-only state (gains, ``qnorm``, discounts, the convention's weights) with the options as
        plain codes."""
        state = prep.state_for(self)
        w, use_w = kernel_weights(prep.weight) if state.weight is None else (state.weight, True)
        k = self.k if self.k is not None else _NO_CUTOFF
        trunc = self.truncation if self.truncation is not None else _NO_CUTOFF
        return LK.PassInputs(scores, prep.ptr, state.row_gain, state.qnorm, state.disc, w, use_w,
                             as_code(_METRICS[self.metric], LK.Metric, "metric"), k, trunc, self.sigma, self.norm,
                             P.CONVENTIONS[self.convention].hess_scale)

    def device_route(self) -> DeviceRoute:
        from . import _lambdarank_route as R

        return DeviceRoute(R.lambdarank, R.lambdarank_couplings, R.lambdarank_loss)

    def _grad_hess(self, scores, prep, state, out_grad, out_hess):
        check_status(LK.lambdarank_grad_hess(self.pass_inputs(scores, prep), out_grad, out_hess), "LambdaRank")

    def _loss(self, scores, prep, state):
        return checked_value(LK.lambdarank_loss(self.pass_inputs(scores, prep)), "LambdaRank")

    def _grad_hess_loss(self, scores, prep, state, out_grad, out_hess):
        inp = self.pass_inputs(scores, prep)
        return checked_value(LK.lambdarank_grad_hess_loss(inp, out_grad, out_hess), "LambdaRank")

    def _pair_couplings(self, scores, prep, state):
        return self._couplings(scores, prep, state, False, _EMPTY, _EMPTY, None)

    def _grad_hess_couplings_loss(self, scores, prep, state, out_grad, out_hess):
        # the cost of _grad_hess_loss (tabled softplus: the GPU's cost, the one read without pairs), then the
        # couplings at the same scores (LambdaRank keeps no round state: the pass's own couplings)
        loss = self._grad_hess_loss(scores, prep, state, out_grad, out_hess)
        return self._pair_couplings(scores, prep, state), loss

    def _grad_hess_couplings(self, scores, prep, state, out_grad, out_hess):
        # One sort per query and one pair pass for gradients, hessians and couplings.
        return self._couplings(scores, prep, state, True, out_grad, out_hess, None)

    writes_pair_buffer = True

    def _grad_hess_couplings_into(self, scores, prep, state, out_grad, out_hess, pair_buffer):
        return self._couplings(scores, prep, state, True, out_grad, out_hess, pair_buffer)

    def relevance_pairs(self) -> RelevancePairs:
        """The logistic pair loss weighed by ``|D(rank_i) - D(rank_j)|``: NDCG's pairs, whose corrected
        relevance enters DCG linearly (the paper corrects additive metrics); other metrics and gain
        tables are a ``TypeError``."""
        from ._pairwise_terms import PairKind

        if self.metric != "ndcg" or self.gain is not None:
            raise TypeError(f"{self!r}: the corrected relevance enters DCG linearly (the paper corrects additive "
                            "metrics), so LambdaRank must use metric='ndcg' and no gain table")
        return RelevancePairs(int(PairKind.LOGISTIC), self.sigma, 1.0, P.CONVENTIONS[self.convention].hess_scale,
                              True, self.k, self.truncation, bool(self.norm))

    def pair_source(self) -> PairSource:
        """``OWN_PASS``: position debiasing runs its own pass, the propensities passed into its pair
        function (:meth:`debiased_pair_terms`)."""
        return PairSource.OWN_PASS

    def debiased_pair_terms(self, scores: np.ndarray, prep: Prepared, position: np.ndarray, tplus: np.ndarray,
                            tminus: np.ndarray, swapped: bool) -> "tuple[np.ndarray, np.ndarray, np.ndarray, LK.Debias]":
        """``(i, j, h, terms)``: every pair with nonzero ``|dZ|`` (``i`` the better row) at float64
        ``scores``, its terms divided by ``t+`` of ``i``'s ``position`` and ``t-`` of ``j``'s
        (Unbiased LambdaMART, Hu et al. WWW 2019; XGBoost's ``LambdaGrad<unbiased>``: the TERMS
        pass, ``_lambdarank_terms.unbiased_pair``): ``h`` the hessian, ``terms.lam`` / ``terms.cost``
        the lambda and loss, ``terms.est`` the undebiased cost the estimate sums (the swapped pair's
        with ``swapped``). Unnormalised; weighted as ``prep`` is (``customobj.clicks.Unbiased``
        passes unweighted data and weighs the pairs itself).

        Examples
        --------
        >>> import numpy as np
        >>> obj = LambdaRank()
        >>> prep = obj.prepare(np.array([0.0, 1.0]), np.array([2]))
        >>> one = np.ones(2)
        >>> i, j, h, t = obj.debiased_pair_terms(np.zeros(2), prep, np.arange(2), one, one, True)
        >>> i.tolist(), j.tolist()
        ([1], [0])
        >>> _, _, h2, t2 = obj.debiased_pair_terms(np.zeros(2), prep, np.arange(2), one, one / 2, True)
        >>> bool(t2.lam[0] == 2 * t.lam[0] and h2[0] == 2 * h[0] and t2.est[0] == t.est[0])
        True
        """
        inp, order, offsets, m = self._counted_pairs(scores, prep)
        rows_i, rows_j = LK.int64_pair_rows(m, scores.shape[0])  # written as int32: one compiled pass
        out = LK.PassOutputs(_EMPTY, _EMPTY, rows_i.written, rows_j.written, np.empty(m))
        terms = LK.Debias(LK.read_only(position), tplus, tminus, bool(swapped), np.empty(m), np.empty(m), np.empty(m))
        check_status(LK.lambdarank_pair_terms(inp, terms, out, order, offsets), "LambdaRank")
        return rows_i.widened(), rows_j.widened(), out.pair_c, terms

    def _counted_pairs(self, scores, prep):
        # Count pass (no pair memory), then the pair budget: every pair path honours it.
        inp = self.pass_inputs(scores, prep)
        order = np.empty(scores.shape[0], dtype=np.int64)
        offsets = checked_value(LK.lambdarank_pair_offsets(inp, order), "LambdaRank")
        return inp, order, offsets, _pair_budget(offsets)

    def _couplings(self, scores, prep, state, with_grad, out_grad, out_hess, pair_buffer):
        inp, order, offsets, m = self._counted_pairs(scores, prep)
        if pair_buffer is not None:
            out_i, out_j, out_c = pair_buffer(m)
            out = LK.PassOutputs(out_grad, out_hess, out_i, out_j, out_c)
            check_status(LK.lambdarank_pair_fill(inp, with_grad, out, order, offsets), "LambdaRank")
            return out_i, out_j, out_c
        rows_i, rows_j = LK.int64_pair_rows(m, scores.shape[0])  # written as int32: one compiled pass
        out = LK.PassOutputs(out_grad, out_hess, rows_i.written, rows_j.written, np.empty(m, np.float64))
        check_status(LK.lambdarank_pair_fill(inp, with_grad, out, order, offsets), "LambdaRank")
        return rows_i.widened(), rows_j.widened(), out.pair_c
