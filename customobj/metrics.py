"""Ranking metrics (docs/formulas.md, "Metrics"), computed per query by numba kernels and averaged.

Every function takes ``(scores, labels, group, ...)``: ``group`` is a ``Groups``, a sizes array or a
list of sizes. It returns the mean over queries (a float), or with ``per_query=True`` a float64
array with one value per query.

Shared conventions
------------------
* Ranking: rows sorted by descending score with a stable sort, so equal scores keep row order
  (LightGBM's ``std::stable_sort`` convention). ``ties="pessimistic"`` puts the lower label first
  among equal scores instead (the worst case for the ranker).
* Queries of size 0 are excluded from every mean. In ``per_query`` output they hold the
  ``empty`` value where the metric has one, 0.0 otherwise.
* ``empty`` (NDCG, MAP, MRR): the value of a query the metric cannot normalise (IDCG = 0, or no
  relevant document). Default 1.0 = LightGBM's convention for ``ndcg`` and ``map``; 0.0 is the
  TREC convention; ``"exclude"`` drops such queries from the mean (they are NaN in ``per_query``
  output - the only NaN these functions ever return, and only when asked to exclude).
* A mean over no query at all (no rows, or every query excluded) is a ``ValueError``.
"""
from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import partial
from typing import Any, Callable, NamedTuple, Optional, Tuple, Union

import numpy as np

from customobj import _metric_kernels as K
from customobj._kernel_status import as_code, check_status
from customobj._metric_inputs import (IPS_CLIP, _discounts, _empty, _inputs, _ips_gains, _ips_propensity, _k, _reduce,
                                     _row_gains, _ties)
from customobj._validation import (EXP_GAIN_MAX_LABEL, MAX_ROWS, check_exp_gain_labels, check_int, check_pair_budget,
                                   check_real)
from customobj.groups import Groups

ArrayLike = Any  # numpy array, list, pandas Series
GroupLike = Union[Groups, ArrayLike]  # a Groups or query sizes

__all__ = [
    "ndcg",
    "dcg",
    "ndcg_mpboost",
    "err",
    "average_precision",
    "reciprocal_rank",
    "precision_at_percent",
    "misordered_pairs",
    "ips_dcg",
    "ips_ndcg",
    "click_metric",
    "IPS_CLIP",
    "Metric",
    "get_metric",
    "METRIC_NAMES",
]


def _run_dcg(scores, labels, group, k, gain, ties, disc_kind, normalize):
    s, y, g = _inputs(scores, labels, group, integer=gain is not None)
    gains = _row_gains(y, gain)
    disc = _discounts(g.ptr, disc_kind)
    values = np.empty(g.n_groups)
    status = np.empty(g.n_groups, dtype=np.int64)
    K.dcg_all(s, gains, y, g.ptr, disc, _k(k), _ties(ties), normalize, values, status)
    return values, status


# ------------------------------------------------------------------------------------------------
# graded metrics
# ------------------------------------------------------------------------------------------------
def ndcg(scores: ArrayLike, labels: ArrayLike, group: GroupLike, k: Optional[int] = 10, *,
         empty: Union[float, str] = 1.0, gain: Optional[ArrayLike] = None, ties: str = "stable",
         per_query: bool = False) -> Union[float, np.ndarray]:
    """NDCG@k = DCG@k / IDCG@k, DCG@k = sum_{r<=k} G(y_(r)) / log2(1 + r) (Jarvelin & Kekalainen 2002).

    ``G(y) = 2**y - 1`` by default, or ``gain[y]`` for a table indexed by integer grade (LightGBM's
    ``label_gain``; IDCG then sorts by gain, the true maximum). ``k=None`` uses the whole list.
    Queries with IDCG = 0 (no positive gain) score ``empty``. Matches LightGBM's ``ndcg@k``.
    """
    e = _empty(empty)
    values, status = _run_dcg(scores, labels, group, k, gain, ties, "standard", True)
    return _reduce(values, status, e, per_query)


