r"""One regression tree, grown leaf by leaf (best-first) or level by level (breadth-first).

The Python loop keeps per-leaf bookkeeping; histograms, pair histograms, split search and
partitioning are numba kernels. Under every OLE criterion a child's in-node coupling ``C`` (its
node hessian ``H - 2C``, leaf value and recorded split gain) is the split's record's: the pair
histogram's sums of the tree's couplings, which are on their grid (:mod:`.fixed_point`), so every
partial sum is exact and ``C`` is the sum over the child's own pairs bit for bit (no sum after the
split).

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

The grower keeps the tree's bookkeeping: its leaves' sums, depths and best splits, the open
leaves and the nodes. Where each leaf's rows and pairs are, and its histograms, is its backend's
(:mod:`.backend`: ``begin_tree`` / ``expand`` / ``end_tree``). Leaves are numbered like LightGBM:
splitting leaf ``l`` keeps ``l`` for the left child and gives the right child the next free index,
so the arrays export directly to a LightGBM model string.

:class:`TreeGrower` reads as the algorithm (as scikit-learn's ``TreeGrower``): ``grow`` begins the
tree at the root, then expands the next batch of open leaves (``_split_next``: the open leaf of
largest gain best-first, the open leaves of a level breadth-first) until ``num_leaves`` leaves or
no leaf with a split of gain > 0 remain; every new leaf that may be split is searched by the
backend in the same call and, when its split has gain > 0, opens for splitting.

**Best-first lookahead.** A backend whose answers cost a read (its ``lookahead`` > 1) is handed
the tree's next split and the leaves best-first would split after it as far as the expansions made
tell (:meth:`TreeGrower._best_first_batch`), in one batch. The tree still pops its heap one leaf at a
time and splits each leaf with its expansion's answer when its turn comes (:meth:`TreeGrower._commit`):
the same nodes, numbered the same, as a leaf a batch. The backend numbers its leaves in its own order
(the grower keeps each leaf's index there); a leaf expanded ahead and never split is handed back whole
at the tree's end (``end_tree(spans)``). The backends say how they use it (:mod:`.backend`).
"""
from __future__ import annotations

import heapq
from collections import deque
from typing import Deque, Dict, List, NamedTuple, Optional

import numpy as np
from numba import njit

from .backend import Expanded, Expansion, TreeBackend, select_features
from .common import NO_SPLIT, ChildSums, SplitInfo
from .criterion import OLE, Criterion
from .fixed_point import grid_step_of, round_range
from .joint_leaves import joint_newton_step
from .splitting import node_hessian
from .tree import LEAF_DTYPE, NODE_DTYPE, Tree

__all__ = ["GrowParams", "GrownTree", "Leaf", "TreeGrower", "add_leaf_values", "leaves_held", "select_features"]


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
    (``order`` is None when its backend kept it: nothing here needs it)."""
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


class _Ahead(NamedTuple):
    """A leaf expanded by the backend and not yet split in the tree: which children it searched, the
    backend's answer and its right child's index in the backend's table."""
    need: tuple
    got: Expanded
    right: int


def leaves_held(num_leaves: int, lookahead: int) -> int:
    """Leaves a backend's table is sized for in a tree: ``num_leaves``, or with best-first lookahead
    (``lookahead`` > 1) ``2 num_leaves - 1``, the tree's leaves and as many expansions it may never
    use. The grower expands ahead only while the table holds fewer (:meth:`TreeGrower._best_first_batch`);
    the tree's next split is expanded even then (a backend makes what it lacks, and counts it)."""
    n = max(int(num_leaves), 1)
    return 2 * n - 1 if lookahead > 1 else n


class Leaf:
    """A leaf while the tree grows: its sums ``G, H, N, C``, depth, best split and place in the tree
    (its rows, pairs and histograms are its backend's)."""
    __slots__ = ("depth", "G", "H", "N", "C", "split", "parent", "is_left")

    def __init__(self, depth: int, parent: int, is_left: bool, sums: ChildSums, split: SplitInfo = NO_SPLIT) -> None:
        self.depth, self.parent, self.is_left = depth, parent, is_left
        self.G, self.H, self.N, self.C = sums
        self.split = split


