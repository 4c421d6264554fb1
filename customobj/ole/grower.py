r"""One regression tree, grown leaf by leaf (best-first) or level by level (breadth-first).

The Python loop keeps per-leaf bookkeeping; histograms, pair histograms, split search and
partitioning are numba kernels. Under every OLE criterion a child's in-node coupling ``C`` (its
node hessian ``H - 2C``, leaf value and recorded split gain) is summed in float64 from its own
pairs after the split; the pair histograms only choose the split.

``criterion="ole_fast"`` (tolerance ``k = ole_fast_features``): at each node the WSE gains of every
feature come from the row histogram (one extra split search), and the pair histogram is built
only for the ``k`` features of largest WSE gain (``select_features``); the split is the best OLE
split among them,

.. math::

    \max_{f \in \mathrm{top}_k(\mathrm{WSE})} \max_t \;
    \frac{G_L^2}{H_L - 2C_L + \lambda} + \frac{G_R^2}{H_R - 2C_R + \lambda}
    - \frac{G^2}{H - 2C + \lambda}

(Xia, Zhai, Wang, SPEC.md section 5). The bound: only the set of features searched changes.
Every node's ``G, H, C`` (so its OLE hessian ``H - 2C``, leaf value and the chosen split's gain)
is exact, and the split equals ``criterion="ole"``'s whenever that split's feature ranks among the
node's top ``k`` by WSE gain; ``k >= n_features`` grows the ``"ole"`` trees. No pair-histogram
subtraction (each node's features differ), so a node costs its pairs times ``k``. Rows of a leaf are ``order[start:end]`` and its in-node pairs
``pi/pj/pc[pstart:pend]`` of one of two pair buffers; a split reorders the row range in place
(LightGBM's data partition) and copies the pair range, partitioned, to the other buffer.
Leaves are numbered like LightGBM: splitting leaf ``l`` keeps ``l`` for the left child and gives
the right child the next free index, so the arrays export directly to a LightGBM model string.
"""
from __future__ import annotations

from collections import deque

import numpy as np
from numba import njit

from .histogram import build_row_hist_fm
from .joint_leaves import joint_newton_step
from .pairhist import (PairScratch, build_pair_hist, compact_pairs, partition_pairs, split_coupling_sums,
                       sum_couplings)
from .pair_pruning import OLE_FAST_EPSILON, dropped_leaf_couplings, prune_for_tree
from .partition import partition_rows
from .splitting import (KERNEL, OLE, OLE_FAST, OLE_FLOAT64, RES_SIZE, feature_gains, find_best_split,
                        find_best_split_parallel, node_hessian, split_gain)

__all__ = ["GrowParams", "OLE_FAST_FEATURES", "add_leaf_values", "grow_tree", "partition_rows", "select_features"]

#: Default ``k`` of ``criterion="ole_fast"``: features per node whose pair histograms are built.
OLE_FAST_FEATURES = 2


class GrowParams:
    __slots__ = ("criterion", "num_leaves", "min_data_in_leaf", "min_sum_hessian_in_leaf",
                 "lambda_l2", "max_depth", "growth", "leaf_solver", "learning_rate", "ole_fast_features",
                 "ole_fast_epsilon")
    _DEFAULTS = {"ole_fast_features": OLE_FAST_FEATURES, "ole_fast_epsilon": OLE_FAST_EPSILON}

    def __init__(self, **kw):
        for k in self.__slots__:
            setattr(self, k, kw[k] if k in kw else self._DEFAULTS[k])


