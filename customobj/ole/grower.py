r"""One regression tree, grown leaf by leaf (best-first) or level by level (breadth-first).

The Python loop keeps per-leaf bookkeeping; histograms, pair histograms, split search and
partitioning are numba kernels. Under every OLE criterion a child's in-node coupling ``C`` (its
node hessian ``H - 2C``, leaf value and recorded split gain) is the split's record's: the pair
histogram's sums of the tree's couplings, which are on their grid (:mod:`.fixed_point`), so every
partial sum is exact and ``C`` is the sum over the child's own pairs bit for bit (no sum after the
split, nothing read back for it on a GPU).

``criterion="ole_fast"`` (tolerance ``k = ole_fast_features``): at each node the WSE gains of every
feature come from the row histogram (one extra split search), and the pair histogram is built
only for the ``k`` features of largest WSE gain (``select_features``); the split is the best OLE
split among them,

.. math::

    \max_{f \in \mathrm{top}_k(\mathrm{WSE})} \max_t \;
    \frac{G_L^2}{H_L - 2C_L + \lambda} + \frac{G_R^2}{H_R - 2C_R + \lambda}
    - \frac{G^2}{H - 2C + \lambda}

(Xia, Zhai, Wang, "Analysis of regression tree fitting algorithms in learning to rank",
section 3.1). Two things change, each with a bound. The features searched: the top ``k`` by WSE
gain. The pairs searched (tolerance ``epsilon = ole_fast_epsilon``, :mod:`customobj.ole.pair_pruning`,
docs/ole-fast.md): per query the smallest couplings holding at most ``epsilon`` of its coupling
mass ``M_q`` are left out of the split search, so a node's in-node coupling ``C~`` (hence the
split's ``H - 2C~`` and recorded gain) is low by at most ``epsilon`` times the coupling mass of
the node's queries,

.. math::

    0 \le C - \tilde C \le \epsilon \sum_{q \in Q} M_q .

``G, H, N`` are exact, and leaf values use every pair (the exact ``C``). With ``epsilon = 0`` the
split equals ``criterion="ole"``'s whenever that split's feature ranks among the node's top ``k``
by WSE gain; ``epsilon = 0`` and ``k >= n_features`` grow the ``"ole"`` trees. No pair-histogram
subtraction (each node's features differ), so a node costs its kept pairs times ``k``.

Rows of a leaf are ``order[start:end]`` and its in-node pairs ``pi/pj/pc[pstart:pend]`` of one of
two pair buffers; a split reorders the row range in place
(LightGBM's data partition) and copies the pair range, partitioned, to the other buffer.
Leaves are numbered like LightGBM: splitting leaf ``l`` keeps ``l`` for the left child and gives
the right child the next free index, so the arrays export directly to a LightGBM model string.

:class:`TreeGrower` reads as the algorithm (as scikit-learn's ``TreeGrower``): ``grow`` initialises
the root, then splits the next leaf (``_split_next``: the open leaf of largest gain, or the oldest
one breadth-first) until ``num_leaves`` leaves or no leaf with a split of gain > 0 remain; every
new leaf gets its histograms, its best split (``_compute_best_split_and_push``) and, when that
split has gain > 0, a place among the open leaves.
"""
from __future__ import annotations

import heapq
from collections import deque
from typing import Deque, List, NamedTuple, Optional

import numpy as np
from numba import njit

from .backend import NodePairs, PairCounts, TreeBackend, select_features
from .common import HIST_COUNT, NO_SPLIT, ChildSums, SplitInfo
from .criterion import OLE, Criterion
from .joint_leaves import joint_newton_step
from .splitting import node_hessian
from .tree import LEAF_DTYPE, NODE_DTYPE, Tree

__all__ = ["GrowParams", "GrownTree", "Leaf", "TreeGrower", "add_leaf_values", "select_features"]


class GrowParams(NamedTuple):
    """The grower's options, from validated hyperparameters (:func:`customobj.ole.training.grow_params`)."""
    criterion: Criterion
    num_leaves: int
    min_data_in_leaf: int
    min_sum_hessian_in_leaf: float
    lambda_l2: float
    max_depth: int
    best_first: bool  # growth="best_first", else breadth-first
    joint_leaves: bool  # leaf_solver="joint", else each leaf's own Newton step
    learning_rate: float


