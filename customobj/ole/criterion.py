r"""The split criterion of :class:`~customobj.ole.TreeBooster`: one record per name, built once in ``fit``.

``TreeBooster(criterion=...)`` takes a name; :func:`criterion_for` turns it into a
:class:`Criterion` once, when ``fit`` starts (scikit-learn turns its string options into objects
the same way). Below ``fit`` nothing compares names: the grower reads the record's fields and the
split kernels receive only its :class:`SplitScore` code. This module is the one home of the names,
the codes and ``ole_fast``'s defaults.

The scores (Xia, Zhai, Wang, "Analysis of regression tree fitting algorithms in learning to rank",
sections 2.1, 2.2.1 and 3.1): a child with gradient sum ``G``, hessian sum ``H``, ``N`` rows and
in-child pair coupling ``C`` scores :math:`G^2 / (D + \lambda)` with

.. math::

    D_{SE} = N, \qquad D_{WSE} = H, \qquad D_{OLE} = H - 2C .

Examples
--------
>>> c = criterion_for("ole_fast", ole_fast_features=4)
>>> c.score is SplitScore.OLE, c.uses_pairs, c.fast, c.ole_fast_features
(True, True, True, 4)
>>> criterion_for("wse").uses_pairs
False
>>> criterion_for("gini")
Traceback (most recent call last):
...
ValueError: criterion must be one of ['ole', 'ole_fast', 'ole_float64', 'se', 'wse'], got 'gini'
"""
from __future__ import annotations

from enum import IntEnum
from typing import NamedTuple, Optional

import numpy as np

__all__ = ["SplitScore", "SE", "WSE", "OLE", "Criterion", "CRITERIA", "criterion_for", "OLE_FAST_FEATURES",
           "OLE_FAST_EPSILON"]


class SplitScore(IntEnum):
    """The score a split-search kernel computes: its integer dispatch (the denominator ``D``)."""
    #: Least squares on ``-g``, unweighted (Friedman): ``D = N``.
    SE = 0
    #: Hessian-weighted least squares (LightGBM / XGBoost): ``D = H``.
    WSE = 1
    #: Exact pairwise node hessian (Xia, Zhai, Wang, section 3.1): ``D = H - 2C``.
    OLE = 2


# The codes as plain ints: numba freezes module-level ints into the kernels as constants.
SE = int(SplitScore.SE)
WSE = int(SplitScore.WSE)
OLE = int(SplitScore.OLE)

#: Default ``ole_fast_features`` (``k``): features per node whose pair histograms ``ole_fast`` builds.
OLE_FAST_FEATURES = 2
#: Default ``ole_fast_epsilon``: the share of each query's coupling mass ``ole_fast`` may leave out
#: of the split search (chosen by measurement, docs/ole-fast.md).
OLE_FAST_EPSILON = 0.5


class Criterion(NamedTuple):
    """Everything the grower needs to know about a criterion, read by field, never by name.

    Attributes
    ----------
    name : str
        The name ``TreeBooster(criterion=...)`` accepts (kept for messages and the model file).
    score : SplitScore
        The score the split kernels compute: every OLE variant searches with the OLE score.
    uses_pairs : bool
        Whether the split search needs the objective's pair couplings (pair histograms).
    fast : bool
        ``ole_fast``: pair histograms only for the ``ole_fast_features`` features of largest WSE
        gain per node, searched on pairs pruned by ``ole_fast_epsilon`` (grower.py, pair_pruning.py).
    acc_dtype : numpy dtype or None
        The pair-histogram chunk accumulators (pairhist.py): float64 (the couplings are pre-rounded
        per tree, :mod:`.fixed_point`, so their sums are exact in any order, on the CPU and the GPU
        alike: ``ole_float64`` now grows the ``ole`` trees, and keeps its name for old scripts);
        None without pairs.
    ole_fast_features, ole_fast_epsilon : int, float
        ``ole_fast``'s ``k`` and ``epsilon`` for this fit (their defaults for the other criteria,
        which do not read them).
    """
    name: str
    score: SplitScore
    uses_pairs: bool
    fast: bool
    acc_dtype: Optional[type]
    ole_fast_features: int = OLE_FAST_FEATURES
    ole_fast_epsilon: float = OLE_FAST_EPSILON

    @property
    def prunes_pairs(self) -> bool:
        """Whether the split search leaves the smallest couplings out (``ole_fast`` with ``epsilon > 0``)."""
        return self.fast and self.ole_fast_epsilon > 0


#: The criteria by the names ``TreeBooster(criterion=...)`` accepts, in the order the docs list them.
CRITERIA = {
    "ole": Criterion("ole", SplitScore.OLE, True, False, np.float64),
    "wse": Criterion("wse", SplitScore.WSE, False, False, None),
    "se": Criterion("se", SplitScore.SE, False, False, None),
    "ole_fast": Criterion("ole_fast", SplitScore.OLE, True, True, np.float64),
    "ole_float64": Criterion("ole_float64", SplitScore.OLE, True, False, np.float64),
}


def criterion_for(name: str, *, ole_fast_features: int = OLE_FAST_FEATURES,
                  ole_fast_epsilon: float = OLE_FAST_EPSILON) -> Criterion:
    """The :class:`Criterion` called ``name``, with this fit's ``ole_fast`` options.

    Raises
    ------
    ValueError
        ``name`` is not one of :data:`CRITERIA` (a non-string included).
    """
    # a str check first: ``[...] in CRITERIA`` would raise "unhashable type" for a list
    if not isinstance(name, str) or name not in CRITERIA:
        raise ValueError(f"criterion must be one of {sorted(CRITERIA)}, got {name!r}")
    return CRITERIA[name]._replace(ole_fast_features=int(ole_fast_features), ole_fast_epsilon=float(ole_fast_epsilon))
