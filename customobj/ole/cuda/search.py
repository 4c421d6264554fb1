"""The OLE GPU backend's split search (:mod:`.backend`): a node, or a split's two children,
searched in one launch and the chosen splits read in one copy.

:class:`DeviceSearch` holds what every search reuses (made once per fit: two nodes' per-feature
records and gains, their results, the ticket counter of the search kernel) and launches, through
the fit's counted kernels (:mod:`.stats`):

- :meth:`DeviceSearch.splits`: :func:`._search_kernels.search_nodes` (1 launch for one or two
  nodes: the CPU's per-feature search, then the pick by the last block) and one read of
  :data:`~customobj.ole.common.RESULT_SIZE` float64 per node (the split record, the chosen
  feature's NaN count, a root's sums, the pair counts of the split whose children they are);
- :meth:`DeviceSearch.launch` / :meth:`DeviceSearch.read`: the same launch into a batch's own result
  rows, and one read of every search of a batch (issue 42, item 3: a frontier per read);
- :meth:`DeviceSearch.launch_batch`: :func:`._search_kernels.search_batch`, every child of a batch of
  splits in one launch (a table row per node, :class:`~._search_kernels.BatchNodes`);
- :meth:`DeviceSearch.wse_gains`: :func:`._split_kernels.feature_bests` with the WSE score
  (a node's ranking of the features; 1 launch for one or two nodes) and one read of the gains;
- :meth:`DeviceSearch.choose_features`: the same gains and, by the last block, each node's top ``k``
  features chosen where the gains are (``ole_fast``: :func:`._choice_kernels.wse_choose`; 1
  launch, no read; :mod:`.choice`).

The kernels' arguments travel as records (:class:`NodeHists`, :class:`SearchOut`). A tree's root
can be searched from its sums on the device (``root_on_device``: ``root[0:3]`` are its ``G, H, C``),
which then come back with its split.

Examples
--------
>>> import numpy as np
>>> from customobj.ole.cuda import _search_kernels, _split_kernels
>>> from customobj.ole.common import ChildSums, SplitInfo
>>> from customobj.ole.criterion import SE
>>> from customobj.ole.cuda.memory import DeviceMemory
>>> from customobj.ole.cuda.pool import DevicePool
>>> from customobj.ole.splitting import FeatureBins, SplitRules
>>> mem = DeviceMemory()
>>> bins = FeatureBins(mem.upload(np.array([2])), mem.upload(np.array([0])))  # one feature, 2 bins
>>> search = DeviceSearch(mem, _split_kernels, _search_kernels, DevicePool(mem, n_rows=4,
...                       n_features=1, n_slots=3, n_hists=1), bins, n_features=1, has_nan=False)
>>> hist = mem.upload(np.array([[-2.0, 1.0, 2.0], [2.0, 1.0, 2.0], [0.0, 0.0, 0.0]]))  # [g, h, count]
>>> res = search.splits([(hist, None, np.ones(1, np.bool_), ChildSums(0.0, 2.0, 4.0, 0.0))],
...                     SplitRules(SE, 0.0, 1.0, 0.0), mem.upload(np.zeros(4)), False)
>>> split = SplitInfo.from_array(res[0])
>>> split.feature, split.bin, float(split.left.G)
(0, 0, -2.0)
"""
from __future__ import annotations

from typing import Any, NamedTuple, Optional

import numpy as np

from ._histograms_kernels import SHARED_SLOTS
from ._launch import feature_launch
from ._choice_kernels import Completion
from ._search_kernels import BATCH_COLUMNS, BATCH_MASK, BATCH_ROW, BatchNodes
from ..backend import _node
from ..common import PART_RECORD, PH_CHANNELS, RESULT_SIZE, SPLIT_SIZE
from ..criterion import WSE
from .memory import DeviceMemory

__all__ = ["DeviceSearch", "NodeHists", "SearchOut"]


class NodeHists(NamedTuple):
    """The histograms and feature masks of one or two nodes (``_b``: ``_a`` again for one node)."""

    row_a: Any
    row_b: Any
    pair_a: Any
    pair_b: Any
    mask_a: Any
    mask_b: Any


