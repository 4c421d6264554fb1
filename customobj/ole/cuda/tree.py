"""The tree a GPU backend grows (:mod:`.backend`): its leaf table, its pair counts on the card and
the reads it plans, behind the seam ``begin_tree`` / ``expand`` / ``end_tree`` (:mod:`..backend`).

:class:`DeviceTree` runs a tree's steps on the backend's components in the CPU's order, so every
sum, histogram and split is the CPU's (:mod:`..leaf_table` holds the steps both share). What only
the card needs is decided here, not by the grower:

- a searched root's sums stay on the card and come back with its split;
- a pair partition's counts stay on the card (:class:`~customobj.ole.cuda.partitions.DevicePairCounts`),
  where the children's pair histograms are planned from them, and come back with the children's
  splits, which set the children's pair ranges;
- ``ole_fast``: when a search may be the tree's last (at most one split after it), the leaves'
  dropped couplings, and each side's of each one's split, are summed before its results are read
  and come back with them (:meth:`DeviceTree.end` finds each final leaf's part of that plan);
- a split whose children are never searched partitions no rows when nothing reads the order;
- a batch of splits (the grower's ``expand``: a breadth-first level) is partitioned in two launches
  (every split's rows marked, then placed with its pairs counted: ``partitions.level``; each split's
  pairs placed at its turn) and read once: each split's
  children's search is launched into its own result rows (or, several splits, all of them in one
  ``search_batch`` launch at the end; ``ole_fast``'s choices kept by result row for it) and one
  read brings them all, as XGBoost's GPU driver syncs once per frontier (``stats.BATCH_BUDGET``);
- ``ole_fast``, such a level: every searched child's features chosen in one launch, and their pair
  histograms built in one more (:meth:`DeviceTree._expand_level`: each split's larger child's
  subtraction held for the choice).
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..backend import Expanded, Expansion, TreeRows, TreeStart, _node
from ..common import HIST_COUNT, NO_SPLIT, NODE_SUMS, PAIR_COUNTS, SPLIT_SIZE, ChildSums, SplitInfo
from ..leaf_table import LeafRows, LeafTable, nan_goes_left
from .partitions import LevelSplit

__all__ = ["DeviceTree"]


class DeviceTree:
    """One tree on the card, from ``begin_tree`` to ``end_tree`` (see the module docstring).

    Parameters
    ----------
    gpu : CUDABackend
        The fit's backend: its components (``inputs``, ``histograms``, ``search``, ``choice``,
        ``partitions``) run every step.
    order, grad, hess, pairs, feature_mask
        As given to ``begin_tree`` (:mod:`..backend`).
    """

    def __init__(self, gpu: Any, order: np.ndarray, grad: Any, hess: Any, pairs: Optional[tuple],
                 feature_mask: np.ndarray) -> None:
        self.gpu, self.order, self.grad, self.hess, self.mask = gpu, order, grad, hess, feature_mask
        criterion = gpu.host.criterion
        self.fast, self.k = criterion.fast, criterion.ole_fast_features
        self.use_pairs = pairs is not None
        self.dropped: Any = None  # ole_fast: the pairs left out of the search, on the card
        self.kept: Any = None  # ole_fast: the root's pair counts (kept, 0), on the card
        self.bufs: tuple = ()
        if pairs is not None:  # the rows' grids in the couplings' launches
            self.bufs = gpu.inputs.pair_buffers(pairs, (order, grad, hess))
            if self.fast:
                self.bufs, self.dropped, self.kept = gpu.inputs.prune_pairs(self.bufs)
        self.n_pairs = int(self.bufs[0][0].shape[0]) if pairs is not None else 0
        # the root's sums: (0, 0, N, 0) until they are known (a searched root's are read with its split)
        self.table = LeafTable(LeafRows(0, order.shape[0], 0, self.n_pairs, ChildSums(0.0, 0.0, float(order.shape[0]),
                                                                                        0.0)))
        # the leaves when their dropped couplings were planned, each with whether its split's sides were too
        self.planned: Optional[list] = None
        self._pending: list = []  # the searches launched since the last read: (nodes, root's sums?, counts?)
        self._tail_n = 0  # values of the search's tail the next read brings (the planned sums)
        self._deferred: Optional[list] = None  # a batch's searches for one launch: their table rows
        self._planned_launch: Any = None  # ole_fast: the plan's sums, launched after the batch's search

    # --- the seam's steps ---------------------------------------------------------------------------
    def start(self, searched: bool) -> TreeStart:
        """The root's sums (with its split when ``searched``: one read for both)."""
        gpu, root, n = self.gpu, self.table[0], self.order.shape[0]
        pc = self.bufs[0][2] if self.use_pairs else None
        sums = gpu.inputs.root_sums(self.order, self.grad, self.hess, pc, self.n_pairs, searched=searched)
        if sums is not None:
            root.sums = ChildSums(sums[0], sums[1], float(n), sums[2])
        if not searched:
            return TreeStart(root.sums, NO_SPLIT)
        root.hist = self._row_hist(root, root=True)
        if self.use_pairs and not self.fast:
            root.phist = gpu.histograms.pairs(self.bufs[0], 0, self.n_pairs, gpu.inputs.pair_stats[2:4],
                                              gpu.inputs.root_rows())
        self._search([root], self.kept)
        got = self._read()
        if got[0] is not None:  # the kept pairs, first in the buffer
            root.pend = root.pstart + got[0][0]
        return TreeStart(root.sums, root.split)

    def expand(self, batch: list) -> list:
        """Split the leaves of ``batch`` (:class:`~customobj.ole.backend.Expansion` each) in order: each
        one's rows (and pairs) partitioned, its searched children's histograms built and searched into
        their own result rows; then one read brings every child's split, with the pair counts that set
        their ranges (XGBoost's GPU driver: a frontier's splits in one copy)."""
        gpu = self.gpu
        # every child's search in one launch when the batch has several splits (ole_fast: each split's
        # features chosen first, its choice kept by result row for the batch's search) and their
        # partition records all live until it runs
        self._deferred = [] if (len(batch) > 1
                                and (not self.use_pairs or gpu.partitions.reserve(len(batch)))) else None
        # the batch's row partitions and pair countings in two launches (its records reserved above)
        level = (self._partition_level(batch) if self._deferred is not None
                 and len(batch) <= gpu.partitions.level_splits else None)
        if level is not None and self._level_choice(batch, level):
            done = self._expand_level(batch, level)
        else:
            if level is not None and self.use_pairs and not self.fast:  # ole: every split's pairs, one launch
                for k, e in enumerate(batch):
                    if any(e.need) and level[k] is not None:
                        gpu.level_place.add(k, 0, 1 - self.table[e.leaf].pbuf, None, gpu.inputs.order, self.bufs)
                gpu.level_place.launch()
            done = [self._expand(e, None if level is None else (k, level[k])) for k, e in enumerate(batch)]
        got = iter(self._read())  # one entry per search launched, in order
        for _, _, parent, left, right, row in done:
            counts = next(got) if row >= 0 else None
            if counts is not None:
                self.table.pair_ranges(parent, left, right, counts)
        return [Expanded(nan_left, gain, left.split, right.split) for nan_left, gain, _, left, right, _ in done]

    def _partition_level(self, batch: list) -> list:
        """Every split of ``batch`` (a breadth-first level) partitioned at once
        (:meth:`~customobj.ole.cuda.partitions.DevicePartitions.level`: its rows marked in one launch,
        placed and its pairs counted in a second): per split, its pair counts on the card (None when its
        pairs are not partitioned). A split's rows are partitioned when its children are searched or the
        order is read (as :meth:`_expand` decides one split's); none: no launch."""
        gpu, order_read, splits = self.gpu, self._order_read(), []
        for e in batch:
            parent, split, need = self.table[e.leaf], e.split, any(e.need)
            f = split.feature
            splits.append(LevelSplit(f, parent.start, parent.end - parent.start, split.bin, int(gpu.n_bins[f]),
                                     nan_goes_left(gpu.data, parent.hist, split), int(split.left.N), need or order_read,
                                     (parent.pbuf, parent.pstart, parent.pend) if self.use_pairs and need else None))
        if not any(s.rows for s in splits):
            return [None] * len(batch)
        bufs = self.bufs if self.use_pairs else ((gpu.inputs.order,) * 2,) * 2  # no pairs: never read
        return gpu.partitions.level(gpu.bins, gpu.inputs.order, splits, bufs)

    def _level_choice(self, batch: list, level: list) -> bool:
        """Whether ``ole_fast``'s feature choice of a partitioned level runs once for the level
        (:meth:`_expand_level`): every searched split's pairs counted there, its children deferred to the
        level's one search, the choice tables made for the fit."""
        return (self.fast and self.use_pairs and self.gpu.choice.level is not None
                and not self.gpu.inputs.root_pending and any(any(e.need) for e in batch)
                and all(c is not None for e, c in zip(batch, level) if any(e.need)))

    def _expand_level(self, batch: list, level: list) -> list:
        """:meth:`_expand` of every split of a partitioned breadth-first level under ``ole_fast``, in three
        phases, so the level's feature choice is one launch (``wse_choose_level``) where it was one a split:

        1. each split in order: its rows' leaves, its smaller child's row histogram and its pairs' placing
           collected, the larger child's subtraction held for the choice (nothing runs mid-level); then
           every split's placing and row histogram in one launch (:mod:`.level_place`);
        2. one choice of every searched child, each completed and chosen for into its result row of the
           choice's tables (:meth:`~customobj.ole.cuda.choice.DeviceFeatureChoice.choose_level`; a check
           failing, a histogram not the pool's: each split's own choice, as :meth:`_search`'s);
        3. every searched child's pair histogram over its choice in one launch (``chosen_level_pairs``;
           where that cannot be, each split's from its rows of the tables), each split's children then
           deferred to the level's one search (:meth:`_search`).

        Returns :meth:`_expand`'s tuple per split."""
        gpu, done, row = self.gpu, [], 0
        searched: list = []  # (first result row, searched children, pair counts) per split with any
        for k, e in enumerate(batch):
            split = e.split
            nan_left = nan_goes_left(gpu.data, self.table[e.leaf].hist, split)
            parent, left, right = self.table.split(e.leaf, split)
            gpu.memory.counter.split()
            gain, first = gpu.host.split_gain(parent.sums, split.left, split.right), -1
            if any(e.need):
                counts = level[k]
                small, large = (left, right) if left.sums.N <= right.sums.N else (right, left)
                small.hist = self._row_hist(small)
                # the pairs' placing and the row histogram: every split's in one launch, after the loop
                gpu.level_place.add(k, small.start, left.pbuf, gpu.histograms.take_waiting(), gpu.inputs.order,
                                    self.bufs)
                parent.hist -= small.hist
                large.hist = parent.hist
                nodes = [c for c, nd in zip((left, right), e.need) if nd]
                gpu.histograms.queue.hold([n.hist for n in nodes])  # done by the level's choice
                for child, nd in zip((left, right), e.need):
                    if not nd:  # never split: no histograms kept
                        child.hist = child.phist = None
                if self.dropped is not None and self._plans():
                    self._plan(nodes, row, [n for _, ns, _ in searched for n in ns])
                searched.append((row, nodes, counts))
                first, row = row, row + len(nodes)
            done.append((nan_left, gain, parent, left, right, first))
        gpu.level_place.launch()  # before the choice reads the histograms
        held = gpu.histograms.queue.take_held()  # kept alive until the choice's launch
        small_of = {id(a): b for a, b in held}
        pool, table = gpu.pool, []
        for first, nodes, _ in searched:
            for j, n in enumerate(nodes):
                sub = small_of.get(id(n.hist))
                table.append((pool.index_of(n.hist._array), first + j, -1 if sub is None else pool.index_of(sub._array),
                              n.sums))
        if all(h >= 0 for h, _, _, _ in table) and all(pool.index_of(b._array) >= 0 for _, b in held):
            bound = gpu.choice.choose_level(pool.hists, table, self.mask, self.k, gpu.rules)
            inputs = gpu.inputs
            phists = gpu.choice.level_pair_hists(gpu.histograms, [(nodes, counts, first) for first, nodes, counts in searched],
                                                 self.bufs, gpu.partitions.records, inputs.order, gpu.partitions.rho,
                                                 inputs.pair_stats[2:4], bound)
            for k, (first, nodes, counts) in enumerate(searched):
                got = self._search(nodes, counts, chosen=(bound, gpu.choice.level_tables(first)),
                                   phists=None if phists is None else phists[k])
                assert got == first, (got, first)
            return done
        gpu.histograms.queue.restore(held)  # the check failed: applied now, each split choosing its own
        for first, nodes, counts in searched:
            got = self._search(nodes, counts, chosen=(None, None))
            assert got == first, (got, first)
        return done

    def _expand(self, e: Expansion, level: Optional[tuple] = None) -> tuple:
        """Leaf ``e.leaf`` split on the card, its searched children's searches launched (nothing read):
        ``(nan_left, gain, parent, left, right, first result row or -1)``. ``level``: ``(k, counts)``, the
        split is the batch's ``k``-th, partitioned by :meth:`_partition_level` (``counts``: its pairs')."""
        gpu, split = self.gpu, e.split
        nan_left = nan_goes_left(gpu.data, self.table[e.leaf].hist, split)
        parent, left, right = self.table.split(e.leaf, split)
        gpu.memory.counter.split()
        if level is None and (any(e.need) or self._order_read()):
            f = split.feature
            gpu.partitions.rows(gpu.bins[f], gpu.inputs.order, parent.start, parent.end - parent.start, split.bin,
                                int(gpu.n_bins[f]), nan_left, left.end - left.start)
        counts, gain, row = None, float(split.gain), -1
        if self.use_pairs:
            if any(e.need) and level is not None:  # counted with the level's: placed now (ole: placed already)
                counts = level[1]
                if self.fast:
                    gpu.partitions.placed(level[0], self.bufs[left.pbuf], wait=True)
                else:
                    gpu.partitions.level_sides(level[0])  # its children's rows, for their R
            elif any(e.need):  # nothing read: the counts stay on the card
                counts = gpu.partitions.pairs(self.bufs[parent.pbuf], parent.pstart, parent.pend, self.bufs[left.pbuf],
                                              wait=self.fast)  # ole_fast: placed with the row histogram
            gain = gpu.host.split_gain(parent.sums, split.left, split.right)
        if any(e.need):
            self._child_histograms(parent, left, right, e.need, counts)
            row = self._search([c for c, nd in zip((left, right), e.need) if nd], counts)
        return nan_left, gain, parent, left, right, row

    def end(self, spans: Optional[list] = None) -> TreeRows:
        """The tree's row order (read only when the host needs it) and ``ole_fast``'s dropped couplings:
        from the plan's sums when each final leaf is a planned leaf or a side of its split, else summed now
        (one read).
        ``spans``: the tree's leaves in the table's (:meth:`~customobj.ole.leaf_table.LeafTable.spans`)."""
        gpu = self.gpu
        gpu.memory.counter.tree_splits((len(self.table) if spans is None else len(spans)) - 1)
        gpu.histograms.queue.flush()  # none is left to a later tree
        gpu.partitions.flush()
        gpu.partitions.place_sides(None)  # none is left waiting (ole_fast's are taken at their split)
        gpu.inputs.end_tree()
        if gpu.pruning is None or not gpu.pruning.pending:  # else the tree ends with its dropped couplings
            gpu.memory.counter.end_tree()
        order = None
        if gpu.order_on_host():
            order = self.order
            order[:] = gpu.memory.read(gpu.inputs.order)
        ranges = self.table.spans(spans)
        starts, ends = self.table.bounds(ranges)
        dropped = None
        if self.dropped is not None:
            dropped = gpu.inputs.dropped_couplings(ranges, self.dropped, self._planned_sources(ranges))
        return TreeRows(order, starts, ends, dropped)

    # --- the steps ----------------------------------------------------------------------------------
    def _order_read(self) -> bool:
        """Whether the row order is read after the tree (the host's scores, the joint solve, the
        dropped couplings of leaves no plan summed): then every split partitions its rows, and always
        under best-first lookahead, whose plan may go unused (a leaf expanded ahead and never split)."""
        gpu = self.gpu
        planned = gpu.inputs.planned_got is not None or self._tail_n > 0  # read, or to be read with the batch
        return gpu.order_on_host() or (gpu.pruning is not None and (gpu.lookahead > 1 or not planned))

    def _plans(self) -> bool:
        """Whether a search plans the leaves' dropped couplings (:meth:`_plan`): with ``num_leaves - 1``
        leaves (at most one split follows), or ``num_leaves`` (lookahead; the plan's sums hold no more)."""
        return self.gpu.num_leaves - 1 <= len(self.table) <= self.gpu.num_leaves

    def _row_hist(self, leaf: LeafRows, root: bool = False) -> Any:
        """The row histogram of ``leaf``, built on the card from the device order and on-grid gradients."""
        gpu = self.gpu
        gpu.partitions.flush()  # the last row partition placed
        rows = gpu.inputs
        return gpu.histograms.rows(rows.order[leaf.start:leaf.end], leaf.end - leaf.start, rows.gh,
                                   rows.row_stats[2:4], root=root, pairs=rows.root_pairs() if root else None)

    def _child_histograms(self, parent: LeafRows, left: LeafRows, right: LeafRows, need: tuple, counts: Any) -> None:
        """Row histograms: the smaller child's built, the larger's by subtraction (queued). Pair
        histograms: planned and built in one launch from the counts on the card."""
        gpu = self.gpu
        small, large = (left, right) if left.sums.N <= right.sums.N else (right, left)
        small.hist = self._row_hist(small)
        if self.fast and counts is not None:  # the split's waiting pair placing and this row histogram: one launch
            gpu.partitions.place_sides(gpu.histograms.take_waiting())
        parent.hist -= small.hist
        large.hist = parent.hist
        if counts is not None and not self.fast:
            rows = (left.sums.N, right.sums.N, parent.sums.N)
            nodes = gpu.partitions.node_rows(gpu.inputs.order, [0, 1], gpu.inputs.root_rows())  # their R
            left.phist, right.phist = gpu.histograms.children(self.bufs[left.pbuf], parent.pstart, parent.pend,
                                                              counts.record, parent.phist, rows, tuple(need),
                                                              gpu.inputs.pair_stats[2:4], tuple(nodes))
        for child, nd in zip((left, right), need):
            if not nd:  # never split: no histograms kept
                child.hist = child.phist = None

    def _search(self, nodes: list, counts: Any, chosen: Optional[tuple] = None, phists: Optional[list] = None) -> int:
        """The best splits of one or two ``nodes`` (a root, or a split's searched children) launched into
        the next result rows (one launch, nothing read: :meth:`_read` reads the batch's); returns the
        first row. ``counts``: the pair counts (on the card) that come back with them, or None.
        ``chosen``: a level's split (:meth:`_expand_level`, its plan made there), ``(bound, tables)`` when
        its features were chosen with the level's (:meth:`.choice.DeviceFeatureChoice.level_tables`), or
        ``(None, None)`` to choose them here; either way its nodes' rows are their own leaves'. ``phists``:
        their pair histograms, built with the level's (``chosen_level_pairs``), else built here."""
        gpu = self.gpu
        if not 0 < len(nodes) <= 2:
            raise ValueError(f"a device search takes one or two nodes, got {len(nodes)}")
        row = sum(len(p[0]) for p in self._pending)
        if chosen is None and self.dropped is not None and self._plans():
            self._plan(nodes, row)
        inputs = gpu.inputs
        bound, tables = (None, None) if chosen is None else chosen
        searches: list  # (row hist, pair hist or None, mask or None, sums) on the card, per node
        if self.use_pairs and self.fast:  # features chosen on the card, their pair histograms, the OLE search
            keep = row if self._deferred is not None and not inputs.root_pending else -1  # for the batch's search
            if tables is None:
                sub = gpu.histograms.queue.take([n.hist for n in nodes], drop_others=True)
                bound = gpu.choice.choose(gpu.search, [(n.hist.array, n.sums) for n in nodes], self.mask, self.k,
                                          gpu.rules, inputs.root, inputs.root_pending, sub, keep)
            if phists is None:
                pairs = [n.pairs(self.bufs, counts) for n in nodes]
                if chosen is None:
                    rows = gpu.partitions.node_rows(inputs.order, [p.side for p in pairs], inputs.root_rows())  # their R
                else:  # a level's: each split's own rows (the partitions' last rows are the level's last split's)
                    rows = [inputs.root_rows()._replace(rows=inputs.order[n.start:n.end], n=n.end - n.start) for n in nodes]
                phists = gpu.choice.pair_hists(gpu.histograms, pairs, inputs.pair_stats[2:4], bound, rows, tables)
            searches = [(n.hist.array, ph.array, None, n.sums) for n, ph in zip(nodes, phists)]  # masks: the pool's
            if keep >= 0 and self._defer(searches, counts, row):
                for node, ph in zip(nodes, phists):
                    node.phist = ph  # held (not back in the pool) until the batch's search
                planned = inputs.planned_sums()
                if planned is not None:  # summed after the batch's search, before its read (_read)
                    self._planned_launch, self._tail_n = planned
                self._pending.append((nodes, False, counts is not None))
                return row
            if tables is not None:  # not deferred: the search reads the pool's mask slots
                for j in range(len(nodes)):
                    gpu.pool.mask[j].copy_to_device(gpu.choice.masks[row + j])
                gpu.pool.masks_written()
        else:
            searches = [(n.hist.array, None if n.phist is None or not self.use_pairs else n.phist.array, self.mask, n.sums)
                        for n in nodes]
            if self._defer(searches, counts, row):
                self._pending.append((nodes, False, counts is not None))
                return row
        gpu.search.launch(searches, gpu.rules, inputs.root, inputs.root_pending,
                          None if counts is None else counts.record, row)
        planned = inputs.planned_sums()
        if planned is not None:  # summed after the search, before the read (which brings them)
            planned[0]()
            self._tail_n = planned[1]
        self._pending.append((nodes, inputs.root_pending, counts is not None))
        if self.fast:
            for node in nodes:
                node.phist = None  # no subtraction in ole_fast: each node's features differ
        return row

    def _defer(self, searches: list, counts: Any, row: int) -> bool:
        """Whether ``searches`` (a split's children's) join the batch's one search launch (:meth:`_read`):
        when every histogram is one of the pool's and the split's partition record is in the ring."""
        if self._deferred is None or self.gpu.inputs.root_pending:
            return False
        pool, rec = self.gpu.pool, -1 if counts is None else counts.index
        got = [(pool.index_of(h), -1 if ph is None else pool.index_of(ph)) for h, ph, _, _ in searches]
        if any(h < 0 or (ph >= 0) != self.use_pairs for h, ph in got) or (counts is not None and rec < 0):
            return False
        chosen = self.fast and self.use_pairs  # ole_fast's nodes: each one's own choice, by result row
        for k, ((h, ph), s) in enumerate(zip(got, searches)):
            self._deferred.append([h, ph, rec if k == 0 else -1, row + k, row + k if chosen else 0, *_node(s[3])])
        return True

    def _read(self) -> list:
        """One read of every search launched since the last (:meth:`_search`), their splits kept in
        their nodes' rows of the table; returns, per search, the pair counts that came back with it
        (None without)."""
        gpu, pending, tail_n, deferred = self.gpu, self._pending, self._tail_n, self._deferred
        self._pending, self._tail_n, self._deferred = [], 0, None
        if not pending:
            return []
        if deferred:
            chosen = self.fast and self.use_pairs  # each node's choice (_defer's mask rows), else the fit's mask
            masks = gpu.choice.masks if chosen else gpu.pool.mask
            if not chosen:
                gpu.pool.feature_mask(self.mask, 0)
            gpu.search.launch_batch(np.array(deferred, dtype=np.float64), gpu.pool.hists, gpu.partitions.records,
                                    masks, self.use_pairs, gpu.rules)
            planned, self._planned_launch = self._planned_launch, None
            if planned is not None:
                planned()
            if self.fast:
                for nodes, _, _ in pending:
                    for node in nodes:
                        node.phist = None  # no subtraction in ole_fast: each node's features differ
        res = gpu.search.read(sum(len(p[0]) for p in pending), tail_n)
        if tail_n:
            gpu.inputs.planned_got = gpu.search.tail_values
        out, row = [], 0
        for nodes, root_pending, with_counts in pending:
            if root_pending:  # the root's search: its sums came with its split
                G, H, C = gpu.inputs.found_root(res[row][NODE_SUMS:NODE_SUMS + 3])
                nodes[0].sums = ChildSums(G, H, nodes[0].sums.N, C)
            for node, r in zip(nodes, res[row:row + len(nodes)]):
                node.split = split = SplitInfo.from_array(r[:SPLIT_SIZE])
                if split.feature >= 0 and gpu.data.mapper.has_nan[split.feature]:  # its NaN count: no read for it
                    node.hist.known(gpu.data.offsets[split.feature] + int(gpu.n_bins[split.feature]), HIST_COUNT,
                                    float(r[SPLIT_SIZE]))
            out.append((int(res[row, PAIR_COUNTS]), int(res[row, PAIR_COUNTS + 1])) if with_counts else None)
            row += len(nodes)
        return out

    def _plan(self, searching: list, row: int, earlier: Optional[list] = None) -> None:
        """At most one split follows this search: the leaves' dropped couplings are summed with it (each
        leaf's, and each side's of its split: those of the batch's searched leaves, this search's at
        rows ``row, row + 1``, as the searches find them, in their result rows). ``earlier``: the nodes
        searched earlier in this batch, in their rows' order (default: those launched, not read yet)."""
        if earlier is None:
            earlier = [node for nodes, _, _ in self._pending for node in nodes]
        slot = {id(node): at for at, node in enumerate(earlier)}
        slot.update((id(node), row + k) for k, node in enumerate(searching))
        plan = [(l.start, l.end, slot.get(id(l), l.split if l.split.gain > 0 else None)) for l in self.table.leaves]
        self.planned = [(l, side is not None) for l, (_, _, side) in zip(self.table.leaves, plan)]
        self.gpu.inputs.plan_dropped_sums(plan, self.dropped)

    def _planned_sources(self, ranges: list) -> Optional[list]:
        """Each final leaf's ``(planned leaf, part)`` by its rows ``ranges``: part 0, a planned leaf's
        rows; 1 / 2, the left / right side of the split a planned leaf's sums were planned with (found by
        the plan's search, or known then). None when a leaf is neither (split twice after the plan)."""
        if self.planned is None:
            return None
        where = {(leaf.start, leaf.end): (i, 0) for i, (leaf, _) in enumerate(self.planned)}
        for i, (leaf, sides) in enumerate(self.planned):
            if sides and leaf.split.gain > 0:
                mid = leaf.start + int(leaf.split.left.N)
                where.setdefault((leaf.start, mid), (i, 1))
                where.setdefault((mid, leaf.end), (i, 2))
        out = [where.get((int(s), int(e))) for s, e in ranges]
        return None if any(o is None for o in out) else out
