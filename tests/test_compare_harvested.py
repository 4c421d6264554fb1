"""Tests of customobj/compare/harvested.py: ``Unbiased(..., propensity=harvest)`` as a compare method,
the harvested curve of the simulated rankers' logs (close to the truth on MQ2008), its use in
training and its report beside the other click methods' curves."""
from __future__ import annotations

import csv
import json

import numpy as np
import pytest

import customobj
import customobj.adapters  # noqa: F401  (before lightgbm: OpenMP wait policy)
from customobj.cli import main
from customobj.compare.clicks import _weak_ranker, click_folds, parse_clicks
from customobj.compare.harvested import N_RANKERS, RANKER_SEED_STEP, checkable, harvest_folds, wants_harvest, with_harvest
from customobj.compare.methods import build_objective, parse_method
from customobj.compare.trainers import Settings, Split, train

HARVEST = "lgb:Unbiased(objective=LambdaRank,propensity=harvest)"


def test_the_method_name():
    spec = parse_method(HARVEST)
    assert wants_harvest(spec) and not wants_harvest(parse_method("lgb:Unbiased(objective=LambdaRank)"))
    assert not wants_harvest(parse_method("lgb:LambdaRank"))
    assert build_objective(with_harvest(spec, [1.0, 0.5, 0.25])) == customobj.Unbiased(
        customobj.LambdaRank(), propensity=[1.0, 0.5, 0.25])
    assert wants_harvest(spec) and not wants_harvest(checkable(spec))  # checks build a stand-in curve
    with pytest.raises(ValueError, match="propensity"):  # the word alone is no curve
        build_objective(spec)


def _folds(spec_text, queries=50):
    d = customobj.data.synthetic(queries, 12, 5, seed=2)
    split = Split.from_data(d)
    labelled = [(1, split, split, split)]
    spec = parse_clicks(spec_text)
    return labelled, click_folds(labelled, spec, seed=4, jobs=1), spec, split


def test_harvest_folds_harvests_the_logs_of_the_rankers_it_says():
    labelled, clicked, spec, split = _folds("pbm:sessions=3,shown=6")
    out = harvest_folds(labelled, clicked, spec, seed=4, jobs=1)
    fold, train_, valid, test = out[0]
    assert fold == 1 and valid is split and test is split
    assert np.array_equal(train_.y, clicked[0][1].y) and clicked[0][1].propensity is None  # the same training log
    logs = [customobj.data.simulate_clicks((split.X, split.y, split.sizes), ranker=_weak_ranker(split, s, 1),
                                           shown=6, sessions=3, seed=s)
            for s in (4 + 1 + k * RANKER_SEED_STEP for k in range(N_RANKERS))]
    np.testing.assert_array_equal(train_.propensity, customobj.clicks.harvest_propensities(logs))
    assert train_.propensity.size == 6 and train_.propensity[0] == 1.0


def test_the_harvested_curve_is_near_the_truth_on_mq2008(mq2008_fold1):
    """The compare recipe (three weak rankers on their own 5% of the queries, 12 sessions) harvests
    examination within 0.05 of the true (1/r)^eta (measured 0.013 at eta 1)."""
    split = Split.from_data(mq2008_fold1["train"])
    labelled = [(1, split, split, split)]
    spec = parse_clicks("pbm:eta=1")
    out = harvest_folds(labelled, click_folds(labelled, spec, seed=0, jobs=1), spec, seed=0, jobs=1)
    assert np.abs(out[0][1].propensity - 1.0 / np.arange(1, 11)).max() < 0.05


def test_training_uses_the_harvested_curve_and_reports_it():
    labelled, clicked, spec, split = _folds("pbm:sessions=2,shown=6")
    train_ = clicked[0][1]
    rho = np.array([1.0, 0.6, 0.4, 0.3, 0.2, 0.1])
    st = Settings(rounds=3, num_leaves=7, jobs=1, early_stopping=0)
    harvested = Split(train_.X, train_.y, train_.sizes, train_.position, rho * 0.5)
    res = train(parse_method(HARVEST), st, harvested, split, split)
    np.testing.assert_allclose(res.position_bias, rho)  # relative to position 1
    import lightgbm as lgb

    from customobj.adapters import lightgbm_objective

    # the same training by hand, with Unbiased given the curve (inverse propensity scoring)
    f = lightgbm_objective(customobj.Unbiased(customobj.LambdaRank(), propensity=rho * 0.5))
    booster = lgb.train({"objective": f, "num_leaves": 7, "learning_rate": 0.1, "seed": 0, "deterministic": True,
                         "force_row_wise": True, "num_threads": 1, "verbosity": -1},
                        lgb.Dataset(train_.X, train_.y, group=train_.sizes, position=train_.position), 3)
    np.testing.assert_allclose(res.test_scores, booster.predict(split.X, raw_score=True), atol=1e-12)
    with pytest.raises(ValueError, match="harvested from several rankers"):
        train(parse_method(HARVEST), st, train_, split, split)


def test_compare_runs_the_harvest_method(tmp_path, capsys):
    out = tmp_path / "r"
    base = ["compare", "--synthetic-queries", "60", "--synthetic-docs", "12", "--folds", "1", "--rounds", "3",
            "--no-plot", "--quiet"]
    assert main(base + ["--clicks", "pbm:sessions=3", "--methods", f"lgb:LambdaRank,{HARVEST}",
                        "--out", str(out)]) == 0
    meta = json.loads((out / "results.json").read_text())
    curve = meta["position_bias"]["estimated"][HARVEST][0]["estimated"]
    assert len(curve) == 10 and curve[0] == 1.0
    with open(out / "position_bias.csv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["method"] == HARVEST]
    assert [float(r["estimated"]) for r in rows] == curve and float(rows[1]["true"]) == 0.5
    capsys.readouterr()
    assert main(base + ["--methods", HARVEST, "--out", str(tmp_path / "x")]) == 2
    assert "add --clicks" in capsys.readouterr().err
