"""Worker-side registry of fuzz targets and the output checks they share.

A target is ``fn(**kwargs) -> summary``: it calls one public entry point with the example's
inputs and checks what came back (finite, right shape, consistent); a broken promise raises
:class:`BadOutput`. Exceptions from the library propagate and are classified by the worker.
Each target has a warm-up (valid inputs only) that loads / compiles the kernels it reaches.
"""
from __future__ import annotations

import importlib

import numpy as np

_TARGETS = {}
#: Set by the worker: which of lightgbm / xgboost were imported before customobj.adapters.
LOADED_BEFORE_ADAPTERS = None
_WARM = {}

_MODULES = ("fuzz._targets_core", "fuzz._targets_data", "fuzz._targets_ole", "fuzz._targets_adapters")


class BadOutput(Exception):
    """The entry point returned something it promises never to return (NaN, wrong shape, ...)."""


def target(name, warm=None):
    """Register ``fn`` as target ``name``; ``warm()`` runs it on valid inputs (default: nothing)."""
    def deco(fn):
        _TARGETS[name] = fn
        _WARM[name] = warm
        return fn
    return deco


def load_all():
    for mod in _MODULES:
        importlib.import_module(mod)


def run(name, kwargs):
    if name == "__warm__":
        warm = _WARM[kwargs["target"]]
        if warm is not None:
            warm()
        return "warm"
    return _TARGETS[name](**kwargs)


# --- checks ---------------------------------------------------------------------------------------
def finite_array(a, what, shape=None, *, kind="f"):
    if not isinstance(a, np.ndarray):
        raise BadOutput(f"{what} is a {type(a).__name__}, not an ndarray")
    if shape is not None and a.shape != tuple(shape):
        raise BadOutput(f"{what} has shape {a.shape}, expected {tuple(shape)}")
    if kind and a.dtype.kind not in kind:
        raise BadOutput(f"{what} has dtype {a.dtype}, expected kind {kind!r}")
    if a.dtype.kind in "fc" and a.size and not np.all(np.isfinite(a)):
        bad = np.flatnonzero(~np.isfinite(a.ravel()))
        raise BadOutput(f"{what} holds {a.ravel()[bad[0]]} at flat position {int(bad[0])} "
                        f"({bad.size} non-finite of {a.size})")
    return a


def finite_float(x, what):
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise BadOutput(f"{what} is a {type(x).__name__}, expected a number")
    if not np.isfinite(x):
        raise BadOutput(f"{what} is {x}")
    return float(x)


def in_range(x, lo, hi, what, tol=1e-9):
    if not (lo - tol <= x <= hi + tol):
        raise BadOutput(f"{what} = {x!r} outside [{lo}, {hi}]")


def rows_of(x):
    """Row count the caller meant (first dimension of the array-like), or None."""
    try:
        a = np.asarray(x)
    except Exception:  # noqa: BLE001
        return None
    return a.shape[0] if a.ndim >= 1 else None


# --- self-test targets (exercise the runner itself) ---------------------------------------------
@target("selftest.ok")
def _ok(value=1.0):
    return finite_float(value, "value")


@target("selftest.segfault")
def _segfault():
    import ctypes

    return ctypes.string_at(0)  # reads address 0: SIGSEGV


@target("selftest.sleep")
def _sleep(seconds=3600.0):
    import time

    time.sleep(seconds)


@target("selftest.spin")
def _spin():
    while True:
        pass


@target("selftest.raise")
def _raise(kind="KeyError", message="boom"):
    raise {"KeyError": KeyError, "ValueError": ValueError, "TypeError": TypeError,
           "MemoryError": MemoryError}[kind](message)


@target("selftest.alloc")
def _alloc(gigabytes=64):
    return np.ones(int(gigabytes * 2**30), dtype=np.uint8).size  # beyond the worker's memory limit


@target("selftest.exit")
def _exit(code=3):
    import os

    os._exit(code)


@target("selftest.noisy")
def _noisy():
    import os

    print("chatter on stdout " * 1000)
    os.write(1, b"raw bytes on fd 1\n" * 100)
    return "quiet"


@target("selftest.nan")
def _nan():
    return finite_array(np.array([1.0, np.nan]), "grad")


@target("selftest.warmfail", warm=lambda: (_ for _ in ()).throw(ValueError("valid input rejected")))
def _warmfail():
    return "never"


def resolve_group(group):
    """Turn a ``{"__groups__": ctor, "arg": ...}`` spec (from the strategies) into a Groups."""
    if isinstance(group, dict) and "__groups__" in group:
        from customobj import Groups

        return getattr(Groups, group["__groups__"])(group["arg"])
    return group


@target("selftest.import_order")
def _import_order():
    import os
    import sys

    if "customobj.adapters" not in sys.modules:
        raise BadOutput("the worker did not import customobj.adapters")
    if LOADED_BEFORE_ADAPTERS:
        raise BadOutput(f"{LOADED_BEFORE_ADAPTERS} were loaded before customobj.adapters")
    return os.environ.get("OMP_WAIT_POLICY")
