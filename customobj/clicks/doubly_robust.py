"""The doubly robust estimator of relevance from clicks under trust bias and a stochastic logging
policy (Oosterhuis, "Doubly Robust Estimation for Correcting Position Bias in Click Feedback for
Unbiased Learning to Rank", ACM TOIS 2023, sec. 5-6), and the pairwise objective trained on it.

Per query ``q`` with ``N_q`` logged sessions, each query-document ``d`` of its candidates gets

.. math::

    \\hat R_{DR}(d) = \\hat r(d) + \\frac{1}{N_q} \\sum_{i=1}^{N_q}
        \\frac{c_i(d) - \\alpha_{k_i(d)} \\hat r(d) - \\beta_{k_i(d)}}{\\rho_d},
    \\qquad \\rho_d = \\mathbb{E}_{k \\sim \\pi}[\\alpha_{k(d)}] = \\sum_k \\pi(k \\mid d)\\, \\alpha_k,

``c_i(d)`` the click in session ``i``, ``k_i(d)`` its position there (``alpha = beta = 0`` where it was
not shown), ``pi(k | d)`` the logging policy's probability of showing ``d`` at ``k`` and ``r_hat`` the
regression model's relevance (the direct method). Since ``E[c | k] = alpha_k R + beta_k``, the
correction averages to ``R - r_hat``: ``E[R_DR] = R`` whatever ``r_hat`` (unbiased), and its
variance falls as ``r_hat`` approaches ``R`` (the control variate). Under a deterministic policy
``alpha_{k_i(d)} = rho_d`` in every session and ``R_DR`` is the affine estimate (Vardasbi et al. 2020):
the two differ only when the logging policy is stochastic. A document the policy never shows
(``rho_d = 0``) keeps ``r_hat(d)``: nothing can correct it.

**Clipping.** Under a Plackett-Luce logger most candidates are rarely shown near the top, so ``rho_d``
can be tiny (MQ2008 at a temperature of one score sd: median .044, a third below .02) and one click
of such a document moves its estimate by ``1 / (N_q rho_d)``: the unclipped estimates of
docs/trust-bias.md ranged from -6.9 to 5.5 for relevances in [0.1, 1] and correlated less with them
than ``r_hat`` alone. As the paper's experiments do, the divisor is ``max(rho_d, tau)`` with
``tau = min(1, 10 / sqrt(N))``, ``N`` the log's sessions (the clipping of Oosterhuis 2023's experiments: its code's
``alpha_clip``), so

.. math::

    \\mathbb{E}[\\hat R_{DR}(d)] = \\hat r(d) + \\frac{\\rho_d}{\\max(\\rho_d, \\tau)}\\,(R(d) - \\hat r(d)):

unbiased where ``rho_d >= tau``, and below it a known blend of the truth and the direct method
(the bias is ``(1 - rho_d / tau)(r_hat - R)``: it vanishes as the direct method approaches ``R``,
the doubly robust property). ``clip=0`` gives the unclipped, exactly unbiased estimator.

The pairwise objective :class:`DoublyRobust` takes these estimates as its labels (one row per
query-document, not per session) and applies ``Affine``'s pair terms with them, so the expected
gradient over the clicks is the gradient with the expected estimates: the true relevances with
``clip=0`` (tests/test_clicks_doubly_robust.py checks it exactly over every click pattern of a small
query, and the clipped blend above).
"""
from __future__ import annotations

from typing import Any, NamedTuple, Optional

import numpy as np
import numpy.typing as npt

from .affine import Affine, _AffineState
from .simulation import ClickLog
from ._inputs import as_propensity
from .._validation import as_1d_float, check_int, check_nonnegative
from ..groups import as_groups
from ..objectives.base import Objective, Prepared

__all__ = ["DoublyRobust", "DRData", "dr_data", "fit_direct_method", "clip_threshold", "CLIP_SCALE"]

#: The clipping threshold's scale: ``tau = min(1, CLIP_SCALE / sqrt(sessions))`` (Oosterhuis 2023's
#: experiments and code: ``alpha_clip = min(10 / sqrt(n_queries_sampled), 1)``).
CLIP_SCALE = 10.0


def clip_threshold(sessions: int) -> float:
    """The default clipping threshold ``tau = min(1, 10 / sqrt(sessions))`` of the expected ``alpha``
    for a log of ``sessions`` sessions (Oosterhuis 2023's experiments).

    Examples
    --------
    >>> round(clip_threshold(22608), 4), clip_threshold(50)
    (0.0665, 1.0)
    """
    n = check_int(sessions, "sessions", minimum=1)
    return float(min(1.0, CLIP_SCALE / np.sqrt(n)))


