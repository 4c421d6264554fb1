r"""One round of each method: the weights of the per-label gradients from the round's costs and Gram matrix.

Pure functions of a :class:`Memory` (what the method carries from round to round: the last weights,
the dual variables, the first round's scales) and the round's inputs; :func:`step` returns the new
weights and the next memory without changing anything, so the loss of a round can be computed without
advancing it. The small problems over ``m`` weights are solved by scipy (``optimize.minimize`` with
SLSQP); a solve that fails falls back to MO-LightGBM's fallback (the Chebyshev vertex, or the
preference) and is counted in :attr:`RoundResult.fallback`.

Notation: ``l`` the per-label costs (mean loss per query), ``G`` the Gram matrix of the per-label
gradients (``G_kl = <g_k, g_l>``), ``r`` the preference (sums to 1), ``\Delta`` the simplex.

.. math::

    \text{EPO:}\quad \min_{\alpha \in \Delta} \lVert \hat G \alpha - \hat a \rVert^2, \quad
    a = l - \tilde r (\tilde r^\top l) \text{ (balance) or } \tilde r \lVert l \rVert \text{ (descent,}
    (I - \tilde r \tilde r^\top) G \alpha = 0), \quad \tilde r = \frac{1 / r}{\lVert 1 / r \rVert}

    \text{WC-MGDA:}\quad \min_{\alpha \in \Delta} -\alpha^\top (\hat r \odot (l - z))
    + u \sqrt{\alpha^\top \hat K \alpha}, \quad \hat K = \frac{G \odot \hat r \hat r^\top}{\lambda_{\max}(K_0)}

    \text{EC-MGDA:}\quad \min_{0 \le \alpha_s \le c} (\hat\epsilon - \hat l_s)^\top \alpha_s
    + u \sqrt{\beta^\top \hat G \beta}, \quad \beta = (1 - \bar c, \alpha_s)

    \text{augmented Lagrangian:}\quad \nu_k = \max(0, \lambda_k + \mu (l_k / \epsilon_k - 1)),
    \quad \alpha = (1, \nu / \epsilon), \quad \lambda \leftarrow \nu \text{ every } T \text{ rounds}

References
----------
Mahapatra, Dong, Chen, Momma (2023), KDD, section 4; MO-LightGBM ``mg_combinator.hpp`` (EPOSearch,
WCMGDA, ECMGDA, EConstraint, ChebyshevScalarization). Mahapatra & Rajan (2020), "Multi-Task Learning
with User Preferences: Gradient Descent with Controlled Ascent in Pareto Optimization", ICML, section 3
(EPO's balance and descent modes). Momma, Dong, Liu (2022), "A Multi-objective / Multi-task Learning
Framework Induced by Pareto Stationarity", ICML (WC-MGDA, EC-MGDA).
"""
from __future__ import annotations

from typing import Callable, NamedTuple, Optional

import numpy as np

from .methods import Method, Settings

__all__ = ["Memory", "RoundResult", "step", "first_memory", "epo_problem", "mgda_objective", "solve_box"]

#: EPO switches from balancing to descending when 1 - cos^2(l, 1/r) drops below this (MO-LightGBM's mu_thresh_).
EPO_BALANCED = 1e-3
#: Relative floor of a scale (a first round's cost or Gram norm) before dividing by it.
TINY = 1e-12


class Memory(NamedTuple):
    """What a method carries to the next round."""

    rounds: int
    weights: Optional[np.ndarray]  # the last round's weights (smoothing), None before round 1
    duals: np.ndarray  # (m - 1,) the augmented Lagrangian's multiplier estimates lambda (updated every T rounds)
    scales: Optional[np.ndarray]  # WC-MGDA: r-hat; EC-MGDA: the cost normalisers (first round)
    gram_scale: float  # the first round's largest Gram eigenvalue (MGDA methods), 0 before


class RoundResult(NamedTuple):
    weights: np.ndarray  # (m,) >= 0
    memory: Memory
    fallback: bool  # the solver failed and the method's fallback weights were used


def first_memory(m: int) -> Memory:
    return Memory(0, None, np.zeros(m - 1), None, 0.0)


def solve_box(fun: Callable, jac: Callable, lower: np.ndarray, upper: np.ndarray, start: np.ndarray,
              eq: "list[dict] | None" = None) -> "tuple[np.ndarray, bool]":
    """``min fun`` over ``lower <= x <= upper`` and the equality constraints ``eq`` (scipy SLSQP);
    returns ``(x clipped to the box, success)``."""
    from scipy.optimize import minimize  # on first use: ``import customobj`` does not pay for scipy.optimize

    res = minimize(fun, start, jac=jac, method="SLSQP", bounds=list(zip(lower, upper)),
                   constraints=eq or [], options={"maxiter": 200, "ftol": 1e-12})
    x = np.clip(np.asarray(res.x, dtype=np.float64), lower, upper)
    return x, bool(res.success) and bool(np.all(np.isfinite(x)))