def dcg(scores: ArrayLike, labels: ArrayLike, group: GroupLike, k: Optional[int] = 10, *,
        gain: Optional[ArrayLike] = None, ties: str = "stable", per_query: bool = False) -> Union[float, np.ndarray]:
    """DCG@k = sum_{r<=k} G(y_(r)) / log2(1 + r), unnormalised; ``G``, ``k``, ``ties`` as in :func:`ndcg`."""
    values, status = _run_dcg(scores, labels, group, k, gain, ties, "standard", False)
    return _reduce(values, status, 0.0, per_query)


def ndcg_mpboost(scores: ArrayLike, labels: ArrayLike, group: GroupLike, k: Optional[int] = 10, *,
                 empty: Union[float, str] = 1.0, ties: str = "stable",
                 per_query: bool = False) -> Union[float, np.ndarray]:
    """MPBoost's NDCG (Zhu et al. 2009, sec. 5.2): N(n) = Z_n sum_{j<=n} (2^{r(j)} - 1) / d(j),
    d(1) = 1 and d(j) = log2(j) for j > 1, with Z_n making the ideal list score 1.

    Positions 1 and 2 are both undiscounted. IDCG = 0 queries score ``empty`` as in :func:`ndcg`.
    """
    e = _empty(empty)
    values, status = _run_dcg(scores, labels, group, k, None, ties, "mpboost", True)
    return _reduce(values, status, e, per_query)


def err(scores: ArrayLike, labels: ArrayLike, group: GroupLike, k: Optional[int] = None, *,
        max_grade: Optional[float] = None, ties: str = "stable",
        per_query: bool = False) -> Union[float, np.ndarray]:
    """ERR@k = sum_{r<=k} (1/r) R_r prod_{i<r} (1 - R_i), R = (2^y - 1) / 2^max_grade
    (Chapelle, Metzler, Zhang & Grinspan 2009).

    ``max_grade`` defaults to the largest label in ``labels`` (all data, not per query) and must be
    at least that. An all-zero query scores 0 (ERR is not normalised, so it needs no ``empty``).
    Labels must be integer grades (0, 1, 2, ...): ERR's stopping probabilities are defined per grade.
    """
    s, y, g = _inputs(scores, labels, group, integer=True)
    check_exp_gain_labels(y, what="ERR's stopping probability (2**y - 1) / 2**max_grade")
    top = float(y.max()) if y.size else 0.0
    if max_grade is None:
        max_grade = top
    else:
        if isinstance(max_grade, bool) or not isinstance(max_grade, (int, float, np.integer, np.floating)):
            raise TypeError(f"max_grade must be a number, got {type(max_grade).__name__}")
        max_grade = check_real(max_grade, "max_grade")
        if not top <= max_grade <= EXP_GAIN_MAX_LABEL:
            raise ValueError(
                f"max_grade must be finite and >= the largest label ({top:g}), and at most {EXP_GAIN_MAX_LABEL} "
                f"(2**max_grade must stay finite), got {max_grade}"
            )
    prob = (np.exp2(y) - 1.0) / np.exp2(float(max_grade))
    values = np.empty(g.n_groups)
    status = np.empty(g.n_groups, dtype=np.int64)
    K.err_all(s, y, prob, g.ptr, _k(k), _ties(ties), values, status)
    return _reduce(values, status, 0.0, per_query)


# ------------------------------------------------------------------------------------------------
# binary-relevance metrics (relevant = label > 0)
# ------------------------------------------------------------------------------------------------
def _run_binary(scores, labels, group, k, empty, ties, per_query, which):
    e = _empty(empty)
    s, y, g = _inputs(scores, labels, group)
    values = np.empty(g.n_groups)
    status = np.empty(g.n_groups, dtype=np.int64)
    code = as_code(which, K.BinaryMetric, "which")
    check_status(K.binary_relevance_all(s, y, g.ptr, _k(k), _ties(ties), code, values, status),
                 "binary-relevance metric")
    return _reduce(values, status, e, per_query)


