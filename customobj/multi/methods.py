"""The multi-objective methods as records, and the options of :class:`customobj.multi.MultiObjective`
checked once.

A method's name becomes a :class:`MethodSpec` at construction (``method_spec``); the per-round code
dispatches on :class:`Method` (an ``IntEnum``) and never compares strings. :func:`check_settings`
turns the keyword options into one :class:`Settings` record: the preference normalised to sum 1, the
bounds and the reference point as float64 arrays, each method's defaults filled in, and an option
that the chosen method does not read refused (so a typo'd trade-off is never silently ignored).

References
----------
Mahapatra, Dong, Chen, Momma (2023), "Multi-Label Learning to Rank through Multi-Objective
Optimization", KDD, section 4 (the methods) and its code, github.com/amazon-science/MO-LightGBM
(``src/objective/mg_combinator.hpp``).
"""
from __future__ import annotations

import warnings
from enum import IntEnum
from typing import Any, NamedTuple, Optional

import numpy as np

from .._validation import PARAM_LIMIT, as_1d_float, check_choice, check_int, check_positive, check_real

__all__ = ["Method", "MethodSpec", "METHODS", "Settings", "method_spec", "check_settings", "warn_unmet_bounds"]


class Method(IntEnum):
    """The gradient combinations (docs/multi-objective.md)."""

    LINEAR = 0  # fixed weights: the preference
    STOCHASTIC = 1  # per query, one label drawn with the preference's probabilities
    CHEBYSHEV = 2  # all weight on the label of largest weighted cost
    EPO = 3  # exact Pareto optimal search on the preference ray
    WC_MGDA = 4  # weighted Chebyshev by a regularised min-max over the simplex
    EPSILON_CONSTRAINT = 5  # augmented Lagrangian: primary + multipliers on the bounded costs
    EC_MGDA = 6  # epsilon-constraint by a regularised min-max over bounded weights


class MethodSpec(NamedTuple):
    """What a method reads each round and which options it takes."""

    method: Method
    name: str
    needs_costs: bool  # the per-label losses at this round's scores
    needs_gram: bool  # the m x m Gram matrix of the per-label gradients
    reads_preference: bool
    reads_bounds: bool  # upper bounds on objectives 2..m (objective 1 is the primary)
    reads_reference: bool  # the Chebyshev reference point
    reads_smoothing: bool  # a moving average of the weights (MO-LightGBM's "*_decay" methods)
    reads_u: bool  # the norm penalty of the MGDA min-max problems
    reads_penalty: bool  # the augmented Lagrangian's quadratic penalty and its multipliers' update interval
    reads_cap: bool  # EC-MGDA's upper limits on the secondary weights
    reads_random_state: bool


def _spec(method, name, costs=False, gram=False, pref=False, bounds=False, ref=False, smooth=False, u=False,
          penalty=False, cap=False, rng=False):
    return MethodSpec(method, name, costs, gram, pref, bounds, ref, smooth, u, penalty, cap, rng)


#: name -> record; the names are the ``method=`` vocabulary.
METHODS = {s.name: s for s in (
    _spec(Method.LINEAR, "linear", pref=True),
    _spec(Method.STOCHASTIC, "stochastic", pref=True, rng=True),
    _spec(Method.CHEBYSHEV, "chebyshev", costs=True, pref=True, ref=True, smooth=True),
    _spec(Method.EPO, "epo", costs=True, gram=True, pref=True, smooth=True),
    _spec(Method.WC_MGDA, "wc_mgda", costs=True, gram=True, pref=True, ref=True, smooth=True, u=True),
    _spec(Method.EPSILON_CONSTRAINT, "epsilon_constraint", costs=True, bounds=True, penalty=True),
    _spec(Method.EC_MGDA, "ec_mgda", costs=True, gram=True, bounds=True, smooth=True, u=True, cap=True),
)}

