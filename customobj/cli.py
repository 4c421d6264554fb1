"""The ``customobj`` command: ``--version``, ``info`` (environment report) and ``compare``.

``compare`` lives in ``customobj.compare.command`` (``add_arguments(parser)``, ``run(args) -> int``);
it is imported only when that subcommand runs, so ``customobj --version`` stays fast.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from importlib import metadata

import numpy as np
from numba import njit, prange

from ._version import __version__

__all__ = ["main", "environment_info"]

_PACKAGES = ["customobj", "numpy", "numba", "lightgbm", "xgboost", "scipy", "scikit-learn"]
_OPTIONAL_PACKAGES = ["catboost", "dask", "distributed", "pandas"]
_THREAD_ENV_PREFIXES = ("OMP_", "KMP_", "GOMP_", "MKL_", "OPENBLAS_", "NUMBA_", "TBB_")
_COMPARE_MODULE = "customobj.compare.command"


@njit(parallel=True, cache=True)
def _tiny_parallel_sum(x):
    # Run once so numba picks (and reports) its threading layer.
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


def environment_info():
    """Versions, numba threading and CPU/thread environment as a plain dict."""
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
        "cpu_count": os.cpu_count(),
        "cpus_usable": affinity,
        "thread_env": {k: v for k, v in sorted(os.environ.items()) if k.startswith(_THREAD_ENV_PREFIXES)},
    }


def _print_info(info):
    print(f"customobj {info['packages']['customobj']}")
    print(f"python    {info['python']} ({info['platform']})")
    print("packages:")
    for name, v in info["packages"].items():
        print(f"  {name:<13} {v}")
    nb = info["numba"]
    print("numba threading:")
    print(f"  threading_layer   {nb['threading_layer']}")
    print(f"  configured        {nb['configured_layer']}")
    print(f"  available         {', '.join(nb['available_layers']) or 'none'}")
    print(f"  NUMBA_NUM_THREADS {nb['num_threads']}")
    print(f"cpu_count {info['cpu_count']} (usable by this process: {info['cpus_usable']})")
    print("thread-related environment variables:")
    if info["thread_env"]:
        for k, v in info["thread_env"].items():
            print(f"  {k}={v}")
    else:
        print("  (none set)")


def _cmd_info(args, extra):
    info = environment_info()
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        _print_info(info)
    return 0


def _load_compare():
    """The compare module, or None when it is not part of this build yet."""
    try:
        import importlib

        return importlib.import_module(_COMPARE_MODULE)
    except ImportError as exc:
        if exc.name in (_COMPARE_MODULE, "customobj.compare"):
            return None
        raise


def _cmd_compare(args, extra):
    module = _load_compare()
    if module is None:
        print("customobj compare is not built yet in this version (customobj.compare.command is missing).")
        return 0
    parser = argparse.ArgumentParser(prog="customobj compare",
                                     description="Compare ranking objectives on LETOR or synthetic data.")
    module.add_arguments(parser)
    return int(module.run(parser.parse_args(extra)) or 0)


def build_parser():
    parser = argparse.ArgumentParser(prog="customobj",
                                     description="Learning-to-rank objectives for LightGBM / XGBoost.")
    parser.add_argument("--version", action="version", version=f"customobj {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="{info,compare}")
    p_info = sub.add_parser("info", help="print package versions, numba threading and CPU settings")
    p_info.add_argument("--json", action="store_true", help="print the report as JSON")
    p_info.set_defaults(handler=_cmd_info)
    # compare's own options (and its --help) are parsed by the compare module's parser
    p_cmp = sub.add_parser("compare", add_help=False, help="compare objectives (customobj compare --help)")
    p_cmp.set_defaults(handler=_cmd_compare)
    return parser


def main(argv=None):
    """Entry point of the ``customobj`` console script; returns the exit code."""
    parser = build_parser()
    args, extra = parser.parse_known_args(sys.argv[1:] if argv is None else list(argv))
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    if extra and handler is not _cmd_compare:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return handler(args, extra)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
