"""Named constants and record layouts shared by the OLE grower's kernels and their Python drivers.

One home for what scikit-learn's ``_hist_gradient_boosting/common.pyx`` holds there: the split
criteria by name and by code, and the layout of a split-search result (its ``SplitInfo``).

The split result stays a plain ``float64`` array inside the kernels (numba's parallel loops cannot
allocate record arrays, and one flat array per feature is what ``find_best_split_parallel``
compares), but every slot has a name here, and the drivers read it once into :class:`SplitInfo`.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["SE", "WSE", "OLE", "OLE_FAST", "OLE_FLOAT64", "CRITERIA", "PAIR_CRITERIA", "KERNEL",
           "SPLIT_GAIN", "SPLIT_FEATURE", "SPLIT_BIN", "SPLIT_NAN_LEFT", "LEFT_G", "LEFT_H", "LEFT_N", "LEFT_C",
           "RIGHT_G", "RIGHT_H", "RIGHT_N", "RIGHT_C", "SPLIT_SIZE", "ChildSums", "SplitInfo"]

# --- split criteria (Xia, Zhai, Wang, sections 2.1, 2.2.1 and 3.1) -------------------------------
#: Least squares on ``-g``, unweighted (Friedman): node denominator ``D = N``.
SE = 0
#: Hessian-weighted least squares (LightGBM / XGBoost): ``D = H``.
WSE = 1
#: Exact pairwise node hessian: ``D = H - 2 C``; float32 pair-histogram accumulators.
OLE = 2
#: ``OLE`` searched only over the ``ole_fast_features`` features of largest WSE gain per node.
OLE_FAST = 3
#: ``OLE`` with float64 pair-histogram accumulators (the reference).
OLE_FLOAT64 = 4

#: Criterion codes by the names ``TreeBooster(criterion=...)`` accepts.
CRITERIA = {"ole": OLE, "wse": WSE, "se": SE, "ole_fast": OLE_FAST, "ole_float64": OLE_FLOAT64}
#: Criteria that need the objective's pair couplings.
PAIR_CRITERIA = ("ole", "ole_fast", "ole_float64")
#: The criterion code the split kernels see: every OLE variant searches with the OLE score.
KERNEL = {code: min(code, OLE) for code in CRITERIA.values()}

# --- the split-search result: slots of a float64[SPLIT_SIZE] array ---------------------------------
SPLIT_GAIN = 0  # gain of the split; <= 0: no split
SPLIT_FEATURE = 1  # feature index (-1: none)
SPLIT_BIN = 2  # threshold bin: bins <= it go left
SPLIT_NAN_LEFT = 3  # 1.0 when NaN goes left
LEFT_G = 4  # the left child's gradient sum,
LEFT_H = 5  # hessian sum,
LEFT_N = 6  # row count
LEFT_C = 7  # and in-child pair coupling (0 without pairs)
RIGHT_G = 8  # the same for the right child
RIGHT_H = 9
RIGHT_N = 10
RIGHT_C = 11
SPLIT_SIZE = 12


class ChildSums(NamedTuple):
    """Sums over one child's rows: gradient ``G``, hessian ``H``, rows ``N``, in-child coupling ``C``."""
    G: float
    H: float
    N: float
    C: float


class SplitInfo(NamedTuple):
    """The best split of a node, read by name from a split-search result array.

    Examples
    --------
    >>> import numpy as np
    >>> res = np.zeros(SPLIT_SIZE); res[SPLIT_GAIN], res[SPLIT_FEATURE], res[LEFT_N] = 0.5, 3, 7
    >>> s = SplitInfo.from_array(res)
    >>> float(s.gain), s.feature, float(s.left.N)
    (0.5, 3, 7.0)
    """
    gain: float
    feature: int
    bin: int
    nan_left: bool
    left: ChildSums
    right: ChildSums

    @classmethod
    def from_array(cls, res: np.ndarray) -> "SplitInfo":
        """The named view of ``res`` (as written by :func:`~customobj.ole.splitting.find_best_split`)."""
        return cls(res[SPLIT_GAIN], int(res[SPLIT_FEATURE]), int(res[SPLIT_BIN]), bool(res[SPLIT_NAN_LEFT] > 0.5),
                   ChildSums(res[LEFT_G], res[LEFT_H], res[LEFT_N], res[LEFT_C]),
                   ChildSums(res[RIGHT_G], res[RIGHT_H], res[RIGHT_N], res[RIGHT_C]))


#: The split of a node that has none (a leaf that is never split, or no split with gain > 0).
NO_SPLIT = SplitInfo(0.0, -1, 0, False, ChildSums(0.0, 0.0, 0.0, 0.0), ChildSums(0.0, 0.0, 0.0, 0.0))
