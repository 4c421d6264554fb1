"""Click metrics under trust bias, for validation without labels: the affine estimate of a ranker's
DCG from a session log (Vardasbi, Oosterhuis, de Rijke, CIKM 2020: the affine estimator of an additive
metric) and the doubly robust one from :func:`customobj.clicks.doubly_robust.dr_data`'s estimates
(Oosterhuis, ACM TOIS 2023). The IPS metrics (``customobj.metrics.ips_ndcg``) are biased under trust
bias: a click at a trusted position is partly a false click, which only ``beta`` removes.

Both re-rank each group's rows by the ranker's scores and sum ``D(r) * gain`` over the ranks ``r < k``
(``D(r) = 1 / log2(2 + r)``), the gains linear in the clicks, so the expectation over the clicks is
the DCG with the true relevances as gains (over the rows shown, resp. the candidates).
"""
from __future__ import annotations

from functools import partial
from typing import Any, Optional, Union

import numpy as np
import numpy.typing as npt

from ._inputs import as_propensity, check_clicks
from .._validation import as_1d_float, check_choice, check_int
from ..groups import as_groups

__all__ = ["affine_dcg", "affine_ndcg", "dr_dcg", "dr_ndcg", "affine_click_metric"]


def _dcg(scores: np.ndarray, gains: np.ndarray, g: Any, k: Optional[int]) -> tuple:
    """Per group: ``(DCG@k of the scores' order, DCG@k of the gains' own order)``, ties by row order."""
    n = scores.size
    query = np.repeat(np.arange(g.n_groups), g.sizes)
    within = np.arange(n) - np.repeat(g.ptr[:-1], g.sizes)
    kk = np.inf if k is None else k
    out = []
    for key in (scores, gains):
        order = np.lexsort((np.arange(n), -key, query))
        rank = np.empty(n, dtype=np.int64)
        rank[order] = within
        disc = np.where(rank < kk, 1.0 / np.log2(2.0 + rank), 0.0)
        out.append(np.bincount(query, weights=disc * gains, minlength=g.n_groups))
    return out[0], out[1]


def _scores(scores: npt.ArrayLike, n: Optional[int] = None) -> np.ndarray:
    return as_1d_float(scores, "scores", n=n, allow_bool=False)


def _affine_gains(clicks, group, alpha, beta):
    c = as_1d_float(clicks, "clicks", allow_bool=True)
    check_clicks(c, "clicks")
    g = as_groups(group, c.size, name="group")
    a = as_propensity(alpha, "alpha")
    b = as_1d_float(beta, "beta", n=a.size, allow_bool=False)
    if g.n_groups and int(g.sizes.max()) > a.size:
        raise ValueError(f"a session shows {int(g.sizes.max())} rows but alpha has {a.size} entries: one per position")
    pos = np.arange(c.size) - np.repeat(g.ptr[:-1], g.sizes)  # rows in display order
    return (c - b[pos]) / a[pos], g


def affine_dcg(scores: npt.ArrayLike, clicks: npt.ArrayLike, group: Any, k: Optional[int] = 10, *,
               alpha: npt.ArrayLike, beta: npt.ArrayLike, per_query: bool = False) -> Union[float, np.ndarray]:
    """The affine estimate of a ranker's DCG@k on a session log (rows of each session in display order,
    as ``read_click_log`` / ``simulate_clicks`` give them): each click becomes ``(c - beta_p) / alpha_p``.

    .. math::

        \\widehat{\\mathrm{DCG}}@k = \\sum_{i:\\, r(i) < k} D(r(i)) \\frac{c_i - \\beta_{p(i)}}{\\alpha_{p(i)}},
        \\qquad \\mathbb{E}\\,\\widehat{\\mathrm{DCG}}@k = \\sum_{i:\\, r(i) < k} D(r(i))\\, R_i .

    The mean over the sessions (``per_query=True``: each session's). ``k=None``: the whole session.

    Examples
    --------
    >>> round(affine_dcg([0.0, 1.0], [0, 1], [2], alpha=[0.5, 0.5], beta=[0.2, 0.1]), 4)  # the click moves to the top
    1.5476
    """
    gains, g = _affine_gains(clicks, group, alpha, beta)
    k = check_int(k, "k", minimum=1, allow_none=True)
    values = _dcg(_scores(scores, gains.size), gains, g, k)[0]
    return values if per_query else float(values.mean()) if values.size else 0.0


