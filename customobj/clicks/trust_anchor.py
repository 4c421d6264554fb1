"""An outside anchor for the relevance scale of trust-bias parameters: a few labelled queries.

Clicks fix the trust-bias parameters only up to the relevance scale: with ``gamma' = a gamma + b`` the
parameters ``(alpha / a, beta - alpha b / a)`` give the same click probabilities ``alpha gamma + beta``
(Agarwal, Wang, Li, Bendersky, Najork, WWW 2019, trust bias; Vardasbi, Oosterhuis, de Rijke, CIKM 2020,
the affine estimator), so an estimate from clicks alone (``TrustEM``, ``estimate_trust``) is one member of
that family, and every affine click metric computed with it (``customobj.clicks.metrics.affine_dcg``) is
``a DCG + b sum D`` of the true one: the ranking of rankers is right, the value is not. Labelled rows
(query-documents whose relevance on the wanted scale is known, in the log's sessions) fix ``a`` and ``b``.
For a row at position ``k`` with relevance ``R`` the estimate's parameters ``(alpha_k, beta_k)`` say

.. math::

    \\mathbb{E}[c] = \\alpha_k (a R + b) + \\beta_k
    \\quad\\Longrightarrow\\quad
    c - \\beta_k = a\\, \\alpha_k R + b\\, \\alpha_k + \\varepsilon ,

a linear regression without intercept on ``(alpha_k R, alpha_k)``; least squares over the labelled rows
(unbiased, as ``E[c]`` is linear in ``a``, ``b``; weighting by ``alpha_k^2`` in ``(c - beta_k) / alpha_k``'s
terms, the rows the clicks say most about weigh most). The anchored parameters are ``(a alpha_k,
beta_k + b alpha_k)``: with them the affine estimate of a row is ``R`` in expectation, on the labels' scale.

With ``per_position=True`` each position gets its own map from its own labelled rows: the estimate's
shape errors are mended too (then the anchored parameters are those a regression of the clicks on the
labels gives per position, and the estimate only fills positions whose labelled rows show one relevance),
at the price of two numbers per position to estimate from the labels instead of two in all.

Assumptions: (pooled map) the estimate is a member of the family (its positions' ratios right; a wrong
shape is not mended by two numbers); the labelled rows' relevance is on the scale the metric should
have; they are logged like the others (their clicks follow the same model).
"""
from __future__ import annotations

from typing import Any, NamedTuple, Optional

import numpy as np
import numpy.typing as npt

from ._inputs import as_position, as_propensity, check_clicks, check_position_groups
from .._validation import as_1d_float
from ..groups import as_groups
from .trust_em import MIN_ALPHA

__all__ = ["TrustAnchor", "anchor_trust"]


class TrustAnchor(NamedTuple):
    """:func:`anchor_trust`'s result: the anchored parameters per position (0 = top), and the map of the
    estimate's relevance scale onto the labels' per position, ``gamma_estimate = scale_k * R + offset_k``
    (one value repeated for the pooled map)."""

    alpha: np.ndarray
    beta: np.ndarray
    scale: np.ndarray
    offset: np.ndarray
    n_rows: int  # labelled rows used


def _fit_map(clicks: np.ndarray, relevance: np.ndarray, alpha_row: np.ndarray, beta_row: np.ndarray) -> tuple:
    """``(scale, offset)``: least squares of ``c - beta`` on ``(alpha R, alpha)`` over the rows (the normal
    equations in float64; clicks may be expectations here, which recovers the map exactly)."""
    u, v, t = alpha_row * relevance, alpha_row, clicks - beta_row
    suu, suv, svv = float(u @ u), float(u @ v), float(v @ v)
    det = suu * svv - suv * suv
    if not det > 1e-12 * max(suu * svv, 1e-300):
        raise ValueError("relevance: the labelled rows' relevance must take at least two values (with one value "
                         "the scale and the offset cannot be told apart)")
    sut, svt = float(u @ t), float(v @ t)
    return (svv * sut - suv * svt) / det, (suu * svt - suv * sut) / det