def average_precision(scores: ArrayLike, labels: ArrayLike, group: GroupLike, k: Optional[int] = None, *,
                      empty: Union[float, str] = 1.0, ties: str = "stable",
                      per_query: bool = False) -> Union[float, np.ndarray]:
    """MAP: mean over queries of AP@k = sum_{r<=k, y_(r)>0} P@r / min(R, k), R = #{y > 0} in the query.

    ``k=None`` is the whole list (denominator R). Queries without a relevant document score
    ``empty``: 1.0 by default as in LightGBM's ``map@k``; pass 0.0 for the TREC convention or
    ``"exclude"``.
    """
    return _run_binary(scores, labels, group, k, empty, ties, per_query, K.BinaryMetric.AVERAGE_PRECISION)


def reciprocal_rank(scores: ArrayLike, labels: ArrayLike, group: GroupLike, k: Optional[int] = None, *,
                    empty: Union[float, str] = 1.0, ties: str = "stable",
                    per_query: bool = False) -> Union[float, np.ndarray]:
    """MRR: mean over queries of 1 / (rank of the first row with y > 0); 0 if it is below rank k.

    Queries without a relevant document score ``empty`` (1.0 by default, like :func:`average_precision`).
    """
    return _run_binary(scores, labels, group, k, empty, ties, per_query, K.BinaryMetric.RECIPROCAL_RANK)


# ------------------------------------------------------------------------------------------------
# pairwise metrics
# ------------------------------------------------------------------------------------------------
def precision_at_percent(scores: ArrayLike, labels: ArrayLike, group: GroupLike, percent: float = 100) -> float:
    """QBRank's precision at K% (Zheng et al. 2007, sec. 5): take every within-query pair with
    different labels, sort by ``|s_x - s_y|`` descending, return the fraction correctly ordered
    (higher label, strictly higher score) among the top ``ceil(K% * n_pairs)`` pairs.

    One number over all pairs of all queries, so there is no ``per_query``. Pairs are listed in
    (query, row i, row j > i) order and the sort is stable, so ties in ``|s_x - s_y|`` keep that order.
    Tied scores count as wrong, so precision@100% = 1 - ``misordered_pairs(...)[1]``. With no
    pair at all (every query has a single label) the result is 1.0: nothing was misordered.
    """
    s, y, g = _inputs(scores, labels, group)
    if isinstance(percent, bool) or not isinstance(percent, (int, float, np.integer, np.floating)):
        raise TypeError(f"percent must be a number in (0, 100], got {type(percent).__name__}")
    check_real(percent, "percent")  # refuses ints beyond the float range; the value is kept for messages
    if not (0 < percent <= 100):
        raise ValueError(f"percent must be in (0, 100], got {percent}")
    if percent == 100:
        # Every pair counts: no sort, so no pair list (a 20,000-row query has 2e8 pairs).
        bad = np.empty(g.n_groups, dtype=np.int64)
        total = np.empty(g.n_groups, dtype=np.int64)
        K.misordered_all(s, y, g.ptr, bad, total)
        m = int(total.sum())
        return (m - int(bad.sum())) / m if m else 1.0
    m = int(K.count_label_pairs(y, g.ptr))
    if m == 0:
        return 1.0
    check_pair_budget(m, f"precision_at_percent(percent={percent})",
                      hint="percent=100 needs no pair list; otherwise evaluate on fewer rows per query")
    abs_diff = np.empty(m)
    correct = np.empty(m, dtype=np.bool_)
    K.fill_pair_margins(s, y, g.ptr, abs_diff, correct)
    # Exact decimal arithmetic: 10% of 30 pairs is 3 pairs, not ceil(3.0000000000000004) = 4.
    n_top = max(1, math.ceil(Fraction(str(float(percent))) * m / 100))
    return float(K.top_fraction_correct(abs_diff, correct, n_top))


