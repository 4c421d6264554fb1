"""LambdaRank's conventions and its parity presets: LightGBM's ``lambdarank``, XGBoost's ``rank:ndcg``.

:class:`~customobj.objectives.listwise.LambdaRank` computes Burges' lambdas (2010, sec. 4 and 7);
both libraries compute them too, with three conventions of their own that no other LambdaRank
option expresses. What each library does was read from its source, LightGBM 4.6
``src/objective/rank_objective.hpp`` (``LambdarankNDCG::GetGradientsForOneQuery``) and
``src/metric/dcg_calculator.cpp``; XGBoost 3.2 ``src/objective/lambdarank_obj.{h,cc}``
(``LambdaGrad``, ``MakePairs``, ``CalcLambdaForGroup``) and ``src/common/ranking_utils.{h,cc}``:

- **Discount.** Both libraries normalise by the ideal DCG at their truncation level ``T`` and
  build pairs only whose upper row (by current score) is in the top ``T``, but the lower row of
  a pair keeps its untruncated discount ``1/log2(2 + r)``, wherever it sits. customobj's default
  zeroes ``D`` beyond ``k`` for both rows, so ``|dZ|`` is the exact change of NDCG@k.
  (``_lambdarank_kernels.DISCOUNT_AT_K`` / ``DISCOUNT_FULL``.)
- **Hessian.** XGBoost's pair hessian is ``2 rho (1 - rho) |dZ|`` with the lambda
  ``rho |dZ|``: twice the second derivative of its own pair loss. LightGBM's is
  ``sigma^2 rho (1 - rho) |dZ|``, as customobj's.
- **Weights.** LightGBM multiplies each row's summed lambda by that row's own weight; XGBoost
  weights a query by ``w_q n_queries / sum_q w_q``. customobj weights a pair by
  ``(w_i + w_j) / 2``. They agree when weights are per query (constant within each query): the
  conventions of the two libraries require it, and XGBoost's also rescales the weights.

Everything else already coincides: stable sort by descending score (ties by row order), pairs of
rows with different labels, ``rho = 1 / (1 + exp(sigma (s_hi - s_lo)))``, ``lambdarank_norm``
(divide ``|dZ|`` by ``0.01 + |s_hi - s_lo|`` unless all scores tie, then scale the query by
``log2(1 + S) / S`` with ``S`` the unweighted sum of ``2 lambda``), gains ``2^y - 1``.
Left as is, below the tolerances of ``tests/test_objectives_parity.py``: LightGBM reads ``rho`` from a table
of 2^20 bins over ``|sigma d| < 25`` (up to ~1.2e-5 off) and adds ``0.01f`` (float32), XGBoost
computes ``rho`` in float32 and floors ``rho (1 - rho)`` at 1e-16; both sum pairs in float32.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, NamedTuple

import numpy as np

from .._validation import check_bool, check_int, check_positive
from . import _lambdarank_kernels as LK

if TYPE_CHECKING:
    from .base import Prepared

__all__ = ["Convention", "CONVENTIONS", "DEFAULT_CONVENTION", "check_convention", "convention_weights",
           "lightgbm_options", "xgboost_options"]


class Convention(NamedTuple):
    """How one library computes LambdaRank's lambdas (see the module docstring)."""

    #: The pair loop's discount: ``LK.DISCOUNT_AT_K`` or ``LK.DISCOUNT_FULL``.
    discount: int
    #: Factor on every pair hessian (and OLE coupling).
    hess_scale: float
    #: "pair": ``(w_i + w_j) / 2``; "query": weights must be constant within each query;
    #: "query_normalized": that, and scaled so the query weights average to 1.
    weights: str


#: XGBoost's ``LambdaGrad``: ``hessian_ij = rho (1 - rho) |dZ| * 2.0``.
XGBOOST_HESS_SCALE = 2.0

