"""benchmarks/affine_diagnosis.py: a tiny run on MQ2008 Fold1 end to end (every variant scored, TrustEM's
error recorded, the JSON written and its paired differences those of the units), the given parameters
reach the trainer's ``Affine`` and the trainer is restored afterwards, and the ceiling's labels are the
log rows' true labels."""
import json

import numpy as np
import pytest

from conftest import import_benchmark

bench = import_benchmark("affine_diagnosis")

from customobj import LambdaRank  # noqa: E402
from customobj.clicks import Affine  # noqa: E402
from customobj.compare import trainers  # noqa: E402
from customobj.compare.trainers import Split  # noqa: E402


def test_tiny_diagnosis_writes_every_variant(data_dir, tmp_path, capsys):
    out = tmp_path / "d.json"
    argv = ["--data", str(data_dir), "--datasets", "mq2008", "--folds", "1", "--logs", "2", "--rounds", "2",
            "--sessions", "2", "--out", str(out)]
    assert bench.main(argv) == 0
    doc = json.loads(out.read_text())
    units = doc["units"]
    assert [(u["fold"], u["log"]) for u in units] == [(1, 1), (1, 2)]
    for u in units:
        assert all(0.0 < u[v] <= 1.0 for v in bench.VARIANTS)
        assert 0.0 <= u["trustem_alpha_max_error"] < 1.0 and 0.0 <= u["trustem_beta_max_error"] < 1.0
    by = {r["variant"]: r for r in doc["summary"]}
    assert set(by) == set(bench.VARIANTS) and "minus_unbiased" not in by["Unbiased"]
    diff = [u["Affine true"] - u["Unbiased"] for u in units]
    assert by["Affine true"]["minus_unbiased"]["mean"] == pytest.approx(np.mean(diff), abs=1e-12)
    assert "labels ceiling" in capsys.readouterr().out


def test_given_parameters_reach_the_trainer_and_are_undone():
    alpha, beta = np.array([0.5, 0.25]), np.array([0.3, 0.1])
    saved = trainers.estimate_affine
    with bench._affine_parameters(alpha, beta, False):
        obj = trainers.estimate_affine(Affine(LambdaRank()), None, None, None, 0)
    assert trainers.estimate_affine is saved
    assert isinstance(obj, Affine) and obj.query_norm is False
    np.testing.assert_array_equal(obj.alpha, alpha)
    np.testing.assert_array_equal(obj.beta, beta)
    with pytest.raises(RuntimeError), bench._affine_parameters(alpha, beta):
        raise RuntimeError("the trainer is restored on errors too")
    assert trainers.estimate_affine is saved


def test_ceiling_labels_are_the_shown_rows_true_labels():
    labelled = Split(np.array([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]), np.array([2.0, 0.0, 1.0]), np.array([3]))
    log = Split(labelled.X[[2, 0, 2, 0]], np.array([1.0, 0.0, 0.0, 1.0]), np.array([2, 2]))
    np.testing.assert_array_equal(bench._true_labels(log, labelled), [1.0, 2.0, 1.0, 2.0])


def test_repeated_sessions_are_kept_once():
    X = np.array([[1.0], [2.0], [1.0], [2.0], [3.0], [4.0], [1.0], [2.0]])
    log = Split(X, np.array([1.0, 0, 0, 1, 0, 0, 0, 0]), np.array([2, 2, 2, 2]), position=np.array([0, 1] * 4))
    once = bench._one_session_per_query(log)
    np.testing.assert_array_equal(once.X[:, 0], [1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(once.sizes, [2, 2])
    np.testing.assert_array_equal(once.y, [1.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(once.position, [0, 1, 0, 1])