def affine_ndcg(scores: npt.ArrayLike, clicks: npt.ArrayLike, group: Any, k: Optional[int] = 10, *,
                alpha: npt.ArrayLike, beta: npt.ArrayLike) -> float:
    """:func:`affine_dcg` summed over the sessions, over the same sum for each session's best order of its
    corrected gains (a ranker-independent scale, as ``ips_ndcg``'s; the sessions' estimates are not
    normalised one by one, which would undo the correction). A log whose best orders sum to <= 0 (no
    click) is a ``ValueError``.

    Examples
    --------
    >>> round(affine_ndcg([1.0, 0.0], [0, 1], [2], alpha=[0.5, 0.5], beta=[0.2, 0.1]), 4)  # the click second
    0.4754
    """
    gains, g = _affine_gains(clicks, group, alpha, beta)
    k = check_int(k, "k", minimum=1, allow_none=True)
    values, ideal = _dcg(_scores(scores, gains.size), gains, g, k)
    if ideal.sum() <= 0.0:
        raise ValueError("clicks: the log's corrected clicks sum to <= 0 in every best order (no click?), so no "
                         "ranker can be told from another (affine_ndcg)")
    return float(values.sum() / ideal.sum())


def dr_dcg(scores: npt.ArrayLike, estimates: npt.ArrayLike, group: Any, k: Optional[int] = 10, *,
           per_query: bool = False) -> Union[float, np.ndarray]:
    """The doubly robust estimate of a ranker's DCG@k: the DCG over each query's candidates with the
    doubly robust relevance estimates (``dr_data(...).y``) as gains, mean over the queries.

    Examples
    --------
    >>> round(dr_dcg([0.0, 1.0], [0.2, 0.9], [2]), 4)
    1.0262
    """
    est = as_1d_float(estimates, "estimates", allow_bool=False)
    g = as_groups(group, est.size, name="group")
    k = check_int(k, "k", minimum=1, allow_none=True)
    values = _dcg(_scores(scores, est.size), est, g, k)[0]
    return values if per_query else float(values.mean()) if values.size else 0.0


def dr_ndcg(scores: npt.ArrayLike, estimates: npt.ArrayLike, group: Any, k: Optional[int] = 10) -> float:
    """:func:`dr_dcg` summed over the queries over the sum of their best orders' (``affine_ndcg``'s scale)."""
    est = as_1d_float(estimates, "estimates", allow_bool=False)
    g = as_groups(group, est.size, name="group")
    k = check_int(k, "k", minimum=1, allow_none=True)
    values, ideal = _dcg(_scores(scores, est.size), est, g, k)
    if ideal.sum() <= 0.0:
        raise ValueError("estimates: their best orders sum to <= 0, so no ranker can be told from another (dr_ndcg)")
    return float(values.sum() / ideal.sum())


def affine_click_metric(name: str, *, alpha: npt.ArrayLike, beta: npt.ArrayLike) -> Any:
    """``"affine_ndcg@K"`` or ``"affine_dcg@K"`` as a :class:`customobj.metrics.Metric` for the adapters'
    ``lightgbm_metric`` / ``xgboost_metric`` (early stopping on a click-only validation log).

    Examples
    --------
    >>> m = affine_click_metric("affine_ndcg@10", alpha=[0.5, 0.4, 0.3], beta=[0.2, 0.1, 0.0])
    >>> m.name, m.higher_is_better
    ('affine_ndcg@10', True)
    """
    from ..metrics import Metric

    if not isinstance(name, str):
        raise TypeError(f"name must be a string such as 'affine_ndcg@10', got {type(name).__name__}")
    base, _, cut = name.strip().lower().partition("@")
    base = check_choice(base, "name", ("affine_ndcg", "affine_dcg"))
    k = None if not cut else check_int(int(cut) if cut.isdigit() else -1, "name's cut-off K", minimum=1)
    a = as_propensity(alpha, "alpha")
    b = as_1d_float(beta, "beta", n=a.size, allow_bool=False)
    func = affine_ndcg if base == "affine_ndcg" else affine_dcg
    return Metric(base if k is None else f"{base}@{k}", partial(func, k=k, alpha=a, beta=b), True)
