"""Issue 13's own examples, one test each, through the fuzz worker (a checklist of the classes)."""
from functools import lru_cache

import pytest

from .issue_examples import all_examples, names
from .runner import assert_holds


@lru_cache(maxsize=1)
def _examples():
    return all_examples()


@pytest.mark.parametrize("name", names())
def test_issue_example(name):
    assert_holds(_examples()[name])
