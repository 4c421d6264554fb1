"""customobj.ole.partition: a split reorders a node's rows in place, stably, serial and in parallel blocks."""
import numpy as np
import pytest

from customobj.ole.partition import partition_rows


@pytest.mark.parametrize("nan_left", [False, True])
def test_partition_rows_on_a_column_is_stable(nan_left):
    rng = np.random.default_rng(4)
    col = rng.integers(0, 6, 50).astype(np.uint8)  # bin 5 = NaN slot
    order = np.concatenate([[49], np.sort(rng.choice(np.arange(1, 49), 30, replace=False)), [0]]).astype(np.int64)
    before = order.copy()
    go_left = np.zeros(50, dtype=np.bool_)
    nl = partition_rows(col, order, 1, 31, 2, 5, nan_left, go_left, np.empty(50, np.int64))
    node = before[1:31]
    left = np.where(col[node] == 5, nan_left, col[node] <= 2)
    np.testing.assert_array_equal(order[1:1 + nl], node[left])
    np.testing.assert_array_equal(order[1 + nl:31], node[~left])
    assert order[0] == 49 and order[31] == 0
    np.testing.assert_array_equal(go_left[node], left)


def test_partition_rows_with_many_blocks_is_stable():
    rng = np.random.default_rng(10)
    n = 150_000  # several parallel row blocks
    col = rng.integers(0, 9, n).astype(np.uint8)
    order = np.sort(rng.choice(n, 120_000, replace=False)).astype(np.int64)
    node = order.copy()
    go_left = np.zeros(n, dtype=np.bool_)
    nl = partition_rows(col, order, 0, order.size, 3, 8, True, go_left, np.empty(n, np.int64))
    left = np.where(col[node] == 8, True, col[node] <= 3)
    assert nl == left.sum()
    np.testing.assert_array_equal(order[:nl], node[left])
    np.testing.assert_array_equal(order[nl:], node[~left])
