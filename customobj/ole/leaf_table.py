"""A backend's table of a growing tree's leaves: where each leaf's rows and pairs are, its histograms
and sums, and the steps of a split every backend shares.

A :class:`~customobj.ole.backend.TreeBackend` keeps this table for the tree it grows (from
``begin_tree`` to ``end_tree``): the grower names leaves by index only, and the backend knows where
their rows (``order[start:end]``) and pairs (``[pstart:pend]`` of pair buffer ``pbuf``) are and holds
their histograms, which may live on a device. Leaves are numbered like LightGBM's: splitting leaf
``l`` keeps ``l`` for the left child and gives the right child the next index
(:meth:`LeafTable.split`).

Examples
--------
>>> from customobj.ole.common import NO_SPLIT, ChildSums, SplitInfo
>>> table = LeafTable(LeafRows(0, 10, 0, 6, ChildSums(0.0, 5.0, 10.0, 0.0)))
>>> split = SplitInfo(1.0, 0, 3, False, ChildSums(-1.0, 2.0, 4.0, 0.0), ChildSums(1.0, 3.0, 6.0, 0.0))
>>> parent, left, right = table.split(0, split)
>>> (left.start, left.end, right.start, right.end, len(table))
(0, 4, 4, 10, 2)
>>> table.ranges()
[(0, 4), (4, 10)]
"""
from __future__ import annotations

from typing import Any, List, NamedTuple, Optional

import numpy as np

from .common import HIST_COUNT, NO_SPLIT, ChildSums, SplitInfo

__all__ = ["LeafRows", "LeafTable", "NodePairs", "PairCounts", "nan_goes_left", "select_features"]