#: Defaults of the method-specific options (MO-LightGBM's: ``mo_mgda_min_u`` 0.1; ``mo_ec_mu`` 1).
DEFAULT_U = 0.1
#: ``mgda_u``'s one word: MO-LightGBM's automatic ``u`` (its ``mo_mgda_use_fix_u = false``), from ``DEFAULT_U`` up.
AUTO_U = "auto"
DEFAULT_PENALTY = 1.0
#: Rounds between two updates of the augmented Lagrangian's multipliers (its outer iterations). Measured on
#: MQ2008 (docs/multi-objective.md): updated every round, the multipliers wind up while every cost is still
#: far above its bound (the first rounds) and the secondary cost then swings around the bound and ends on
#: either side of it; with 10 rounds of the penalised problem between updates it ends at or below the bound.
DEFAULT_DUAL_INTERVAL = 10
DEFAULT_CAP = 0.5


class Settings(NamedTuple):
    """The checked options of one :class:`~customobj.multi.MultiObjective`."""

    spec: MethodSpec
    m: int
    preference: np.ndarray  # (m,), >= 0, sums to 1 (uniform when the method reads none)
    bounds: Optional[np.ndarray]  # (m - 1,) > 0, or None
    reference: np.ndarray  # (m,)
    smoothing: float  # in [0, 1): weight of the previous round's weights
    u: float
    penalty: float
    dual_interval: int  # rounds between two multiplier updates (epsilon_constraint)
    cap: np.ndarray  # (m - 1,) in (0, 1]
    seed: int
    tune_u: bool = False  # mgda_u="auto": u tuned each round from the third (mgda_u.py), ``u`` its least value


def method_spec(method: Any) -> MethodSpec:
    """The record of a method name (``ValueError``/``TypeError`` naming ``method`` otherwise).

    >>> method_spec("epo").needs_gram
    True
    """
    return METHODS[check_choice(method, "method", set(METHODS))]


def _vector(value: Any, name: str, size: int) -> np.ndarray:
    v = as_1d_float(value, name)
    if v.shape[0] != size:
        raise ValueError(f"{name} must have {size} entries, got {v.shape[0]}")
    if v.size and np.abs(v).max() > PARAM_LIMIT:
        raise ValueError(f"{name} entries must be at most {PARAM_LIMIT:g} in magnitude")
    return v


def _refuse(spec: MethodSpec, given: dict) -> None:
    """An option the method does not read is an error, not a silent no-op."""
    reads = {"preference": spec.reads_preference, "bounds": spec.reads_bounds,
             "reference_point": spec.reads_reference, "smoothing": spec.reads_smoothing,
             "mgda_u": spec.reads_u, "penalty": spec.reads_penalty, "secondary_cap": spec.reads_cap,
             "dual_interval": spec.reads_penalty, "random_state": spec.reads_random_state}
    for name, value in given.items():
        if value is not None and not reads[name]:
            users = sorted(s.name for s in METHODS.values() if getattr(s, _READS[name]))
            raise ValueError(f"{name} is not read by method={spec.name!r} (only by {users}); leave it out")


_READS = {"preference": "reads_preference", "bounds": "reads_bounds", "reference_point": "reads_reference",
          "smoothing": "reads_smoothing", "mgda_u": "reads_u", "penalty": "reads_penalty",
          "secondary_cap": "reads_cap", "dual_interval": "reads_penalty", "random_state": "reads_random_state"}


def check_preference(preference: Any, m: int, spec: MethodSpec) -> np.ndarray:
    """Non-negative, not all zero, ``m`` entries; returned normalised to sum 1 (uniform for None).

    >>> check_preference([1, 3], 2, METHODS["linear"]).tolist()
    [0.25, 0.75]
    """
    if preference is None:
        return np.full(m, 1.0 / m)
    p = _vector(preference, "preference", m)
    if p.min() < 0:
        raise ValueError(f"preference must be non-negative, got {p[int(np.argmin(p))]} at index {int(np.argmin(p))}")
    if not p.any():
        raise ValueError("preference must not be all zero (it sets the trade-off between the labels)")
    if spec.method == Method.EPO and p.min() == 0:
        raise ValueError("preference must be positive for method='epo' (its ray is 1 / preference); "
                         f"index {int(np.argmin(p))} is 0")
    return p / p.sum()