class SearchOut(NamedTuple):
    """:func:`~customobj.ole.cuda._search_kernels.search_nodes`' outputs: the per-feature records and
    gains of each node, each node's result and the blocks' ticket counter (0 between searches)."""

    per: Any
    gains: Any
    res: Any
    done: Any


class DeviceSearch:
    """A fit's split-search buffers and launches (see the module docstring).

    Parameters
    ----------
    memory : DeviceMemory
        Allocates the search buffers once per fit and counts the one blocking read of each search.
    split_kernels, kernels : module or CountedKernels
        The split kernels (:mod:`._split_kernels`) and the node kernels (:mod:`._search_kernels`),
        wrapped by :mod:`.stats` when counted.
    pool : DevicePool
        Holds the nodes' feature masks on the device.
    bins : FeatureBins
        The features' bin counts and histogram offsets, on the device.
    n_features : int
        Features of the binned matrix.
    has_nan : bool
        Whether any feature has a NaN bin (the NaN count of the chosen feature is then looked up).
    """

    def __init__(self, memory: DeviceMemory, split_kernels: Any, kernels: Any, pool: Any, bins: Any, *, n_features: int,
                 has_nan: bool, tail: int = 0, nodes: int = 2) -> None:
        self.memory, self._split_kernels, self._kernels, self._pool, self._bins = memory, split_kernels, kernels, pool, bins
        f = max(int(n_features), 1)
        self._n_features, self._has_nan = int(n_features), bool(has_nan)
        # the tail first, its used rows last, then a batch's results: one read takes both (a contiguous slice)
        self._tail_rows = -(-max(int(tail), 0) // RESULT_SIZE)
        self.result_rows = max(int(nodes), 2)  #: nodes a batch's searches hold before their one read
        self._res = memory.array((self._tail_rows + self.result_rows, RESULT_SIZE), np.float64)
        self._out = SearchOut(memory.array((2, f, SPLIT_SIZE), np.float64), memory.array((2, f), np.float64),
                              self._res[self._tail_rows:self._tail_rows + 2], memory.upload(np.zeros(1, np.int64)))
        self.tail_values: Optional[np.ndarray] = None  # what the last read of the tail brought
        self._wse = memory.array((2, f), np.float64)  # ole_fast: two nodes' WSE gains, one read
        self._no_ph = memory.upload(np.zeros((1, PH_CHANNELS)))
        self._no_record = memory.upload(np.zeros(PART_RECORD, np.int64))  # no pair counts to bring back
        # a batch's searches in one launch (search_batch): every node's records, gains and table row
        self._batch = SearchOut(memory.array((self.result_rows, f, SPLIT_SIZE), np.float64),
                                memory.array((self.result_rows, f), np.float64), self.results, self._out.done)
        self._table = memory.array((self.result_rows, BATCH_COLUMNS), np.float64)
        self._table_host = memory.staged((self.result_rows, BATCH_COLUMNS), np.float64)

    def _launch(self, n_nodes: int) -> tuple:
        """``((features, nodes), threads)``: a warp per feature and node (``_launch.feature_launch``)."""
        return feature_launch(self._n_features, n_nodes)

    def _hists(self, rows: list, pairs: list, masks: list) -> NodeHists:
        # a mask None is on the device already, in the pool's slot (ole_fast's choice, .choice)
        dev = [self._pool.mask[slot, :self._n_features] if m is None else self._pool.feature_mask(m, slot)
               for slot, m in enumerate(masks)]
        pairs = [self._no_ph if p is None else p for p in pairs]
        return NodeHists(rows[0], rows[-1], pairs[0], pairs[-1], dev[0], dev[-1])

    @property
    def results(self) -> Any:
        """The searches' result rows on the device, ``(result_rows, RESULT_SIZE)`` (a batch's searches
        write rows ``row, row + 1``, :meth:`launch`): what a kernel launched before their read may read."""
        return self._res[self._tail_rows:]

    def tail(self, n: int) -> Any:
        """``n`` float64 on the device read with the next :meth:`read` of results (``tail_n``)."""
        if n > self._tail_rows * RESULT_SIZE:
            raise ValueError(f"the search's tail holds {self._tail_rows * RESULT_SIZE} values, not {n}")
        k = -(-int(n) // RESULT_SIZE)  # the tail's last k rows, just before the results
        return self._res[self._tail_rows - k:self._tail_rows].reshape(k * RESULT_SIZE)[:n]

    def splits(self, searches: list, rules: Any, root: Any, root_on_device: bool,
               pair_record: Optional[Any] = None, before_read: Optional[Any] = None, tail_n: int = 0) -> np.ndarray:
        """The results of one or two nodes' searches, each ``(hist, phist, mask, sums)`` (device
        histograms, ``phist`` None without pairs, both nodes alike): ``(nodes, RESULT_SIZE)``, read in
        one copy (:meth:`launch` into rows 0, 1, then :meth:`read`). ``root_on_device``: node 0 is a
        root whose ``G, H, C`` are ``root[0:3]``; ``pair_record``: a pair partition's record whose counts
        come back in node 0's result; ``before_read``: called after the launch, before the read (more
        launches); ``tail_n``: the first values of :meth:`tail` come back in the same copy
        (:attr:`tail_values`)."""
        self.launch(searches, rules, root, root_on_device, pair_record, 0)
        if before_read is not None:
            before_read()
        return self.read(len(searches), tail_n)

    def launch(self, searches: list, rules: Any, root: Any, root_on_device: bool, pair_record: Optional[Any],
               row: int) -> None:
        """One or two nodes' searches (as :meth:`splits`) launched into result rows ``row, row + 1``,
        nothing read: a batch of splits launches each one's at its own rows and reads them all at once
        (:meth:`read`)."""
        if not 0 < len(searches) <= 2 or len({s[1] is None for s in searches}) > 1:
            raise ValueError("DeviceSearch.splits takes one or two nodes, both with pair histograms or neither")
        if not 0 <= row <= self.result_rows - len(searches):
            raise ValueError(f"a search's results go to rows 0 to {self.result_rows - 1}, not {row}+{len(searches)}")
        hists = self._hists([s[0] for s in searches], [s[1] for s in searches], [s[2] for s in searches])
        nodes = [_node(s[3]) for s in searches]
        out = self._out._replace(res=self.results[row:row + len(searches)])
        self._kernels.search_nodes[self._launch(len(searches))](
            hists, searches[0][1] is not None, self._bins, nodes[0], nodes[-1], rules, root, root_on_device,
            out, self._has_nan, self._no_record if pair_record is None else pair_record, pair_record is not None)

    def launch_batch(self, table: np.ndarray, hists: Any, records: Any, masks: Any, use_pairs: bool,
                     rules: Any) -> None:
        """The searches of a batch's nodes in one launch (:func:`._search_kernels.search_batch`), nothing
        read: ``table``, a row per node (``_search_kernels.BATCH_*`` columns: its histograms' rows of
        ``hists``, the pool's, its split's partition record's row of ``records`` or -1, its result row,
        its row of ``masks``, its sums), copied to the card in one copy; ``masks``: ``(masks, features)``
        on the card (the pool's slots, or ``ole_fast``'s choices, :attr:`.choice.DeviceFeatureChoice.masks`)."""
        n = int(table.shape[0])
        if not 0 < n <= self.result_rows or table.shape[1] != BATCH_COLUMNS:
            raise ValueError(f"a batch's table has 1 to {self.result_rows} rows of {BATCH_COLUMNS}, got {table.shape}")
        rows = table[:, BATCH_ROW]
        if rows.min() < 0 or rows.max() >= self.result_rows or np.unique(rows).size != n:
            raise ValueError(f"a batch's result rows must be distinct, 0 to {self.result_rows - 1}: {rows.tolist()}")
        self._table_host[:n] = table
        dev = self.memory.copy_in_queued(self._table, self._table_host, n)
        if table[:, BATCH_MASK].min() < 0 or table[:, BATCH_MASK].max() >= masks.shape[0]:
            raise ValueError(f"a batch's mask rows must be 0 to {masks.shape[0] - 1}: {table[:, BATCH_MASK].tolist()}")
        nodes = BatchNodes(hists, dev, records, masks, self._no_ph)
        self._kernels.search_batch[self._launch(n)](nodes, bool(use_pairs), self._bins, rules,
                                                    self._batch._replace(per=self._batch.per[:n],
                                                                         gains=self._batch.gains[:n]),
                                                    self._has_nan)

    def read(self, rows: int, tail_n: int = 0) -> np.ndarray:
        """Result rows ``0:rows`` of the searches launched since the last read, and with ``tail_n`` the
        first values of :meth:`tail` (into :attr:`tail_values`): one blocking copy."""
        if not 0 < rows <= self.result_rows:
            raise ValueError(f"a read takes 1 to {self.result_rows} result rows, not {rows}")
        k = -(-max(int(tail_n), 0) // RESULT_SIZE)
        got = self.memory.read(self._res[self._tail_rows - k:self._tail_rows + rows])
        self.tail_values = got[:k].reshape(-1)[:tail_n].copy() if tail_n > 0 else None
        return got[k:]

    def wse_gains(self, nodes: list, mask: np.ndarray, rules: Any, root: Any, root_on_device: bool) -> list:
        """``ole_fast``'s per-feature WSE gains of one or two nodes (``(hist, sums)`` each; 0 outside
        ``mask``), in one read."""
        if not 0 < len(nodes) <= 2:
            raise ValueError("DeviceSearch.wse_gains takes one or two nodes")
        hists = self._hists([n[0] for n in nodes], [None], [mask])
        sums = [_node(n[1], with_c=False) for n in nodes]
        self._split_kernels.feature_bests[self._launch(len(nodes))](
            hists, False, self._bins, sums[0], sums[-1], rules._replace(score=WSE), root, root_on_device,
            self._out.per, self._wse)
        return list(self.memory.read(self._wse[:len(nodes)]))

    def choose_features(self, nodes: list, choose: Any, choice: Any, k: int, rules: Any, root: Any,
                        root_on_device: bool, subtract: Optional[tuple] = None, keep: Optional[tuple] = None) -> None:
        """``ole_fast``: the WSE gains of one or two nodes (``(hist, sums)`` each) and each node's top ``k``
        features with their groups, into ``choice`` (:func:`._choice_kernels.wse_choose`, given as
        ``choose``: one launch, no read; the fit's mask is ``choice.mask``; :mod:`.choice`).
        ``subtract``: ``(node, big, small)``, node ``node``'s histogram ``big`` completed first as
        ``big -= small`` in the same launch; ``keep``: ``(row, masks)``, node ``b``'s choice also copied to
        ``masks[row + b]`` (a batch's one search reads it there, :meth:`launch_batch`)."""
        if not 0 < len(nodes) <= 2:
            raise ValueError("DeviceSearch.choose_features takes one or two nodes")
        hists = NodeHists(nodes[0][0], nodes[-1][0], self._no_ph, self._no_ph, choice.mask, choice.mask)
        sums = [_node(n[1], with_c=False) for n in nodes]
        node, big, small = (-1, nodes[0][0], nodes[0][0]) if subtract is None else subtract
        if not -1 <= node < len(nodes):
            raise ValueError(f"subtract's node must be one of the {len(nodes)} searched, got {node}")
        row, masks = (-1, choice.keep) if keep is None else keep
        if not -1 <= row <= masks.shape[0] - len(nodes):
            raise ValueError(f"keep's row must be -1 or 0 to {masks.shape[0] - len(nodes)}, got {row}")
        choose[self._launch(len(nodes))](hists, self._bins, sums[0], sums[-1], rules._replace(score=WSE), root,
                                         root_on_device, self._out._replace(gains=self._wse), choice, int(k),
                                         SHARED_SLOTS, Completion(int(node), big, small, int(row), masks))