def misordered_pairs(scores: ArrayLike, labels: ArrayLike, group: GroupLike, *,
                     per_query: bool = False) -> Tuple[Union[int, np.ndarray], Union[float, np.ndarray]]:
    """Mis-ordered pairs (Zhu et al. 2009, eq. 16): pairs with y_i > y_j but s_i <= s_j.

    Each unordered pair with different labels counts once. Returns ``(count, fraction)`` with
    fraction = count / (pairs with different labels), 0.0 when there is no such pair; with
    ``per_query=True`` returns ``(counts, fractions)`` arrays (int64, float64), one entry per query.
    """
    s, y, g = _inputs(scores, labels, group)
    bad = np.empty(g.n_groups, dtype=np.int64)
    total = np.empty(g.n_groups, dtype=np.int64)
    K.misordered_all(s, y, g.ptr, bad, total)
    if per_query:
        frac = np.zeros(g.n_groups)
        has = total > 0
        frac[has] = bad[has] / total[has]
        return bad, frac
    n_bad, n_total = int(bad.sum()), int(total.sum())
    return n_bad, (n_bad / n_total if n_total else 0.0)


def _misordered_fraction(scores, labels, group):
    return misordered_pairs(scores, labels, group)[1]


# ------------------------------------------------------------------------------------------------
# counterfactual click metrics
# ------------------------------------------------------------------------------------------------
def _run_ips(scores, clicks, group, k, propensity, clip, ties):
    """Per session: the click DCG@k of the scores and of the session's best order (``(values, ideal)``)."""
    s, c, g = _inputs(scores, clicks, group)
    gains = _ips_gains(c, g, propensity, clip)
    disc, kk = _discounts(g.ptr, "standard"), _k(k)
    values, ideal = np.empty(g.n_groups), np.empty(g.n_groups)
    status = np.empty(g.n_groups, dtype=np.int64)
    # A click DCG is a DCG whose gains are the weighed clicks: the metrics' own kernel, ties on the gains;
    # ranked by the gains themselves it is the best order's.
    K.dcg_all(s, gains, gains, g.ptr, disc, kk, _ties(ties), False, values, status)
    K.dcg_all(gains, gains, gains, g.ptr, disc, kk, False, False, ideal, status)
    return values, ideal, status


def ips_dcg(scores: ArrayLike, clicks: ArrayLike, group: GroupLike, k: Optional[int] = 10, *,
            propensity: ArrayLike, clip: float = IPS_CLIP, ties: str = "stable",
            per_query: bool = False) -> Union[float, np.ndarray]:
    """Counterfactual click DCG@k: the DCG a ranker would earn on a click log, each click weighed by
    its inverse examination propensity (Joachims, Swaminathan, Schnabel, WSDM 2017; for DCG and
    other additive metrics Agarwal, Takatsu, Zaitsev, Joachims, SIGIR 2019).

    Each query group is one logged session: the rows shown in display order (``p(i)``, 0 = top, is
    the row within the session: the layout of ``customobj.data.read_click_log`` and
    ``simulate_clicks``) with their clicks ``c_i`` (0 / 1). The ranker's scores re-rank the session's
    rows; a click counts at its new rank ``r(i)`` (0-based, ``D(r) = 1 / log2(2 + r)``):

    .. math::

        \\widehat{\\mathrm{DCG}}@k = \\sum_{i:\\, c_i = 1,\\ r(i) < k}
            \\frac{D(r(i))}{\\max(\\rho_{p(i)}, \\tau)}

    with ``rho = propensity`` and ``tau = clip``. **Bias.** Under the position-based model (a row
    is examined with probability ``rho_p`` and then clicked with probability ``gamma_i``, its
    relevance), the expectation over users is

    .. math::

        E\\,\\widehat{\\mathrm{DCG}}@k = \\sum_{i:\\, r(i) < k} \\gamma_i\\, D(r(i))
            \\frac{\\rho_{p(i)}}{\\max(\\hat\\rho_{p(i)}, \\tau)},

    so with the true propensities and ``tau <= min rho`` it is unbiased for the DCG of the ranker
    with gains ``gamma`` over the shown rows (the true-label metric's click analogue). Clipping
    biases it down at positions with ``rho < tau`` by the factor ``rho / tau`` (never up);
    estimated propensities ``rho_hat`` bias it by ``rho / rho_hat``. Rows never shown cannot be
    credited. **Variance.** Clicks being independent given the session,

    .. math::

        \\mathrm{Var}\\,\\widehat{\\mathrm{DCG}}@k = \\sum_{i:\\, r(i) < k}
            \\frac{D(r(i))^2}{\\max(\\hat\\rho_{p(i)}, \\tau)^2}\\, \\rho_{p(i)} \\gamma_i (1 - \\rho_{p(i)} \\gamma_i),

    which grows as ``1 / rho`` for rarely examined positions; clipping caps each click's weight at
    ``1 / tau``. Averaging over ``n`` sessions divides it by ``n``.

    Parameters
    ----------
    scores : array of float
        The ranker's scores of the logged rows.
    clicks : array of 0 / 1
    group : Groups or sizes
        Rows per session.
    k : int or None
        Cut-off (``None``: the whole session).
    propensity : array of float in [0, 1e20]
        Examination propensity per display position (position 0 first), given or estimated
        (``Unbiased(...).position_bias_``, ``RegressionEM(...).position_bias_``); ``np.ones(n)``
        gives the naive click DCG. Every position shown needs an entry.
    clip : float in [1e-16, 1]
        ``tau``: propensities below it count as ``tau`` (default :data:`IPS_CLIP`; the floor is
        ``customobj._validation.MIN_PROPENSITY``, so no click weighs more than 1e16).
    ties, per_query
        As in :func:`ndcg`.

    Examples
    --------
    >>> ips_dcg([0.0, 1.0, 2.0], [0, 0, 1], [3], propensity=[1.0, 0.5, 0.25])  # the click moves to the top
    4.0
    """
    values, _, status = _run_ips(scores, clicks, group, k, propensity, clip, ties)
    return _reduce(values, status, 0.0, per_query)