class DRData(NamedTuple):
    """Query-documents with their doubly robust relevance estimates: ``X``, ``y`` (the labels
    :class:`DoublyRobust` trains on: ``estimate + shift``, since every trainer takes labels >= 0),
    ``group`` (candidates per query), ``row`` (the source row), ``estimate`` (``R_DR``), ``shift``
    (``max(0, -min R_DR)``: give it to ``DoublyRobust(..., shift=)``, or use
    :meth:`DoublyRobust.for_data`), ``direct`` (``r_hat``), ``rho`` (the expected ``alpha`` under the
    logging policy), ``clip`` (the threshold ``tau`` the divisor ``max(rho, tau)`` used; 0: none)."""

    X: Any
    y: np.ndarray
    group: np.ndarray
    row: np.ndarray
    estimate: np.ndarray
    shift: float
    direct: np.ndarray
    rho: np.ndarray
    clip: float


def fit_direct_method(log: ClickLog, *, alpha: npt.ArrayLike, beta: npt.ArrayLike, n_estimators: int = 200,
                      num_leaves: int = 31, learning_rate: float = 0.05, seed: int = 0) -> Any:
    """The direct method's regression model: LightGBM least squares of ``c - alpha_k f(x) - beta_k``
    over the log's impressions, i.e. target ``(c - beta_k) / alpha_k`` with weight ``alpha_k^2`` (the
    same minimiser, without the affine estimate's ``1 / alpha`` variance). Returns the Booster.

    The model is fitted once, before training (as in the paper's experiments), on every impression
    of the log, sessions without a click included. Its size decides how much of the clipped
    rows' relevance it gets right: on MQ2008's stochastic logs (folds 1-2, the trust study's first
    log) its correlation with the true relevance was .54 / .56 with 50 trees of 15 leaves (the old
    default), .59 / .61 with 200 of 15 and .63 / .67 with 200 of 31 at ``learning_rate=0.05`` (the
    default; docs/trust-bias.md)."""
    import lightgbm as lgb

    a, b = as_propensity(alpha, "alpha"), as_1d_float(beta, "beta")
    pos = np.asarray(log.position)
    if pos.size and pos.max() >= a.size:
        raise ValueError(f"the log shows position {int(pos.max())} but alpha covers {a.size} positions")
    params = dict(objective="regression", verbose=-1, num_leaves=check_int(num_leaves, "num_leaves", minimum=2),
                  learning_rate=float(learning_rate), seed=check_int(seed, "seed", minimum=0), num_threads=1,
                  min_data_in_leaf=20)
    ds = lgb.Dataset(log.X, (log.y - b[pos]) / a[pos], weight=a[pos] ** 2)
    return lgb.train(params, ds, check_int(n_estimators, "n_estimators", minimum=1))


def dr_data(log: ClickLog, data: Any, *, alpha: npt.ArrayLike, beta: npt.ArrayLike, position_prob: npt.ArrayLike,
            direct: Optional[npt.ArrayLike] = None, clip: Optional[float] = None) -> DRData:
    """The doubly robust estimates of every candidate of the queries ``log`` has sessions of.

    Parameters
    ----------
    log : ClickLog
        The sessions (``simulate_clicks``; ``row`` and ``qid`` tie them to ``data``).
    data : LetorData or (X, y, group)
        The candidates: the data the log was simulated from (labels unused).
    alpha, beta : array of float, one per position
    position_prob : array, ``n_rows x positions``
        ``pi(k | d)`` for every row of ``data`` (:func:`customobj.clicks.loggers.plackett_luce_marginals`
        for a stochastic policy; a deterministic one has a single 1 per shown row).
    direct : array of float, one per row of ``data``, optional
        ``r_hat``; default 0 (then ``R_DR`` is the policy-aware affine estimate).
    clip : float in [0, 1], optional
        The threshold ``tau`` of the divisor ``max(rho_d, tau)`` (module docstring); default
        :func:`clip_threshold` of the log's sessions (the paper's); 0: no clipping (exactly unbiased).
    """
    if not isinstance(log, ClickLog):
        raise TypeError(f"log must be a ClickLog (simulate_clicks), got {type(log).__name__}")
    X, group = data[0], data[2]
    n = int(np.asarray(data[1]).shape[0])
    g = as_groups(group, n, name="data group")
    a, b = as_propensity(alpha, "alpha"), as_1d_float(beta, "beta", n=int(np.size(alpha)))
    P = np.asarray(position_prob, dtype=np.float64)
    if P.ndim != 2 or P.shape[0] != n or P.shape[1] > a.size:
        raise ValueError(f"position_prob must be rows x positions ({n} x at most {a.size}), got shape {P.shape}")
    if not np.all(np.isfinite(P) & (P >= 0.0) & (P <= 1.0)):
        raise ValueError("position_prob must hold probabilities in [0, 1]")
    r_hat = np.zeros(n) if direct is None else as_1d_float(direct, "direct", n=n)
    rows, pos, c = np.asarray(log.row), np.asarray(log.position), np.asarray(log.y, dtype=np.float64)
    qid = np.repeat(np.arange(g.n_groups), g.sizes)
    sessions = np.bincount(qid[rows[np.asarray(log.group).cumsum() - 1]], minlength=g.n_groups)  # per query
    tau = clip_threshold(max(int(np.size(log.group)), 1)) if clip is None else check_nonnegative(clip, "clip",
                                                                                                maximum=1.0)
    rho = P @ a[:P.shape[1]]
    total = np.bincount(rows, weights=c - a[pos] * r_hat[rows] - b[pos], minlength=n)
    keep = sessions[qid] > 0
    n_q = np.maximum(sessions[qid], 1)
    den = np.maximum(rho, tau)
    corr = np.divide(total, n_q * den, out=np.zeros(n), where=den > 0)
    est = r_hat + corr
    idx = np.flatnonzero(keep)
    X_rows = X[idx] if not hasattr(X, "iloc") else np.asarray(X)[idx]
    shift = float(max(0.0, -est[idx].min(initial=0.0)))
    return DRData(X_rows, est[idx] + shift, g.sizes[sessions > 0].astype(np.int64), idx.astype(np.int64), est[idx],
                  shift, r_hat[idx], rho[idx], float(tau))