class GrownTree(NamedTuple):
    """A grown tree and where its training rows ended up: leaf ``l`` holds ``order[starts[l]:ends[l]]``
    (``order`` is None when it stayed on the device: nothing on the host needs it)."""
    tree: Tree
    order: Optional[np.ndarray]
    starts: np.ndarray
    ends: np.ndarray


@njit(cache=True)
def add_leaf_values(order, starts, ends, values, out):
    """``out[order[starts[l]:ends[l]]] += values[l]``: the training-score update from the partition."""
    for leaf in range(starts.shape[0]):
        v = values[leaf]
        for k in range(starts[leaf], ends[leaf]):
            out[order[k]] += v


def _sums(leaf) -> ChildSums:
    return ChildSums(leaf.G, leaf.H, leaf.N, leaf.C)


class Leaf:
    """A leaf while the tree grows: its rows ``order[start:end]``, its pairs ``[pstart:pend]`` of
    pair buffer ``pbuf``, its sums ``G, H, N, C``, histograms, best split and place in the tree."""
    __slots__ = ("start", "end", "pstart", "pend", "pbuf", "depth", "G", "H", "N", "C", "hist", "phist",
                 "split", "parent", "is_left")

    def __init__(self, start, end, depth, parent, is_left, sums):
        self.start, self.end, self.depth, self.parent, self.is_left = start, end, depth, parent, is_left
        self.G, self.H, self.N, self.C = sums
        self.pstart = self.pend = self.pbuf = 0
        self.hist = self.phist = None
        self.split = NO_SPLIT


