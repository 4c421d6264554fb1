"""Trust bias from interventions: the affine parameters ``alpha_k``, ``beta_k`` from logs in which the
same query-document was shown at several positions, by a randomised or swap logger (Agarwal, Wang,
Li, Bendersky, Najork, "Addressing Trust Bias for Unbiased Learning-to-Rank", WWW 2019, estimate trust
bias from swap interventions) or by several production rankers (intervention harvesting, Agarwal,
Zaitsev, Wang, Li, Najork, Joachims, WSDM 2019, extended here from examination to both parameters).

**The model.** A query-document ``u`` has one relevance ``gamma_u`` in every log (rankers and
interventions change where it is shown, not what it is); shown at position ``k`` it is clicked with
probability ``alpha_k gamma_u + beta_k``, independently of the other rows (the trust-bias click model,
Agarwal et al. 2019). Its clicks at ``k`` out of ``N_uk`` impressions are binomial. The relevance is
integrated out over a distribution ``pi`` on a grid of ``[0, 1]`` (a nonparametric mixture, Laird 1978):

.. math::

    \\log L = \\sum_u \\log \\sum_j \\pi_j \\prod_k (\\alpha_k g_j + \\beta_k)^{C_{uk}}
              (1 - \\alpha_k g_j - \\beta_k)^{N_{uk} - C_{uk}},

maximised by EM (E: each document's posterior over the grid; M: ``pi`` its mean, each position's
click rates at the grid's ends by Newton steps on its concave part). Only documents shown at two or
more positions carry the positions' ratios; a deterministic single ranker has none, and is refused.

**Assumptions** (each needed: clicks alone fix the parameters only up to ``gamma' = a gamma + b``):
relevance is the same in every log and session; clicks follow the trust model above; the positions
a document is shown at do not depend on its clicks; and the relevance *scale*: the least relevant
documents of the log have relevance ``relevance_range[0]``, the most relevant ``relevance_range[1]``
(default ``(0, 1)``: never and always relevant). The estimate's support of ``pi`` (grid points of mass
at least ``min_mass``) is mapped onto that range. On ``simulate_clicks``' defaults the least relevant
grade has ``gamma = 0.1``: with the default range the estimate is ``(0.9 alpha, beta + 0.1 alpha)``,
at most 0.033 from the truth (``relevance_range=(0.1, 1.0)`` removes that; docs/trust-bias.md).

Bootstrap intervals resample the query-documents (``resample="documents"``, the default) or whole
queries (``resample="queries"``: a query's documents enter a resample together, as they were logged
together; the multinomial counts become EM weights, the same as refitting on the queries copied), with
``bootstrap`` refits warm-started from the estimate.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional, Sequence

import numpy as np

from .._validation import check_choice, check_int, check_positive
from .harvest import _cells
from .reader import ClickData
from .simulation import ClickLog
from .trust_em import MIN_ALPHA

__all__ = ["TrustEstimate", "estimate_trust", "RESAMPLE", "DOCUMENTS", "QUERIES"]

#: Click rates are kept inside (P_EPS, 1 - P_EPS): the log-likelihood divides by them.
P_EPS = 1e-6
#: What a bootstrap resample draws, as codes once the option is read (nothing below compares strings).
DOCUMENTS, QUERIES = 0, 1
#: ``resample`` names -> codes: the one list.
RESAMPLE = {"documents": DOCUMENTS, "queries": QUERIES}


class TrustEstimate(NamedTuple):
    """``estimate_trust``'s result: per position (0 = top) the parameters (``alpha >= MIN_ALPHA``,
    ``alpha + beta <= 1``: what ``Affine`` accepts) and, with ``bootstrap``, their 95% percentile
    intervals (``2 x k``: low, high; NaN without bootstrap)."""

    alpha: np.ndarray
    beta: np.ndarray
    alpha_interval: np.ndarray
    beta_interval: np.ndarray
    n_documents: int  # query-documents shown at two or more positions (those used)
    log_likelihood: float
    iterations: int


def _dense(logs: Sequence[Any], n_positions: Optional[int]) -> tuple:
    """``(N, C, query)``: impressions and clicks (``documents x positions``) of the query-documents shown at
    two or more tracked positions, and each one's query (codes ``0 .. n_queries - 1``)."""
    q, d, pos, N, C, _, k = _cells(logs, n_positions)
    _, u = np.unique(q * (d.max(initial=0) + 1) + d, return_inverse=True)
    u = u.reshape(-1)
    Nm = np.zeros((int(u.max(initial=-1)) + 1, k))
    Cm = np.zeros_like(Nm)
    np.add.at(Nm, (u, pos), N)
    np.add.at(Cm, (u, pos), C)
    query = np.zeros(Nm.shape[0], dtype=np.int64)
    query[u] = q
    keep = (Nm > 0).sum(axis=1) >= 2
    Nm, Cm, query = Nm[keep], Cm[keep], np.unique(query[keep], return_inverse=True)[1].reshape(-1)
    seen = np.flatnonzero(Nm.sum(axis=0) == 0)
    if Nm.shape[0] == 0 or seen.size:
        where = "any position" if Nm.shape[0] == 0 else f"position {int(seen[0])} (0 = top)"
        raise ValueError(f"logs: no query-document shown at {where} was also shown at another position, so the "
                         "positions cannot be compared: log with a randomised or swap logger, or give the logs of "
                         "several rankers (a deterministic ranker shows every document at one position)")
    return Nm, Cm, query


