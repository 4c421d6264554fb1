"""customobj.ole.model_file and the tree records it checks (customobj/ole/tree_schema.py): versioned model
files, hostile files naming file and field, atomic saves."""
import copy
import errno
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from customobj import McRank, RankNet
from customobj.ole import TreeBooster
from customobj.ole import model_file

FIXTURES = Path(__file__).parent / "fixtures"
QUIET = dict(verbose=False)


def rank_data(seed, n_queries=8, q_size=15, n_features=4, nan_frac=0.05):
    rng = np.random.default_rng(seed)
    n = n_queries * q_size
    X = rng.normal(size=(n, n_features))
    X[rng.random(X.shape) < nan_frac] = np.nan
    return X, rng.integers(0, 3, n).astype(float), [q_size] * n_queries


@pytest.fixture(scope="module")
def fitted():
    X, y, g = rank_data(0)
    Xv, yv, gv = rank_data(1)
    model = TreeBooster(RankNet(sigma=2.0), num_leaves=5, n_estimators=8, min_data_in_leaf=5, learning_rate=0.5,
                        **QUIET)
    model.fit(X, y, g, eval_set=[(Xv, yv)], eval_group=[gv], early_stopping_rounds=2)
    return model, X


# --- version 1 (files written before the schema) -------------------------------------------------
@pytest.mark.parametrize("name", ["ranknet", "mcrank"])
def test_version_1_files_still_load_and_predict_the_same(name):
    # tests/fixtures/ole_v1_*.json were written by the writer of commit a47baf0 (make_ole_v1.py)
    expected = json.loads((FIXTURES / "ole_v1_expected.json").read_text())
    assert json.loads((FIXTURES / f"ole_v1_{name}.json").read_text())["version"] == 1
    model = TreeBooster.load(FIXTURES / f"ole_v1_{name}.json")
    X = np.array([[np.nan if v is None else v for v in row] for row in expected["X"]])
    np.testing.assert_array_equal(model.predict(X), np.array(expected[name]))
    if name == "ranknet":
        assert model.best_iteration_ == expected["ranknet_best_iteration"] < expected["ranknet_n_iterations"]
        np.testing.assert_array_equal(model.predict(X, num_iteration=-1), expected["ranknet_all"])
        assert model.objective == RankNet(sigma=2.0)
    else:
        assert isinstance(model.objective, McRank) and model.n_outputs_ == 3
    assert json.loads(model.to_json())["version"] == model_file.FORMAT_VERSION == 2


# --- version 2 round trip ----------------------------------------------------------------------------
def test_save_load_round_trip_is_exact(fitted, tmp_path):
    model, X = fitted
    path = tmp_path / "m.json"
    model.save(path)
    loaded = TreeBooster.load(str(path))
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    assert loaded.to_json() == model.to_json() == path.read_text()
    assert loaded.objective == RankNet(sigma=2.0)
    assert loaded.best_iteration_ == model.best_iteration_ < loaded.n_iterations_
    assert loaded.evals_result_ == model.evals_result_
    assert not hasattr(loaded, "feature_names_in_")


def test_ole_fast_features_round_trips_and_older_files_get_the_default(tmp_path):
    """``ole_fast_features`` came after format version 2: saved when present, optional on load."""
    rng = np.random.default_rng(5)
    X, y = rng.normal(size=(90, 4)), rng.integers(0, 3, 90).astype(float)
    model = TreeBooster(RankNet(), criterion="ole_fast", ole_fast_features=2, num_leaves=4, n_estimators=2,
                        min_data_in_leaf=5, verbose=False).fit(X, y, [15] * 6)
    path = tmp_path / "m.json"
    model.save(path)
    loaded = TreeBooster.load(path)
    assert loaded.ole_fast_features == 2 and loaded.criterion == "ole_fast"
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    doc = json.loads(path.read_text())
    del doc["params"]["ole_fast_features"]
    path.write_text(json.dumps(doc))
    assert TreeBooster.load(path).ole_fast_features == TreeBooster().ole_fast_features
    doc["params"]["ole_fast_features"] = "many"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=r"m.json: params.ole_fast_features = 'many' must be int"):
        TreeBooster.load(path)


