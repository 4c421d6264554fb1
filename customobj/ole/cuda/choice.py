"""``criterion="ole_fast"``'s node search on the GPU with one blocking read: the features are chosen
where their gains are.

``ole_fast`` (Xia, Zhai, Wang, section 3.1; :mod:`customobj.ole.grower`) builds each node's pair
histogram only for the ``k`` features of largest WSE gain. :class:`~customobj.ole.cuda.tree.DeviceTree`
runs, for a split's two children at once:

1. :class:`DeviceFeatureChoice`: the WSE gains of every feature and, by the kernel's last block,
   each node's top ``k`` and their shared-memory groups (:func:`._choice_kernels.wse_choose`
   through :meth:`~customobj.ole.cuda.search.DeviceSearch.choose_features`; 1 launch, as the gains
   alone took; the larger child's row histogram, ``parent - smaller``, completed there first), into
   the pool's two mask slots and the tables held here; a breadth-first level's searched children
   all in one launch (:meth:`DeviceFeatureChoice.choose_level`, :func:`._choice_kernels.wse_choose_level`),
   each into its result row of tables made once per fit (:meth:`DeviceFeatureChoice.level_tables`),
   and their pair histograms in one more (:meth:`DeviceFeatureChoice.level_pair_hists`);
2. the nodes' pair histograms from those tables: a split's children's (or a root's, from its kept
   count) in one launch from counts on the card (``chosen_child_pairs``), else one per node
   (:func:`._histograms_kernels.pair_hist_shared`), sized by the bound ``min(k, features in the
   mask)`` on groups and on features per group: the blocks of absent groups return at once;
3. the OLE split search of both (:class:`~customobj.ole.cuda.search.DeviceSearch`, 1 launch) and
   the one read of the splits.

The choice, the groups and therefore the histograms and splits are the CPU's
(tests/test_ole_cuda_choice.py).

Examples
--------
>>> import numpy as np
>>> from customobj.ole.cuda import _search_kernels, _choice_kernels, _split_kernels
>>> from customobj.ole.common import ChildSums
>>> from customobj.ole.criterion import SE
>>> from customobj.ole.cuda.memory import DeviceMemory
>>> from customobj.ole.cuda.pool import DevicePool
>>> from customobj.ole.cuda.search import DeviceSearch
>>> from customobj.ole.splitting import FeatureBins, SplitRules
>>> mem = DeviceMemory()
>>> pool = DevicePool(mem, n_rows=4, n_features=3, n_slots=9, n_hists=1)
>>> bins = FeatureBins(mem.upload(np.array([2, 2, 2])), mem.upload(np.array([0, 3, 6])))
>>> search = DeviceSearch(mem, _split_kernels, _search_kernels, pool, bins, n_features=3, has_nan=False)
>>> choice = DeviceFeatureChoice(mem, _choice_kernels, pool, n_features=3, n_slots=9)
>>> g = [[0.0, 0.0, 0.0], [-1.0, 1.0, 2.0], [-3.0, 3.0, 2.0]]  # feature 2 separates best, then 1
>>> hist = mem.upload(np.array([[g[f][b], 1.0, 2.0] if b < 2 else [0.0, 0.0, 0.0]
...                             for f in range(3) for b in range(3)]))
>>> choice.choose(search, [(hist, ChildSums(0.0, 2.0, 4.0, 0.0))], np.ones(3, np.bool_), 2,
...               SplitRules(SE, 0.0, 1.0, 0.0), mem.upload(np.zeros(4)), False)  # the bound on features
2
>>> mem.read(pool.mask)[0].tolist()  # features 1 and 2: the two largest WSE gains
[False, True, True]
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ._histograms_kernels import GROUP_COLUMNS, MEMBER_COLUMNS, SHARED_SLOTS, launch_shape
from ._choice_kernels import (LC_COLUMNS, LC_HIST, LC_ROW, LC_SMALL, LC_SUMS, LP_BUF, LP_COLUMNS, LP_N, LP_OUT,
                              LP_RECORD, LP_ROW, LP_ROWS, LP_SIDE, LP_START, FeatureChoice, LevelChoice, LevelPairs)
from ._launch import feature_launch
from ..common import SPLIT_SIZE
from ..criterion import WSE
from .memory import DeviceMemory

__all__ = ["DeviceFeatureChoice"]


class DeviceFeatureChoice:
    """``ole_fast``'s feature choice of one or two nodes on the device (see the module docstring).

    Parameters
    ----------
    memory : DeviceMemory
        Allocates the tables once per fit.
    kernels : module or CountedKernels
        :mod:`._choice_kernels`, wrapped by :mod:`.stats` when counted.
    pool : DevicePool
        Its two mask slots receive the chosen features (the split search reads them there).
    n_features, n_slots : int
        Features and histogram slots of the binned matrix.
    rows : int
        Result rows of a batch's searches (:attr:`masks` has one per row).
    level_slots : int
        Slots of a node's chosen features at most (``k (max bins + 1)``); > 0: the tables of a
        breadth-first level's choice (:meth:`choose_level`) are made here, a row per result row,
        once per fit; 0: none (not ``ole_fast``).
    bins : FeatureBins, optional
        The features' bin counts and offsets on the card (the level's choice: :meth:`choose_level`).
    """

    def __init__(self, memory: DeviceMemory, kernels: Any, pool: Any, *, n_features: int, n_slots: int,
                 rows: int = 2, level_slots: int = 0, bins: Any = None) -> None:
        self._kernels, self._pool, self._memory = kernels, pool, memory
        f = max(int(n_features), 1)
        self._n_features = int(n_features)
        self.record = FeatureChoice(memory.array((f,), np.bool_), pool.mask, memory.array((2, f, GROUP_COLUMNS), np.int64),
                                    memory.array((2, f, MEMBER_COLUMNS), np.int64),
                                    memory.array((2, max(int(n_slots), 1)), np.int64))
        self._mask_host: Optional[np.ndarray] = None
        self._bins = bins
        #: each searched node's chosen features by its result row, kept for a batch's one search
        self.masks = memory.array((max(int(rows), 2), f), np.bool_)
        self.level: Optional[FeatureChoice] = None  #: a level's choices by result row (keep: :attr:`masks`)
        if level_slots > 0:
            n = self.masks.shape[0]
            self.level = FeatureChoice(self.record.mask, self.masks, memory.array((n, f, GROUP_COLUMNS), np.int64),
                                       memory.array((n, f, MEMBER_COLUMNS), np.int64),
                                       memory.array((n, min(int(level_slots), max(int(n_slots), 1))), np.int64))
            # the level's search scratch (per-feature records and gains, a row per node), its ticket, its table
            self._per = memory.array((n, f, SPLIT_SIZE), np.float64)
            self._gains = memory.array((n, f), np.float64)
            self._done = memory.upload(np.zeros(1, np.int64))
            self._table = memory.array((n, LC_COLUMNS), np.float64)
            self._table_host = memory.staged((n, LC_COLUMNS), np.float64)
            self._pairs_table = memory.array((n, LP_COLUMNS), np.int64)  # the level's pair histograms, a row a split
            self._pairs_host = memory.staged((n, LP_COLUMNS), np.int64)

    def choose(self, search: Any, nodes: list, mask: np.ndarray, k: int, rules: Any, root: Any,
               root_on_device: bool, subtract: Optional[tuple] = None, row: int = -1) -> int:
        """The WSE gains of one or two nodes (``(device hist, sums)`` each) and each one's top ``k``
        features of ``mask`` (:meth:`~customobj.ole.cuda.search.DeviceSearch.choose_features`: one
        launch; with ``row >= 0`` also into :attr:`masks` rows ``row, row + 1``, for a batch's one
        search); returns the bound on their number, ``min(k, mask.sum())`` (the histograms' launch)."""
        count = self._fit_mask(mask)
        search.choose_features(nodes, self._kernels.wse_choose, self.record, k, rules, root, root_on_device, subtract,
                               None if row < 0 else (int(row), self.masks))
        self._pool.masks_written()
        return int(min(int(k), count))

    def _fit_mask(self, mask: np.ndarray) -> int:
        """The fit's ``mask`` on the card (copied when it changed); returns its feature count."""
        host = np.ascontiguousarray(mask, dtype=np.bool_)
        if host.shape != (self._n_features,):
            raise ValueError(f"mask must have one entry per feature ({self._n_features}), got shape {host.shape}")
        if self._mask_host is None or not np.array_equal(host, self._mask_host):
            self._mask_host = host.copy()
            self._memory.copy_in(self.record.mask, host)
        return int(host.sum())

    def choose_level(self, hists: Any, nodes: list, mask: np.ndarray, k: int, rules: Any) -> int:
        """Every searched node of a breadth-first level chosen for in one launch
        (:func:`._choice_kernels.wse_choose_level`): ``nodes``, ``(pool index, result row, pool index of
        the histogram it is completed by or -1, sums)`` each, ``hists`` the pool's histograms; each node's
        top ``k`` features of ``mask`` and their groups into its result row of :attr:`level`'s tables
        (:meth:`level_tables`; :attr:`masks`, which the level's one search reads). The table travels in one
        queued copy; nothing is read. Returns the bound on their number, ``min(k, mask.sum())``."""
        if self.level is None or self._bins is None:
            raise RuntimeError("this fit has no level tables (level_slots 0, or no bins)")
        n = len(nodes)
        if not 0 < n <= self.masks.shape[0]:
            raise ValueError(f"a level's choice takes 1 to {self.masks.shape[0]} nodes, got {n}")
        rows = [int(r) for _, r, _, _ in nodes]
        if min(rows) < 0 or max(rows) >= self.masks.shape[0] or len(set(rows)) != n:
            raise ValueError(f"a level's result rows must be distinct, 0 to {self.masks.shape[0] - 1}: {rows}")
        count = self._fit_mask(mask)
        table = self._table_host
        for row, (h, r, small, sums) in zip(table, nodes):
            row[LC_HIST], row[LC_ROW], row[LC_SMALL] = h, r, small
            row[LC_SUMS:LC_SUMS + 3] = (float(sums.G), float(sums.H), float(sums.N))
        # queued behind the launches: the staged table is written again only at a later level, after this
        # one's read (as partitions.level's)
        dev = self._memory.copy_in_queued(self._table, table, n)
        self._kernels.wse_choose_level[feature_launch(self._n_features, n)](
            LevelChoice(hists, dev), self._bins, rules._replace(score=WSE), self._per[:n], self._gains[:n], self._done,
            self.level, int(k), SHARED_SLOTS)
        return int(min(int(k), count))

    def level_tables(self, row: int) -> FeatureChoice:
        """The level's choice tables from result row ``row`` (a split's searched children: rows ``row``,
        ``row + 1``), as ``chosen_child_pairs`` reads a split's two (leading-dimension views: nothing made
        on the card)."""
        lv = self.level
        if lv is None or not 0 <= row < self.masks.shape[0]:
            raise ValueError(f"no level tables at row {row}")
        return FeatureChoice(lv.mask, lv.keep[row:row + 2], lv.groups[row:row + 2], lv.members[row:row + 2],
                             lv.slot_map[row:row + 2])

    def level_pair_hists(self, hists: Any, splits: list, bufs: tuple, records: Any, order: Any, rho: Any, steps: Any,
                         bound: int) -> Optional[list]:
        """The pair histograms of every searched child of a level's splits in one launch
        (:func:`._choice_kernels.chosen_level_pairs`, over their :meth:`choose_level` choices): ``splits``,
        ``(children, counts, row)`` each, its searched children (:class:`~customobj.ole.leaf_table.LeafRows`:
        their pair buffer, side and rows), its pair partition's counts on the card
        (:class:`~.partitions.DevicePairCounts`, a row of ``records``) and its first child's result row;
        ``bufs`` the tree's two pair buffers, ``order`` / ``rho`` the device row order and coupling sums,
        ``hists`` the fit's :class:`~customobj.ole.cuda.histograms.DeviceHistograms`. The table travels in
        one queued copy; nothing is read. Returns each split's histograms, or None (nothing launched)
        when one is not the pool's or a record is not the ring's: then each split's own launch."""
        n = len(splits)
        if self.level is None or not 0 < n <= self._pairs_host.shape[0]:
            raise ValueError(f"a level's pair histograms take 1 to {self._pairs_host.shape[0]} splits, got {n}")
        if any(not 0 < len(children) <= 2 for children, _, _ in splits):
            raise ValueError("a split has one or two searched children")
        if any(counts.index < 0 for _, counts, _ in splits):
            return None
        pool = hists.pool
        outs = [[hists.zeroed() for _ in children] for children, _, _ in splits]
        if any(pool.index_of(o) < 0 for m in outs for o in m):
            for o in (o for m in outs for o in m):
                pool.give_back(o)  # not launched: free again (written: cleared again when taken)
            return None
        table, most = self._pairs_host, 0
        for t, (children, counts, row), mine in zip(table, splits, outs):
            t[:] = -1
            t[LP_RECORD], t[LP_BUF], t[LP_START], t[LP_ROW] = counts.index, children[0].pbuf, children[0].pstart, row
            for c, (child, o) in enumerate(zip(children, mine)):
                t[LP_SIDE + c] = 0 if child.is_left else 1
                t[LP_OUT + c], t[LP_ROWS + c], t[LP_N + c] = pool.index_of(o), child.start, child.end - child.start
                most = max(most, child.pend - child.pstart, child.end - child.start)  # the parent's pairs: a bound
        if most > 0 and bound:
            dev = self._memory.copy_in_queued(self._pairs_table, table, n)
            (chunks, n_groups), threads = launch_shape(most, bound, bound)
            (pi0, pj0, pc0), (pi1, pj1, pc1) = bufs[0], bufs[-1]
            lv = LevelPairs(dev, records, pi0, pj0, pc0, pi1, pj1, pc1, pool.hists, order, rho, steps)
            self._kernels.chosen_level_pairs[(chunks, n_groups, 4 * n), threads](hists.bins_rm, lv, self.level)
        return [[hists.kept(o) for o in mine] for mine in outs]

    def pair_hists(self, hists: Any, nodes: list, steps: Any, bound: int, rows: list,
                   tables: Optional[FeatureChoice] = None) -> list:
        """The pair histograms of the nodes just chosen for (:meth:`choose`; ``nodes``: their
        :class:`~customobj.ole.backend.NodePairs`, couplings on the grid of step ``steps[0]``) over their
        chosen features, at most ``bound`` each (``hists``: the fit's
        :class:`~customobj.ole.cuda.histograms.DeviceHistograms`): a split's children whose pair counts are
        still on the card in one launch (``chosen_child_pairs``), else one launch per node; ``rows``: each
        node's :class:`._histograms_kernels.NodeRows` (its pair histogram's ``R``); ``tables``: the choice's
        tables (default: the split's own, :attr:`record`; a level's: :meth:`level_tables`)."""
        if nodes[0].counts is not None:  # on the card
            return hists.chosen_children(nodes, steps, bound, self.record if tables is None else tables, rows)
        if tables is not None:
            raise ValueError("a level's choice is for a split's children, whose pair counts are on the card")
        out = []
        for slot, (p, node) in enumerate(zip(nodes, rows)):
            start, end = p.range()
            n = (end - start) if bound else 0
            out.append(hists.pairs_with(p.buf, start, n, steps, launch_shape(max(n, node.n), bound, bound),
                                        self.tables(slot), node))
        return out

    def tables(self, slot: int) -> tuple:
        """Node ``slot``'s ``(groups, members, slot_map)`` on the device (:func:`._histograms_kernels.feature_groups`'s)."""
        r = self.record
        return r.groups[slot], r.members[slot], r.slot_map[slot]