def _resample_weights(code: int, query: np.ndarray, rng: Any) -> np.ndarray:
    """One bootstrap resample as EM weights per document: how often it (``DOCUMENTS``) or its query
    (``QUERIES``) was drawn, ``n`` draws with replacement out of ``n`` units."""
    if code == DOCUMENTS:
        n = query.size
        return rng.multinomial(n, np.full(n, 1.0 / n)).astype(np.float64)
    if code == QUERIES:
        n = int(query.max(initial=-1)) + 1
        return rng.multinomial(n, np.full(n, 1.0 / n)).astype(np.float64)[query]
    raise AssertionError(f"resample code {code} has no weights")  # RESAMPLE admits only the two


def _rates(lo: np.ndarray, hi: np.ndarray, g: np.ndarray) -> np.ndarray:
    return np.clip(lo[None, :] + (hi - lo)[None, :] * g[:, None], P_EPS, 1.0 - P_EPS)  # grid x positions


def _em(Nm, Cm, w, g, lo, hi, pi, n_iter, tol) -> tuple:
    """EM from ``(lo, hi, pi)``; returns ``(lo, hi, pi, log-likelihood, iterations)``."""
    wC, wNC = w[:, None] * Cm, w[:, None] * (Nm - Cm)
    last, it = -np.inf, 0
    for it in range(1, n_iter + 1):
        p = _rates(lo, hi, g)
        L = Cm @ np.log(p).T + (Nm - Cm) @ np.log1p(-p).T + np.log(np.maximum(pi, 1e-300))[None, :]
        top = L.max(axis=1, keepdims=True)
        post = np.exp(L - top)
        norm = post.sum(axis=1, keepdims=True)
        ll = float(w @ (top[:, 0] + np.log(norm[:, 0])))
        post /= norm
        pi = (w @ post) / w.sum()
        A, B = post.T @ wC, post.T @ wNC  # grid x positions: expected clicks and non-clicks
        for _ in range(3):  # Newton on each position's concave part, inside the box
            p = _rates(lo, hi, g)
            r = A / p - B / (1.0 - p)
            c = A / p ** 2 + B / (1.0 - p) ** 2 + 1e-12
            u0, u1 = (1.0 - g)[:, None], g[:, None]
            g_lo, g_hi = (u0 * r).sum(0), (u1 * r).sum(0)
            h00, h01, h11 = (u0 * u0 * c).sum(0), (u0 * u1 * c).sum(0), (u1 * u1 * c).sum(0)
            det = np.maximum(h00 * h11 - h01 * h01, 1e-300)
            lo = np.clip(lo + (h11 * g_lo - h01 * g_hi) / det, P_EPS, 1.0 - P_EPS)
            hi = np.clip(hi + (h00 * g_hi - h01 * g_lo) / det, P_EPS, 1.0 - P_EPS)
        if abs(ll - last) <= tol * max(1.0, abs(ll)):
            break
        last = ll
    return lo, hi, pi, ll, it


def _anchored(lo, hi, pi, g, min_mass, r0, r1) -> tuple:
    """``(alpha, beta)`` with the support of ``pi`` mapped onto ``[r0, r1]``."""
    support = g[pi >= min_mass * pi.max()] if np.any(pi >= min_mass) else g[[int(np.argmax(pi))]]
    gl, gh = float(support.min()), float(support.max())
    span = max(gh - gl, 1e-6)
    alpha = np.clip((hi - lo) * span / (r1 - r0), MIN_ALPHA, 1.0)
    beta = np.clip(lo + (hi - lo) * (gl - r0 * span / (r1 - r0)), 0.0, 1.0 - alpha)  # what Affine accepts
    return alpha, beta


