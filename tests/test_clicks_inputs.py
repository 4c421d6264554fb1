"""Tests of customobj/clicks/_inputs.py: positions, clicks and propensities are checked, and bad
values raise naming the argument."""
from __future__ import annotations

import numpy as np
import pytest

from customobj.clicks._inputs import (MAX_POSITION, as_position, as_propensity, check_clicks, check_display_order,
                                      check_position_groups, zero_based,
                                      row_order_positions)


def test_good_values_pass_through():
    pos = as_position(np.array([2.0, 0.0, 1.0]))
    assert pos.dtype == np.int64 and pos.tolist() == [2, 0, 1] and not pos.flags.writeable
    assert as_propensity([1, 0.5, 0.25]).tolist() == [1.0, 0.5, 0.25]
    check_clicks(np.array([0.0, 1.0, 1.0]))
    check_position_groups(np.array([1, 0, 0, 1, 2]), np.array([0, 2, 5]), 5)


def test_row_order_positions_restart_per_query():
    assert row_order_positions(np.array([0, 3, 3, 5])).tolist() == [0, 1, 2, 0, 1]
    assert row_order_positions(np.array([0])).tolist() == []


@pytest.mark.parametrize("bad, exc, match", [
    ([0, -1], ValueError, ">= 0"),
    ([0, 1.5], ValueError, "integers"),
    ([0, np.nan], ValueError, "integers"),
    ([0, MAX_POSITION], ValueError, "MAX_POSITION"),
    ([[0, 1]], ValueError, "1-D"),
    ([True, False], TypeError, "position"),
    (["a"], TypeError, "position"),
    (None, TypeError, "position"),
])
def test_bad_positions(bad, exc, match):
    with pytest.raises(exc, match=match):
        as_position(bad)


def test_positions_inconsistent_with_the_groups():
    with pytest.raises(ValueError, match="query 1 shows position 2 2 times"):
        check_position_groups(np.array([0, 1, 2, 2]), np.array([0, 2, 4]), 4)
    with pytest.raises(ValueError, match="3 entries but the data has 4 rows"):
        check_position_groups(np.array([0, 1, 2]), np.array([0, 4]), 4)


def test_position_groups_checked_all_at_once_name_the_first_query_with_a_repeat():
    # 5000 sessions of 0..4 (checked sorted, not session by session), then repeats in sessions 4000 and 3500
    ptr = np.arange(0, 5 * 5001, 5)
    position = np.tile(np.arange(5), 5000)
    check_position_groups(position, ptr, position.size)  # the same positions across sessions are fine
    position[[5 * 4000, 5 * 3500 + 3, 5 * 3500 + 4]] = [1, 0, 0]
    with pytest.raises(ValueError, match="query 3500 shows position 0 3 times"):
        check_position_groups(position, ptr, position.size)


@pytest.mark.parametrize("bad", [[1.0, 0.0], [1.0, -1.0], [np.nan], [np.inf], []])
def test_bad_propensities(bad):
    with pytest.raises(ValueError, match="propensity"):
        as_propensity(bad)


def test_propensity_types():
    with pytest.raises(TypeError, match="propensity"):
        as_propensity([True])
    with pytest.raises(ValueError, match="propensity"):
        as_propensity(np.ones(MAX_POSITION + 1))


@pytest.mark.parametrize("bad", [2.0, 0.5, -1.0])
def test_labels_that_are_not_clicks(bad):
    with pytest.raises(ValueError, match=f"labels must be clicks, 0 or 1; found {bad} at row 1"):
        check_clicks(np.array([0.0, bad]))


def test_zero_based_takes_a_one_based_log_only_when_told():
    pos = as_position([1, 2, 3, 1, 2])
    assert zero_based(pos, 1).tolist() == [0, 1, 2, 0, 1] and not zero_based(pos, 1).flags.writeable
    assert zero_based(as_position([0, 1]), 0).tolist() == [0, 1]
    assert zero_based(as_position([]), 1).size == 0
    with pytest.raises(ValueError, match=r"no row of position is at the top position 0.*first_position=1"):
        zero_based(pos, 0)
    with pytest.raises(ValueError, match=r"smaller than first_position=1"):
        zero_based(as_position([0, 1]), 1)
    with pytest.raises(ValueError, match=r"top position 1 \(the smallest is 2\)"):
        zero_based(as_position([2, 3]), 1)


def test_display_order_within_each_query():
    ptr = np.array([0, 3, 5])
    check_display_order(np.array([0, 1, 4, 0, 2]), ptr)  # gaps are fine, each query restarts
    check_display_order(np.array([3, 5, 7, 0, 1]), ptr)  # a session need not start at the top
    with pytest.raises(ValueError, match=r"query 1 are not in display order \(row 4 at position 0 follows row 3"):
        check_display_order(np.array([0, 1, 2, 1, 0]), ptr)
    with pytest.raises(ValueError, match="query 0"):
        check_display_order(np.array([0, 0, 1, 0, 1]), ptr)  # a position twice