DEFAULT_CONVENTION = "customobj"
CONVENTIONS = {
    DEFAULT_CONVENTION: Convention(LK.DISCOUNT_AT_K, 1.0, "pair"),
    "lightgbm": Convention(LK.DISCOUNT_FULL, 1.0, "query"),
    "xgboost": Convention(LK.DISCOUNT_FULL, XGBOOST_HESS_SCALE, "query_normalized"),
}

#: LightGBM's defaults (docs/Parameters.rst) of the parameters its lambdarank objective reads.
#: label_gain None: LightGBM's default ``2^i - 1`` (i < 31) is customobj's default gain.
LIGHTGBM_DEFAULTS = {"lambdarank_truncation_level": 30, "lambdarank_norm": True, "sigmoid": 1.0,
                     "label_gain": None}
#: XGBoost's ``LambdaRankParam`` defaults; ``lambdarank_num_pair_per_sample`` None means
#: ``XGBOOST_TOPK`` pairs per row for "topk" (``DefaultK()``).
XGBOOST_DEFAULTS = {"lambdarank_pair_method": "topk", "lambdarank_num_pair_per_sample": None,
                    "lambdarank_normalization": True, "lambdarank_score_normalization": True,
                    "ndcg_exp_gain": True, "lambdarank_unbiased": False}
XGBOOST_TOPK = 32
#: Largest grade XGBoost accepts with the exponential gain (``ltr::MaxRel()``); the linear gain
#: (``ndcg_exp_gain=False``, gain = label) becomes a table over the same grades.
XGBOOST_MAX_REL = 31
_XGBOOST_LINEAR_GAIN = tuple(float(g) for g in range(XGBOOST_MAX_REL + 1))


def check_convention(convention: str, metric: str) -> str:
    """``convention`` if it names one of :data:`CONVENTIONS` usable with ``metric``."""
    if not isinstance(convention, str):
        raise TypeError(f"convention must be a string, one of {sorted(CONVENTIONS)}, got {type(convention).__name__}")
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {sorted(CONVENTIONS)}, got {convention!r}")
    if convention != DEFAULT_CONVENTION and metric != "ndcg":
        raise ValueError(f"convention {convention!r} is the NDCG lambdarank of that library: it needs "
                         f"metric='ndcg', not {metric!r}")
    return convention


def convention_weights(prep: Prepared, convention: str) -> np.ndarray | None:
    """Row weights the kernels use under ``convention``; ``None``: ``prep.weight`` as it is.

    Raises ``ValueError`` when the convention needs per-query weights and a query's rows differ.
    """
    rule = CONVENTIONS[convention].weights
    w = prep.weight
    if rule == "pair" or w is None:
        return None
    ptr = prep.ptr
    sizes = np.diff(ptr)
    firsts = ptr[:-1][sizes > 0]
    per_query = w[firsts]
    varies = np.flatnonzero(np.repeat(per_query, sizes[sizes > 0]) != w)
    if varies.size:
        row = int(varies[0])
        q = int(np.searchsorted(ptr, row, side="right") - 1)
        raise ValueError(
            f"LambdaRank(convention={convention!r}) needs one weight per query, but query {q} has rows "
            f"weighted {w[ptr[q]]:g} and {w[row]:g}: {convention} weights each row's summed lambda by "
            "that row's weight (no pair loss has that gradient), customobj weights a pair by "
            "(w_i + w_j) / 2; the two agree only for per-query weights"
        )
    if rule == "query":
        return None
    total = float(per_query.sum())
    if not total > 0.0:
        raise ValueError("XGBoost's convention divides by the sum of the query weights, which is 0")
    # CalcLambdaForGroup multiplies by w_q * WeightNorm(), WeightNorm() = n_queries / sum_q w_q.
    return np.ascontiguousarray(w * (per_query.size / total), dtype=np.float64)


