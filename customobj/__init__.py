"""customobj: learning-to-rank losses as fast custom objectives for gradient-boosted trees."""
from ._version import __version__
from .groups import Groups, as_groups
from .pairs import label_pairs
from .objectives import *  # noqa: F401,F403  (the objective classes are the public API)
from .objectives import __all__ as _objective_names

__all__ = ["__version__", "Groups", "as_groups", "label_pairs", *_objective_names]
