"""Fuzz: load_letor on hostile files, synthetic with hostile options (issue 13)."""
import pytest

from ._suite import check_property, names


@pytest.mark.parametrize("name", names("data."))
def test_property(name):
    check_property(name)