def _simplex_eq(m: int) -> dict:
    return {"type": "eq", "fun": lambda a: np.array([a.sum() - 1.0]), "jac": lambda a: np.ones((1, m))}


def _top_eigen(gram: np.ndarray) -> float:
    return float(np.linalg.eigvalsh(gram)[-1]) if gram.size else 0.0


def epo_problem(costs: np.ndarray, gram: np.ndarray, pref: np.ndarray):
    """EPO's round problem: ``(G-hat, a-hat, descent, P G-hat)``; both sides scaled to unit size (the
    directions matter, not the units of the costs or gradients)."""
    rt = 1.0 / pref
    rt /= np.linalg.norm(rt)
    norm = np.linalg.norm(costs)
    descent = norm == 0 or 1.0 - (costs @ rt / norm) ** 2 < EPO_BALANCED
    anchor = rt * norm if descent else costs - rt * (costs @ rt)
    a_norm = np.linalg.norm(anchor)
    g_top = _top_eigen(gram)
    g_hat = gram / g_top if g_top > 0 else gram
    a_hat = anchor / a_norm if a_norm > 0 else anchor
    restricted = (np.eye(pref.size) - np.outer(rt, rt)) @ g_hat
    return g_hat, a_hat, descent, restricted


def _epo_pair(g_hat, a_hat, descent, restricted, pref):
    """EPO's problem for m = 2 in closed form on the segment ``alpha = (t, 1 - t)``: ``(t, solved)``."""
    d = g_hat[:, 0] - g_hat[:, 1]
    e = g_hat[:, 1] - a_hat
    dd = float(d @ d)
    free = float(pref[0]) if dd == 0 else min(1.0, max(0.0, -float(d @ e) / dd))  # the 1-D least squares
    if not descent:
        return free, True
    row = restricted[0]
    slope = float(row[0] - row[1])
    if slope == 0:  # the ray constraint does not depend on t: met everywhere or nowhere
        return (free, True) if row[1] == 0 else (float(pref[0]), False)
    t = -float(row[1]) / slope
    return (t, True) if 0.0 <= t <= 1.0 else (float(pref[0]), False)


def _epo(costs, gram, s: Settings, general: bool = False):
    """EPO's weights; m = 2 in closed form unless ``general`` (the tests compare both)."""
    m = s.m
    g_hat, a_hat, descent, restricted = epo_problem(costs, gram, s.preference)
    if m == 2 and not general:
        t, solved = _epo_pair(g_hat, a_hat, descent, restricted, s.preference)
        if solved:
            return np.array([t, 1.0 - t]), False
        return (s.preference.copy() if descent else _vertex(s.preference * costs)), True
    fun = lambda a: float(np.sum((g_hat @ a - a_hat) ** 2))  # noqa: E731
    jac = lambda a: 2.0 * g_hat.T @ (g_hat @ a - a_hat)  # noqa: E731
    eq = [_simplex_eq(m)]
    if descent:  # keep the cost change on the ray: (I - rr^T) G alpha = 0 (m - 1 independent rows)
        eq.append({"type": "eq", "fun": lambda a: restricted[:-1] @ a, "jac": lambda a: restricted[:-1]})
    x, ok = solve_box(fun, jac, np.zeros(m), np.ones(m), s.preference.copy(), eq)
    if ok and abs(x.sum() - 1.0) < 1e-6:
        return x / x.sum(), False
    if descent:  # MO-LightGBM: the preference when the restricted descent has no solution
        return s.preference.copy(), True
    return _vertex(s.preference * costs), True


def mgda_objective(w: np.ndarray, k_hat: np.ndarray, u: float):
    """``(f, grad)`` of ``-w.a + u sqrt(a' K a)`` (smoothed at ``K a = 0`` by a 1e-18 floor)."""
    def fun(a):
        return float(-w @ a + u * np.sqrt(max(a @ k_hat @ a, 0.0) + 1e-18))

    def jac(a):
        q = np.sqrt(max(a @ k_hat @ a, 0.0) + 1e-18)
        return -w + u * (k_hat @ a) / q

    return fun, jac


def _wc_mgda(costs, gram, s: Settings, mem: Memory):
    m = s.m
    if mem.scales is None:  # MO-LightGBM: r-hat = r / ||r * l_0||, K scaled by the first round's norm
        r_hat = s.preference / max(np.linalg.norm(s.preference * costs), TINY)
        top = _top_eigen(gram * np.outer(r_hat, r_hat))
        mem = mem._replace(scales=r_hat, gram_scale=top if top > 0 else 1.0)
    r_hat = mem.scales
    assert r_hat is not None  # set just above on the first round
    k_hat = gram * np.outer(r_hat, r_hat) / mem.gram_scale
    fun, jac = mgda_objective(r_hat * (costs - s.reference), k_hat, s.u)
    x, ok = solve_box(fun, jac, np.zeros(m), np.ones(m), np.full(m, 1.0 / m), [_simplex_eq(m)])
    if not ok or abs(x.sum() - 1.0) > 1e-6:
        x, ok = _vertex(r_hat * (costs - s.reference)), False
    w = r_hat * x
    total = w.sum()
    return (w / total if total > 0 else s.preference.copy()), mem, not ok


