r"""The automatic ``u`` of WC-MGDA and EC-MGDA (``mgda_u="auto"``), MO-LightGBM's tuning transcribed.

Each round, WC-MGDA and EC-MGDA solve a min-max at a norm weight ``u`` (:mod:`customobj.multi.solvers`).
Written as the value the fork's ``getAlpha`` returns (its ``p0``), the round's problem at ``u`` is

.. math::

    V(u) = \max_{\alpha} \; L(\alpha) - u\, N(\alpha), \qquad
    \text{WC-MGDA: } L = (\hat r \odot (l - z))^\top \alpha,\; N = \sqrt{\alpha^\top \hat K \alpha};
    \quad \text{EC-MGDA: } L = w_p \hat l_1 + (\hat l_s - \hat\epsilon)^\top \alpha_s,\; N = \sqrt{\beta^\top \hat G \beta}

over the method's weights (the simplex; the box ``0 <= alpha_s <= c``). ``V`` is a maximum of functions
affine in ``u``: convex and non-increasing. The fork (``WCMGDA::uOptimizeLoop``; ``ECMGDA::GetCoefficients``):

- rounds 1 and 2 (its ``n_iter`` 0 and 1): ``u = min_u`` and the target ``p0 = V(min_u)`` (the second
  round's is kept);
- from round 3, ``getUTunedAlpha``: the least ``u`` with ``V(u) <= p0``. The fork writes it as a cone
  program over ``(u, rho, z, d)`` (WC-MGDA) or ``(u, z, d)`` (EC-MGDA), ``min u`` subject to
  ``||d|| <= u`` and the linear rows that say, by duality, that the round's value at ``u`` is at most
  ``p0``. Its status decides:

  - the solve failed: the previous round's ``u``, ``p0`` kept;
  - the tuned ``u`` or the multiplier of the ``p0`` row is below ``1e-6`` (the value is already below
    ``p0``): the previous ``u``, and ``p0 = V(previous u)``;
  - the tuned ``u`` below ``min_u``: ``min_u``;
  - else ``min(u, max_u)``, ``max_u`` 10 (WC-MGDA) or 0.3 (EC-MGDA).
- EC-MGDA with smoothing (``ec_mgda_decay``) smooths ``u`` as it smooths the weights (its
  ``get_EMA_u``); WC-MGDA's is commented out in the fork.

Here the least ``u`` is found by Newton's method on ``V(u) - p0`` from ``u = 1e-6`` (Dinkelbach's
iteration): each step solves the round's problem at ``u_k`` with scipy (the solvers' own SLSQP call) and
moves to where its maximiser's line ``L(alpha_k) - u N(alpha_k)`` crosses ``p0``. The line lies under
``V``, so every step stays at or below the least ``u`` and the steps increase to it; the multiplier of
the ``p0`` row is ``1 / N`` at the solution (its sensitivity ``du/dp0``). No cone solver is needed.

Differences: the fork adds a ``1e-12`` ridge to ``K`` (its program is then always feasible); customobj's
``K`` has none, so a zero ``K`` (every gradient zero) makes the tuning fail as the fork's unridged
program would, and a ``K`` singular along the weights gives a ``u`` past ``max_u`` (clamped, as the
fork's ridged program gives a very large one).

References
----------
MO-LightGBM, ``src/objective/mg_combinator.hpp`` (``WCMGDA::uOptimizeLoop``, ``WCMGDA::getUTunedAlpha``,
``ECMGDA::GetCoefficients``, ``ECMGDA::getUTunedAlpha``, ``get_EMA_u``); Dinkelbach (1967), "On
nonlinear fractional programming", Management Science 13(7).
"""
from __future__ import annotations

import math
from enum import IntEnum
from typing import Callable, NamedTuple, Optional

import numpy as np

from .methods import Method, Settings

__all__ = ["Solve", "Status", "Pick", "MAX_U", "TRIVIAL_U", "choose_u", "least_u"]

#: The fork's ``max_u``: ``WCMGDA`` 10, ``ECMGDA`` 0.3 (raised to ``min_u`` when ``min_u`` is larger).
MAX_U = {Method.WC_MGDA: 10.0, Method.EC_MGDA: 0.3}
#: The fork's threshold on the tuned ``u`` and on its ``p0`` row's multiplier ("trivial solution").
TRIVIAL_U = 1e-6
#: Newton steps before the tuning counts as failed (it converges in a few; finitely where ``V`` is piecewise affine).
NEWTON_STEPS = 60
#: ``V(u) - p0`` at most this (relative to ``max(1, |p0|)``) is a root: SLSQP's ``ftol`` is 1e-12.
ROOT_TOL = 1e-11
#: Rounds at fixed ``min_u`` before the tuning starts (the fork's ``n_iter > 1``).
FIRST_ROUNDS = 2


