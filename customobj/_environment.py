"""The environment report of ``customobj info``: versions, numba threading, the kernel cache folder,
CPUs and thread variables.

Kept apart from the command line (``customobj.cli`` parses arguments and reports errors, nothing
else); the probe kernel here compiles only when ``customobj info`` runs.
"""
from __future__ import annotations

import os
import platform
import sys
from importlib import metadata

import numpy as np
from numba import njit, prange

from ._numba_cache import cache_status
from ._version import __version__

__all__ = ["environment_info", "gpu_line"]

_PACKAGES = ["customobj", "numpy", "numba", "lightgbm", "scipy", "scikit-learn"]
#: Shown when installed (the extras, customobj/_extras.py); xgboost-cpu is the CPU build of xgboost.
_OPTIONAL_PACKAGES = ["xgboost", "xgboost-cpu", "optuna", "matplotlib", "catboost", "dask", "distributed", "pandas",
                      "numba-cuda"]
_THREAD_ENV_PREFIXES = ("OMP_", "KMP_", "GOMP_", "MKL_", "OPENBLAS_", "NUMBA_", "TBB_")


@njit(parallel=True, cache=True)
def _tiny_parallel_sum(x):
    # Run once so numba picks (and reports) its threading layer: numba chooses the layer lazily,
    # at the first parallel kernel, and numba.threading_layer() raises before that.
    total = 0.0
    for i in prange(x.size):
        total += x[i]
    return total


def _version_of(dist):
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _numba_threading():
    import numba

    info = {
        "configured_layer": numba.config.THREADING_LAYER,
        "num_threads": int(numba.config.NUMBA_NUM_THREADS),
    }
    try:
        _tiny_parallel_sum(np.ones(8))
        info["threading_layer"] = numba.threading_layer()
    except Exception as exc:  # report, never crash an environment report
        info["threading_layer"] = f"unavailable ({type(exc).__name__}: {exc})"
    available = []
    for name, module in (("tbb", "numba.np.ufunc.tbbpool"), ("omp", "numba.np.ufunc.omppool"),
                         ("workqueue", "numba.np.ufunc.workqueue")):
        try:
            __import__(module)
            available.append(name)
        except Exception:
            pass
    info["available_layers"] = available
    return info


def environment_info() -> dict:
    """Versions, numba threading, the kernel cache folder and CPU/thread environment as a plain dict
    (what ``customobj info`` prints)."""
    packages = {name: _version_of(name) or "not installed" for name in _PACKAGES}
    for name in _OPTIONAL_PACKAGES:
        v = _version_of(name)
        if v is not None:
            packages[name] = v
    packages["customobj"] = packages["customobj"] if packages["customobj"] != "not installed" else __version__
    try:
        affinity = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        affinity = None
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "packages": packages,
        "numba": _numba_threading(),
        "kernel_cache": cache_status(),
        "cpu_count": os.cpu_count(),
        "cpus_usable": affinity,
        "thread_env": {k: v for k, v in sorted(os.environ.items()) if k.startswith(_THREAD_ENV_PREFIXES)},
        "gpu": _gpu(),
    }


def _gpu():
    # Imported here: numba.cuda loads only when the report is asked for.
    from ._cuda_runtime import gpu_status

    return gpu_status()._asdict()


def gpu_line(gpu: dict) -> str:
    """One line about the GPU for ``customobj info``: name, memory and driver, or why there is none.

    Examples
    --------
    >>> gpu_line({"available": False, "reason": "no usable NVIDIA driver"})
    'none (no usable NVIDIA driver)'
    """
    if not gpu["available"]:
        return f"none ({gpu['reason']})"
    if gpu.get("simulator"):
        return gpu["name"]
    return f"{gpu['name']} ({gpu['memory_gib']:.1f} GiB, driver {gpu['driver']})"
