"""customobj.ole.params: every TreeBooster hyperparameter checked as a Python value, errors naming it."""
import math

import numpy as np
import pytest

from customobj._device import Device, DeviceKind
from customobj import RankNet
from customobj.objectives import LambdaRank
from customobj.ole import TreeBooster
from customobj.ole.params import MAX_BIN, MAX_INT, MAX_NUM_LEAVES, check_n_jobs, check_params, default_objective

DEFAULTS = TreeBooster().get_params(deep=False)


def with_(**changes):
    return {**DEFAULTS, **changes}


def test_defaults_come_back_as_plain_python_values():
    out = check_params(DEFAULTS)
    assert set(out) == set(DEFAULTS)
    assert isinstance(out["objective"], LambdaRank)  # objective=None: the default objective
    assert out["device"] is Device.CPU  # the device name becomes its record here, once
    assert check_params(with_(device="cuda:2"))["device"] == Device(DeviceKind.CUDA, 2)
    for name, value in out.items():
        if name not in ("objective", "device") and value is not None:
            assert type(value) in (int, float, bool, str), (name, type(value))


def test_numpy_scalars_become_python_scalars():
    out = check_params(with_(num_leaves=np.int64(8), learning_rate=np.float32(0.25), line_search=np.bool_(True)))
    assert (out["num_leaves"], out["learning_rate"], out["line_search"]) == (8, 0.25, True)
    assert (type(out["num_leaves"]), type(out["learning_rate"]), type(out["line_search"])) == (int, float, bool)


def test_an_objective_given_is_kept():
    obj = RankNet(sigma=2.0)
    assert check_params(with_(objective=obj))["objective"] is obj
    assert isinstance(default_objective(), LambdaRank)


@pytest.mark.parametrize("name, value, exc, message", [
    ("num_leaves", 1, ValueError, "num_leaves must be in [2, 131072], got 1"),
    ("num_leaves", MAX_NUM_LEAVES + 1, ValueError, "num_leaves must be in [2, 131072]"),
    ("num_leaves", 8.0, TypeError, "num_leaves must be an integer, got float"),
    ("num_leaves", True, TypeError, "num_leaves must be an integer, got bool"),
    ("max_bin", MAX_BIN + 1, ValueError, "max_bin must be in [2, 65534]"),
    ("n_estimators", MAX_INT + 1, ValueError, "n_estimators must be in [0, "),
    ("n_estimators", -1, ValueError, "n_estimators must be in [0, "),
    ("learning_rate", 0.0, ValueError, "learning_rate must be in (0.0, inf)"),
    ("learning_rate", math.nan, ValueError, "learning_rate must be finite"),
    ("lambda_l2", -math.inf, ValueError, "lambda_l2 must be finite"),
    ("lambda_l2", "1", TypeError, "lambda_l2 must be a real number, got str"),
    ("feature_fraction", 1.5, ValueError, "feature_fraction must be in (0.0, 1.0]"),
    ("bagging_fraction", 0.0, ValueError, "bagging_fraction must be in (0.0, 1.0]"),
    ("ole_fast_epsilon", 1.0, ValueError, "ole_fast_epsilon must be in [0, 1), got 1.0"),
    ("ole_fast_epsilon", -0.1, ValueError, "ole_fast_epsilon must be in [0.0, 1.0]"),
    ("ole_fast_features", 0, ValueError, "ole_fast_features must be in [1, "),
    ("criterion", "gini", ValueError, "criterion must be one of"),
    ("criterion", ["ole"], ValueError, "criterion must be one of"),  # unhashable: still a ValueError
    ("growth", "depth_first", ValueError, "growth must be one of ['best_first', 'breadth_first']"),
    ("leaf_solver", None, ValueError, "leaf_solver must be one of ['diagonal', 'joint']"),
    ("line_search", 1, TypeError, "line_search must be True or False, got int"),
    ("verbose", "yes", TypeError, "verbose must be True or False (or an integer"),
    ("random_state", -1, ValueError, "random_state must be in [0, "),
    ("objective", "lambdarank", TypeError, "objective must be a customobj Objective"),
])
def test_bad_values_are_refused_by_name(name, value, exc, message):
    with pytest.raises(exc) as info:
        check_params(with_(**{name: value}))
    assert message in str(info.value)


def test_verbose_takes_lightgbms_integer_levels():
    assert [check_params(with_(verbose=v))["verbose"] for v in (-1, 0, 1, 2)] == [False, False, True, True]


def test_unknown_parameters_are_refused():
    with pytest.raises(TypeError, match=r"unknown TreeBooster parameters: \['num_trees'\]"):
        check_params(with_(num_trees=3))


def test_n_jobs():
    assert check_n_jobs(None) is None
    assert check_n_jobs(np.int32(2)) == 2
    with pytest.raises(ValueError, match=r"n_jobs must be in \[1, .*got 0 \(None: numba's thread count\)"):
        check_n_jobs(0)
    with pytest.raises(TypeError, match="n_jobs must be an integer"):
        check_n_jobs(1.0)
