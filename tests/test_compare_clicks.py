"""Tests of customobj/compare/clicks.py: the --clicks value, the click-log folds, Unbiased as a
method name, and the option end to end on a small synthetic run."""
from __future__ import annotations

import csv
import json

import numpy as np
import pytest

import customobj
import customobj.adapters  # noqa: F401  (before lightgbm: OpenMP wait policy)
from customobj._cli_errors import UsageError
from customobj.compare.clicks import build_unbiased, click_folds, parse_clicks
from customobj.compare.methods import build_objective, parse_method
from customobj.compare.trainers import Split


def test_parse_clicks_defaults_and_options():
    assert parse_clicks("pbm")[:5] == ("pbm", 1.0, 12, 10, ())
    assert parse_clicks(" cascade : sessions=3 , shown=5 ")[:5] == ("cascade", 1.0, 3, 5, ())
    assert parse_clicks("pbm:eta=0.5").eta == 0.5


@pytest.mark.parametrize("bad, match", [
    ("dbn", "click model"), ("pbm:eta", "options"), ("pbm:rate=1", "options"), ("pbm:eta=x", "number"),
    ("pbm:sessions=1.5", "integer"), ("pbm:eta=-1", "eta"), ("pbm:eta=nan", "eta"), ("pbm:shown=0", "shown"),
    ("", "--clicks is empty"), ("  ", "--clicks is empty"),
])
def test_parse_clicks_refuses(bad, match):
    with pytest.raises(UsageError, match=match):
        parse_clicks(bad)