def _ec_scales(costs, s: Settings):
    """EC-MGDA's normalisers (MO-LightGBM): the primary's first cost, each secondary's first gap to its bound."""
    assert s.bounds is not None
    first = np.empty(s.m)
    first[0] = max(abs(costs[0]), TINY)
    first[1:] = np.maximum(np.abs(costs[1:] - s.bounds), TINY * np.maximum(s.bounds, 1.0))
    return first


def _ec_mgda(costs, gram, s: Settings, mem: Memory):
    assert s.bounds is not None
    m = s.m
    if mem.scales is None:
        top = _top_eigen(gram)
        mem = mem._replace(scales=_ec_scales(costs, s), gram_scale=top if top > 0 else 1.0)
    assert mem.scales is not None  # set just above on the first round
    scaled = costs / mem.scales
    bound = s.bounds / mem.scales[1:]
    g_hat = gram / mem.gram_scale
    wp = 1.0 - s.cap.mean()
    c = bound - scaled[1:]

    def full(x):
        return np.concatenate([[wp], x])

    def fun(x):
        b = full(x)
        return float(c @ x + s.u * np.sqrt(max(b @ g_hat @ b, 0.0) + 1e-18))

    def jac(x):
        b = full(x)
        q = np.sqrt(max(b @ g_hat @ b, 0.0) + 1e-18)
        return c + s.u * (g_hat @ b)[1:] / q

    x, ok = solve_box(fun, jac, np.zeros(m - 1), s.cap.copy(), s.cap / 2)
    if not ok:  # the secondaries over their bounds get their cap, the others nothing
        x = np.where(c < 0, s.cap, 0.0)
    w = full(x)
    return w / w.sum(), mem, not ok


def _vertex(values: np.ndarray) -> np.ndarray:
    w = np.zeros(values.size)
    w[int(np.argmax(values))] = 1.0
    return w


def augmented_multipliers(costs: np.ndarray, s: Settings, duals: np.ndarray) -> np.ndarray:
    r"""``\nu_k = max(0, \lambda_k + \mu (l_k / \epsilon_k - 1))``, the multipliers of this round."""
    assert s.bounds is not None
    return np.maximum(0.0, duals + s.penalty * (costs[1:] / s.bounds - 1.0))


def augmented_lagrangian(costs: np.ndarray, s: Settings, duals: np.ndarray) -> float:
    r"""``l_1 + \sum_k \psi(c_k)``, :math:`\psi(c) = \lambda c + \mu c^2 / 2` where
    :math:`\lambda + \mu c \ge 0`, else :math:`-\lambda^2 / (2 \mu)` (Nocedal & Wright, eq. 17.65),
    with :math:`c_k = l_k / \epsilon_k - 1`; its gradient is ``g_1 + sum nu_k / eps_k g_k``."""
    assert s.bounds is not None
    c = costs[1:] / s.bounds - 1.0
    active = duals + s.penalty * c >= 0
    psi = np.where(active, duals * c + 0.5 * s.penalty * c * c, -duals * duals / (2.0 * s.penalty))
    return float(costs[0] + psi.sum())


def step(s: Settings, mem: Memory, costs: np.ndarray, gram: np.ndarray) -> RoundResult:
    """The weights of one round and the memory after it (``costs``/``gram`` unused by methods that
    need none: pass empty arrays)."""
    method = s.spec.method
    fallback = False
    duals = mem.duals
    if method == Method.LINEAR or method == Method.STOCHASTIC:
        w = s.preference.copy()  # STOCHASTIC: the draw's probabilities; the rows are picked by the caller
    elif method == Method.CHEBYSHEV:
        w = _vertex(s.preference * (costs - s.reference))
    elif method == Method.EPO:
        w, fallback = _epo(costs, gram, s)
    elif method == Method.WC_MGDA:
        w, mem, fallback = _wc_mgda(costs, gram, s, mem)
    elif method == Method.EPSILON_CONSTRAINT:
        # Nocedal & Wright, Framework 17.3: the penalised problem at fixed lambda for T rounds (its gradient
        # is alpha's every round: the quadratic penalty pulls at once), then lambda <- nu (the outer step).
        assert s.bounds is not None
        nu = augmented_multipliers(costs, s, mem.duals)
        w = np.concatenate([[1.0], nu / s.bounds])
        if (mem.rounds + 1) % s.dual_interval == 0:
            duals = nu
    elif method == Method.EC_MGDA:
        w, mem, fallback = _ec_mgda(costs, gram, s, mem)
    else:  # pragma: no cover - every Method is handled above
        raise AssertionError(f"unhandled method {method!r}")
    if s.smoothing > 0 and mem.weights is not None:  # MO-LightGBM's "*_decay": a moving average of the weights
        w = s.smoothing * mem.weights + (1.0 - s.smoothing) * w
    w = np.maximum(w, 0.0)
    return RoundResult(w, Memory(mem.rounds + 1, w, duals, mem.scales, mem.gram_scale), fallback)
