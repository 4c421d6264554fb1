"""The trust-bias click model fitted by regression EM: the affine parameters ``alpha_k``, ``beta_k``
that :class:`customobj.clicks.Affine` corrects with, estimated from a click log.

Agarwal, Wang, Li, Bendersky, Najork, "Addressing Trust Bias for Unbiased Learning-to-Rank",
WWW 2019 (TrustPBM and its EM algorithm) with the relevance learned by gradient boosting as in
regression EM (Wang et al., WSDM 2018, sec. 4; :class:`customobj.RegressionEM`).
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
import numpy.typing as npt

from .regression_em import EPS, RegressionEM, checked_rows, learned_relevance

__all__ = ["TrustEM", "trust_e_step", "trust_m_step", "trust_parameters", "MIN_ALPHA"]

#: Smallest ``alpha_k`` reported: a position whose clicks carry (almost) no relevance signal gets this,
#: so that the affine correction ``(c - beta) / alpha`` stays finite (and large: such rows weigh little
#: in expectation but much in variance; docs/clicks.md).
MIN_ALPHA = 1e-3


def trust_e_step(clicks, plus_at, minus_at, gamma):
    """Posterior relevance ``P(R = 1 | c, k)`` under trust bias (Agarwal et al. 2019, TrustPBM).

    ``plus_at`` / ``minus_at`` are the rows' click rates of a relevant / non-relevant row at their
    position (``theta_k eps+_k`` and ``theta_k eps-_k``: examination is summed out):

    .. math::

        P(R{=}1 \\mid c{=}1) = \\frac{p^+ \\gamma}{p^+ \\gamma + p^- (1 - \\gamma)},\\qquad
        P(R{=}1 \\mid c{=}0) = \\frac{(1 - p^+) \\gamma}{(1 - p^+) \\gamma + (1 - p^-)(1 - \\gamma)}.

    Examples
    --------
    >>> trust_e_step(np.array([1.0, 0.0]), np.array([0.8, 0.8]), np.array([0.2, 0.2]), np.array([0.5, 0.5])).round(4).tolist()
    [0.8, 0.2]
    """
    on = plus_at * gamma
    off = minus_at * (1.0 - gamma)
    on0 = (1.0 - plus_at) * gamma
    off0 = (1.0 - minus_at) * (1.0 - gamma)
    return np.where(clicks > 0, on / np.maximum(on + off, EPS), on0 / np.maximum(on0 + off0, EPS))


def trust_m_step(position, clicks, weight, rel, n_positions):
    """The M-step's click rates per position: ``p+_k`` (``p-_k``) the click rate of the rows at ``k``
    weighted by their posterior relevance (non-relevance), each kept inside (EPS, 1 - EPS).

    Examples
    --------
    >>> plus, minus = trust_m_step(np.array([0, 0]), np.array([1.0, 0.0]), np.ones(2), np.array([0.8, 0.2]), 1)
    >>> plus.round(2).tolist(), minus.round(2).tolist()
    ([0.8], [0.2])
    """
    wr = weight * rel
    wn = weight * (1.0 - rel)
    plus = np.bincount(position, weights=wr * clicks, minlength=n_positions) / np.maximum(
        np.bincount(position, weights=wr, minlength=n_positions), EPS)
    minus = np.bincount(position, weights=wn * clicks, minlength=n_positions) / np.maximum(
        np.bincount(position, weights=wn, minlength=n_positions), EPS)
    return np.clip(plus, EPS, 1.0 - EPS), np.clip(minus, EPS, 1.0 - EPS)


def trust_parameters(plus: np.ndarray, minus: np.ndarray) -> "tuple[np.ndarray, np.ndarray]":
    """``(alpha, beta)`` per position from the click rates of relevant (``plus``) and non-relevant
    (``minus``) rows, as :class:`TrustEM` reports them."""
    alpha = np.maximum(plus - minus, MIN_ALPHA)
    # the one member of the family the clicks leave free in which the position least prone to
    # trust has no false clicks: beta - alpha min(beta / alpha) (under position bias alone, beta = 0)
    beta = np.maximum(minus - alpha * float(np.min(minus / alpha)), 0.0)
    # Affine takes alpha + beta <= 1 (a relevant row's click rate); where alpha was raised to MIN_ALPHA
    # (a position clicked whatever the relevance, e.g. a top row always clicked) beta gives way
    return alpha, np.minimum(beta, 1.0 - alpha)


def _stretched(gamma):
    """The relevance mapped affinely onto (EPS, 1 - EPS): the scale the click model leaves free."""
    lo, hi = np.quantile(gamma, 0.001), np.quantile(gamma, 0.999)
    if hi - lo < EPS:
        return gamma
    return np.clip((gamma - lo) / (hi - lo), EPS, 1.0 - EPS)


class TrustEM(RegressionEM):
    """Trust bias and relevance from clicks: the affine click model fitted by regression EM.

    The click model (Agarwal et al., WWW 2019, "TrustPBM"): a row at position ``k`` is
    examined with probability ``theta_k``, relevant with probability ``gamma(x)``, and an examined
    row is clicked with probability ``eps+_k`` if relevant, ``eps-_k`` if not. Only the products are
    identified from clicks; with ``p+_k = theta_k eps+_k`` and ``p-_k = theta_k eps-_k``,

    .. math::

        P(c = 1 \\mid x, k) = p^+_k \\gamma(x) + p^-_k (1 - \\gamma(x)) = \\alpha_k \\gamma(x) + \\beta_k,
        \\qquad \\alpha_k = p^+_k - p^-_k,\\quad \\beta_k = p^-_k,

    the affine parameters of Vardasbi, Oosterhuis, de Rijke (CIKM 2020). Each EM
    iteration: the E-step gives every row its posterior relevance (:func:`trust_e_step`), the
    M-step sets ``p+_k`` / ``p-_k`` to the click rates at ``k`` weighted by it (:func:`trust_m_step`)
    and fits ``n_estimators`` more trees of the relevance model to the posteriors (soft labels, as
    :class:`RegressionEM`). Start: ``gamma = 0.5``, ``p+_k = 1.5 ctr_k``, ``p-_k = 0.5 ctr_k``
    (``ctr_k`` the click rate at ``k``). Before each E-step the relevance is mapped affinely onto
    ``[0, 1]`` (its 0.1% and 99.9% quantiles to 0 and 1): the scale the click model leaves free
    (below), fixed so that no click rate is pushed against 0 or 1 along it (without it the fit drifts
    along that freedom until the top position's ``p+`` meets 1; measured in docs/clicks.md, "Affine").

    **Identifiability.** Clicks determine ``alpha`` and ``beta`` only up to an affine change of the
    relevance scale, ``gamma' = a gamma + b`` (``a > 0``): ``alpha' = alpha / a``, ``beta' = beta -
    alpha b / a`` give the same clicks. What the log fixes is ``alpha_k / alpha_0`` (``position_bias_``)
    and ``beta_k - beta_0 alpha_k / alpha_0``; the EM settles the rest by its relevance model. The
    correction ``(c - beta_k) / alpha_k`` then changes to ``a r + b``, one affine map for all rows,
    which does not change which of two rows is more relevant. Of that family ``TrustEM`` reports the
    member in which the position least prone to trust has no false clicks (``beta_ - alpha_ min(beta_
    / alpha_)``, ``b`` shifted so that ``min_k beta_k / alpha_k = 0``): a log of position bias alone
    then gets ``beta_ = 0`` (inverse propensity weighting; what the other members cost is measured in
    docs/clicks.md).

    Parameters: those of :class:`RegressionEM` (the library and its relevance model, or a
    ``relevance_model`` of one's own), with defaults of their own: ``n_iter=10``, ``n_estimators=10``,
    ``learning_rate=0.05``, compare's. Under one deterministic ranker the parameters are closest to
    the truth after 2-4 iterations (``n_iter=3`` for parameters to report or validate with) and drift
    after; ``Affine`` nevertheless learned more with the defaults' (measured in docs/trust-bias.md).

    Attributes
    ----------
    alpha_, beta_ : ndarray
        Per position, 0-based (the top first); ``alpha_`` in ``[MIN_ALPHA, 1)``, ``beta_ >= 0`` and
        ``alpha_ + beta_ <= 1``, what :class:`Affine` accepts: at a position whose clicks carry no
        relevance signal (clicked whatever the relevance: ``p+ - p- < MIN_ALPHA``) ``alpha_`` is
        raised to :data:`MIN_ALPHA` and ``beta_`` lowered to ``1 - alpha_`` where it would exceed it.
    click_rate_relevant_, click_rate_nonrelevant_ : ndarray
        ``p+_k`` and ``p-_k``.
    position_bias_ : ndarray
        ``alpha_k / alpha_0``: the click's sensitivity to relevance, relative to the top (under PBM
        the examination propensity relative to the top).
    ranker_, relevance_model_, n_trees_ :
        The relevance model, as :class:`RegressionEM`'s.

    Examples
    --------
    >>> import customobj
    >>> d = customobj.data.synthetic(30, 10, 5, seed=0)
    >>> log = customobj.data.simulate_clicks(d, ranker=d.X[:, 0], click_model="trust", sessions=4, seed=0)
    >>> em = customobj.clicks.TrustEM(n_iter=2, n_estimators=3).fit(log.X, log.y, position=log.position)
    >>> em.alpha_.shape, float(em.position_bias_[0]), bool((em.alpha_ > 0).all())
    ((10,), 1.0, True)
    """

    def __init__(self, *, library: str = "lightgbm", n_iter: int = 10, n_estimators: int = 10,
                 learning_rate: float = 0.05, num_leaves: int = 31, min_child_samples: int = 20,
                 seed: int = 0, params: Optional[dict] = None, relevance_model: Any = None) -> None:
        # Defaults from measurements (docs/trust-bias.md, "TrustEM under one deterministic ranker"): the
        # setting with which Affine beat Unbiased in the 48-session study; n_iter=3 estimates the
        # parameters closer (their error grows with the iterations) but Affine learned less with them
        super().__init__(library=library, n_iter=n_iter, n_estimators=n_estimators, learning_rate=learning_rate,
                         num_leaves=num_leaves, min_child_samples=min_child_samples, seed=seed, params=params,
                         relevance_model=relevance_model)

    def fit(self, X: Any, y: npt.ArrayLike, *, position: npt.ArrayLike, first_position: int = 0,
            sample_weight: Optional[npt.ArrayLike] = None) -> "TrustEM":
        """Fit on click rows: features ``X``, clicks ``y`` (0 / 1), display ``position`` (0-based; a log
        numbered from 1 with ``first_position=1``)."""
        n_iter = self._checked()[1]
        clicks, pos, w = checked_rows(X, y, position, first_position, sample_weight)
        n_pos = int(pos.max(initial=-1)) + 1
        ctr = np.bincount(pos, weights=w * clicks, minlength=n_pos) / np.maximum(
            np.bincount(pos, weights=w, minlength=n_pos), EPS)
        plus = np.clip(1.5 * ctr, EPS, 1.0 - EPS)
        minus = np.clip(0.5 * ctr, EPS, 1.0 - EPS)
        gamma = np.full(clicks.shape[0], 0.5)
        learner = self._learner()
        for _ in range(n_iter):
            rel = trust_e_step(clicks, plus[pos], minus[pos], gamma)
            plus, minus = trust_m_step(pos, clicks, w, rel, n_pos)
            learner.fit(X, rel, sample_weight=w)
            gamma = _stretched(learned_relevance(learner, X))
        return self._fitted_trust(learner, plus, minus)

    def _fitted_trust(self, learner, plus, minus):
        self._fitted_learner(learner, plus)
        del self.propensity_  # examination alone is not identified under trust bias
        self.click_rate_relevant_ = plus
        self.click_rate_nonrelevant_ = minus
        self.alpha_, self.beta_ = trust_parameters(plus, minus)
        self.position_bias_ = self.alpha_ / self.alpha_[0]
        return self