class DoublyRobust(Affine):
    """A pairwise objective trained on doubly robust relevance estimates (Oosterhuis, ACM TOIS 2023).

    Labels are the estimates ``R_DR`` of :func:`dr_data` plus ``shift`` (every trainer takes labels
    >= 0; the estimates can be negative), one row per query-document; each unordered pair enters as
    in :class:`Affine` with ``r_hat = label - shift = R_DR``
    (``alpha = 1``, ``beta = 0``): the loss and its expected gradient are linear in the estimates, so
    the expectation over the clicks is the loss with the true relevances. ``query_norm`` is
    ``Affine``'s click-independent factor.

    Parameters
    ----------
    objective : Objective
        As for :class:`Affine` (``LambdaRank(metric="ndcg")``, ``RankNet``, ``RankSVM``, ``MPBoost``).
    shift : float >= 0
        Subtracted from the labels (``DRData.shift``).
    query_norm : bool

    Examples
    --------
    >>> import numpy as np, customobj
    >>> obj = customobj.DoublyRobust(customobj.RankNet(), shift=0.5)
    >>> g, h = obj.grad_hess(np.zeros(3), np.array([1.2, -0.3, 0.4]) + 0.5, [3])
    >>> bool(g[0] < 0 < g[1]), bool((h >= 0).all())
    (True, True)
    """

    def __init__(self, objective: Objective, *, shift: float = 0.0, query_norm: bool = True) -> None:
        super().__init__(objective, alpha=np.ones(1), beta=np.zeros(1), query_norm=query_norm)
        self.integer_labels = False  # the estimates are real numbers
        self.shift = check_nonnegative(shift, "shift")

    @classmethod
    def for_data(cls, objective: Objective, data: DRData, *, query_norm: bool = True) -> "DoublyRobust":
        """``DoublyRobust(objective, shift=data.shift)``: the objective of :func:`dr_data`'s labels."""
        if not isinstance(data, DRData):
            raise TypeError(f"data must be a DRData (dr_data), got {type(data).__name__}")
        return cls(objective, shift=data.shift, query_norm=query_norm)

    def _params(self):
        return (("objective", self.objective), ("query_norm", self.query_norm), ("shift", self.shift))

    def _convert_labels(self, labels):
        return labels

    def check_prepared(self, prep: Prepared) -> None:
        bad = np.flatnonzero(~np.isfinite(prep.labels))
        if bad.size:
            raise ValueError(f"labels must be finite relevance estimates; found {prep.labels[bad[0]]} at row "
                             f"{int(bad[0])}")
        Objective.check_prepared(self, prep)

    def _state(self, prep):
        return _AffineState(np.zeros(prep.n_rows, dtype=np.int64), np.asarray(prep.labels, dtype=np.float64) - self.shift)

    def fitted_attributes(self, prep: "Prepared | None" = None) -> dict:
        return {}