def ips_ndcg(scores: ArrayLike, clicks: ArrayLike, group: GroupLike, k: Optional[int] = 10, *,
             propensity: ArrayLike, clip: float = IPS_CLIP, ties: str = "stable",
             per_query: bool = False) -> Union[float, np.ndarray]:
    """Counterfactual click NDCG@k: the sessions' :func:`ips_dcg` summed, over the same sum for the
    best order of every session (its weighed clicks sorted by weight).

    .. math::

        \\widehat{\\mathrm{NDCG}}@k = \\frac{\\sum_s \\widehat{\\mathrm{DCG}}_s@k}
            {\\sum_s \\max_\\pi \\widehat{\\mathrm{DCG}}_{s, \\pi}@k}

    In ``[0, 1]``; the denominator does not depend on the ranker, so it orders rankers as
    :func:`ips_dcg` does and keeps its bias and variance (up to that scale, itself estimated from
    the log). Why not one ratio per session, as NDCG normalises per query: a session's single click
    would then count ``D(r) / D(0)`` whatever its propensity, and the debiasing would vanish. Measured
    (``benchmarks/click_metrics.py``, MQ2008 Fold1, PBM clicks, 16 models, 3 logs): Spearman with
    the true-label NDCG@10 0.98 normalised over the log, 0.76 per session, 0.72 naive at ``eta=1``;
    0.95, 0.67 and 0.63 at ``eta=2``. ``per_query=True`` gives each session's
    ``ips_dcg`` over the mean denominator (their mean is the metric). Arguments as in :func:`ips_dcg`;
    a log without any click is a ``ValueError``.

    Examples
    --------
    >>> ips_ndcg([0.0, 1.0, 2.0], [1, 0, 1], [3], propensity=[1.0, 0.5, 0.25])  # doctest: +ELLIPSIS
    0.9...
    """
    values, ideal, status = _run_ips(scores, clicks, group, k, propensity, clip, ties)
    sessions = status != K.STATUS_EMPTY_GROUP
    scale = ideal[sessions].mean() if np.any(sessions) else 0.0
    if scale <= 0.0:
        raise ValueError("clicks: the log has no click, so no ranker can be told from another (ips_ndcg)")
    return _reduce(values / scale, status, 0.0, per_query)


