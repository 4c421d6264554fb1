r"""One round of each method: the weights of the per-label gradients from the round's costs and Gram matrix.

Pure functions of a :class:`Memory` (what the method carries from round to round: the last weights,
the dual variables, the first round's scales) and the round's inputs; :func:`step` returns the new
weights and the next memory without changing anything, so the loss of a round can be computed without
advancing it. The small problems over ``m`` weights are solved by scipy (``optimize.minimize`` with
SLSQP; EPO's linear program in closed form for two labels, else by HiGHS on a model kept across rounds,
``highs_lp``); a solve that fails falls back to MO-LightGBM's fallback (the Chebyshev vertex, or the
preference) and is counted in :attr:`RoundResult.fallback`.

Notation: ``l`` the per-label costs (mean loss per query), ``G`` the Gram matrix of the per-label
gradients (``G_kl = <g_k, g_l>``), ``r`` the preference (sums to 1), ``\Delta`` the simplex.

.. math::

    \text{EPO:}\quad \max_{\alpha \in \Delta} \alpha^\top C a \text{ s.t. } (C\alpha)_j \ge (Ca)_j
    \;((Ca)_j \le 0), \; (C\alpha)_{j^*} \ge 0 \text{ (balance), or }
    \max_{\alpha \in \Delta} 1^\top C \alpha \text{ s.t. } C\alpha \ge 0 \text{ (descent)}, \quad
    a = r \odot (\log(m \hat l) - \mu_r(l)), \; \hat l = \frac{r \odot l}{r^\top l}

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

import math
from typing import Callable, NamedTuple, Optional

import numpy as np

from ._epo_terms import epo_terms
from .methods import Method, Settings
from .mgda_u import Solve, choose_u

__all__ = ["Memory", "RoundResult", "step", "first_memory", "EpoLP", "epo_adjustments", "epo_lp", "mgda_objective",
           "solve_box", "solve_simplex_lp",
           "simplex_lp_highs", "simplex_lp_two"]

#: EPO balances while the relative costs' non-uniformity mu_r(l) exceeds this, else descends (the
#: default of Mahapatra & Rajan's code, EPO_LP's eps).
EPO_BALANCED = 1e-4
#: The two-weight LP (:func:`simplex_lp_two`) read as HiGHS reads it: constraint entries below
#: ``LP_SMALL_ENTRY`` are zero (HiGHS' ``small_matrix_value``), a violation up to ``LP_FEASIBILITY`` is
#: feasible (its ``primal_feasibility_tolerance``), a slope up to ``LP_FLAT`` is flat. The LP's entries
#: are O(1) (C's diagonal is at most 1).
LP_SMALL_ENTRY = 1e-9
LP_FEASIBILITY = 1e-7
LP_FLAT = 1e-12
#: Relative floor of a scale (a first round's cost or Gram norm) before dividing by it.
TINY = 1e-12


class Memory(NamedTuple):
    """What a method carries to the next round."""

    rounds: int
    weights: Optional[np.ndarray]  # the last round's weights (smoothing), None before round 1
    duals: np.ndarray  # (m - 1,) the augmented Lagrangian's multiplier estimates lambda (updated every T rounds)
    scales: Optional[np.ndarray]  # WC-MGDA: r-hat; EC-MGDA: the cost normalisers (first round)
    gram_scale: float  # the first round's largest Gram eigenvalue (MGDA methods), 0 before
    u: float = 0.0  # MGDA methods: the last round's u (mgda_u="auto": the fork's prev_u_value)
    target: float = math.nan  # mgda_u="auto": the fork's p0, the value the tuned u holds to (mgda_u.py)


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


class EpoLP(NamedTuple):
    """EPO's linear program of one round: maximise ``objective @ alpha`` over the simplex subject to
    ``lhs @ alpha >= rhs`` (rows that do not bind are left out); ``balance`` says which mode it is."""

    objective: np.ndarray  # (m,)
    lhs: np.ndarray  # (k, m)
    rhs: np.ndarray  # (k,)
    balance: bool
    relaxed: "tuple[np.ndarray, np.ndarray]"  # descent: the rows without the ray's (its fallback LP)
    top: int  # the label of largest relative cost r_k l_k (balance's fallback vertex)
    relative: np.ndarray  # r l, the relative costs (costs floored at 0)


def epo_adjustments(costs: np.ndarray, pref: np.ndarray) -> "tuple[np.ndarray, float, np.ndarray]":
    r"""``(r l, mu_r(l), a)``: the relative costs, their non-uniformity
    :math:`\mu_r(l) = \sum_k \hat l_k \log(m \hat l_k)` (the KL divergence of
    :math:`\hat l = r \odot l / \sum r \odot l` from uniform) and the adjustment
    :math:`a = r \odot (\log(m \hat l) - \mu_r(l))` (Mahapatra & Rajan 2020, eqs. 5 and 9). A zero
    relative cost is floored at ``TINY`` (its log would be minus infinity)."""
    m = pref.size
    rl = pref * np.maximum(costs, 0.0)
    total = rl.sum()
    l_hat = np.maximum(rl / total, TINY) if total > 0 else np.full(m, 1.0 / m)
    mu = float(np.sum(l_hat * np.log(m * l_hat)))
    return rl, mu, pref * (np.log(m * l_hat) - mu)


def epo_lp(costs: np.ndarray, gram: np.ndarray, pref: np.ndarray) -> EpoLP:
    r"""EPO's round problem (Mahapatra & Rajan 2020, section 4, the LP of eq. 11), with
    :math:`C = G / \max_k G_{kk}` (the LP does not change with the gradients' scale).

    Balance (:math:`\mu_r(l) > \epsilon`): maximise :math:`\alpha^\top C a` (the descent direction's
    alignment with the adjustment), with :math:`(C\alpha)_j \ge (Ca)_j` for the labels the adjustment
    would let rise (:math:`(Ca)_j \le 0`) and :math:`(C\alpha)_{j^*} \ge 0` for the label of largest
    relative cost; all :math:`(C\alpha)_j \ge 0` when no label is to descend. Descent: maximise
    :math:`1^\top C\alpha` (every cost descends, as much as possible) with :math:`C\alpha \ge 0` and
    :math:`\alpha^\top Ca \ge \min(\max_j (Ca)_j, 0)` (no step off the ray); without the last row if infeasible."""
    m = pref.size
    c, rl, mu, a, ca = epo_terms(costs, gram, pref, TINY)  # compiled: epo_adjustments' terms to rounding
    relaxed = (c, np.zeros(m))
    top_label = int(np.argmax(rl))
    if mu > EPO_BALANCED:
        rising = ca <= 0
        if rising.all():
            lhs, rhs = c, np.zeros(m)
        else:
            keep = rising.copy()
            keep[top_label] = True
            rhs = np.where(rising, ca, 0.0)
            rhs[top_label] = 0.0
            lhs, rhs = c[keep], rhs[keep]
        return EpoLP(ca, lhs, rhs, True, relaxed, top_label, rl)
    lhs = np.vstack([c, ca[None, :]])
    rhs = np.concatenate([np.zeros(m), [min(float(ca.max()), 0.0)]])
    return EpoLP(c.sum(axis=0), lhs, rhs, False, relaxed, top_label, rl)


def solve_simplex_lp(objective: np.ndarray, lhs: np.ndarray, rhs: np.ndarray) -> "np.ndarray | None":
    """``argmax objective @ x`` over the simplex with ``lhs @ x >= rhs``, None if infeasible: in closed
    form for two weights (:func:`simplex_lp_two`), else HiGHS on a model kept across rounds
    (:func:`customobj.multi.highs_lp.model_for`, highspy; scipy's HiGHS, :func:`simplex_lp_highs`, for
    non-finite input or without highspy)."""
    if objective.size == 2:  # a handful of numbers: checked as Python floats (numpy's calls cost more)
        if all(math.isfinite(v) for v in objective.tolist() + lhs.ravel().tolist() + rhs.tolist()):
            return simplex_lp_two(objective, lhs, rhs)
        return simplex_lp_highs(objective, lhs, rhs)  # HiGHS judges non-finite input, as it did before
    if not (np.all(np.isfinite(objective)) and np.all(np.isfinite(lhs)) and np.all(np.isfinite(rhs))):
        return simplex_lp_highs(objective, lhs, rhs)
    from .highs_lp import model_for

    try:
        model = model_for(objective.size)  # HiGHS' own package (highspy): one model kept across rounds
    except ImportError:  # highspy missing: scipy's HiGHS, the same weights (tests/test_multi_highs_lp.py)
        return simplex_lp_highs(objective, lhs, rhs)
    return model.solve(objective, lhs, rhs)


def simplex_lp_highs(objective: np.ndarray, lhs: np.ndarray, rhs: np.ndarray) -> "np.ndarray | None":
    """:func:`solve_simplex_lp` by scipy's HiGHS, for any number of weights: through ``milp`` with no
    integer variable (the same HiGHS LP solve as ``linprog(method="highs")``, the same weights to 1e-12 on
    EPO's rounds, with less of scipy's Python wrapper per call, which is most of a call: 1.1-2.6x faster
    measured on loaded cores, docs/multi-objective.md)."""
    from scipy.optimize import Bounds, LinearConstraint, milp  # on first use, as solve_box

    m = objective.size
    rows = [LinearConstraint(np.ones((1, m)), 1.0, 1.0)]
    if lhs.size:
        rows.append(LinearConstraint(lhs, rhs, np.inf))
    res = milp(-objective, constraints=rows, bounds=Bounds(0.0, 1.0))
    if res.status != 0 or res.x is None or not np.all(np.isfinite(res.x)):
        return None
    x = np.clip(np.asarray(res.x, dtype=np.float64), 0.0, 1.0)
    return x / x.sum() if x.sum() > 0 else None


def simplex_lp_two(objective: np.ndarray, lhs: np.ndarray, rhs: np.ndarray) -> "np.ndarray | None":
    r""":func:`solve_simplex_lp` for two weights in closed form: on the simplex :math:`x = (t, 1 - t)`,
    row ``k`` reads :math:`p_k t \ge q_k` with :math:`p_k = A_{k1} - A_{k2}`, :math:`q_k = b_k - A_{k2}`,
    so the feasible set is an interval :math:`[t_{lo}, t_{hi}] \subseteq [0, 1]` (empty: None) and the
    objective :math:`c_2 + (c_1 - c_2) t` is largest at its upper end when :math:`c_1 > c_2`, at its
    lower end when :math:`c_1 < c_2`.

    It reads the LP as HiGHS does: a constraint entry below ``LP_SMALL_ENTRY`` in magnitude is zero
    (HiGHS' ``small_matrix_value``), and a row may be violated by up to ``LP_FEASIBILITY`` (its
    ``primal_feasibility_tolerance``): an empty interval whose rows can all be met within it gives the
    point of least violation between its ends, else None. A flat objective (every point of the
    interval optimal) gives the lower end. On random and degenerate EPO rounds the weights equal
    HiGHS' (``linprog``'s and ``milp``'s) to 1e-9 wherever the optimum is unique (tests/test_multi_solvers.py).

    >>> simplex_lp_two(np.array([1.0, 0.0]), np.array([[-1.0, 1.0]]), np.array([0.2])).tolist()  # t <= 0.4
    [0.4, 0.6]
    """
    rows = []  # (p_k, q_k) in Python floats: a round has at most three rows, numpy's calls would cost more
    for (a1, a2), b in zip(lhs.tolist(), rhs.tolist()):
        a1, a2 = (0.0 if abs(a1) < LP_SMALL_ENTRY else a1), (0.0 if abs(a2) < LP_SMALL_ENTRY else a2)
        rows.append((a1 - a2, b - a2))
    if any(p == 0.0 and q > LP_FEASIBILITY for p, q in rows):
        return None
    lo = max([0.0] + [q / p for p, q in rows if p > 0.0])
    hi = min([1.0] + [q / p for p, q in rows if p < 0.0])
    if lo > hi:  # empty: the point where the rows bounding t from both sides are violated alike
        up = max(((q - p * hi, p, q) for p, q in rows if p > 0.0), default=None)
        down = max(((q - p * lo, p, q) for p, q in rows if p < 0.0), default=None)
        if up is not None and down is not None:
            t = min(max((up[2] - down[2]) / (up[1] - down[1]), 0.0), 1.0)
        else:
            t = hi if up is not None else lo
        if max([q - p * t for p, q in rows], default=0.0) > LP_FEASIBILITY:
            return None
        lo = hi = t
    t = hi if float(objective[0] - objective[1]) > LP_FLAT else lo
    return np.array([t, 1.0 - t])


def _epo(costs, gram, s: Settings):
    """EPO's weights: its LP; balance falls back to the vertex of the largest relative cost, descent to
    the LP without the ray's row, then to the preference (MO-LightGBM's fallbacks)."""
    lp = epo_lp(costs, gram, s.preference)
    if not lp.relative.max() > 0:  # every cost is 0: nothing to balance or descend
        return s.preference.copy(), False
    x = solve_simplex_lp(lp.objective, lp.lhs, lp.rhs)
    if x is not None:
        return x, False
    if lp.balance:
        return np.eye(s.m)[lp.top], True
    x = solve_simplex_lp(lp.objective, *lp.relaxed)
    return (x, True) if x is not None else (s.preference.copy(), True)


def _norm(a: np.ndarray, k_hat: np.ndarray) -> float:
    """``sqrt(a' K a)`` as :func:`mgda_objective` floors it."""
    return float(np.sqrt(max(a @ k_hat @ a, 0.0) + 1e-18))


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
    gains = r_hat * (costs - s.reference)

    def solve_at(u):
        fun, jac = mgda_objective(gains, k_hat, u)
        x, ok = solve_box(fun, jac, np.zeros(m), np.ones(m), np.full(m, 1.0 / m), [_simplex_eq(m)])
        return Solve(x, ok and abs(x.sum() - 1.0) <= 1e-6, float(gains @ x), _norm(x, k_hat))

    pick = choose_u(solve_at, s, mem.rounds, mem.u, mem.target, not np.any(k_hat))
    mem = mem._replace(u=pick.u, target=pick.target)
    x, ok = pick.solve.x, pick.solve.ok
    if not ok:
        x = _vertex(gains)
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

    def solve_at(u):
        def fun(x):
            b = full(x)
            return float(c @ x + u * np.sqrt(max(b @ g_hat @ b, 0.0) + 1e-18))

        def jac(x):
            b = full(x)
            q = np.sqrt(max(b @ g_hat @ b, 0.0) + 1e-18)
            return c + u * (g_hat @ b)[1:] / q

        x, ok = solve_box(fun, jac, np.zeros(m - 1), s.cap.copy(), s.cap / 2)
        return Solve(x, ok, float(wp * scaled[0] - c @ x), _norm(full(x), g_hat))

    pick = choose_u(solve_at, s, mem.rounds, mem.u, mem.target, not np.any(g_hat))
    mem = mem._replace(u=pick.u, target=pick.target)
    x, ok = pick.solve.x, pick.solve.ok
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
    return RoundResult(w, mem._replace(rounds=mem.rounds + 1, weights=w, duals=duals), fallback)
