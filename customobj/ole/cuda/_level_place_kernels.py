"""numba.cuda kernel of a breadth-first level's pair placings and its splits' smaller children's row
histograms, all in one launch (``ole_fast``, issue 42 item 3: a frontier's work in one launch).

Under ``ole_fast`` a searched split's pairs are placed, and its smaller child's row histogram built, in
one launch (``_partitions_kernels.place_sides_row_hist``): one launch a split, each waiting for the one
before it across the whole grid, 27 of a 31-leaf breadth-first tree's 71. A level's splits are
independent here: their rows and pairs are disjoint ranges (a level's leaves), their histograms distinct
pool histograms, and what each reads (the rows placed, the sides, the pair counts) the level's
partitions wrote before (``place_rows_count_sides_level``). So :func:`place_sides_row_hist_level` runs
them all: blocks ``(x, y, 2 j)`` are split ``j``'s row histogram (``_histograms_kernels.row_hist_shared``'
block ``(x, y)``), blocks ``(x, 0, 2 j + 1)`` its pairs' placing (``place_sides_row_hist``'s share of
segments a block). Each split's results are those of its own launch: the same device functions on the
same ranges, and the row histogram's chunks add on-grid values, exact in any order and chunking.
"""
from typing import Any, NamedTuple

import numpy as np
from numba import uint32

from ..._cuda_runtime import cuda_module
from ._hist_layout import SHARED_SLOTS
from ._histograms_kernels import WORDS, _row_updates
from ._partitions_kernels import (LV_PBASE, LV_PBUF, LV_PN, LV_PNB, LV_PSTART, LV_RECORD, PairPlace, PairSides,
                                  _put_sides)
from ..common import PART_N_LEFT, PART_N_RIGHT

cuda = cuda_module()

__all__ = ["place_sides_row_hist_level", "LevelRows", "LevelPlacings", "BUILD_COLUMNS", "LB_SPLIT", "LB_START",
           "LB_N", "LB_HIST"]

#: Columns of a level's build table (int64, a row per searched split, in the level's order): the
#: split's row of the level's partition table (``_partitions_kernels.LV_*``), its smaller child's rows
#: ``order[start:start+n]`` and the pool histogram (a row of ``DevicePool.hists``) they are added to
#: (``n`` 0: the child has no rows, its histogram stays zero).
LB_SPLIT, LB_START, LB_N, LB_HIST = range(4)
BUILD_COLUMNS = 4


class LevelRows(NamedTuple):
    """The row histograms' inputs: the device row ``order``, the rows' on-grid ``g``, ``h`` and grid
    ``steps``, the pool's histograms ``hists`` (``(n, slots, 3)``) and the build table ``builds``."""

    order: Any
    g: Any
    h: Any
    steps: Any
    hists: Any
    builds: Any


class LevelPlacings(NamedTuple):
    """The pair placings' inputs: the tree's two pair buffers (``pi, pj, pc`` of buffer 0 and 1: a split's
    pairs go from its parent's, ``LV_PBUF``, to the other), the level's segment counts, the record ring
    (each split's totals at ``LV_RECORD``) and ``rho``, the rows' coupling sums."""

    pi0: Any
    pj0: Any
    pc0: Any
    pi1: Any
    pj1: Any
    pc1: Any
    counts: Any
    records: Any
    rho: Any


@cuda.jit(cache=True)
def place_sides_row_hist_level(bins_rm, groups, members, slot_map, rows, table, pairs, go_left):
    """Every searched split of a level: blocks ``(x, y, 2 j)`` add chunk ``x`` of split ``j``'s smaller
    child's rows (``rows.builds`` row ``j``, :class:`LevelRows`) for feature group ``y`` to its
    histogram; blocks ``(x, 0, 2 j + 1)`` place its pairs (``table`` row ``rows.builds[j, LB_SPLIT]``,
    :class:`LevelPlacings`), block ``x`` taking ``k = ceil(nb / gridDim.x)`` consecutive segments, its
    threads one row of ``blockDim.x * blockDim.y`` lanes (a power of two). A block with nothing to do
    returns whole (no barrier split). The scans' int64 scratch is the histogram's shared array."""
    sh = cuda.shared.array((SHARED_SLOTS, WORDS), dtype=uint32)
    j = cuda.blockIdx.z // 2
    build = rows.builds[j]
    if cuda.blockIdx.z % 2 == 0:
        n = build[LB_N]
        if n <= 0:
            return
        st = build[LB_START]
        _row_updates(sh, bins_rm, rows.order[st:st + n], n, rows.g, rows.h, rows.steps, groups, members, slot_map,
                     rows.hists[build[LB_HIST]])
        return
    me = table[build[LB_SPLIT]]
    nb = me[LV_PNB]
    k = (nb + cuda.gridDim.x - 1) // cuda.gridDim.x
    b0 = cuda.blockIdx.x * k
    if me[LV_PBUF] < 0 or cuda.blockIdx.y != 0 or b0 >= nb:
        return
    pi, pj, pc, oi, oj, oc = pairs.pi0, pairs.pj0, pairs.pc0, pairs.pi1, pairs.pj1, pairs.pc1
    if me[LV_PBUF] == 1:
        pi, pj, pc, oi, oj, oc = pairs.pi1, pairs.pj1, pairs.pc1, pairs.pi0, pairs.pj0, pairs.pc0
    base = me[LV_PBASE]
    sides = PairSides(pi, pj, pc, me[LV_PSTART], me[LV_PN], nb, pairs.counts[base:base + nb],
                      pairs.records[me[LV_RECORD], PART_N_LEFT:PART_N_RIGHT + 1])
    t = cuda.threadIdx.y * cuda.blockDim.x + cuda.threadIdx.x
    _put_sides(sides, b0, min(b0 + k, nb), go_left, PairPlace(oi, oj, oc, pairs.rho), sh.view(np.int64).T, t,
               cuda.blockDim.x * cuda.blockDim.y)