def click_metric(name: str, *, propensity: ArrayLike, clip: float = IPS_CLIP) -> "Metric":
    """A click metric as a :class:`Metric` for the adapters' ``lightgbm_metric`` / ``xgboost_metric``
    (early stopping on a click-only validation log): ``"ips_ndcg@K"``, ``"ips_dcg@K"`` (no ``@K``:
    the whole session). Rows in display order, as :func:`ips_dcg` reads them.

    Examples
    --------
    >>> m = click_metric("ips_ndcg@10", propensity=[1.0, 0.5, 0.33])
    >>> m.name, m.func([0.0, 1.0, 2.0], [1, 0, 0], [3]) < 1.0
    ('ips_ndcg@10', True)
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a string such as 'ips_ndcg@10', got {type(name).__name__}")
    m = _IPS_RE.match(name.strip().lower())
    if m is None:
        raise ValueError(f"unknown click metric {name!r}: 'ips_ndcg@K', 'ips_dcg@K', 'ips_ndcg' or 'ips_dcg'")
    k = None if m.group(2) is None else check_int(int(m.group(2)), f"metric {name!r}: the cut-off K", minimum=1,
                                                     maximum=MAX_ROWS)
    func = ips_ndcg if m.group(1) == "ips_ndcg" else ips_dcg
    rho, clip = _ips_propensity(propensity, clip)  # checked now, not at the first evaluation
    canonical = m.group(1) if k is None else f"{m.group(1)}@{k}"
    return Metric(canonical, partial(func, k=k, propensity=rho, clip=clip), True)


_IPS_RE = re.compile(r"^(ips_ndcg|ips_dcg)(?:@(\d+))?$")


# ------------------------------------------------------------------------------------------------
# name resolver
# ------------------------------------------------------------------------------------------------
class Metric(NamedTuple):
    """A metric by name: ``func(scores, labels, group) -> float``."""

    name: str
    func: Callable
    higher_is_better: bool


METRIC_NAMES = """\
Metric names (case-insensitive):
  ndcg@K          NDCG at K (LightGBM convention: all-zero queries score 1); "ndcg" = whole list
  dcg@K, dcg      DCG at K / whole list
  ndcg_mpboost@K  MPBoost's NDCG variant (position 1 and 2 undiscounted); "ndcg_mpboost" = whole list
  err@K, err      expected reciprocal rank at K / whole list
  map, map@K      mean average precision (relevant: label > 0)
  mrr, mrr@K      mean reciprocal rank (relevant: label > 0)
  precision@P%    QBRank's precision at P% of pairs sorted by |score difference|, 0 < P <= 100
  misordered      fraction of mis-ordered pairs (lower is better)"""

_RANKED: dict[str, Callable[..., Any]] = {
    "ndcg": ndcg,
    "dcg": dcg,
    "ndcg_mpboost": ndcg_mpboost,
    "err": err,
    "map": average_precision,
    "mrr": reciprocal_rank,
}
_RANKED_RE = re.compile(r"^(ndcg_mpboost|ndcg|dcg|err|map|mrr)(?:@(\d+))?$")
_PRECISION_RE = re.compile(r"^precision@(\d+(?:\.\d+)?)%$")


def get_metric(name: str) -> Metric:
    """Resolve a metric name such as ``"ndcg@10"``, ``"err"``, ``"precision@10%"`` or ``"misordered"``."""
    if not isinstance(name, str):
        raise TypeError(f"metric name must be a string, got {type(name).__name__}")
    key = name.strip().lower()
    m = _RANKED_RE.match(key)
    if m:
        base, k = m.group(1), m.group(2)
        kk = None if k is None else int(k)
        if kk == 0:
            raise ValueError(f"metric {name!r}: the cut-off K must be >= 1")
        if kk is not None and kk > MAX_ROWS:
            raise ValueError(f"metric {name!r}: the cut-off K must be <= {MAX_ROWS} (drop @K for the whole list)")
        canonical = base if kk is None else f"{base}@{kk}"
        return Metric(canonical, partial(_RANKED[base], k=kk), True)
    m = _PRECISION_RE.match(key)
    if m:
        p = float(m.group(1))
        if not (0 < p <= 100):
            raise ValueError(f"metric {name!r}: the percentage must be in (0, 100]")
        return Metric(f"precision@{m.group(1)}%", partial(precision_at_percent, percent=p), True)
    if key == "misordered":
        return Metric("misordered", _misordered_fraction, False)
    raise ValueError(f"unknown metric {name!r}.\n{METRIC_NAMES}")