def test_feature_names_and_n_features_in_round_trip(tmp_path):
    X, y, g = rank_data(2)
    model = TreeBooster(RankNet(), num_leaves=3, n_estimators=2, min_data_in_leaf=5, **QUIET).fit(X, y, g)
    model.feature_names_in_ = np.array(["f a", "b", "c", "d"], dtype=object)  # the estimator's contract
    model.n_features_in_ = 4
    model.save(tmp_path / "m.json")
    loaded = TreeBooster.load(tmp_path / "m.json")
    assert list(loaded.feature_names_in_) == ["f a", "b", "c", "d"]
    assert loaded.n_features_in_ == 4
    assert json.loads(loaded.to_json())["feature_names"] == ["f a", "b", "c", "d"]


def test_nan_in_evaluation_history_is_saved_and_restored(tmp_path):
    X, y, g = rank_data(3)
    values = iter([0.5, math.nan, math.inf, -math.inf])

    def odd_metric(scores, labels, group):
        return next(values)

    model = TreeBooster(RankNet(), num_leaves=3, n_estimators=4, min_data_in_leaf=5, **QUIET)
    model.fit(X, y, g, eval_set=[(X, y)], eval_group=[g], eval_metric=odd_metric)
    path = tmp_path / "m.json"
    path.write_text("old")
    model.save(path)
    text = path.read_text()
    assert '[0.5, "NaN", "Infinity", "-Infinity"]' in text
    json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} written as a bare token"))
    hist = TreeBooster.load(path).evals_result_["valid_0"]["odd_metric"]
    assert hist[0] == 0.5 and math.isnan(hist[1]) and hist[2:] == [math.inf, -math.inf]


def test_minus_infinity_threshold_round_trips(tmp_path):
    X = np.array([[-np.inf], [1.0], [2.0], [np.inf]] * 10)  # the bin below 1.0 holds only -inf
    y = np.array([0, 1, 2, 3] * 10, float)
    from customobj import SquaredError
    model = TreeBooster(SquaredError(), criterion="wse", num_leaves=4, n_estimators=1, min_data_in_leaf=1, **QUIET)
    model.fit(X, y)
    assert -np.inf in model.trees_[0]["threshold"]
    model.save(tmp_path / "m.json")
    assert '"-Infinity"' in (tmp_path / "m.json").read_text()
    loaded = TreeBooster.load(tmp_path / "m.json")
    np.testing.assert_array_equal(loaded.predict(X[:4]), model.predict(X[:4]))
    assert loaded.predict(X[:4]).tolist() == pytest.approx([0.0, 0.1, 0.2, 0.3])


# --- atomic saves ------------------------------------------------------------------------------------
def _folder_state(folder):
    return {p.name: p.read_bytes() for p in Path(folder).iterdir()}


