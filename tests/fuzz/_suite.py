"""Running a property: the short derandomised budget of the test suite, or a campaign's budget."""
from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, given, settings

from .properties import CORE_PROPERTIES
from .properties_io import IO_PROPERTIES
from .properties_ole import OLE_PROPERTIES
from .runner import assert_holds

#: Every property, by name ("<module>.<entry point>").
PROPERTIES = {**CORE_PROPERTIES, **OLE_PROPERTIES, **IO_PROPERTIES}

#: Examples per property in the default suite (``CUSTOMOBJ_FUZZ_EXAMPLES`` overrides).
SHORT_EXAMPLES = int(os.environ.get("CUSTOMOBJ_FUZZ_EXAMPLES", "25"))

# Shrinking re-runs failing examples many times, and a crash or a hang costs a worker restart or a
# full timeout each: the short suite reports the first failing example as generated
# (CUSTOMOBJ_FUZZ_SHRINK=1 turns shrinking on for a smaller one).
_PHASES = [Phase.explicit, Phase.generate] + ([Phase.shrink] if os.environ.get("CUSTOMOBJ_FUZZ_SHRINK") else [])

SHORT = settings(max_examples=SHORT_EXAMPLES, deadline=None, derandomize=True, database=None,
                 phases=_PHASES, suppress_health_check=list(HealthCheck), print_blob=False)


def check_property(name: str, budget: settings = SHORT) -> None:
    """Run property ``name``: raise on the first example the library fails."""

    @budget
    @given(PROPERTIES[name])
    def prop(example):
        assert_holds(example)

    prop()


def names(prefix: str) -> list[str]:
    return sorted(n for n in PROPERTIES if n.startswith(prefix))