class Solve(NamedTuple):
    """The round's problem solved at one ``u``: the solver's variables, whether it converged, and
    ``L`` and ``N`` at them (the value is ``gain - u * norm``)."""

    x: np.ndarray
    ok: bool
    gain: float
    norm: float

    def value(self, u: float) -> float:
        return self.gain - u * self.norm


class Status(IntEnum):
    """How a round's ``u`` was chosen (the fork's branches)."""

    FIXED = 0  # mgda_u a number
    FIRST = 1  # rounds 1-2: min_u, the target set
    FAILED = 2  # the tuning failed: the previous u, the target kept
    TRIVIAL = 3  # the tuned u (or its p0 row's multiplier) below 1e-6: the previous u, the target reset
    AT_MIN = 4  # the tuned u below min_u
    TUNED = 5  # the tuned u in [min_u, max_u]
    AT_MAX = 6  # the tuned u above max_u


class Pick(NamedTuple):
    u: float  # the round's u
    target: float  # p0 after the round (nan before it is set)
    status: Status
    solve: Solve  # the round's problem at u


def least_u(solve_at: Callable[[float], Solve], target: float, max_u: float,
            flat: bool) -> "tuple[Status, float, Optional[Solve]]":
    """``(status, u*, solve at u*)``: the least ``u >= 0`` with ``V(u) <= target`` by Newton's method
    from ``TRIVIAL_U``; ``status`` is TRIVIAL, AT_MAX (``u*`` past ``max_u``, not located), FAILED (a
    solve failed, no convergence, or ``flat``: ``K`` is zero and ``V`` stays above the target) or TUNED
    (``u*`` located; the caller compares it with ``min_u``)."""
    u = TRIVIAL_U
    sol = solve_at(u)
    tol = ROOT_TOL * max(1.0, abs(target))
    for _ in range(NEWTON_STEPS):
        if not sol.ok:
            return Status.FAILED, u, None
        if sol.value(u) - target <= tol:
            if u <= TRIVIAL_U or sol.norm > 1.0 / TRIVIAL_U:  # p0's multiplier 1 / N below 1e-6 too
                return Status.TRIVIAL, u, sol
            return Status.TUNED, u, sol
        if flat:  # V does not fall with u: the fork's program (zero K) is infeasible
            return Status.FAILED, u, None
        step = (sol.gain - target) / sol.norm  # where the maximiser's line meets the target: <= u*
        if step >= max_u:
            return Status.AT_MAX, step, None
        if step <= u * (1.0 + 1e-12):  # no progress left at the solver's accuracy: u is the root
            return (Status.TUNED, u, sol) if sol.norm <= 1.0 / TRIVIAL_U else (Status.TRIVIAL, u, sol)
        u = step
        sol = solve_at(u)
    return Status.FAILED, u, None


def choose_u(solve_at: Callable[[float], Solve], s: Settings, rounds: int, last_u: float, target: float,
             flat: bool) -> Pick:
    """The round's ``u`` and its solve. ``rounds``: rounds before this one; ``last_u``: the previous
    round's ``u``; ``target``: the fork's ``p0`` (nan before it is set); ``flat``: ``K`` is zero."""
    if not s.tune_u:
        return Pick(s.u, target, Status.FIXED, solve_at(s.u))
    min_u = s.u
    max_u = max(MAX_U[s.spec.method], min_u)
    if rounds < FIRST_ROUNDS or math.isnan(target):  # no target yet (both first solves failed): set one
        status, u, probe = Status.FIRST, min_u, None
    else:
        status, u_star, probe = least_u(solve_at, target, max_u, flat)
        if status == Status.FAILED or status == Status.TRIVIAL:
            u = last_u
        elif status == Status.AT_MAX:
            u = max_u
        elif u_star < min_u:
            status, u = Status.AT_MIN, min_u
        else:
            u = u_star
        if u != u_star:
            probe = None  # solved at another u
    if s.spec.method == Method.EC_MGDA and s.smoothing > 0 and rounds > 0:  # ECMGDA::get_EMA_u
        smoothed = (1.0 - s.smoothing) * u + s.smoothing * last_u
        probe, u = (probe if smoothed == u else None), smoothed
    sol = solve_at(u) if probe is None else probe
    if (status == Status.FIRST or status == Status.TRIVIAL) and sol.ok:
        target = sol.value(u)
    return Pick(u, target, status, sol)