def check_settings(spec: MethodSpec, m: int, *, preference: Any, bounds: Any, reference_point: Any,
                   smoothing: Any, mgda_u: Any, penalty: Any, secondary_cap: Any, random_state: Any,
                   dual_interval: Any = None) -> Settings:
    """All method options checked against the method and ``m`` (the number of objectives)."""
    _refuse(spec, {"preference": preference, "bounds": bounds, "reference_point": reference_point,
                   "smoothing": smoothing, "mgda_u": mgda_u, "penalty": penalty, "secondary_cap": secondary_cap,
                   "dual_interval": dual_interval, "random_state": random_state})
    pref = check_preference(preference, m, spec)
    b = None
    if spec.reads_bounds:
        if bounds is None:
            raise ValueError(f"method={spec.name!r} needs bounds=[...]: upper bounds on the costs of objectives "
                             f"2..{m} (objective 1 is the primary)")
        b = _vector(bounds, "bounds", m - 1)
        if b.min() <= 0:
            raise ValueError(f"bounds must be positive cost values, got {b[int(np.argmin(b))]} at index "
                             f"{int(np.argmin(b))}")
    ref = np.zeros(m) if reference_point is None else _vector(reference_point, "reference_point", m)
    smooth = 0.0 if smoothing is None else check_real(smoothing, "smoothing")
    if not 0.0 <= smooth < 1.0:
        raise ValueError(f"smoothing must be in [0, 1) (the previous weights' share), got {smooth}")
    tune_u = isinstance(mgda_u, str)
    if tune_u:
        check_choice(mgda_u, "mgda_u", {AUTO_U})
    u = DEFAULT_U if mgda_u is None or tune_u else check_positive(mgda_u, "mgda_u")
    pen = DEFAULT_PENALTY if penalty is None else check_positive(penalty, "penalty")
    interval = (DEFAULT_DUAL_INTERVAL if dual_interval is None
                else check_int(dual_interval, "dual_interval", minimum=1, maximum=10**6))
    if secondary_cap is None:
        cap = np.full(m - 1, DEFAULT_CAP)
    elif np.ndim(secondary_cap) == 0:
        cap = np.full(m - 1, check_real(secondary_cap, "secondary_cap"))
    else:
        cap = _vector(secondary_cap, "secondary_cap", m - 1)
    if cap.min() <= 0 or cap.max() > 1 or cap.mean() >= 1:
        raise ValueError(f"secondary_cap entries must be in (0, 1] with a mean below 1 (the primary keeps "
                         f"1 - mean), got {cap.tolist()}")
    seed = 0 if random_state is None else check_int(random_state, "random_state", minimum=0, maximum=2**32 - 1)
    return Settings(spec, m, pref, b, ref, smooth, u, pen, interval, cap, seed, tune_u)


def warn_unmet_bounds(settings: Settings, costs: np.ndarray, *, stacklevel: int = 2) -> None:
    """A ``UserWarning`` for each bound the last round's cost exceeds (``costs``: rounds x m, the
    ``label_costs_`` read after training, on one machine or as a distributed training brought them back).

    >>> s = check_settings(METHODS["epsilon_constraint"], 2, preference=None, bounds=[0.5], reference_point=None,
    ...                    smoothing=None, mgda_u=None, penalty=None, secondary_cap=None, random_state=None)
    >>> warn_unmet_bounds(s, np.array([[1.0, 0.4]]))  # met: nothing said
    """
    if settings.bounds is None or len(costs) == 0:
        return
    last = np.asarray(costs, dtype=np.float64)[-1, 1:]
    for k in np.flatnonzero(last > settings.bounds):
        warnings.warn(f"bounds[{k}] = {settings.bounds[k]:.6g} was not met: objective {k + 2}'s cost (mean loss "
                      f"per query) is {last[k]:.6g} after {len(costs)} rounds; no model of this "
                      "training met it (a looser bound, more rounds or a larger penalty)",
                      UserWarning, stacklevel=stacklevel + 1)