def anchor_trust(alpha: npt.ArrayLike, beta: npt.ArrayLike, clicks: npt.ArrayLike, group: Any,
                 relevance: npt.ArrayLike, *, position: Optional[npt.ArrayLike] = None,
                 per_position: bool = False) -> TrustAnchor:
    """Anchor trust-bias parameters estimated from clicks to the relevance scale of a few labelled queries.

    Parameters
    ----------
    alpha, beta : array, one per position (0 = top)
        The estimate (``TrustEM().fit(...).alpha_`` / ``beta_``, ``estimate_trust(...).alpha`` / ``beta``).
    clicks, group : the labelled queries' sessions
        Clicks (0 / 1) of the sessions of the labelled queries, and the rows per session.
    relevance : array, one per row
        Each row's relevance on the scale the metric should have (for example the probability of
        relevance of its grade; at least two distinct values).
    position : array of int, optional
        Each row's display position (0 = top); default the rows' order within their session.
    per_position : bool
        One map per position (default one for all): mends the estimate's shape as well, needs more labels
        (MQ2008, 48 sessions per query: about 100 labelled queries, docs/trust-bias.md).

    Returns
    -------
    TrustAnchor
        ``alpha`` (``scale * alpha``) and ``beta`` (``beta + offset * alpha``) for
        ``customobj.clicks.metrics.affine_dcg``, and the map. An anchored ``alpha`` below ``MIN_ALPHA``
        (``1e-3``; a scale <= 0 or near it: the labels contradict the estimate, or too few labelled sessions
        at a position) is a ``ValueError``. The anchored ``beta`` may be negative where the
        estimate's scale was shifted up: the click metrics take it; ``Affine`` (training) refuses a
        negative ``beta``, and needs none of this (an offset moves every pair's lambdas alike).

    Examples
    --------
    >>> import numpy as np
    >>> alpha, beta = np.array([0.4, 0.2]), np.array([0.3, 0.1])  # truth on the labels' scale
    >>> rng = np.random.default_rng(0)
    >>> R = rng.choice([0.1, 0.5, 1.0], size=(4000, 2))
    >>> c = (rng.random(R.shape) < alpha * R + beta).astype(float).ravel()
    >>> wrong_a, wrong_b = alpha / 1.5, beta - alpha * 0.1 / 1.5  # the family member of gamma' = 1.5 R + 0.1
    >>> fit = anchor_trust(wrong_a, wrong_b, c, np.full(4000, 2), R.ravel())
    >>> round(float(fit.scale[0]), 1), round(float(fit.offset[0]), 1), bool(np.abs(fit.alpha - alpha).max() < 0.01)
    (1.5, 0.1, True)
    """
    a = as_propensity(alpha, "alpha")
    b = as_1d_float(beta, "beta", n=a.size, allow_bool=False)
    c = as_1d_float(clicks, "clicks", allow_bool=True)
    check_clicks(c, "clicks")
    g = as_groups(group, c.size, name="group")
    r = as_1d_float(relevance, "relevance", n=c.size, allow_bool=False)
    if position is None:
        pos = np.arange(c.size) - np.repeat(g.ptr[:-1], g.sizes)
    else:
        pos = as_position(position, "position")
        check_position_groups(pos, g.ptr, c.size, "position")
    if c.size == 0:
        raise ValueError("clicks: no labelled row to anchor with")
    if int(pos.max()) >= a.size:
        raise ValueError(f"a labelled row is at position {int(pos.max())} but alpha has {a.size} entries: one per "
                         "position")
    if not isinstance(per_position, (bool, np.bool_)):
        raise TypeError(f"per_position must be True or False, got {type(per_position).__name__}")
    pooled = _fit_map(c, r, a[pos], b[pos])
    scale, offset = np.full(a.size, pooled[0]), np.full(a.size, pooled[1])
    if per_position:
        for k in np.unique(pos):  # a position whose labelled rows show one relevance keeps the pooled map
            at = pos == k
            if np.ptp(r[at]) > 0.0:
                n_at = int(at.sum())
                scale[k], offset[k] = _fit_map(c[at], r[at], np.full(n_at, a[k]), np.full(n_at, b[k]))
    # an anchored alpha near 0 would blow the corrected clicks up: below TrustEM's floor it is refused
    bad = np.flatnonzero(~(scale * a >= MIN_ALPHA))
    if bad.size:
        where = f" at position {int(bad[0])}" if per_position else ""
        raise ValueError(f"relevance: the labelled rows give the estimate's scale {scale[bad[0]]:.3g}{where}, an anchored "
                         f"alpha below {MIN_ALPHA} (more relevant rows clicked hardly more, or less, than the others): too "
                         "few labelled sessions (per position: use the pooled map), or the wrong labels")
    return TrustAnchor(scale * a, b + offset * a, scale, offset, int(c.size))
