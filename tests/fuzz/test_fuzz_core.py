"""Fuzz: objectives, metrics, Groups, label_pairs, best_linear_combination (issue 13).

Each case runs one property on a short derandomised budget; every example executes in the fuzz
worker process, so a segfault or a hang is a failure naming the example, not a dead test run.
"""
import pytest

from ._suite import check_property, names


@pytest.mark.parametrize("name", names("objectives.") + names("metrics.") + names("groups.")
                         + names("pairs.") + names("combine."))
def test_property(name):
    check_property(name)