class TreeGrower:
    """Grows one tree on rows ``rows`` (int64) with optional in-bag pairs ``(pi, pj, pc)``.

    ``TreeGrower(backend, grad, hess, rows, pairs, feature_mask, params).grow()`` returns a
    :class:`GrownTree` whose ``tree`` is a :class:`~customobj.ole.tree.Tree` (leaf values already
    multiplied by the learning rate). Every kernel runs through ``backend`` (the fit's
    :class:`~customobj.ole.backend.TreeBackend`). The pair arrays are overwritten (the first of the
    two buffers the pairs ping-pong between, see ``partition_pairs``).
    """

    def __init__(self, backend: TreeBackend, grad: np.ndarray, hess: np.ndarray, rows: np.ndarray,
                 pairs: Optional[tuple], feature_mask: np.ndarray, params: GrowParams) -> None:
        p = self.params = params
        self.backend, self.data = backend, backend.data
        self.grad, self.hess, self.feature_mask = grad, hess, feature_mask
        self.fast = p.criterion.fast
        self.use_pairs = p.criterion.uses_pairs and pairs is not None and pairs[0].shape[0] > 0
        self.order = np.array(rows, dtype=np.int64, copy=True)
        self.pairs = pairs
        self.dropped = None  # ole_fast: the pairs left out of the split search (pair_pruning.Dropped)
        self.kept: Optional[PairCounts] = None  # ole_fast: the root's pairs (kept, 0), maybe still on a GPU
        self.planned: Optional[list] = None  # the leaves when their dropped couplings were summed (_plan)
        if pairs is not None and self.use_pairs:
            # a leaf's pairs sit in bufs[leaf.pbuf]; its children's in the other buffer
            self.bufs = backend.pair_buffers(pairs, (self.order, grad, hess))
            if p.joint_leaves:  # the joint solve needs every pair after growth
                self.pairs = tuple(a.copy() for a in pairs)
            if self.fast:  # search on the largest couplings
                self.bufs, self.dropped, self.kept = backend.prune_pairs(self.bufs)
        self.n_pairs = self.bufs[0][0].shape[0] if self.use_pairs else 0
        self.leaves: List[Leaf] = []
        self.nodes = np.zeros(max(p.num_leaves - 1, 0), dtype=NODE_DTYPE)  # the first len(leaves) - 1 are used
        self.open_best: List[tuple] = []  # best-first: heap of (-gain, leaf index) of leaves with a split
        self.open_fifo: Deque[int] = deque()  # breadth-first: leaf indices with a split, oldest first

    # --- the algorithm ---------------------------------------------------------------------------
    def grow(self) -> GrownTree:
        self._initialise_root()
        while len(self.leaves) < self.params.num_leaves and self._split_next():
            pass
        return self._finish()

    def _initialise_root(self) -> None:
        p, order = self.params, self.order
        root = Leaf(0, order.shape[0], 0, -1, True, ChildSums(0.0, 0.0, float(order.shape[0]), 0.0))
        root.pend = self.n_pairs
        searched = p.num_leaves > 1 and self._can_split(root)  # N and depth only: known before the sums
        # None: the backend reads the sums with the root's split (a GPU's one read), searched_root_sums
        sums = self.backend.root_sums(order, self.grad, self.hess, self.bufs[0][2] if self.use_pairs else None,
                                      self.n_pairs, searched=searched)
        if sums is not None:
            root.G, root.H, root.C = sums
        if searched:
            root.hist = self.backend.row_hist(order, 0, order.shape[0], self.grad, self.hess, root=True)
            if self.use_pairs and not self.fast:
                root.phist = self.backend.pair_hist(self.bufs[0], 0, self.n_pairs)
        self.leaves.append(root)
        self._compute_best_splits_and_push([0], self.kept)
        if sums is None:
            root.G, root.H, root.C = self.backend.searched_root_sums()
        if self.kept is not None and searched:  # the kept pairs: they came with the root's split
            root.pend = root.pstart + self.kept.counts[0]

    def _compute_best_split_and_push(self, index: int) -> None:
        self._compute_best_splits_and_push([index])

    def _compute_best_splits_and_push(self, indices: list, pairs: Optional[PairCounts] = None) -> None:
        """The best splits of leaves ``indices`` from their histograms (searched together: a GPU
        backend reads them back at once); each opens for splitting when its gain > 0, in order.
        ``pairs``: the counts of the split that made them (``ole_fast`` searches each one's own pairs)."""
        searching = [i for i in indices if self.leaves[i].hist is not None]
        nodes = [self.leaves[i] for i in searching]
        if self.dropped is not None and nodes and len(self.leaves) + 1 >= self.params.num_leaves:
            self._plan(searching)
        if self.use_pairs and self.fast:  # pair histograms of each node's top k features by WSE gain
            found = self.backend.fast_splits([(leaf.hist, self._node_pairs(leaf, pairs), _sums(leaf)) for leaf in nodes],
                                             self.feature_mask, self.params.criterion.ole_fast_features)
        else:
            found = self.backend.find_splits([self._search(leaf) for leaf in nodes])
        splits = dict(zip(searching, found))
        for index in indices:
            leaf = self.leaves[index]
            leaf.split = splits.get(index, NO_SPLIT)
            if self.fast:
                leaf.phist = None  # no subtraction in ole_fast: each node's features differ
            if leaf.split.gain > 0:
                if self.params.best_first:
                    heapq.heappush(self.open_best, (-leaf.split.gain, index))  # ties: the lower index
                else:
                    self.open_fifo.append(index)

    def _plan(self, searching: list) -> None:
        """At most one split follows this search: the leaves' dropped couplings can be summed with it
        (each leaf's, and each side's of its split: the searched ones' as the search finds them)."""
        slot = {index: k for k, index in enumerate(searching)}
        self.planned = list(self.leaves)
        self.backend.plan_leaf_couplings([(l.start, l.end, slot.get(i, l.split if l.split.gain > 0 else None))
                                          for i, l in enumerate(self.leaves)], self.dropped)

    def _planned_sources(self) -> Optional[list]:
        """Each final leaf's ``(planned leaf, part)`` (part 0: the leaf, 1 / 2: its split's left / right),
        or None when the leaves are not those of the plan with at most one of them split."""
        plan, leaves = self.planned, self.leaves
        if plan is None or len(leaves) - len(plan) not in (0, 1):
            return None
        out = [(i, 0 if leaf is plan[i] else 1) for i, leaf in enumerate(leaves[:len(plan)])]
        split = [i for i, part in out if part]
        if len(split) != len(leaves) - len(plan):
            return None
        return out + [(split[0], 2)] if split else out

    def _split_next(self) -> bool:
        """Split the next open leaf: False when none is left."""
        if self.params.best_first:
            if not self.open_best:
                return False
            _, index = heapq.heappop(self.open_best)
        else:
            if not self.open_fifo:
                return False
            index = self.open_fifo.popleft()
        self._split_leaf(index)
        return True

    def _split_leaf(self, index: int) -> None:
        """Partition leaf ``index``'s rows (and pairs), record the node; the left child keeps the
        index, the right one gets the next; both get histograms and their best split."""
        leaf, split = self.leaves[index], self.leaves[index].split
        nan_left, threshold = self._nan_side(leaf, split)
        nl = int(split.left.N)  # the partition's left count: the split's (exact)
        node_id = self._record_node(leaf, index, split, threshold, nan_left)
        left = Leaf(leaf.start, leaf.start + nl, leaf.depth + 1, node_id, True, split.left)
        right = Leaf(leaf.start + nl, leaf.end, leaf.depth + 1, node_id, False, split.right)
        n_after = len(self.leaves) + 1
        need = [n_after < self.params.num_leaves and self._can_split(c) for c in (left, right)]
        got = self.backend.partition_rows(self.order, leaf.start, leaf.end, split, nan_left,
                                          children_searched=any(need))
        if got != nl:
            raise RuntimeError(f"a partition sent {got} rows left where its split counted {nl}")
        pairs = None
        if self.use_pairs:
            pairs = self._split_pairs(leaf, left, right, need)
            # the gain of the children's exact sums (the search's, re-evaluated as the CPU always has)
            self.nodes["split_gain"][node_id] = self.backend.split_gain(_sums(leaf), _sums(left), _sums(right))
        if any(need):
            self._child_histograms(leaf, left, right, need, pairs)
        leaf.hist = leaf.phist = None
        for child, nd in zip((left, right), need):
            if not nd:  # never split: no histograms, so no split search
                child.hist = child.phist = None
        self.leaves[index] = left
        self.leaves.append(right)
        for child in (left, right):  # until the counts are known: the parent's range (ole_fast: NodePairs)
            child.pstart, child.pend = leaf.pstart, leaf.pend
        self._compute_best_splits_and_push([index, len(self.leaves) - 1], pairs)
        if pairs is not None:  # a GPU backend's counts came back with the children's splits
            self._pair_ranges(leaf, left, right, pairs)

    def _finish(self) -> GrownTree:
        p, leaves = self.params, self.leaves
        # a GPU backend partitioned its own copy: None when it stays there (the host needs none of it)
        order = self.backend.row_order(self.order)
        if self.dropped is not None:  # leaf values from every pair (pair_pruning: the bound)
            extra = self.backend.dropped_couplings(self.order, [(l.start, l.end) for l in leaves], self.dropped,
                                                   self._planned_sources())
            for leaf, c in zip(leaves, extra):
                leaf.C += c
        out = np.zeros(len(leaves), dtype=LEAF_DTYPE)
        out["leaf_weight"] = [l.H for l in leaves]
        out["leaf_count"] = [int(l.N) for l in leaves]
        starts = np.array([l.start for l in leaves], dtype=np.int64)
        ends = np.array([l.end for l in leaves], dtype=np.int64)
        if p.joint_leaves and len(leaves) > 1:
            out["leaf_value"] = self._joint_leaf_values(starts, ends)
        else:
            out["leaf_value"] = [self._leaf_value(l) for l in leaves]
        out["leaf_value"] *= p.learning_rate
        tree = Tree(self.nodes[:len(leaves) - 1].copy(), out)
        return GrownTree(tree, order, starts, ends)

    # --- the steps -------------------------------------------------------------------------------
    def _can_split(self, leaf: Leaf) -> bool:
        p = self.params
        if p.max_depth > 0 and leaf.depth >= p.max_depth:
            return False
        return leaf.N >= 2 * p.min_data_in_leaf

    def _search(self, leaf: Leaf) -> tuple:
        """The split search of ``leaf``: ``(hist, phist, mask, sums)`` for ``backend.find_splits``."""
        return leaf.hist, leaf.phist if self.use_pairs else None, self.feature_mask, _sums(leaf)

    def _nan_side(self, leaf: Leaf, split: SplitInfo) -> tuple:
        """Where NaN goes, and the raw threshold of the split."""
        d, f = self.data, split.feature
        threshold = d.mapper.threshold(f, split.bin)
        # NaN seen here (a feature without NaN in training has none anywhere: no read): the search's side
        if d.mapper.has_nan[f] and leaf.hist[d.offsets[f] + int(d.n_bins[f]), HIST_COUNT] > 0:
            return split.nan_left, threshold
        return 0.0 <= threshold, threshold  # else where 0 goes (LightGBM maps NaN to 0)

    def _record_node(self, leaf: Leaf, index: int, split: SplitInfo, threshold: float, nan_left: bool) -> int:
        """Append leaf ``index``'s split as the next internal node (children: leaf ``index`` and the
        next leaf) and point its parent at it; returns the node's id."""
        node_id = len(self.leaves) - 1
        if leaf.parent >= 0:
            self.nodes["left_child" if leaf.is_left else "right_child"][leaf.parent] = node_id
        self.nodes[node_id] = (split.feature, split.bin, threshold, bool(nan_left), ~index, ~len(self.leaves),
                               split.gain, self._leaf_value(leaf) * self.params.learning_rate, leaf.H, int(leaf.N))
        return node_id

    def _split_pairs(self, leaf: Leaf, left: Leaf, right: Leaf, need: list) -> Optional[PairCounts]:
        """The children's pairs, copied, partitioned, to the other buffer (children that are never split
        need none: None); their couplings ``C`` came with the split."""
        left.pbuf = right.pbuf = 1 - leaf.pbuf
        if not any(need):
            return None
        return self.backend.split_pairs(self.bufs[leaf.pbuf], leaf.pstart, leaf.pend, self.bufs[left.pbuf])

    def _node_pairs(self, leaf: Leaf, pairs: Optional[PairCounts]) -> NodePairs:
        """``leaf``'s pairs for ``ole_fast``'s search: its range, or its side of its parent's (``pairs``:
        the counts of the split that made it, maybe still on a GPU)."""
        return NodePairs(self.bufs[leaf.pbuf], leaf.pstart, leaf.pend, pairs, 0 if leaf.is_left else 1)

    @staticmethod
    def _pair_ranges(parent: Leaf, left: Leaf, right: Leaf, pairs: PairCounts) -> None:
        """The children's pair ranges: [left | right | split pairs] in the parent's range."""
        npl, npr = pairs.counts
        left.pstart, left.pend = parent.pstart, parent.pstart + npl
        right.pstart, right.pend = parent.pstart + npl, parent.pstart + npl + npr

    def _child_histograms(self, parent: Leaf, left: Leaf, right: Leaf, need: list,
                          pairs: Optional[PairCounts]) -> None:
        """Row histograms: the smaller child's built, the larger's by subtraction from the parent's.
        Pair histograms: each child's from its own pairs or the larger's as parent - smaller - split
        pairs, whichever is cheaper (``pairhist.pair_hist_plan``: the split pairs touch rows of both
        children), chosen by the backend (a GPU backend on the card, from counts that stay there)."""
        small, large = (left, right) if left.N <= right.N else (right, left)
        small.hist = self.backend.row_hist(self.order, small.start, small.end, self.grad, self.hess)
        parent.hist -= small.hist
        large.hist = parent.hist
        if pairs is not None and not self.fast:
            left.phist, right.phist = self.backend.child_pair_hists(
                self.bufs[left.pbuf], parent.pstart, parent.pend, pairs, parent.phist, (left.N, right.N, parent.N),
                tuple(need))

    def _leaf_value(self, leaf: Leaf) -> float:
        """Newton step ``-G / (D + lambda_l2)`` (``D = H - 2C`` under OLE, else ``H``); 0 without curvature."""
        d = node_hessian(OLE, leaf.G, leaf.H, leaf.N, leaf.C) if self.params.criterion.score == OLE else leaf.H
        den = d + self.params.lambda_l2
        return -leaf.G / den if den > 0 else 0.0

    def _joint_leaf_values(self, starts, ends):
        """One Newton step for all leaf values at once: (A + lambda I) v = -G, minimum-norm solution.

        ``A[a, a] = sum_{i in a} h_i - 2 sum_{pairs inside a} c``, ``A[a, b] = -sum_{pairs across a, b} c``.
        """
        order, leaves = self.order, self.leaves
        leaf_of_row = np.full(int(order.max()) + 1 if order.size else 0, -1, dtype=np.int64)
        for a in range(len(leaves)):
            leaf_of_row[order[starts[a]:ends[a]]] = a
        v = joint_newton_step(np.array([l.G for l in leaves]), np.array([l.H for l in leaves]), leaf_of_row,
                              self.pairs, self.params.lambda_l2)  # customobj.ole.joint_leaves, shared with ExactLeaves
        return v