def select_features(gains: np.ndarray, feature_mask: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` features of ``feature_mask`` with the largest ``gains`` (ties: lower index first),
    in increasing index order: the features ``criterion="ole_fast"`` searches at a node."""
    cand = np.flatnonzero(feature_mask)
    top = cand[np.argsort(-gains[cand], kind="stable")[:k]]
    return np.sort(top)


@njit(cache=True)
def _row_sums(order, grad, hess):
    g = 0.0
    h = 0.0
    for k in range(order.shape[0]):
        g += grad[order[k]]
        h += hess[order[k]]
    return g, h


@njit(cache=True)
def add_leaf_values(order, starts, ends, values, out):
    """``out[order[starts[l]:ends[l]]] += values[l]``: the training-score update from the partition."""
    for leaf in range(starts.shape[0]):
        v = values[leaf]
        for k in range(starts[leaf], ends[leaf]):
            out[order[k]] += v


_ROW_MAJOR_COPY_BYTES = 256 * 2**20
PARALLEL_SLOTS = 32768  # histogram slots from which the split search runs in parallel


def _capacity(m):
    """Pair-buffer size for ``m`` pairs: headroom, as the pair count drifts from round to round
    (a buffer that grows every round would refill fresh memory, paying its page faults); less of
    it for buffers of hundreds of MB."""
    return m + (m // 4 if 16 * m <= _ROW_MAJOR_COPY_BYTES else m // 16) + 1024


class _Leaf:
    __slots__ = ("start", "end", "pstart", "pend", "pbuf", "depth", "G", "H", "N", "C", "hist", "phist",
                 "res", "parent", "is_left")


class _Ctx:
    """Per-fit buffers shared by every tree (binned data, scratch arrays)."""

    def __init__(self, bins_fm, mapper):
        # (features, rows): row histograms and partitions read one feature's column. The pair
        # histograms read whole rows (pairhist copies each into a tile): from a row-major copy when
        # that is at most _ROW_MAJOR_COPY_BYTES (tile copies ~35% cheaper overall on MSLR-shaped
        # data), else through the transposed view, so large data sets keep one bin matrix.
        self.bins_fm = bins_fm
        self.bins = None
        self.n_bins = mapper.n_bins
        self.offsets = mapper.offsets
        self.n_slots = mapper.n_slots
        self.mapper = mapper
        n = bins_fm.shape[1]
        self.go_left = np.zeros(n, dtype=np.bool_)
        self.tmp_rows = np.empty(n, dtype=np.int64)
        self.gh = np.empty((max(n, 1), 2), dtype=np.float64)
        self.root_counts = None
        self.in_pairs = None  # the round's pairs (reordered by the tree), reused across rounds
        self.tmp_pairs = None  # the second buffer the pairs ping-pong with
        self.hist_scratch = None
        self.queries = None  # (query of every row, number of queries): ole_fast's pair pruning

    def row_hist(self, order, start, end, grad, hess, root=False):
        # A root over every row (no bagging) has the same per-bin counts every round: computed once.
        full = root and end - start == self.go_left.shape[0]
        counts = self.root_counts if full else None
        hist = build_row_hist_fm(self.bins_fm, order, start, end, grad, hess, self.offsets, self.n_slots, self.gh,
                                 counts=counts)
        if full and counts is None:
            self.root_counts = hist[:, 2].copy()
        return hist

    def release_pair_buffers(self):
        """Free large pair buffers between rounds (they would add to the peak while the objective
        builds the next round's couplings); small ones are kept: refilling fresh memory costs page
        faults, ~10% of an OLE tree on MSLR-shaped data."""
        for name in ("in_pairs", "tmp_pairs"):
            buf = getattr(self, name)
            if buf is not None and sum(a.nbytes for a in buf) > _ROW_MAJOR_COPY_BYTES:
                setattr(self, name, None)

    def _index_dtype(self):
        # int32 rows halve the index traffic of pair partitions and histograms (int64 beyond 2**31 rows)
        return np.int32 if self.go_left.shape[0] < 2**31 - 1 else np.int64

    def _input_buffer(self, m):
        index = self._index_dtype()
        buf = self.in_pairs
        if buf is None or buf[0].shape[0] < m or buf[0].dtype != index:
            c = _capacity(m)
            buf = self.in_pairs = (np.empty(c, index), np.empty(c, index), np.empty(c, np.float64))
        return buf

    def pair_buffer(self, m):
        """``m`` pairs' worth of the reusable input buffer: an objective that counts its pairs first
        (``grad_hess_couplings_prepared(pair_buffer=...)``) writes them straight into it."""
        return tuple(a[:m] for a in self._input_buffer(m))

    def load_pairs(self, couplings, in_bag):
        """The objective's couplings as the round's pairs: in-bag, coupling > 0, in the input buffer.

        Pairs the objective wrote into ``pair_buffer`` are used where they are (zero couplings
        there only cost histogram work); only bagging compacts them, in place.
        """
        pi, pj, pc = (np.asarray(a) for a in couplings)
        buf = self.in_pairs
        in_place = buf is not None and pc.shape[0] > 0 and np.may_share_memory(pc, buf[2])
        if in_place and in_bag is None:
            return pi, pj, pc
        pc = np.asarray(pc, dtype=np.float64)
        m = pc.shape[0]
        if not in_place:
            buf = self._input_buffer(m)
        use_bag = in_bag is not None
        bag = in_bag if use_bag else np.zeros(0, dtype=np.bool_)
        k = compact_pairs(pi, pj, pc, bag, use_bag, *buf)
        return tuple(a[:k] for a in buf)

    def pair_scratch(self, m, index_dtype, acc_dtype=np.float32):
        if self.bins is None:
            fm = self.bins_fm
            self.bins = np.ascontiguousarray(fm.T) if fm.nbytes <= _ROW_MAJOR_COPY_BYTES else fm.T
        if self.tmp_pairs is None or self.tmp_pairs[0].shape[0] < m or self.tmp_pairs[0].dtype != index_dtype:
            c = _capacity(m)
            self.tmp_pairs = (np.empty(c, index_dtype), np.empty(c, index_dtype), np.empty(c, np.float64))
        if self.hist_scratch is None or self.hist_scratch.acc.dtype != acc_dtype:
            self.hist_scratch = PairScratch(self.bins.shape[0], self.bins.shape[1], bool(self.mapper.has_nan.any()),
                                            dtype=acc_dtype)
        return self.tmp_pairs

    def pair_hist(self, buf, start, end, features=None):
        pi, pj, pc = buf
        return build_pair_hist(self.bins, pi, pj, pc, start, end, self.offsets, self.n_bins, self.n_slots,
                               self.hist_scratch, features)


def _can_split(leaf, p):
    if p.max_depth > 0 and leaf.depth >= p.max_depth:
        return False
    return leaf.N >= 2 * p.min_data_in_leaf


def grow_tree(ctx, grad, hess, rows, pairs, feature_mask, p):
    """Grow one tree on rows ``rows`` (int64) with optional in-bag pairs ``(pi, pj, pc)``.

    Returns ``(tree, order, leaf_ranges)``: ``tree`` a dict of LightGBM-style arrays (leaf values
    already multiplied by the learning rate). The pair arrays are overwritten (the first of the two
    buffers the pairs ping-pong between, see ``partition_pairs``).
    """
    crit = KERNEL[p.criterion]
    fast = p.criterion == OLE_FAST
    use_pairs = crit == OLE and pairs is not None and pairs[0].shape[0] > 0
    order = np.array(rows, dtype=np.int64, copy=True)
    dropped = None
    if use_pairs:
        pi, pj, pc = pairs
        acc = np.float64 if p.criterion == OLE_FLOAT64 else np.float32
        # a node's pairs sit in bufs[node.pbuf]; its children's in the other buffer
        bufs = (pairs, ctx.pair_scratch(pi.shape[0], pi.dtype, acc))
        if p.leaf_solver == "joint":  # the joint solve needs every pair after growth
            pairs = tuple(a.copy() for a in pairs)
        if fast and p.ole_fast_epsilon > 0 and ctx.queries is not None:  # search on the largest couplings
            bufs, dropped = prune_for_tree(bufs, *ctx.queries, p.ole_fast_epsilon)
            pi, pj, pc = bufs[0]
    else:
        pi = pj = np.zeros(0, np.int64)
        pc = np.zeros(0, np.float64)
    dummy_phist = np.zeros((1, 3))
    # a split search over few slots is cheaper than waking the thread team (see partition.PARALLEL_ROWS)
    find = find_best_split_parallel if ctx.n_slots >= PARALLEL_SLOTS else find_best_split

    gains = np.zeros(ctx.n_bins.shape[0])

    def search(leaf):
        leaf.res = np.zeros(RES_SIZE)
        if leaf.hist is None:
            return
        mask = feature_mask
        if use_pairs and fast:  # pair histograms of the k features of largest WSE gain only
            feature_gains(leaf.hist, 1, ctx.n_bins, ctx.offsets, feature_mask, leaf.G, leaf.H, leaf.N,
                          p.lambda_l2, float(p.min_data_in_leaf), p.min_sum_hessian_in_leaf, gains)
            feats = select_features(gains, feature_mask, p.ole_fast_features)
            mask = np.zeros_like(feature_mask)
            mask[feats] = True
            leaf.phist = ctx.pair_hist(bufs[leaf.pbuf], leaf.pstart, leaf.pend, feats)
        ph = leaf.phist if use_pairs else dummy_phist
        find(leaf.hist, ph, use_pairs, crit, ctx.n_bins, ctx.offsets, mask, leaf.G, leaf.H, leaf.N,
             leaf.C, p.lambda_l2, float(p.min_data_in_leaf), p.min_sum_hessian_in_leaf, leaf.res)
        if fast:
            leaf.phist = None  # no subtraction in ole_fast: each node's features differ

    root = _Leaf()
    root.start, root.end = 0, order.shape[0]
    root.pstart, root.pend, root.pbuf = 0, pi.shape[0], 0
    root.depth, root.parent, root.is_left = 0, -1, True
    root.G, root.H = _row_sums(order, grad, hess)
    root.N = float(order.shape[0])
    root.C = sum_couplings(pc, 0, pc.shape[0]) if use_pairs else 0.0
    root.hist = root.phist = None
    if p.num_leaves > 1 and _can_split(root, p):
        root.hist = ctx.row_hist(order, 0, order.shape[0], grad, hess, root=True)
        if use_pairs and not fast:
            root.phist = ctx.pair_hist(bufs[0], 0, pi.shape[0])
    search(root)
    leaves = [root]
    nodes = {k: [] for k in ("split_feature", "threshold_bin", "threshold", "default_left", "left_child",
                             "right_child", "split_gain", "internal_value", "internal_weight", "internal_count")}
    queue = deque([0])

    def leaf_value(leaf):
        d = node_hessian(crit, leaf.G, leaf.H, leaf.N, leaf.C) if crit == 2 else leaf.H
        den = d + p.lambda_l2
        return -leaf.G / den if den > 0 else 0.0

    while len(leaves) < p.num_leaves:
        if p.growth == "best_first":
            cand = [(l.res[0], -k) for k, l in enumerate(leaves) if l.res[0] > 0]
            if not cand:
                break
            idx = -max(cand)[1]
        else:
            idx = None
            while queue:
                k = queue.popleft()
                if leaves[k].res[0] > 0:
                    idx = k
                    break
            if idx is None:
                break
        leaf = leaves[idx]
        res = leaf.res
        f, tbin, nan_left = int(res[1]), int(res[2]), bool(res[3] > 0.5)
        nb = int(ctx.n_bins[f])
        thr = ctx.mapper.threshold(f, tbin)
        has_nan_here = leaf.hist[ctx.offsets[f] + nb, 2] > 0
        if not has_nan_here:
            nan_left = 0.0 <= thr  # no NaN seen here: send NaN where 0 goes (LightGBM maps NaN to 0)
        nl = partition_rows(ctx.bins_fm[f], order, leaf.start, leaf.end, tbin, nb, nan_left, ctx.go_left,
                            ctx.tmp_rows)
        node_id = len(leaves) - 1
        new_idx = len(leaves)
        if leaf.parent >= 0:
            key = "left_child" if leaf.is_left else "right_child"
            nodes[key][leaf.parent] = node_id
        nodes["split_feature"].append(f)
        nodes["threshold_bin"].append(tbin)
        nodes["threshold"].append(thr)
        nodes["default_left"].append(bool(nan_left))
        nodes["left_child"].append(~idx)
        nodes["right_child"].append(~new_idx)
        nodes["split_gain"].append(float(res[0]))
        nodes["internal_value"].append(leaf_value(leaf) * p.learning_rate)
        nodes["internal_weight"].append(leaf.H)
        nodes["internal_count"].append(int(leaf.N))

        left, right = _Leaf(), _Leaf()
        left.start, left.end = leaf.start, leaf.start + nl
        right.start, right.end = leaf.start + nl, leaf.end
        left.G, left.H, left.N, left.C = res[4], res[5], res[6], res[7]
        right.G, right.H, right.N, right.C = res[8], res[9], res[10], res[11]
        for child, is_left in ((left, True), (right, False)):
            child.depth, child.parent, child.is_left = leaf.depth + 1, node_id, is_left
            child.hist = child.phist = None
        n_after = len(leaves) + 1
        need = [n_after < p.num_leaves and _can_split(c, p) for c in (left, right)]
        left.pbuf = right.pbuf = 1 - leaf.pbuf
        if use_pairs and any(need):  # children that are never split need no pairs
            nxt = bufs[left.pbuf]
            npl, npr = partition_pairs(*bufs[leaf.pbuf], leaf.pstart, leaf.pend, ctx.go_left, *nxt)
            left.pstart, left.pend = leaf.pstart, leaf.pstart + npl
            right.pstart, right.pend = leaf.pstart + npl, leaf.pstart + npl + npr
            left.C = sum_couplings(nxt[2], left.pstart, left.pend)
            right.C = sum_couplings(nxt[2], right.pstart, right.pend)
        else:
            left.pstart = left.pend = right.pstart = right.pend = 0
            if use_pairs:
                left.C, right.C = split_coupling_sums(*bufs[leaf.pbuf], leaf.pstart, leaf.pend, ctx.go_left)
        if use_pairs:  # the exact float64 C of the children: the recorded gain uses them too
            nodes["split_gain"][-1] = float(split_gain(crit, leaf.G, leaf.H, leaf.N, leaf.C, left.G, left.H, left.N,
                                                       left.C, right.G, right.H, right.N, right.C, p.lambda_l2))
        if any(need):
            small, large = (left, right) if left.N <= right.N else (right, left)
            small.hist = ctx.row_hist(order, small.start, small.end, grad, hess)
            leaf.hist -= small.hist
            large.hist = leaf.hist
            if use_pairs and not fast:
                _child_pair_hists(ctx, bufs[left.pbuf], leaf, left, right, need)
        leaf.hist = leaf.phist = None
        for child, nd in zip((left, right), need):
            if not nd:
                child.hist = child.phist = None
            search(child)
        leaves[idx] = left
        leaves.append(right)
        queue.extend([idx, new_idx])

    if dropped is not None:  # leaf values from every pair (pair_pruning: the bound)
        extra = dropped_leaf_couplings(order, [(l.start, l.end) for l in leaves], dropped, ctx.go_left.shape[0])
        for leaf, c in zip(leaves, extra):
            leaf.C += c
    tree = {k: v for k, v in nodes.items()}
    tree["num_leaves"] = len(leaves)
    tree["leaf_value"] = [leaf_value(l) for l in leaves]
    tree["leaf_weight"] = [float(l.H) for l in leaves]
    tree["leaf_count"] = [int(l.N) for l in leaves]
    ranges = [(l.start, l.end) for l in leaves]
    if p.leaf_solver == "joint" and len(leaves) > 1:
        tree["leaf_value"] = _joint_leaf_values(leaves, order, ranges, pairs, p)
    tree["leaf_value"] = [v * p.learning_rate for v in tree["leaf_value"]]
    return tree, order, ranges


# A pair-histogram pass costs about 27 ns per pair plus 280 ns per row it touches (each touched row
# scatters its sums into every feature's histogram once), measured on MSLR-shaped data: the row
# term dominates deep nodes, where rows keep only one or two pairs each.
_ROW_COST = 10.0


def _pass_cost(n_pairs, n_rows):
    return n_pairs + _ROW_COST * min(n_rows, 2 * n_pairs)


def _child_pair_hists(ctx, buf, parent, left, right, need):
    """Pair histograms of the children: direct, or parent - small child - split pairs when cheaper
    (by ``_pass_cost``; the split pairs touch rows of both children)."""
    n_l = left.pend - left.pstart
    n_r = right.pend - right.pstart
    n_x = parent.pend - right.pend
    small, large = (left, right) if n_l <= n_r else (right, left)
    need_large = need[0] if large is left else need[1]
    direct = sum(_pass_cost(c.pend - c.pstart, c.N) for c, nd in zip((left, right), need) if nd)
    subtract = _pass_cost(small.pend - small.pstart, small.N) + _pass_cost(n_x, parent.N)
    if need_large and subtract < direct:
        small.phist = ctx.pair_hist(buf, small.pstart, small.pend)
        cross = ctx.pair_hist(buf, right.pend, parent.pend)
        parent.phist -= small.phist
        parent.phist -= cross
        large.phist = parent.phist
    else:
        for child, nd in zip((left, right), need):
            if nd:
                child.phist = ctx.pair_hist(buf, child.pstart, child.pend)


def _joint_leaf_values(leaves, order, ranges, pairs, p):
    """One Newton step for all leaf values at once: (A + lambda I) v = -G, minimum-norm solution.

    ``A[a, a] = sum_{i in a} h_i - 2 sum_{pairs inside a} c``, ``A[a, b] = -sum_{pairs across a, b} c``.
    """
    leaf_of_row = np.full(int(order.max()) + 1 if order.size else 0, -1, dtype=np.int64)
    for a, (s, e) in enumerate(ranges):
        leaf_of_row[order[s:e]] = a
    v = joint_newton_step(np.array([l.G for l in leaves]), np.array([l.H for l in leaves]), leaf_of_row, pairs,
                          p.lambda_l2)  # customobj.ole.joint_leaves, shared with adapters' ExactLeaves
    return [float(x) for x in v]