def select_features(gains: np.ndarray, feature_mask: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` features of ``feature_mask`` with the largest ``gains`` (ties: lower index first),
    in increasing index order: the features ``criterion="ole_fast"`` searches at a node (on a GPU:
    :mod:`.cuda._choice_kernels`)."""
    cand = np.flatnonzero(feature_mask)
    top = cand[np.argsort(-gains[cand], kind="stable")[:k]]
    return np.sort(top)


class PairCounts:
    """A pair partition's children's pair counts ``(n_left, n_right)`` (:attr:`counts`): here known at
    once; a GPU backend keeps them on the card, where its children's histograms are chosen and built
    from them, and reads them with the children's splits (:attr:`counts` reads them on its own)."""

    def __init__(self, n_left: int, n_right: int) -> None:
        self._counts = (int(n_left), int(n_right))

    @property
    def counts(self) -> tuple:
        return self._counts


class NodePairs(NamedTuple):
    """A node's pairs for ``ole_fast``'s search: ``buf[start:end]``, or, with ``counts`` (a pair
    partition's, maybe still on the card), the left (``side`` 0) or right (1) child's part of its
    parent's range ``start:end``, ``[left | right | split pairs]``."""

    buf: tuple
    start: int
    end: int
    counts: Optional[PairCounts] = None
    side: int = 0

    def range(self) -> tuple[int, int]:
        """``(start, end)`` of the node's own pairs (a GPU backend's counts are read if not known yet)."""
        if self.counts is None:
            return self.start, self.end
        n_left, n_right = self.counts.counts
        return (self.start, self.start + n_left) if self.side == 0 else (self.start + n_left,
                                                                          self.start + n_left + n_right)


class LeafRows:
    """A leaf as its backend holds it: rows ``order[start:end]``, pairs ``[pstart:pend]`` of pair
    buffer ``pbuf``, its sums, its histograms (None once no search needs them) and its best split."""

    __slots__ = ("start", "end", "pstart", "pend", "pbuf", "sums", "is_left", "hist", "phist", "split")

    def __init__(self, start: int, end: int, pstart: int, pend: int, sums: ChildSums, *, pbuf: int = 0,
                 is_left: bool = True) -> None:
        self.start, self.end, self.pstart, self.pend, self.pbuf = int(start), int(end), int(pstart), int(pend), pbuf
        self.sums, self.is_left = sums, is_left
        self.hist: Any = None
        self.phist: Any = None
        self.split: SplitInfo = NO_SPLIT

    def pairs(self, bufs: tuple, counts: Optional[PairCounts]) -> NodePairs:
        """This leaf's pairs for ``ole_fast``'s search: its range, or its side of its parent's (``counts``:
        the partition's that made it)."""
        return NodePairs(bufs[self.pbuf], self.pstart, self.pend, counts, 0 if self.is_left else 1)


class LeafTable:
    """The leaves of the tree a backend grows, by the grower's indices (see the module docstring)."""

    def __init__(self, root: LeafRows) -> None:
        self.leaves: List[LeafRows] = [root]

    def __len__(self) -> int:
        return len(self.leaves)

    def __getitem__(self, index: int) -> LeafRows:
        return self.leaves[index]

    def split(self, index: int, split: SplitInfo) -> tuple:
        """Replace leaf ``index`` by its split's children: ``(parent, left, right)``; the left child keeps
        ``index``, the right one is appended. The children's rows split the parent's at the split's
        left count (exact); their pairs are the parent's range of the other buffer until
        :meth:`pair_ranges`."""
        parent = self.leaves[index]
        mid = parent.start + int(split.left.N)
        left = LeafRows(parent.start, mid, parent.pstart, parent.pend, split.left, pbuf=1 - parent.pbuf)
        right = LeafRows(mid, parent.end, parent.pstart, parent.pend, split.right, pbuf=1 - parent.pbuf,
                         is_left=False)
        self.leaves[index] = left
        self.leaves.append(right)
        return parent, left, right

    @staticmethod
    def pair_ranges(parent: LeafRows, left: LeafRows, right: LeafRows, counts: tuple) -> None:
        """The children's pair ranges: ``[left | right | split pairs]`` in the parent's range."""
        npl, npr = (int(c) for c in counts)
        left.pstart, left.pend = parent.pstart, parent.pstart + npl
        right.pstart, right.pend = parent.pstart + npl, parent.pstart + npl + npr

    def ranges(self) -> list:
        """Each leaf's ``(start, end)`` in the row order."""
        return [(leaf.start, leaf.end) for leaf in self.leaves]

    def spans(self, spans: Optional[list] = None) -> list:
        """Each tree leaf's ``(start, end)`` in the row order: the table's leaves (``spans`` None), or per
        ``(first, last)`` of ``spans`` the rows from leaf ``first``'s start to leaf ``last``'s end (a
        leaf, ``last == first``, or the leaves of a subtree the grower expanded ahead and never split
        in the tree: its leftmost and rightmost, :mod:`.grower`). The ranges must tile the table's rows.

        >>> from customobj.ole.common import ChildSums, SplitInfo
        >>> table = LeafTable(LeafRows(0, 10, 0, 0, ChildSums(0.0, 5.0, 10.0, 0.0)))
        >>> half = ChildSums(0.0, 2.5, 5.0, 0.0)
        >>> _ = table.split(0, SplitInfo(1.0, 0, 3, False, half, half))
        >>> table.spans([(0, 1)]), table.spans([(1, 1), (0, 0)])
        ([(0, 10)], [(5, 10), (0, 5)])
        """
        if spans is None:
            return self.ranges()
        n = len(self.leaves)
        out = []
        for first, last in spans:
            if not (0 <= first < n and 0 <= last < n):
                raise ValueError(f"spans must name leaves of the table (< {n}): {(first, last)} in {spans}")
            out.append((self.leaves[first].start, self.leaves[last].end))
        tiled = sorted(out)
        lo, hi = min(l.start for l in self.leaves), max(l.end for l in self.leaves)
        if (tiled[0][0] != lo or tiled[-1][1] != hi or any(s >= e for s, e in tiled)
                or any(a[1] != b[0] for a, b in zip(tiled, tiled[1:]))):
            raise ValueError(f"spans must tile the table's rows [{lo}, {hi}) with non-empty ranges: {out}")
        return out

    def bounds(self, ranges: Optional[list] = None) -> tuple:
        """``(starts, ends)`` of ``ranges`` (default: the leaves' rows), int64 arrays."""
        ranges = self.ranges() if ranges is None else ranges
        return (np.array([s for s, _ in ranges], dtype=np.int64), np.array([e for _, e in ranges], dtype=np.int64))


def nan_goes_left(data: Any, hist: Any, split: SplitInfo) -> bool:
    """Where a split sends NaN: the search's side when the node holds NaN at the split's feature (read
    from its row histogram; a feature without NaN in training has none anywhere: no read), else where
    0 goes (LightGBM maps NaN to 0 at prediction)."""
    f = split.feature
    if data.mapper.has_nan[f] and hist[data.offsets[f] + int(data.n_bins[f]), HIST_COUNT] > 0:
        return bool(split.nan_left)
    return bool(0.0 <= data.mapper.threshold(f, split.bin))
