"""numba.cuda kernel of the GPU backend's split search (:mod:`.search`): a split's two children
searched and their splits picked in one launch, each with what the grower needs beside it, so the
grower reads them all in one copy.

:func:`search_nodes`: blocks ``(feature blocks, nodes)`` run :func:`._split_kernels.node_bests`
(a warp per feature and node: the CPU's per-feature search); the last block to finish (a ticket
taken with one atomic after a memory fence, the counter put back to 0 by that block for the next
search: no launch clears it) then picks each node's split from the per-feature records
(:func:`._reduce_kernels.best_feature`, the CPU's tie-breaking, a block reduction in a fixed
order: the pick does not depend on which block is last) into ``res[b, :SPLIT_SIZE]``, writes the
chosen feature's NaN-slot row count in the node's histogram into ``res[b, SPLIT_SIZE]`` (the
grower sends NaN to the search's side only where the node saw NaN:
:meth:`customobj.ole.grower.TreeGrower._nan_side`), a root's sums, searched on the device, into
``res[0, NODE_SUMS:]`` and the pair counts of the split whose children these are (its partition's
record, ``partitions.DevicePairCounts``, never read on its own) into ``res[0, PAIR_COUNTS:]``:
one launch per split's children, where a search per node and a pick took three, and one read.

:func:`search_batch`: the children of a batch of splits (a breadth-first level) in one launch,
as XGBoost's GPU driver evaluates a frontier's candidates at once: each node's histograms are the
pool's (an index into its one array), its sums and its split's partition record a row of a table
(:class:`BatchNodes`), so the launch passes six arguments whatever the batch's size.
"""
from typing import Any, NamedTuple

from numba import float64, int64

from ..._cuda_runtime import THREADS, cuda_module
from ._reduce_kernels import best_feature, last_block
from ._split_kernels import node_bests, node_features
from ..common import HIST_COUNT, NODE_SUMS, PAIR_COUNTS, PART_N_LEFT, SPLIT_SIZE, ChildSums

cuda = cuda_module()

__all__ = ["search_nodes", "search_batch", "BatchNodes", "BATCH_HIST", "BATCH_PAIRS", "BATCH_RECORD", "BATCH_ROW",
           "BATCH_MASK", "BATCH_SUMS", "BATCH_COLUMNS"]

#: Columns of :class:`BatchNodes`' table, per node (float64: the indices are exact): its row
#: histogram's and pair histogram's index in the pool (-1: none), its split's partition record's row
#: in the ring (-1: none; the counts come back in its result), its result row, its features' row of
#: ``BatchNodes.mask`` (``ole_fast``: its own choice; else the fit's mask), then ``G, H, N, C``.
BATCH_HIST, BATCH_PAIRS, BATCH_RECORD, BATCH_ROW, BATCH_MASK, BATCH_SUMS = 0, 1, 2, 3, 4, 5
BATCH_COLUMNS = BATCH_SUMS + 4


class BatchNodes(NamedTuple):
    """A batch's nodes for :func:`search_batch`: ``hists`` the pool's histograms, ``(n, slots, 3)``;
    ``table`` a row per node (``BATCH_*`` columns); ``records`` the partitions' record ring;
    ``mask`` ``(masks, features)``: the features searched, a row per mask (a node's: its
    ``BATCH_MASK``); ``no_ph`` a ``(1, 3)`` pair histogram of zeros."""

    hists: Any
    table: Any
    records: Any
    mask: Any
    no_ph: Any