def _merge(where: str, params: Mapping[str, Any], defaults: Mapping[str, Any], objective: str,
           library: str) -> dict[str, Any]:
    unknown = sorted(set(params) - set(defaults) - {"objective"})
    if unknown:
        raise ValueError(
            f"LambdaRank.{where} got {unknown}: it takes the parameters of {library}'s {objective!r} "
            f"objective, {sorted(defaults)} (and objective={objective!r}); booster parameters such as "
            f"learning rate or tree size stay in the params you train with"
        )
    if "objective" in params and params["objective"] != objective:
        raise ValueError(f"LambdaRank.{where} reproduces {library}'s objective={objective!r}, "
                         f"got objective={params['objective']!r}")
    out = dict(defaults)
    out.update((k, v) for k, v in params.items() if k != "objective")
    return out


def _label_gain(value: Any) -> Any:
    # LightGBM takes a list or, as in its config files, a comma-separated string.
    if isinstance(value, str):
        try:
            return [float(t) for t in value.split(",")]
        except ValueError:
            raise ValueError(f"label_gain must be numbers separated by commas, got {value!r}") from None
    return value


def lightgbm_options(params: Mapping[str, Any]) -> dict[str, Any]:
    """LambdaRank's keyword options equal to LightGBM's ``lambdarank`` with ``params``.

    Truncation level ``T`` becomes ``k=T`` (IDCG@T, upper rows in the top T) with
    ``convention="lightgbm"`` (the lower row keeps its untruncated discount).
    """
    p = _merge("like_lightgbm", params, LIGHTGBM_DEFAULTS, "lambdarank", "LightGBM")
    return {
        "metric": "ndcg",
        "k": check_int(p["lambdarank_truncation_level"], "lambdarank_truncation_level", minimum=1),
        "sigma": check_positive(p["sigmoid"], "sigmoid"),
        "gain": _label_gain(p["label_gain"]),
        "norm": check_bool(p["lambdarank_norm"], "lambdarank_norm"),
        "convention": "lightgbm",
    }


def xgboost_options(params: Mapping[str, Any]) -> dict[str, Any]:
    """LambdaRank's keyword options equal to XGBoost's ``rank:ndcg`` with ``params`` ("topk" pairs)."""
    p = _merge("like_xgboost", params, XGBOOST_DEFAULTS, "rank:ndcg", "XGBoost")
    method = p["lambdarank_pair_method"]
    if method == "mean":
        raise ValueError(
            "lambdarank_pair_method='mean' pairs every row with lambdarank_num_pair_per_sample partners "
            "drawn at random each round (std::minstd_rand seeded from the booster's generator), so no "
            "deterministic objective can reproduce it; use 'topk' (XGBoost's default), which like_xgboost "
            "reproduces"
        )
    if method != "topk":
        raise ValueError(f"lambdarank_pair_method must be 'topk' or 'mean', got {method!r}")
    if check_bool(p["lambdarank_unbiased"], "lambdarank_unbiased"):
        raise ValueError(
            "lambdarank_unbiased=True estimates position-bias ratios from every round's pairs and divides "
            "the lambdas by them (Unbiased LambdaMART): state that customobj's objectives do not keep; "
            "like_xgboost needs lambdarank_unbiased=False (the default)"
        )
    n_pair = p["lambdarank_num_pair_per_sample"]
    n_pair = XGBOOST_TOPK if n_pair is None else check_int(n_pair, "lambdarank_num_pair_per_sample", minimum=1)
    by_sum = check_bool(p["lambdarank_normalization"], "lambdarank_normalization")
    by_diff = check_bool(p["lambdarank_score_normalization"], "lambdarank_score_normalization")
    if by_sum != by_diff:
        raise ValueError(
            "LambdaRank's norm switches both of XGBoost's normalisations together (it is LightGBM's "
            "lambdarank_norm): set lambdarank_normalization and lambdarank_score_normalization both True "
            f"(XGBoost's defaults) or both False, got {by_sum} and {by_diff}"
        )
    exp_gain = check_bool(p["ndcg_exp_gain"], "ndcg_exp_gain")
    return {
        "metric": "ndcg",
        "k": n_pair,
        "sigma": 1.0,  # XGBoost's sigmoid has no steepness parameter
        "gain": None if exp_gain else _XGBOOST_LINEAR_GAIN,
        "norm": by_sum,
        "convention": "xgboost",
    }
