"""Fuzz: TreeBooster options and data, mutated model files, saving over a good file (issue 13)."""
import pytest

from ._suite import check_property, names


@pytest.mark.parametrize("name", names("ole."))
def test_property(name):
    check_property(name)
