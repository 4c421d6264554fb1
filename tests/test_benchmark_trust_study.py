"""benchmarks/trust_study.py and benchmarks/trust_click_metrics.py: a tiny run of each on MQ2008 Fold1
end to end (every method scored per logger, the JSON written), the loggers' position probabilities,
and the options refused."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import trust_study as bench  # noqa: E402

sys.path.insert(0, str(BENCH))  # each benchmark takes its own folder off sys.path when imported
import trust_click_metrics  # noqa: E402

from customobj.compare import trainers  # noqa: E402


@pytest.mark.slow  # two units of seven trainings each: about 15 s on an idle machine
def test_tiny_study_scores_every_method_per_logger(data_dir, tmp_path, capsys):
    out = tmp_path / "t.json"
    saved = trainers.estimate_affine
    assert bench.main(["--data", str(data_dir), "--folds", "1", "--logs", "1", "--sessions", "2", "--rounds", "2",
                       "--loggers", "randomised,stochastic", "--out", str(out)]) == 0
    assert trainers.estimate_affine is saved  # the hook is restored
    doc = json.loads(out.read_text())
    by = {u["logger"]: u for u in doc["units"]}
    assert set(by) == {"randomised", "stochastic"}
    for logger, unit in by.items():
        wanted = {"Unbiased", "XGBoost unbiased", "Affine", "Affine true", "DR true", "labels ceiling"}
        if logger == "randomised":
            wanted.add("Affine interventions")
        assert wanted <= set(unit) and all(0.0 <= unit[m] <= 1.0 for m in wanted)
    assert "randomised logger, trust clicks" in capsys.readouterr().out


def test_position_probabilities_of_each_logger():
    class Train:
        y = np.zeros(7)
        sizes = np.array([4, 3])

    production = np.array([0.1, 0.9, 0.5, 0.2, 3.0, 1.0, 2.0])
    det = bench._position_prob("deterministic", production, Train, 3, 1.0, 1.0, 0)
    assert det[1, 0] == det[2, 1] == det[3, 2] == det[4, 0] == det[6, 1] == det[5, 2] == 1.0 and det.sum() == 6
    rnd = bench._position_prob("randomised", production, Train, 3, 0.5, 1.0, 0)
    np.testing.assert_allclose(rnd[[1, 2, 3]].sum(axis=1), 1.0)
    assert rnd[0].sum() == 0 and abs(rnd[1, 0] - (0.5 + 0.5 / 3)) < 1e-12
    pl = bench._position_prob("stochastic", production, Train, 3, 1.0, 1.0, 0)
    np.testing.assert_allclose(pl.sum(axis=0), [2.0, 2.0, 2.0])


@pytest.mark.parametrize("argv", [["--loggers", "cascade"], ["--explore", "2"], ["--temperature", "0"]])
def test_bad_options_are_refused(argv):
    with pytest.raises(SystemExit):
        bench.parse_args(argv)


def test_tiny_click_metric_check(data_dir, tmp_path):
    out = tmp_path / "m.json"
    assert trust_click_metrics.main(["--data", str(data_dir), "--folds", "1", "--sessions", "2", "--features", "3",
                                     "--mixes", "2", "--out", str(out)]) == 0
    fold = json.loads(out.read_text())["1"]
    assert set(fold) == {"affine (TrustEM)", "affine (true)", "IPS", "clicks"}
    assert all(-1.0 <= r["kendall_tau"] <= 1.0 and r["mean_relative_error"] >= 0 for r in fold.values())
