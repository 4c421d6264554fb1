"""customobj: learning-to-rank losses as fast custom objectives for gradient-boosted trees.

Objectives (``customobj.LambdaRank``, ``QBRank``, ...) live in :mod:`customobj.objectives`;
metrics in :mod:`customobj.metrics`; LETOR loading and the synthetic generator in
:mod:`customobj.data`; the OLE tree booster in :mod:`customobj.ole`. Nothing is compiled at import
time: numba kernels compile (or load from the on-disk cache) on first use. The cache lives in a
per-user folder, never inside the installed package (see :mod:`customobj._numba_cache`).
"""
from . import _numba_cache

_numba_cache.install()  # before any kernel module runs its @njit(cache=True) decorators

from ._version import __version__  # noqa: E402
from . import data, metrics  # noqa: E402
from .combine import best_linear_combination  # noqa: E402
from .data import load_letor, load_letor_folds, synthetic  # noqa: E402
from .groups import Groups, as_groups  # noqa: E402
from .pairs import label_pairs  # noqa: E402
from .objectives import *  # noqa: F401,F403,E402  (the objective classes are the public API)
from .objectives import __all__ as _objective_names  # noqa: E402
from .clicks import Affine, DoublyRobust, RegressionEM, Unbiased  # noqa: E402
from .multi import MultiObjective  # noqa: E402

__all__ = [
    "__version__", "Groups", "as_groups", "label_pairs", "data", "metrics",
    "load_letor", "load_letor_folds", "synthetic", "best_linear_combination", "TreeBooster",
    "Unbiased", "Affine", "DoublyRobust", "RegressionEM", "MultiObjective",
    *_objective_names,
]


def __getattr__(name: str) -> type:
    # TreeBooster is a scikit-learn estimator, and importing scikit-learn costs about a second
    # (it brings pandas along): load it on first use, not with every ``import customobj``.
    if name == "TreeBooster":
        from .ole import TreeBooster

        return TreeBooster
    raise AttributeError(f"module 'customobj' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | {"TreeBooster"})
