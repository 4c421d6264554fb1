"""customobj: learning-to-rank losses as fast custom objectives for gradient-boosted trees.

Objectives (``customobj.LambdaRank``, ``QBRank``, ...) live in :mod:`customobj.objectives`;
metrics in :mod:`customobj.metrics`; LETOR loading and the synthetic generator in
:mod:`customobj.data`; the OLE tree booster in :mod:`customobj.ole`. Nothing is compiled at import
time: numba kernels compile (or load from the on-disk cache) on first use.
"""
from ._version import __version__
from . import data, metrics
from .combine import best_linear_combination
from .data import load_letor, load_letor_folds, synthetic
from .groups import Groups, as_groups
from .pairs import label_pairs
from .objectives import *  # noqa: F401,F403  (the objective classes are the public API)
from .objectives import __all__ as _objective_names
from .ole import TreeBooster

__all__ = [
    "__version__", "Groups", "as_groups", "label_pairs", "data", "metrics",
    "load_letor", "load_letor_folds", "synthetic", "best_linear_combination", "TreeBooster",
    *_objective_names,
]
