"""Named constants and record layouts shared by the OLE grower's kernels and their Python drivers.

One home for what scikit-learn's ``_hist_gradient_boosting/common.pyx`` holds there: the channels
of the row and pair histograms (its ``HISTOGRAM_DTYPE``) and the layout of a split-search result
(its ``SplitInfo``). The criteria live in :mod:`.criterion`; the kernels' statuses (a split found,
none, an unknown criterion code) in ``customobj._kernel_status.KernelStatus``, shared with the
objectives' kernels.

Histograms and the split result stay plain ``float64`` arrays inside the kernels (numba's parallel
loops cannot allocate record arrays, and one flat array per feature is what
``find_best_split_parallel`` compares), but every channel and slot has a name here, and the
drivers read a split result once into :class:`SplitInfo`.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["HIST_G", "HIST_H", "HIST_COUNT", "HIST_CHANNELS", "GH_CHANNELS", "PH_HI", "PH_NANP", "PH_R", "PH_CHANNELS",
           "SPLIT_GAIN", "SPLIT_FEATURE", "SPLIT_BIN", "SPLIT_NAN_LEFT",
           "LEFT_G", "LEFT_H", "LEFT_N", "LEFT_C", "RIGHT_G", "RIGHT_H", "RIGHT_N", "RIGHT_C", "SPLIT_SIZE",
           "NODE_SUMS", "PAIR_COUNTS", "RESULT_SIZE", "PART_N_LEFT", "PART_N_RIGHT", "PART_PLAN",
           "PART_RECORD", "ChildSums", "SplitInfo", "NO_SPLIT"]

# --- histogram channels: the last axis of a (slots, channels) float64 histogram -------------------
#: Row histogram ``hist[slot, ch]`` (histogram.py): the sums of ``g`` and ``h`` and the row count of
#: the rows whose bin is ``slot``. The ordered-gradient scratch ``gh[k, ch]`` holds the first two
#: (``GH_CHANNELS`` wide).
HIST_G = 0
HIST_H = 1
HIST_COUNT = 2
HIST_CHANNELS = 3
GH_CHANNELS = 2
#: Pair histogram ``ph[slot, ch]`` (pairhist.py): ``hi``, the coupling of the pairs whose larger bin
#: is ``slot``; ``nanp``, of the pairs with one NaN row and the other row in ``slot``; ``R``, the
#: coupling sums of the rows in ``slot`` (so the pairs whose smaller bin is ``slot``: ``R - hi - nanp``).
PH_HI = 0
PH_NANP = 1
PH_R = 2
PH_CHANNELS = 3

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
# the GPU's split result (:func:`~customobj.ole.cuda._search_kernels.search_nodes`): the record, then the
# chosen feature's NaN count at ``SPLIT_SIZE``, then a searched root's G, H, C at ``NODE_SUMS``, then
# (node 0's row) the pair counts of the split whose children these are at ``PAIR_COUNTS``
NODE_SUMS = SPLIT_SIZE + 1
PAIR_COUNTS = NODE_SUMS + 3
RESULT_SIZE = PAIR_COUNTS + 2

# --- a GPU pair partition's record: int64[PART_RECORD] on the card (cuda.partitions.DevicePairCounts) ----
PART_N_LEFT = 0  # pairs with both rows left
PART_N_RIGHT = 1  # with both rows right
PART_PLAN = 2  # how the children's pair histograms were made (pairhist.pair_hist_plan), set on the card
PART_RECORD = 4


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
