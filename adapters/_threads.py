"""One thread setup for numba, LightGBM and XGBoost living in the same process.

Why: numba (OpenMP layer when TBB is absent), LightGBM and XGBoost each own an OpenMP pool.
libgomp's default wait policy lets idle workers spin for a while after each parallel region, so
on a small machine the pool that just finished (say XGBoost's, after building a tree) keeps the
cores busy while the next one (the numba objective) wants them: each side runs at a fraction of
its speed. XGBoost with a parallel numba objective measured 3.4x slower on 2 cores until
``OMP_WAIT_POLICY=passive``. Passive waiting costs nothing measurable for tree building here.

The wait policy is read once, when an OpenMP runtime is loaded, so it must be in the
environment before ``lightgbm`` / ``xgboost`` / numba's OpenMP pool are first loaded.
``configure_threads`` (run by ``import customobj.adapters``) sets it with ``os.environ.setdefault``, so a
value the user chose always wins; if the libraries were imported earlier it warns instead.
Set ``CUSTOMOBJ_KEEP_OMP_ENV=1`` to leave the environment untouched.
"""
from __future__ import annotations

import os
import sys
import warnings

__all__ = ["configure_threads", "THREAD_ENV"]

#: What ``configure_threads`` puts in the environment unless already set.
THREAD_ENV = {"OMP_WAIT_POLICY": "passive", "KMP_BLOCKTIME": "0"}

_done = False


def configure_threads() -> None:
    """Make idle OpenMP workers sleep instead of spin (see module docstring). Idempotent."""
    global _done
    if _done or os.environ.get("CUSTOMOBJ_KEEP_OMP_ENV"):
        _done = True
        return
    _done = True
    user_set = "OMP_WAIT_POLICY" in os.environ
    late = [m for m in ("lightgbm", "xgboost") if sys.modules.get(m) is not None]  # None: blocked, not loaded
    for key, value in THREAD_ENV.items():
        os.environ.setdefault(key, value)
    if late and not user_set:
        warnings.warn(
            f"{' and '.join(late)} {'were' if len(late) > 1 else 'was'} imported before customobj.adapters, so "
            f"{'their OpenMP runtimes' if len(late) > 1 else 'its OpenMP runtime'} already read "
            "OMP_WAIT_POLICY; spinning threads may slow custom objectives on few cores. Import "
            "customobj.adapters first, or set OMP_WAIT_POLICY=passive in the environment.",
            RuntimeWarning,
            stacklevel=3,
        )
