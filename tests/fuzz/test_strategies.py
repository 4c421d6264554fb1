"""The strategies themselves: every property draws picklable examples for a known worker target
(a broken strategy would otherwise show up as a failure of the library)."""
import pickle

import pytest
from hypothesis import HealthCheck, given, settings

from ._suite import PROPERTIES

KNOWN_TARGETS = {"objective", "objective.prepared_reuse", "metric", "metric.get_metric", "groups", "label_pairs",
                 "best_linear_combination", "booster.fit", "booster.load", "booster.save", "data.load_letor",
                 "data.synthetic", "adapters.train_callables", "adapters.sklearn_callables", "adapters.line_search"}


@pytest.mark.parametrize("name", sorted(PROPERTIES))
def test_strategy_draws_examples(name):
    seen = []

    @settings(max_examples=30, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(PROPERTIES[name])
    def draw(example):
        assert example.target in KNOWN_TARGETS
        assert isinstance(example.kwargs, dict)
        pickle.loads(pickle.dumps(example))  # it must travel to the worker
        seen.append(example)

    draw()
    assert len(seen) >= 10