@cuda.jit(cache=True)
def search_nodes(h, use_pairs, bins, node_a, node_b, rules, sums, on_device, out, with_nan, pair_record, with_pairs):
    """Every feature's best split of one or two nodes (:func:`node_bests` into ``out.per``,
    ``out.gains``), then, by the last block, node ``b``'s split in ``out.res[b, :SPLIT_SIZE]``: the
    first feature with the strictly largest gain > 0 (none: feature -1); ``out.res[b, SPLIT_SIZE]``:
    that feature's NaN-slot row count in the node's histogram (0 without ``with_nan`` or a split);
    ``out.res[0, NODE_SUMS:NODE_SUMS + 3]`` = ``sums[0:3]`` (node 1's: 0); with ``with_pairs``,
    ``out.res[0, PAIR_COUNTS:PAIR_COUNTS + 2]`` = the two pair counts of ``pair_record`` (else, and
    node 1's: 0). ``out.done``: the ticket counter, 0 before and after."""
    shg = cuda.shared.array(THREADS, dtype=float64)
    shi = cuda.shared.array(THREADS, dtype=int64)
    last = cuda.shared.array(1, dtype=int64)
    t = cuda.threadIdx.x
    node_bests(h, use_pairs, bins, node_a, node_b, rules, sums, on_device, out.per, out.gains)
    if not last_block(out.done, last):
        return
    for b in range(cuda.gridDim.y):
        res = out.res[b]
        f = best_feature(out.per[b], out.gains[b], res, shg, shi)
        if t == 0:
            for k in range(3):
                res[NODE_SUMS + k] = sums[k] if b == 0 else 0.0
            for k in range(2):
                res[PAIR_COUNTS + k] = float(pair_record[PART_N_LEFT + k]) if with_pairs and b == 0 else 0.0
            res[SPLIT_SIZE] = 0.0
            if with_nan and 0 <= f < bins.n_bins.shape[0]:
                hist = h.row_a if b == 0 else h.row_b
                res[SPLIT_SIZE] = hist[bins.offsets[f] + bins.n_bins[f], HIST_COUNT]
        cuda.syncthreads()  # the shared scratch is the next node's


@cuda.jit(cache=True)
def search_batch(nodes, use_pairs, bins, rules, out, with_nan):
    """Every feature's best split of each node of ``nodes`` (block ``(x, b)``: node ``b``'s features
    ``x, x + gridDim.x, ...``, :func:`node_features` into ``out.per[b]``, ``out.gains[b]``), then, by
    the last block, node ``b``'s split, its NaN count and (when its table row names a partition record)
    that record's two pair counts into ``out.res[row]`` (``row``: its ``BATCH_ROW``), as
    :func:`search_nodes` writes them; ``NODE_SUMS``: 0 (no root). ``out.done``: 0 before and after."""
    shg = cuda.shared.array(THREADS, dtype=float64)
    shi = cuda.shared.array(THREADS, dtype=int64)
    last = cuda.shared.array(1, dtype=int64)
    t = cuda.threadIdx.x
    me = nodes.table[cuda.blockIdx.y]
    node = ChildSums(me[BATCH_SUMS], me[BATCH_SUMS + 1], me[BATCH_SUMS + 2], me[BATCH_SUMS + 3])
    k = int64(me[BATCH_PAIRS])
    ph = nodes.no_ph
    if use_pairs and k >= 0:
        ph = nodes.hists[k]
    node_features(nodes.hists[int64(me[BATCH_HIST])], ph, use_pairs, nodes.mask[int64(me[BATCH_MASK])], bins, node, rules,
                  out.per[cuda.blockIdx.y], out.gains[cuda.blockIdx.y])
    if not last_block(out.done, last):
        return
    for b in range(cuda.gridDim.y):
        row = nodes.table[b]
        res = out.res[int64(row[BATCH_ROW])]
        f = best_feature(out.per[b], out.gains[b], res, shg, shi)
        if t == 0:
            rec = int64(row[BATCH_RECORD])
            for j in range(3):
                res[NODE_SUMS + j] = 0.0
            for j in range(2):
                res[PAIR_COUNTS + j] = float(nodes.records[rec, PART_N_LEFT + j]) if rec >= 0 else 0.0
            res[SPLIT_SIZE] = 0.0
            if with_nan and 0 <= f < bins.n_bins.shape[0]:
                res[SPLIT_SIZE] = nodes.hists[int64(row[BATCH_HIST]), bins.offsets[f] + bins.n_bins[f], HIST_COUNT]
        cuda.syncthreads()  # the shared scratch is the next node's
