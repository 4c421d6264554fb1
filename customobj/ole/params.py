"""Hyperparameters of :class:`~customobj.ole.TreeBooster`: one validation function, used twice.

scikit-learn stores constructor arguments unmodified and validates them in ``fit`` (so that
``set_params(...)`` followed by ``fit`` is checked too); customobj also fails early, in the
constructor, on values that could never train. Both call :func:`check_params`, so the two places
can never disagree. Every value is checked as a Python value before it becomes an int64 or a
float64 (issue 13: ranges, overflow, NaN/inf, unhashable choices).
"""
from __future__ import annotations

import numbers
from typing import Any, Mapping, Optional

import numpy as np

from .._device import as_device
from .criterion import criterion_for

__all__ = ["check_params", "check_n_jobs", "default_objective", "MAX_NUM_LEAVES", "MAX_BIN", "MAX_INT"]

#: LightGBM's upper limit for ``num_leaves`` (``1 < num_leaves <= 131072``).
MAX_NUM_LEAVES = 131072
#: Bins are stored as uint16, one value of which marks NaN.
MAX_BIN = 65534
#: Upper limit of the other integer options: far beyond any useful value, below int64 overflow
#: and below the largest integer a float64 holds exactly (``min_data_in_leaf`` becomes a float).
MAX_INT = 2**53

_GROWTH = ("best_first", "breadth_first")
_LEAF_SOLVERS = ("diagonal", "joint")
_IMPORTANCE = ("split", "gain")


def default_objective():
    """The objective used when ``objective=None``: ``LambdaRank()`` (NDCG@10 lambdas)."""
    from ..objectives import LambdaRank
    return LambdaRank()


def _int(params, name, minimum, maximum=MAX_INT, *, allow_none=False, hint=""):
    value = params[name]
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    if not minimum <= value <= maximum:
        raise ValueError(f"{name} must be in [{minimum}, {maximum}], got {value}{hint}")
    return int(value)


def _real(params, name, *, low, high=None, low_open=False):
    value = params[name]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    v = float(value)
    if not np.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value}")
    bad_low = v <= low if low_open else v < low
    if bad_low or (high is not None and v > high):
        lo = "(" if low_open else "["
        hi = f"{high}]" if high is not None else "inf)"
        raise ValueError(f"{name} must be in {lo}{low}, {hi}, got {value}")
    return v


def _fraction_below_one(params, name):
    # [0, 1): epsilon = 1 would let a query drop every pair (customobj.ole.pair_pruning)
    v = _real(params, name, low=0.0, high=1.0)
    if v >= 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {params[name]}")
    return v


def _choice(params, name, choices):
    value = params[name]
    # a str check first: ``[...] in choices`` would raise "unhashable type" for a list
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}, got {value!r}")
    return value


def _flag(params, name, *, levels=False):
    value = params[name]
    if levels and isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
        return int(value) > 0  # LightGBM's habit: verbose=-1 or 0 is quiet, 1 and more talk
    if not isinstance(value, (bool, np.bool_)):
        what = "True or False (or an integer: > 0 shows progress)" if levels else "True or False"
        raise TypeError(f"{name} must be {what}, got {type(value).__name__} {value!r}")
    return bool(value)


def check_n_jobs(n_jobs) -> Optional[int]:
    """``n_jobs`` alone (prediction needs no other hyperparameter)."""
    return _int({"n_jobs": n_jobs}, "n_jobs", 1, allow_none=True, hint=" (None: numba's thread count)")


def check_params(params: Mapping[str, Any]) -> dict:
    """Validate every ``TreeBooster`` hyperparameter; return them as plain Python values.

    Parameters
    ----------
    params : mapping
        ``TreeBooster.get_params(deep=False)``: the constructor arguments as stored.

    Returns
    -------
    dict
        The same keys with ``int`` / ``float`` / ``bool`` / ``str`` values, ``objective``
        replaced by :func:`default_objective` when it is ``None``, and ``device`` as its
        :class:`~customobj._device.Device` record (``"cpu"``, ``"cuda"``, ``"cuda:N"``: the one parser).

    Raises
    ------
    TypeError, ValueError
        Naming the parameter, the accepted range and the value received.

    Examples
    --------
    >>> from customobj.ole import TreeBooster
    >>> from customobj.ole.params import check_params
    >>> check_params(TreeBooster(num_leaves=8).get_params())["num_leaves"]
    8
    >>> check_params({**TreeBooster().get_params(), "num_leaves": 1})
    Traceback (most recent call last):
    ...
    ValueError: num_leaves must be in [2, 131072], got 1 (a tree needs at least two leaves to split the data)
    """
    from ..objectives.base import Objective
    objective = params["objective"]
    if objective is None:
        objective = default_objective()
    elif not isinstance(objective, Objective):
        raise TypeError(f"objective must be a customobj Objective (e.g. customobj.LambdaRank()) or None, "
                        f"got {type(objective).__name__}")
    out = {
        "objective": objective,
        "criterion": criterion_for(params["criterion"]).name,  # the name table's own check
        "num_leaves": _int(params, "num_leaves", 2, MAX_NUM_LEAVES,
                           hint=" (a tree needs at least two leaves to split the data)"),
        "learning_rate": _real(params, "learning_rate", low=0.0, low_open=True),
        "n_estimators": _int(params, "n_estimators", 0),
        "max_bin": _int(params, "max_bin", 2, MAX_BIN),
        "min_data_in_leaf": _int(params, "min_data_in_leaf", 1),
        "min_sum_hessian_in_leaf": _real(params, "min_sum_hessian_in_leaf", low=0.0),
        "lambda_l2": _real(params, "lambda_l2", low=0.0),
        "max_depth": _int(params, "max_depth", -MAX_INT, hint=" (<= 0 means no limit)"),
        "growth": _choice(params, "growth", _GROWTH),
        "feature_fraction": _real(params, "feature_fraction", low=0.0, high=1.0, low_open=True),
        "bagging_fraction": _real(params, "bagging_fraction", low=0.0, high=1.0, low_open=True),
        "random_state": _int(params, "random_state", 0, hint=" (a seed: a non-negative integer)"),
        "n_jobs": check_n_jobs(params["n_jobs"]),
        "leaf_solver": _choice(params, "leaf_solver", _LEAF_SOLVERS),
        "line_search": _flag(params, "line_search"),
        "importance_type": _choice(params, "importance_type", _IMPORTANCE),
        "verbose": _flag(params, "verbose", levels=True),
        "ole_fast_features": _int(params, "ole_fast_features", 1),
        "ole_fast_epsilon": _fraction_below_one(params, "ole_fast_epsilon"),
        "device": as_device(params["device"]),
    }
    unknown = set(params) - set(out)
    if unknown:
        raise TypeError(f"unknown TreeBooster parameters: {sorted(unknown)}")
    return out
