"""customobj/ole/leaf_table.py: a backend's table of a growing tree's leaves: LightGBM's numbering
(the left child keeps the index, the right one is appended), the children's rows and pairs inside
their parent's, and where a split sends NaN."""
import numpy as np
import pytest

from customobj.ole.binning import BinMapper
from customobj.ole.common import ChildSums, SplitInfo
from customobj.ole.leaf_table import LeafRows, LeafTable, NodePairs, PairCounts, nan_goes_left

from _ole_cases import make_X


def _split(n_left, n_right, feature=0, bin_=1, nan_left=True):
    return SplitInfo(1.0, feature, bin_, nan_left, ChildSums(-1.0, 1.0, float(n_left), 0.0),
                     ChildSums(1.0, 1.0, float(n_right), 0.0))


def test_the_left_child_keeps_the_index_and_the_right_one_is_appended():
    table = LeafTable(LeafRows(0, 10, 0, 8, ChildSums(0.0, 2.0, 10.0, 0.0)))
    parent, left, right = table.split(0, _split(4, 6))
    assert table[0] is left and table[1] is right and parent.end == 10
    _, ll, lr = table.split(0, _split(1, 3))
    assert table.ranges() == [(0, 1), (4, 10), (1, 4)]
    starts, ends = table.bounds()
    assert starts.dtype == np.int64 and starts.tolist() == [0, 4, 1] and ends.tolist() == [1, 10, 4]
    assert left.pbuf == 1 and ll.pbuf == 0 and lr.is_left is False  # pairs ping-pong between two buffers


def test_the_childrens_pairs_are_left_then_right_then_the_split_pairs():
    table = LeafTable(LeafRows(0, 10, 3, 20, ChildSums(0.0, 2.0, 10.0, 0.0)))
    parent, left, right = table.split(0, _split(4, 6))
    assert (left.pstart, left.pend) == (3, 20) == (right.pstart, right.pend)  # until the counts are known
    table.pair_ranges(parent, left, right, (5, 7))
    assert (left.pstart, left.pend, right.pstart, right.pend) == (3, 8, 8, 15)
    bufs = ("first", "second")
    assert left.pairs(bufs, None) == NodePairs("second", 3, 8, None, 0)
    assert NodePairs("b", 3, 20, PairCounts(5, 7), 1).range() == (8, 15)


def test_nan_goes_where_the_search_said_only_when_the_node_holds_nan():
    X = make_X(1, n=40, n_features=2, nan_frac=0.2)
    mapper = BinMapper.fit(X, 8)
    data = type("Data", (), {"mapper": mapper, "offsets": mapper.offsets, "n_bins": mapper.n_bins})()
    f = int(np.flatnonzero(mapper.has_nan)[0])
    hist = np.zeros((mapper.n_slots, 3))
    split = _split(4, 6, feature=f, bin_=0, nan_left=False)
    zero_left = 0.0 <= mapper.threshold(f, 0)
    assert nan_goes_left(data, hist, split) is zero_left  # no NaN in the node: where 0 goes
    hist[mapper.offsets[f] + int(mapper.n_bins[f]), 2] = 3.0
    assert nan_goes_left(data, hist, split) is False  # NaN in the node: the search's side


def test_spans_give_each_tree_leaf_its_rows_whole_subtrees_included():
    # leaves 0 | 2 | 1 after two splits; a tree that never split leaf 0 sees it whole (0 .. 2)
    table = LeafTable(LeafRows(0, 10, 0, 0, ChildSums(0.0, 2.0, 10.0, 0.0)))
    table.split(0, _split(4, 6))
    table.split(0, _split(1, 3))
    assert table.spans(None) == table.ranges() == [(0, 1), (4, 10), (1, 4)]
    assert table.spans([(1, 1), (0, 2)]) == [(4, 10), (0, 4)]
    assert table.spans([(0, 1)]) == [(0, 10)]  # the root's rows, whatever was expanded under it


@pytest.mark.parametrize("spans", [[(0, 0), (1, 1)],  # leaf 2's rows named by none: a gap
                                   [(0, 2), (2, 2), (1, 1)],  # rows 1..4 twice
                                   [(0, 3), (1, 1)],  # no leaf 3
                                   [(-1, 0), (1, 1), (2, 2)],
                                   [(2, 0), (1, 1)]])  # an empty range
def test_spans_that_do_not_tile_the_rows_are_refused(spans):
    table = LeafTable(LeafRows(0, 10, 0, 0, ChildSums(0.0, 2.0, 10.0, 0.0)))
    table.split(0, _split(4, 6))
    table.split(0, _split(1, 3))
    with pytest.raises(ValueError, match="spans"):
        table.spans(spans)
