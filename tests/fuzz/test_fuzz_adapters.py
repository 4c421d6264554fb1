"""Fuzz: the adapters' objective / metric callables on tiny LightGBM / XGBoost data (issue 13)."""
import pytest

from ._suite import check_property, names


@pytest.mark.parametrize("name", names("adapters."))
def test_property(name):
    check_property(name)