@pytest.mark.parametrize("methods", ["lgb:LambdaRank", "lgb:RegressionEM"])
def test_compare_refuses_an_empty_clicks_value(tmp_path, capsys, methods):
    """Issue 30: `--clicks ''` was ignored (trained on the true labels, exit 0)."""
    from customobj.cli import main

    out = tmp_path / "r"
    rc = main(["compare", "--synthetic-queries", "20", "--synthetic-docs", "8", "--folds", "1", "--clicks", "",
               "--methods", methods, "--rounds", "2", "--out", str(out), "--no-plot", "--quiet"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and not out.exists()
    assert len(err.splitlines()) == 1 and "--clicks is empty" in err, err


def test_click_folds_replace_only_the_training_part():
    d = customobj.data.synthetic(60, 12, 4, seed=0)
    split = Split.from_data(d)
    folds = click_folds([(1, split, split, split)], parse_clicks("pbm:sessions=2,shown=5"), seed=0, jobs=1)
    fold, train, valid, test = folds[0]
    assert valid is split and test is split and fold == 1
    assert set(np.unique(train.y)) <= {0.0, 1.0} and train.sizes.max() <= 5
    assert train.position is not None and train.position.max() <= 4
    again = click_folds([(1, split, split, split)], parse_clicks("pbm:sessions=2,shown=5"), seed=0, jobs=1)
    assert np.array_equal(again[0][1].y, train.y)


def test_unbiased_is_a_method_name():
    spec = parse_method("lgb:Unbiased(objective=RankNet,bias_norm=0)")
    obj = build_objective(spec)
    assert obj == customobj.Unbiased(customobj.RankNet(), bias_norm=0.0)
    assert build_unbiased({}) == customobj.Unbiased(customobj.LambdaRank())
    with pytest.raises(ValueError, match="objective"):
        build_objective(parse_method("lgb:Unbiased(objective=Nope)"))
    with pytest.raises(ValueError, match="bias_norm"):
        build_objective(parse_method("lgb:Unbiased(bias_norm=-1)"))


def test_compare_runs_on_clicks(tmp_path):
    from customobj.cli import main

    out = tmp_path / "r"
    rc = main(["compare", "--synthetic-queries", "60", "--synthetic-docs", "12", "--folds", "1", "--clicks",
               "pbm:sessions=2,eta=2", "--methods",
               "lgb:LambdaRank,lgb:Unbiased(objective=LambdaRank),lgb:lambdarank,lgb:RegressionEM(n_iter=2),"
               "xgb:rank:ndcg(lambdarank_unbiased=true)",
               "--rounds", "3", "--out", str(out), "--quiet"])
    assert rc == 0
    meta = json.loads((out / "results.json").read_text())
    assert meta["data"].endswith("trained on pbm:eta=2,sessions=2,shown=10 clicks")
    assert meta["arguments"]["clicks"] == "pbm:sessions=2,eta=2"
    # issue 30: each click method's estimated position bias, beside the simulated users' true one
    true = (1.0 / np.arange(1, 11)) ** 2
    np.testing.assert_allclose(meta["position_bias"]["true"]["examination"], true)
    estimated = meta["position_bias"]["estimated"]
    assert sorted(estimated) == ["lgb:RegressionEM(n_iter=2)", "lgb:Unbiased(objective=LambdaRank)",
                                 "xgb:rank:ndcg(lambdarank_unbiased=true)"]
    xgb_bias = estimated["xgb:rank:ndcg(lambdarank_unbiased=true)"][0]["estimated"]
    assert len(xgb_bias) == 10 and xgb_bias[0] == 1.0  # XGBoost's ti+, cut to the 10 positions shown
    with open(out / "position_bias.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    unbiased = [r for r in rows if r["method"] == "lgb:Unbiased(objective=LambdaRank)"]
    assert [float(r["estimated"]) for r in unbiased] == estimated["lgb:Unbiased(objective=LambdaRank)"][0]["estimated"]
    assert float(unbiased[0]["estimated"]) == 1.0 and float(unbiased[1]["true"]) == 0.25
    assert (out / "position_bias.png").read_bytes()[:4] == b"\x89PNG"


def test_regression_em_is_a_method_name():
    from customobj.compare.clicks import build_regression_em

    em, per_iter = build_regression_em("xgb", {"n_iter": 3, "min_child_samples": 5}, rounds=10, num_leaves=7,
                                       learning_rate=0.2, seed=1)
    # 3 iterations of ceil(10 / 3) = 4 trees
    assert (em.library, em.n_iter, em.n_estimators, per_iter) == ("xgboost", 3, 4, 4)
    assert (em.learning_rate, em.num_leaves, em.min_child_samples, em.seed) == (0.2, 7, 5, 1)
    assert build_regression_em("lgb", {}, rounds=2, num_leaves=7, learning_rate=0.1, seed=0)[0].n_iter == 2
    with pytest.raises(ValueError, match="no option 'n_estimators'"):
        build_regression_em("lgb", {"n_estimators": 3}, rounds=10, num_leaves=7, learning_rate=0.1, seed=0)
    with pytest.raises(ValueError, match="n_iter"):
        build_regression_em("lgb", {"n_iter": 0}, rounds=10, num_leaves=7, learning_rate=0.1, seed=0)
    with pytest.raises(ValueError, match="min_child_samples"):
        build_regression_em("lgb", {"min_child_samples": -1}, rounds=10, num_leaves=7, learning_rate=0.1, seed=0)
    tuned = build_regression_em("lgb", {}, rounds=10, num_leaves=7, learning_rate=0.1, seed=0,
                                params=(("lambda_l2", 1.0), ("min_data_in_leaf", 5)))[0]
    assert tuned.params == {"lambda_l2": 1.0, "min_data_in_leaf": 5}  # --tune's values go to the library
    with pytest.raises(ValueError, match="lgb: or xgb:"):
        build_regression_em("ole", {}, rounds=10, num_leaves=7, learning_rate=0.1, seed=0)
    assert parse_method("lgb:RegressionEM(n_iter=4)").label == "lgb:RegressionEM(n_iter=4)"
    for bad in ("ole:RegressionEM", "cb:RegressionEM"):
        with pytest.raises(ValueError, match="RegressionEM"):
            parse_method(bad)
    with pytest.raises(ValueError, match="trainer"):
        build_objective(parse_method("lgb:RegressionEM"))


def test_compare_runs_regression_em_on_clicks_only(tmp_path, capsys):
    from customobj.cli import main

    base = ["compare", "--synthetic-queries", "60", "--synthetic-docs", "12", "--folds", "1", "--rounds", "6",
            "--no-plot", "--quiet", "--early-stopping", "2"]
    out = tmp_path / "r"
    rc = main(base + ["--clicks", "pbm:sessions=2", "--methods", "lgb:LambdaRank,lgb:RegressionEM(n_iter=3),"
                      "xgb:RegressionEM(n_iter=2)", "--out", str(out)])
    assert rc == 0
    rows = json.loads((out / "results.json").read_text())
    text = json.dumps(rows)
    assert "lgb:RegressionEM(n_iter=3)" in text and "xgb:RegressionEM(n_iter=2)" in text
    for args, match in ((["--methods", "lgb:RegressionEM"], "add --clicks"),
                        (["--clicks", "pbm", "--methods", "lgb:RegressionEM(rounds=3)"], "no option 'rounds'")):
        capsys.readouterr()
        assert main(base + args + ["--out", str(tmp_path / "x")]) == 2
        assert match in capsys.readouterr().err


def test_tune_runs_the_click_methods(tmp_path):
    """--tune searches the model's parameters of Unbiased and RegressionEM (they have no objective
    class to read options from): the tuned values reach the library."""
    pytest.importorskip("optuna")
    from customobj.cli import main

    out = tmp_path / "t"
    rc = main(["compare", "--synthetic-queries", "60", "--synthetic-docs", "12", "--folds", "1", "--clicks",
               "pbm:sessions=2", "--rounds", "4", "--tune", "2", "--methods",
               "lgb:Unbiased(objective=RankNet),lgb:RegressionEM(n_iter=2)", "--out", str(out), "--no-plot", "--quiet"])
    assert rc == 0
    text = (out / "results.json").read_text()
    assert "lambda_l2" in text and "lgb:RegressionEM(n_iter=2)" in text


@pytest.mark.parametrize("text, key, options", [
    ("trust:epsilon_plus=0.9,epsilon_minus=0.2/0.1/0.05,shown=3", "trust",
     {"epsilon_plus": 0.9, "epsilon_minus": [0.2, 0.1, 0.05]}),
    ("dcm:continue_prob=0.8", "dcm", {"continue_prob": 0.8}),
    ("ubm:eta=2", "ubm", {}),
])
def test_each_click_models_options_reach_simulate_clicks(text, key, options):
    """Issue 33: --clicks trust|dcm|ubm[:options]; the model's own options are simulate_clicks' keywords,
    and click_folds draws the log simulate_clicks draws with them (not the defaults)."""
    from customobj.compare.clicks import _weak_ranker

    spec = parse_clicks(text)
    assert spec.model == key and spec.simulation_options() == options
    d = customobj.data.synthetic(40, 10, 4, seed=1)
    split = Split.from_data(d)
    train = click_folds([(1, split, split, split)], spec, seed=3, jobs=1)[0][1]
    direct = customobj.data.simulate_clicks((split.X, split.y, split.sizes), ranker=_weak_ranker(split, 4, 1),
                                            click_model=key, eta=spec.eta, shown=spec.shown, sessions=spec.sessions,
                                            seed=4, **options)
    assert np.array_equal(train.y, direct.y)
    if options:  # the options change the log: they were not dropped on the way
        plain = customobj.data.simulate_clicks((split.X, split.y, split.sizes), ranker=_weak_ranker(split, 4, 1),
                                               click_model=key, eta=spec.eta, shown=spec.shown,
                                               sessions=spec.sessions, seed=4)
        assert not np.array_equal(plain.y, direct.y)
    assert parse_clicks(spec.label) == spec  # the label reads back as the same spec


@pytest.mark.parametrize("bad, match", [
    ("pbm:epsilon_plus=0.9", "option of click_model='trust'"), ("trust:continue_prob=0.5", "click_model='dcm'"),
    ("trust:epsilon_minus=1.5", r"\[0, 1\]"), ("trust:shown=3,epsilon_plus=1/0.9", "shown=3"),
    ("dcm:continue_prob=x", "numbers joined by /"), ("dcm:continue_prob=0.5,continue_prob=0.6", "twice"),
])
def test_click_model_options_refused_with_the_reason(bad, match):
    with pytest.raises(UsageError, match=match):
        parse_clicks(bad)


def test_true_curves_of_each_click_model():
    from customobj.compare.clicks import true_curves

    pbm = true_curves(parse_clicks("pbm:eta=2,shown=3"))
    np.testing.assert_allclose(pbm["examination"], [1.0, 0.25, 1 / 9])
    trust = true_curves(parse_clicks("trust:shown=2,epsilon_minus=0.3"))
    assert trust["epsilon_minus"] == [0.3, 0.3] and len(trust["epsilon_plus"]) == 2
    # the affine form of trust bias: P(click | examined position r) = alpha_r * relevance + beta_r
    np.testing.assert_allclose(trust["alpha"], np.array([1.0, 0.5]) * (np.array(trust["epsilon_plus"]) - 0.3))
    np.testing.assert_allclose(trust["beta"], [0.3, 0.15])
    assert all(true_curves(parse_clicks(m)) is None for m in ("cascade", "dcm", "ubm"))


def test_click_spec_takes_the_logger_options():
    """issue 43: ``--clicks trust:logger=...`` reaches simulate_clicks; the default keeps the old labels."""
    from customobj._cli_errors import UsageError
    from customobj.compare.clicks import parse_clicks

    spec = parse_clicks("trust:sessions=3,logger=randomised,explore=0.5")
    assert spec.simulation_options()["logger"] == "randomised" and spec.explore == 0.5
    assert spec.label == "trust:eta=1,sessions=3,shown=10,logger=randomised,explore=0.5,temperature=1"
    assert parse_clicks("trust").label == "trust:eta=1,sessions=12,shown=10"
    for bad in ("trust:logger=random", "trust:explore=2,logger=swap", "trust:temperature=0"):
        with pytest.raises(UsageError, match="logger"):
            parse_clicks(bad)