class TreeGrower:
    """Grows one tree on rows ``rows`` (int64) with optional in-bag pairs ``(pi, pj, pc)``.

    ``TreeGrower(backend, grad, hess, rows, pairs, feature_mask, params).grow()`` returns a
    :class:`GrownTree` whose ``tree`` is a :class:`~customobj.ole.tree.Tree` (leaf values already
    multiplied by the learning rate). Every kernel runs through ``backend`` (the fit's
    :class:`~customobj.ole.backend.TreeBackend`). The pair arrays are overwritten (the backend
    partitions them in place).
    """

    def __init__(self, backend: TreeBackend, grad: np.ndarray, hess: np.ndarray, rows: np.ndarray,
                 pairs: Optional[tuple], feature_mask: np.ndarray, params: GrowParams) -> None:
        p = self.params = params
        self.backend, self.data = backend, backend.data
        self.grad, self.hess, self.feature_mask = grad, hess, feature_mask
        self.use_pairs = p.criterion.uses_pairs and pairs is not None and pairs[0].shape[0] > 0
        self.order = np.array(rows, dtype=np.int64, copy=True)
        self.tree_pairs = pairs if self.use_pairs else None  # the backend's: rounded, partitioned in place
        self.pairs = pairs
        if pairs is not None and self.use_pairs and p.joint_leaves:  # the joint solve needs every pair after growth
            self.pairs = tuple(a.copy() for a in pairs)
            pc = self.pairs[2]  # on the tree's grid, as every backend rounds them (exact sums)
            round_range(pc, 0, pc.shape[0], grid_step_of(pc, 0, pc.shape[0]))
        self.leaves: List[Leaf] = []
        self.nodes = np.zeros(max(p.num_leaves - 1, 0), dtype=NODE_DTYPE)  # the first len(leaves) - 1 are used
        self.open_best: List[tuple] = []  # best-first: heap of (-gain, leaf index) of leaves with a split
        self.open_fifo: Deque[int] = deque()  # breadth-first: leaf indices with a split, oldest first
        # best-first lookahead (the backend's): leaves expanded ahead of their turn, and the backend's numbers
        self.lookahead = max(1, int(backend.lookahead)) if p.best_first else 1
        self.backend_cap = leaves_held(p.num_leaves, self.lookahead)
        self.slot: List[int] = [0]  # each leaf's index in the backend's table (the batches' order)
        self.n_backend = 1  # leaves in the backend's table
        self.ahead: Dict[tuple, _Ahead] = {}  # _key -> its expansion, not split in the tree yet

    # --- the algorithm ---------------------------------------------------------------------------
    def grow(self) -> GrownTree:
        self._initialise_root()
        while len(self.leaves) < self.params.num_leaves and self._split_next():
            pass
        return self._finish()

    def _initialise_root(self) -> None:
        order = self.order
        root = Leaf(0, -1, True, ChildSums(0.0, 0.0, float(order.shape[0]), 0.0))
        searched = self.params.num_leaves > 1 and self._can_split(root)  # N and depth only: known before the sums
        start = self.backend.begin_tree(order, self.grad, self.hess, self.tree_pairs,
                                        self.feature_mask, searched=searched)
        root.G, root.H, _, root.C = start.sums
        self.leaves.append(root)
        self._open(0, start.split)

    def _open(self, index: int, split: SplitInfo) -> None:
        """Leaf ``index``'s best split; the leaf opens for splitting when its gain is > 0."""
        self.leaves[index].split = split
        if split.gain > 0:
            if self.params.best_first:
                heapq.heappush(self.open_best, (-split.gain, index))  # ties: the lower index
            else:
                self.open_fifo.append(index)

    def _split_next(self) -> bool:
        """Split the next open leaves (best-first: the one of largest gain; breadth-first: the open
        leaves of the oldest level, as many as ``num_leaves`` allows): False when none is left."""
        if self.params.best_first:
            if not self.open_best:
                return False
            index = self.open_best[0][1]
            if self._key(index) not in self.ahead:
                self._expand(self._best_first_batch())
            heapq.heappop(self.open_best)
            self._commit(index)
            return True
        if not self.open_fifo:
            return False
        room = self.params.num_leaves - len(self.leaves)  # each split adds one leaf
        batch = [self.open_fifo.popleft() for _ in range(min(room, len(self.open_fifo)))]
        n = len(self.leaves)  # the level's j-th split leaves the tree n + j + 1 leaves
        self._expand([(self._key(i), self.leaves[i].depth, self.leaves[i].split, n + j + 1)
                      for j, i in enumerate(batch)])
        for index in batch:
            self._commit(index)
        return True

    def _key(self, index: int) -> tuple:
        """Leaf ``index``'s node in the backend's table: ``(its index there, its depth)`` (a split's left
        child keeps its parent's index there, one level deeper)."""
        return self.slot[index], self.leaves[index].depth

    def _best_first_batch(self) -> list:
        """The open leaf of largest gain and, when the backend expands ahead (``lookahead`` > 1), the
        leaves best-first would split next as far as the tree's expansions tell: the splits left are
        replayed by gain over the leaves expanded already (their children's splits known) and each
        one not expanded yet is taken, in the replay's order. The first is the tree's next split; the
        others are split in the tree when their turn comes, after children of larger gain that no
        expansion knew yet, or never, when the tree is full first (:meth:`_finish` gives their rows
        back whole). ``(key, depth, split, least leaves after it)`` each."""
        n, p = len(self.leaves), self.params
        limit = max(1, min(self.lookahead, self.backend_cap - self.n_backend))
        heap = [(gain, index, self._key(index), self.leaves[index].split) for gain, index in self.open_best]
        heapq.heapify(heap)  # the tree's heap order: gain, then the lower index
        batch: list = []
        right = n  # the index each replayed split gives its right child
        for _ in range(p.num_leaves - n):
            if not heap or len(batch) == limit:
                break
            _, index, key, split = heapq.heappop(heap)
            right += 1
            got = self.ahead.get(key)
            if got is None:  # split after the top at the earliest: its tree then has n + 2 leaves at least
                batch.append((key, key[1], split, n + 1 if not batch else n + 2))
                continue
            for child, slot, found, asked in ((index, key[0], got.got.left, got.need[0]),
                                              (right - 1, got.right, got.got.right, got.need[1])):
                if asked and found.gain > 0:
                    heapq.heappush(heap, (-found.gain, child, (slot, key[1] + 1), found))
        return batch

    def _expand(self, batch: list) -> None:
        """Hand the backend the leaves ``batch`` to split, in order (each one's right child gets the
        backend's next leaf), and keep each answer until the leaf is split in the tree
        (:meth:`_commit`). Each item: ``(key, depth, split, least leaves after it)``: the tree has at
        least that many leaves once it makes the split, so a child is searched unless that fills the
        tree (the tree's own test when the split's turn comes asks no more: :meth:`_commit`)."""
        p = self.params
        expansions = []
        for key, depth, split, after in batch:
            children = (Leaf(depth + 1, -1, True, split.left), Leaf(depth + 1, -1, False, split.right))
            need = tuple(after < p.num_leaves and self._can_split(c) for c in children)
            expansions.append(Expansion(key[0], split, need))
        got = self.backend.expand(expansions)
        if len(got) != len(expansions):
            raise RuntimeError(f"the backend expanded {len(got)} leaves of {len(expansions)}")
        for (key, *_), e, answer in zip(batch, expansions, got):
            self.ahead[key] = _Ahead(e.need, answer, self.n_backend)
            self.n_backend += 1

    def _commit(self, index: int) -> None:
        """Split leaf ``index`` in the tree with its expansion's answer: its left child keeps the
        index, its right child gets the next; each child opens when the tree may still split it."""
        leaf = self.leaves[index]
        ahead = self.ahead.pop(self._key(index))
        split = leaf.split
        left = Leaf(leaf.depth + 1, -1, True, split.left)
        right = Leaf(leaf.depth + 1, -1, False, split.right)
        right_index = len(self.leaves)
        self.leaves[index] = left
        self.leaves.append(right)
        self.slot.append(ahead.right)
        self._record_node(leaf, index, right_index, (left, right), ahead.got)
        room = len(self.leaves) < self.params.num_leaves
        for child_index, child, asked, found in ((index, left, ahead.need[0], ahead.got.left),
                                                 (right_index, right, ahead.need[1], ahead.got.right)):
            wanted = room and self._can_split(child)
            if wanted and not asked:
                raise RuntimeError(f"leaf {child_index} may be split but its expansion did not search it")
            self._open(child_index, found if wanted else NO_SPLIT)

    def _spans(self) -> Optional[list]:
        """Each leaf's rows in the backend's table, ``(first, last)``: the leaf's own, or, for a leaf
        expanded ahead and never split, from its node's index (its leftmost descendant's) to its
        rightmost descendant's (None: the table's leaves are the tree's)."""
        if not self.ahead and self.slot == list(range(len(self.leaves))):
            return None
        spans = []
        for i in range(len(self.leaves)):
            key = last = self._key(i)
            while last in self.ahead:
                last = (self.ahead[last].right, last[1] + 1)
            spans.append((key[0], last[0]))
        return spans

    def _finish(self) -> GrownTree:
        p, leaves = self.params, self.leaves
        rows = self.backend.end_tree(self._spans())
        if rows.dropped is not None:  # leaf values from every pair (pair_pruning: the bound)
            for leaf, c in zip(leaves, rows.dropped):
                leaf.C += c
        out = np.zeros(len(leaves), dtype=LEAF_DTYPE)
        out["leaf_weight"] = [l.H for l in leaves]
        out["leaf_count"] = [int(l.N) for l in leaves]
        if p.joint_leaves and len(leaves) > 1:
            if rows.order is None:
                raise RuntimeError("the joint leaf solve needs the tree's row order on the host")
            out["leaf_value"] = self._joint_leaf_values(rows.order, rows.starts, rows.ends)
        else:
            out["leaf_value"] = [self._leaf_value(l) for l in leaves]
        out["leaf_value"] *= p.learning_rate
        tree = Tree(self.nodes[:len(leaves) - 1].copy(), out)
        return GrownTree(tree, rows.order, rows.starts, rows.ends)

    # --- the steps -------------------------------------------------------------------------------
    def _can_split(self, leaf: Leaf) -> bool:
        p = self.params
        if p.max_depth > 0 and leaf.depth >= p.max_depth:
            return False
        return leaf.N >= 2 * p.min_data_in_leaf

    def _record_node(self, leaf: Leaf, index: int, right: int, children: tuple, e: Expanded) -> None:
        """Record leaf ``index``'s split as an internal node (node ``right - 1``: a tree of ``n`` leaves
        has ``n - 1``), its children leaves ``index`` and ``right``, and point its parent at it."""
        split, node_id = leaf.split, right - 1
        if leaf.parent >= 0:
            self.nodes["left_child" if leaf.is_left else "right_child"][leaf.parent] = node_id
        for child in children:
            child.parent = node_id
        threshold = self.data.mapper.threshold(split.feature, split.bin)
        self.nodes[node_id] = (split.feature, split.bin, threshold, bool(e.nan_left), ~index, ~right, e.gain,
                               self._leaf_value(leaf) * self.params.learning_rate, leaf.H, int(leaf.N))

    def _leaf_value(self, leaf: Leaf) -> float:
        """Newton step ``-G / (D + lambda_l2)`` (``D = H - 2C`` under OLE, else ``H``); 0 without curvature."""
        d = node_hessian(OLE, leaf.G, leaf.H, leaf.N, leaf.C) if self.params.criterion.score == OLE else leaf.H
        den = d + self.params.lambda_l2
        return -leaf.G / den if den > 0 else 0.0

    def _joint_leaf_values(self, order, starts, ends):
        """One Newton step for all leaf values at once: (A + lambda I) v = -G, minimum-norm solution.

        ``A[a, a] = sum_{i in a} h_i - 2 sum_{pairs inside a} c``, ``A[a, b] = -sum_{pairs across a, b} c``.
        """
        leaves = self.leaves
        leaf_of_row = np.full(int(order.max()) + 1 if order.size else 0, -1, dtype=np.int64)
        for a in range(len(leaves)):
            leaf_of_row[order[starts[a]:ends[a]]] = a
        v = joint_newton_step(np.array([l.G for l in leaves]), np.array([l.H for l in leaves]), leaf_of_row,
                              self.pairs, self.params.lambda_l2)  # customobj.ole.joint_leaves, shared with ExactLeaves
        return v