def estimate_trust(logs: Any, *, n_positions: Optional[int] = None, relevance_range: tuple = (0.0, 1.0),
                   grid: int = 21, n_iter: int = 500, tol: float = 1e-9, min_mass: float = 0.02,
                   bootstrap: int = 0, resample: str = "documents", seed: int = 0,
                   callback: Optional[Callable[[int, np.ndarray, np.ndarray], None]] = None) -> TrustEstimate:
    """Estimate ``alpha_k``, ``beta_k`` from a randomised or swap log, or from several rankers' logs.

    Parameters
    ----------
    logs : ClickLog or ClickData, or a list of them
        Sessions of one data set (a ``ClickData`` needs ``document`` ids); one randomised / swap log, or
        the logs of several rankers (documents identified across them as in :func:`harvest_propensities`).
    n_positions : int, optional
        Positions estimated (default the deepest shown, at most 32).
    relevance_range : (float, float), 0 <= low < high <= 1
        The relevance of the least and the most relevant documents (the scale clicks leave free).
    grid, n_iter, tol : EM's relevance grid points, iterations at most, relative log-likelihood tolerance.
    min_mass : float in (0, 1)
        A grid point of ``pi`` with at least this share of the largest mass is in the support.
    bootstrap : int >= 0
        Refits on resamples for the 95% intervals (0: none).
    resample : "documents" or "queries"
        What a resample draws with replacement: query-documents (default), or whole queries (their
        documents together: intervals that allow for documents of one query being alike).
    seed : int
    callback : callable, optional
        ``callback(i, alpha, beta)`` after the ``i``-th bootstrap refit (1-based) with its parameters: a
        progress line, or the draws themselves (to check that the intervals are stable).

    Examples
    --------
    >>> import customobj
    >>> d = customobj.data.synthetic(60, 10, 5, seed=0)
    >>> log = customobj.data.simulate_clicks(d, ranker=d.X[:, 0], click_model="trust", sessions=40, seed=0,
    ...                                      logger="randomised")
    >>> est = estimate_trust(log)
    >>> est.alpha.shape, bool(est.alpha[0] > est.alpha[-1]), bool(est.beta[0] > est.beta[-1])
    ((10,), True, True)
    """
    if isinstance(logs, (ClickLog, ClickData)):
        logs = [logs]
    if isinstance(logs, (str, bytes)) or not isinstance(logs, Sequence) or len(logs) == 0:
        raise TypeError("logs must be a ClickLog / ClickData or a non-empty list of them")
    if not (isinstance(relevance_range, (tuple, list)) and len(relevance_range) == 2):
        raise TypeError("relevance_range must be a pair (low, high)")
    r0, r1 = (float(v) for v in relevance_range)
    if not 0.0 <= r0 < r1 <= 1.0:
        raise ValueError(f"relevance_range must satisfy 0 <= low < high <= 1, got {relevance_range}")
    grid = check_int(grid, "grid", minimum=3, maximum=1001)
    n_iter = check_int(n_iter, "n_iter", minimum=1, maximum=100_000)
    tol = check_positive(tol, "tol")
    min_mass = check_positive(min_mass, "min_mass")
    if min_mass >= 1.0:
        raise ValueError(f"min_mass must be in (0, 1), got {min_mass}")
    bootstrap = check_int(bootstrap, "bootstrap", minimum=0, maximum=10_000)
    code = RESAMPLE[check_choice(resample, "resample", set(RESAMPLE))]
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable, got {type(callback).__name__}")
    rng = np.random.default_rng(check_int(seed, "seed", minimum=0))
    Nm, Cm, query = _dense(logs, n_positions)
    g = np.linspace(0.0, 1.0, grid)
    ctr = Cm.sum(0) / Nm.sum(0)
    start = (np.clip(0.5 * ctr, P_EPS, 1 - P_EPS), np.clip(1.5 * ctr + 0.05, P_EPS, 1 - P_EPS), np.full(grid, 1 / grid))
    w = np.ones(Nm.shape[0])
    lo, hi, pi, ll, it = _em(Nm, Cm, w, g, *start, n_iter, tol)
    alpha, beta = _anchored(lo, hi, pi, g, min_mass, r0, r1)
    a_int = b_int = np.full((2, alpha.size), np.nan)
    if bootstrap:
        draws = []
        for i in range(bootstrap):
            fit = _em(Nm, Cm, _resample_weights(code, query, rng), g, lo, hi, pi, max(n_iter // 2, 1), tol)
            draws.append(_anchored(fit[0], fit[1], fit[2], g, min_mass, r0, r1))
            if callback is not None:
                callback(i + 1, draws[-1][0].copy(), draws[-1][1].copy())
        a_b, b_b = np.array([x[0] for x in draws]), np.array([x[1] for x in draws])
        a_int, b_int = np.quantile(a_b, [0.025, 0.975], axis=0), np.quantile(b_b, [0.025, 0.975], axis=0)
    return TrustEstimate(alpha, beta, a_int, b_int, int(Nm.shape[0]), ll, it)