def test_failed_saves_leave_the_previous_file_intact(fitted, tmp_path, monkeypatch):
    model, _ = fitted
    path = tmp_path / "m.json"
    model.save(path)
    before = _folder_state(tmp_path)

    with pytest.raises(ValueError, match="not fitted"):
        TreeBooster(RankNet()).save(path)
    assert _folder_state(tmp_path) == before

    broken = copy.deepcopy(model)
    broken.trees_[1]["leaf_value"][2] = math.nan
    with pytest.raises(ValueError, match=r"trees\[1\]\.leaf_value\[2\] = nan must be a finite number"):
        broken.save(path)
    assert _folder_state(tmp_path) == before
    broken.trees_[0] = {k: v for k, v in broken.trees_[0].items() if k != "threshold"}
    with pytest.raises(ValueError, match=r"model: trees\[0\] is missing the field 'threshold'"):
        broken.save(path)
    assert _folder_state(tmp_path) == before

    real_fdopen = os.fdopen

    class FullDisk:  # writes half the text, then the disk is full
        def __init__(self, fh):
            self.fh = fh

        def write(self, text):
            self.fh.write(text[: len(text) // 2])
            self.fh.flush()
            raise OSError(errno.ENOSPC, "No space left on device")

        def __getattr__(self, name):
            return getattr(self.fh, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return self.fh.__exit__(*exc)

    monkeypatch.setattr(os, "fdopen", lambda *a, **k: FullDisk(real_fdopen(*a, **k)))
    with pytest.raises(OSError) as info:
        model.save(path)
    assert info.value.errno == errno.ENOSPC
    monkeypatch.undo()
    assert _folder_state(tmp_path) == before  # no half file, no temporary file left behind
    np.testing.assert_array_equal(TreeBooster.load(path).predict(fitted[1]), model.predict(fitted[1]))


# --- hostile files -----------------------------------------------------------------------------------
def _good_record():
    X, y, g = rank_data(4)
    model = TreeBooster(RankNet(), num_leaves=6, n_estimators=3, min_data_in_leaf=3, **QUIET).fit(
        X, y, g, eval_set=[(X, y)], eval_group=[g])
    d = json.loads(model.to_json())
    assert all(t["num_leaves"] == 6 for t in d["trees"])  # the mutations below index 5 nodes
    return d


def _cycle(d):  # nodes 1 and 2 point at each other; the root reaches neither
    t = d["trees"][0]
    t["left_child"], t["right_child"] = [-1, 2, 1, 4, -5], [-2, -3, 3, -4, -6]


def _same_child_twice(d):
    t = d["trees"][0]
    t["left_child"][0] = t["right_child"][0]


def _set(path, value):
    def mutate(d):
        *head, last = path
        target = d
        for key in head:
            target = target[key]
        target[last] = value
    return mutate


def _delete(path):
    def mutate(d):
        *head, last = path
        target = d
        for key in head:
            target = target[key]
        del target[last]
    return mutate


# name -> (mutation of the record, or raw file bytes; the text the error must contain)
HOSTILE = {
    "fitted_overwrites_trees": (_set(["objective_fitted"], {"trees_": {"shape": [1], "values": [1.0]}}),
                                "objective_fitted.trees_ names an attribute TreeBooster already has"),
    "fitted_bad_name": (_set(["objective_fitted"], {"__class__": {"shape": [1], "values": [1.0]}}),
                        "objective_fitted.__class__ is not a fitted attribute name"),
    "fitted_shape_mismatch": (_set(["objective_fitted"], {"label_weights_": {"shape": [2, 2], "values": [1.0]}}),
                              "objective_fitted.label_weights_.values must be a list of prod(shape) = 4 numbers"),
    "fitted_not_numbers": (_set(["objective_fitted"], {"label_weights_": {"shape": [1], "values": ["x"]}}),
                           "objective_fitted.label_weights_.values must hold numbers"),
    "fitted_not_an_object": (_set(["objective_fitted"], [1, 2]), "objective_fitted must be an object"),
    "child_out_of_range": (_set(["trees", 1, "left_child", 2], 10**6),
                           r"trees[1].left_child[2] = 1000000 is out of range (tree has 5 internal nodes"),
    "split_feature_out_of_range": (_set(["trees", 0, "split_feature", 0], 10**7),
                                   "trees[0].split_feature[0] = 10000000 is out of range (the model has 4 features"),
    "child_back_to_root": (_set(["trees", 2, "right_child", 3], 0),
                           "trees[2].right_child[3] = 0 points back to the root"),
    "cycle": (_cycle, "trees[0] has node 1 in a cycle that the root does not reach"),
    "child_twice": (_same_child_twice, ("trees[0] has ", "every node and leaf must be reached exactly once")),
    "wrong_tree_class": (_set(["tree_class", 1], 5), "tree_class[1] = 5 must be 0"),
    "empty_leaf_value": (_set(["trees", 0, "leaf_value"], []), "trees[0].leaf_value has 0 entries but must have 6"),
    "missing_top_key": (_delete(["trees"]), "is missing the field 'trees'"),
    "missing_tree_key": (_delete(["trees", 2, "threshold"]), "trees[2] is missing the field 'threshold'"),
    "unknown_key": (_set(["extra"], 1), "has an unknown field 'extra' for version 2"),
    "version_99": (_set(["version"], 99), "version = 99 is not supported; this customobj reads versions 1, 2"),
    "version_string": (_set(["version"], "2"), "version = '2' is not supported"),
    "not_a_model": (_set(["format"], "something else"), "is not a customobj.ole.TreeBooster model file"),
    # json.dumps writes Python's bare NaN / Infinity tokens: parsed, then refused naming the field
    "nan_token": (_set(["trees", 0, "leaf_value", 0], math.nan), "trees[0].leaf_value[0] = nan must be a finite"),
    "infinity_token": (_set(["trees", 0, "leaf_value", 0], math.inf), "trees[0].leaf_value[0] = inf must be a finite"),
    "nan_threshold": (_set(["trees", 0, "threshold", 0], math.nan), "trees[0].threshold[0] = nan must be a number"),
    "truncated": (None, "the file is damaged or truncated"),
    "empty_file": (b"", "not valid JSON (Expecting value: line 1 column 1 (char 0)); the file is damaged"),
    "not_utf8": (b"\xff\xfe{}", "not a UTF-8 text file"),
    "top_level_list": (b"[1, 2]", "must hold a JSON object, got list"),
    "duplicate_key": (b'{"version": 2, "version": 1}', "the key 'version' appears twice"),
    "threshold_string": (_set(["trees", 0, "threshold", 1], "abc"), "trees[0].threshold[1] = 'abc' must be a number"),
    "threshold_nan_string": (_set(["trees", 0, "threshold", 1], "NaN"),
                             "trees[0].threshold[1] = 'NaN' must be a number"),
    "huge_leaf_value": (_set(["trees", 0, "leaf_value", 1], 10**400), "trees[0].leaf_value[1] = 1000000000000"),
    "bool_child": (_set(["trees", 0, "left_child", 0], True), "trees[0].left_child[0] = True must be an integer"),
    "negative_count": (_set(["trees", 0, "leaf_count", 0], -1), "trees[0].leaf_count[0] = -1 must be a non-negative"),
    "huge_leaf": (_set(["trees", 1, "leaf_value", 0], 1e308), "trees[1].leaf_value[0] = 1e+308 exceeds 1e+100"),
    "huge_gain": (_set(["trees", 0, "split_gain", 0], 1.7e308), "trees[0].split_gain[0] = 1.7e+308 exceeds 1e+300"),
    "num_leaves_short": (_set(["trees", 0, "num_leaves"], 5),
                         "trees[0].split_feature has 5 entries but must have 4 (num_leaves - 1)"),
    "num_leaves_zero": (_set(["trees", 0, "num_leaves"], 0), "trees[0].num_leaves = 0 must be an integer >= 1"),
    "n_features_zero": (_set(["n_features"], 0), "n_features = 0 must be an integer >= 1"),
    "n_outputs_huge": (_set(["n_outputs"], 10**9), "n_outputs = 1000000000 must be an integer in 1..65536"),
    "trees_not_multiple": (_set(["n_outputs"], 2), "trees must be a list whose length is a multiple of n_outputs = 2"),
    "feature_info_injection": (_set(["feature_infos", 0], "[0:1]\nTree=9"), "feature_infos[0] = '[0:1]\\nTree=9'"),
    "feature_names_length": (_set(["feature_names"], ["a"]), "feature_names must be null or a list of n_features = 4"),
    "best_iteration_too_large": (_set(["best_iteration"], 4), "best_iteration = 4 must be an integer in 1..3"),
    "history_length": (_set(["evals_result", "valid_0", "ndcg@10"], [0.5]),
                       "evals_result.valid_0.ndcg@10 must be a list of 3"),
    "param_type": (_set(["params", "num_leaves"], "31"), "params.num_leaves = '31' must be int"),
    "param_missing": (_delete(["params", "max_bin"]), "params is missing the hyperparameter 'max_bin'"),
    "objective_bad_options": (_set(["objective", "params", "sigma"], -1.0),
                              "objective.params are not valid options of RankNet"),
    "objective_outputs": (_set(["objective"], {"class": "McRank", "params": {"n_classes": 5}, "repr": ""}),
                          "McRank(n_classes=5) has 5 outputs per row but n_outputs = 1"),
}

_CHILD = r"""
import json, sys
import numpy as np
from customobj.ole import TreeBooster
out = {}
for name, path in json.loads(sys.argv[1]).items():
    try:
        model = TreeBooster.load(path)
    except ValueError as exc:
        out[name] = ["ValueError", str(exc)]
        continue
    except Exception as exc:
        out[name] = [type(exc).__name__, str(exc)]
        continue
    n_features = getattr(model, "n_features_in_", None) or model.n_features_
    model.predict(np.zeros((3, n_features)))  # may crash or hang if load let a bad file through
    out[name] = ["loaded", ""]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def hostile_results(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    good = _good_record()
    text = json.dumps(good, sort_keys=True)
    paths = {}
    for name, (mutation, _) in HOSTILE.items():
        if mutation is None:
            data = text[: len(text) // 2].encode()
        elif isinstance(mutation, bytes):
            data = mutation
        else:
            d = copy.deepcopy(good)
            mutation(d)
            data = json.dumps(d).encode()
        paths[name] = str(folder / f"{name}.json")
        Path(paths[name]).write_bytes(data)
    (folder / "good.json").write_text(text)
    paths["good"] = str(folder / "good.json")
    # one process for the whole battery: a segfault or a hang fails every case instead of pytest
    proc = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(paths)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, f"the loader crashed (status {proc.returncode}): {proc.stderr[-2000:]}"
    return json.loads(proc.stdout), paths


def test_the_unmodified_record_loads(hostile_results):
    results, _ = hostile_results
    assert results["good"] == ["loaded", ""]


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_file_raises_value_error_naming_file_and_field(hostile_results, name):
    results, paths = hostile_results
    kind, message = results[name]
    assert kind == "ValueError", f"{name}: {kind} {message}"
    assert message.startswith(paths[name] + ": "), message
    expected = HOSTILE[name][1]
    for part in (expected,) if isinstance(expected, str) else expected:
        assert part in message, message


def test_unknown_objective_class_loads_without_objective(tmp_path):
    d = _good_record()
    for name in ("NoSuchObjective", "Groups", "__builtins__", "Objective"):
        d["objective"] = {"class": name, "params": {}, "repr": name}
        (tmp_path / "m.json").write_text(json.dumps(d))
        model = TreeBooster.load(tmp_path / "m.json")
        assert model.objective is None  # predicts, cannot be refitted; nothing outside the public objectives is called
        assert model.predict(np.zeros((2, 4))).shape == (2,)


def test_missing_file_is_an_os_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        TreeBooster.load(tmp_path / "nope.json")


def test_numpy_scalar_hyperparameters_are_saved_as_plain_values(fitted, tmp_path):
    # scikit-learn's parameter grids hand numpy scalars to set_params; verbose is often written 0 / 1
    model = copy.deepcopy(fitted[0])
    model.num_leaves, model.learning_rate, model.verbose = np.int64(5), np.float32(0.5), 0
    model.save(tmp_path / "m.json")
    params = json.loads((tmp_path / "m.json").read_text())["params"]
    assert (params["num_leaves"], params["learning_rate"], params["verbose"]) == (5, 0.5, False)
    assert type(params["num_leaves"]) is int and type(params["verbose"]) is bool
    model.num_leaves = 5.5
    with pytest.raises(ValueError, match=r"model: params.num_leaves = 5.5 must be int"):
        model.save(tmp_path / "m.json")
