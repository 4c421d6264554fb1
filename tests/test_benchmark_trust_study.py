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
sys.path.insert(0, str(BENCH))
import trust_em_trace  # noqa: E402

from customobj.compare import trainers  # noqa: E402


@pytest.mark.slow  # two units of eight trainings each: about 15 s on an idle machine
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
        wanted = {"Unbiased", "XGBoost unbiased", "Affine", "Affine true", "DR true", "DR", "labels ceiling"}
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


def _unit(fold, log, **scores):
    return {"dataset": "mq2008", "logger": "deterministic", "fold": fold, "log": log, **scores,
            "max_errors": {"TrustEM": [0.1, 0.02]}, "seconds": 1.0}


def test_units_are_appended_resumed_and_joined(tmp_path, capsys):
    """A run writes one line per unit; a report joins a run of some methods to another's units, renaming."""
    rng = np.random.default_rng(0)
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for fold in range(1, 5):
        base = 0.6 + 0.02 * rng.normal()
        bench._append_unit(a, _unit(fold, 1, **{"Unbiased": base, "XGBoost unbiased": base - 0.01,
                                               "Affine": base + 0.001, "labels ceiling": base + 0.02}))
        if fold < 4:
            bench._append_unit(b, _unit(fold, 1, Affine=base + 0.015 + 0.001 * fold))
    with open(a, "a") as f:
        f.write('{"torn')  # a run killed while writing
    assert len(bench._load_units(str(a))) == 4
    units = bench._joined_units(f"{a}:Affine=Affine old+{b}")
    assert len(units) == 4 and sum("Affine" in u for u in units) == 3 and all("Affine old" in u for u in units)
    t = bench.target(units, "deterministic")
    assert t["n"] == 3 and [c["versus"] for c in t["contrasts"]] == ["Unbiased", "XGBoost unbiased"]
    assert t["contrasts"][0]["mean"] == pytest.approx(0.017, abs=1e-9) and t["met"]  # 85% of the gap
    assert not bench.target(units, "deterministic", "Affine old")["met"]  # 5% of the gap
    out = tmp_path / "r.json"
    assert bench.main(["--report", "--loggers", "deterministic", "--units", f"{a}:Affine=Affine old+{b}",
                       "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "3 of 4 units that have every method" in said and "Affine old - Unbiased" in said
    assert {t["affine"] for t in json.loads(out.read_text())["target"]} == {"Affine", "Affine old"}


@pytest.mark.parametrize("argv", [["--loggers", "cascade"], ["--explore", "2"], ["--temperature", "0"],
                                  ["--methods", "Affine,Unknown"]])
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
    assert 0 <= fold["affine (TrustEM)"]["relative_error_scale_fitted"] and len(fold["affine (TrustEM)"]["scale_map"]) == 2


def test_tiny_anchored_click_metric(data_dir, tmp_path):
    out = tmp_path / "m.json"
    assert trust_click_metrics.main(["--data", str(data_dir), "--folds", "1", "--sessions", "2", "--features", "2",
                                     "--mixes", "1", "--iterations", "1", "--anchor-queries", "3,40",
                                     "--anchor-draws", "3", "--out", str(out)]) == 0
    fold = json.loads(out.read_text())["1"]
    assert set(fold["affine (anchored)"]) == set(fold["affine (anchored per position)"]) == {"3", "40"}
    for r in list(fold["affine (anchored)"].values()) + list(fold["affine (anchored per position)"].values()):
        assert r["draws"] == 3 and 0 <= r["refused"] <= 3
        if r["refused"] < 3:
            assert 0 <= r["mean_relative_error"] <= r["max_relative_error"] and -1 <= r["kendall_tau"] <= 1
    with pytest.raises(SystemExit):
        trust_click_metrics.main(["--anchor-queries", "0"])


def test_the_anchored_metrics_discounts_give_affine_dcg():
    """The anchor loop's shortcut (each ranker's per-row discounts, one product per draw) is affine_dcg."""
    from customobj.clicks.metrics import affine_dcg

    d = __import__("customobj").data.synthetic(30, 12, 4, seed=2)
    log = __import__("customobj").data.simulate_clicks(d, ranker=d.X[:, 0], click_model="trust", sessions=3, seed=1)
    alpha, beta = np.linspace(0.4, 0.1, 10), np.linspace(0.5, 0.0, 10)
    scores = np.round(log.X[:, 1], 1)  # ties broken by row, as affine_dcg does
    fast = trust_click_metrics._discounts(scores, log.group) @ ((log.y - beta[log.position]) / alpha[log.position])
    assert fast / log.group.size == pytest.approx(affine_dcg(scores, log.y, log.group, alpha=alpha, beta=beta), rel=1e-12)


def test_tiny_trust_em_trace(data_dir, tmp_path):
    out = tmp_path / "t.json"
    assert trust_em_trace.main(["--data", str(data_dir), "--folds", "1", "--sessions", "1", "--iterations", "2",
                                "--variants", "default,monotone", "--out", str(out)]) == 0
    runs = json.loads(out.read_text())
    assert [r["variant"] for r in runs] == ["default", "monotone"] and all(len(r["trace"]) == 2 for r in runs)
    assert all(0 <= s["alpha"] <= 1 and 0 <= s["beta"] <= 1 and s["family"] >= 0 for r in runs for s in r["trace"])
    with pytest.raises(SystemExit):
        trust_em_trace.main(["--variants", "bigger"])


def test_the_trace_follows_trust_em_fit():
    """The traced loop is TrustEM.fit's: after the last iteration its errors are those of the fitted estimate."""
    d = __import__("customobj").data.synthetic(40, 10, 5, seed=0)
    log = __import__("customobj").data.simulate_clicks(d, ranker=d.X[:, 0], click_model="trust", sessions=3, seed=0)
    truth = (np.linspace(0.3, 0.1, 10), np.linspace(0.3, 0.0, 10))
    em = customobj_trust_em(n_iter=2)
    steps = trust_em_trace.trace(em, log.X, log.y, log.position, truth)
    fitted = customobj_trust_em(n_iter=2).fit(log.X, log.y, position=log.position)
    assert steps[-1] == trust_em_trace.errors(fitted.alpha_, fitted.beta_, truth)


def customobj_trust_em(**kw):
    from customobj.clicks import TrustEM

    return TrustEM(n_estimators=3, **kw)
