"""``--tune N`` (customobj/compare/tuning.py): search spaces, determinism, the CLI's records."""
import json

import numpy as np
import pytest

import customobj.adapters  # noqa: F401  (before any lightgbm import, as the CLI does)
from customobj.cli import main as cli_main
from customobj.compare.methods import parse_method
from customobj.compare.report import read_results
from customobj.compare.trainers import Settings, Split, train
from customobj.compare.tuning import CB_PAIRWISE_MAX_DEPTH, OBJ, SPACES, apply, search_space, startup_trials, tune
from customobj.data import synthetic


pytestmark = pytest.mark.usefixtures("in_empty_folder")  # conftest: compare's default --out lands there

TINY = ["--synthetic-queries", "40", "--synthetic-docs", "8", "--rounds", "4", "--num-leaves", "7",
        "--early-stopping", "2", "--quiet", "--no-plot"]


def _keys(name, **settings):
    return [k for k, _ in search_space(parse_method(name), Settings(**settings))]


def test_search_space_per_backend_and_objective():
    model = ["num_leaves", "learning_rate", "min_data_in_leaf", "lambda_l2", "feature_fraction"]
    assert _keys("lgb:lambdarank") == model + [OBJ + "sigmoid", OBJ + "lambdarank_truncation_level"]
    assert _keys("lgb:LambdaRank") == model + [OBJ + "sigma", OBJ + "truncation"]
    assert _keys("ole:LambdaRank[wse]") == model + [OBJ + "sigma", OBJ + "truncation"]
    assert _keys("xgb:MPBoost(ddf=logdd)") == ["num_leaves", "learning_rate", "min_child_weight", "lambda",
                                               "colsample_bytree", OBJ + "lam"]
    assert _keys("xgb:rank:ndcg") == [p.name for p in SPACES["xgb"]]
    assert _keys("cb:YetiRank") == ["depth", "learning_rate", "l2_leaf_reg", "rsm"]
    # an option written in the method name is the user's choice, not searched
    assert OBJ + "sigma" not in _keys("lgb:LambdaRank(sigma=2)")
    assert _keys("lgb:QBRank") == model  # no sigma/truncation/lam: the model only


def test_catboost_pairwise_modes_search_shallower_trees():
    # pairwise scoring costs ~40x more per tree at depth 8 than 6: those modes stop at CatBoost's default
    for name in ("cb:YetiRankPairwise", "cb:PairLogitPairwise"):
        depth = dict(search_space(parse_method(name), Settings(num_leaves=1023)))["depth"]
        assert (depth.low, depth.high, depth.default) == (2, CB_PAIRWISE_MAX_DEPTH, CB_PAIRWISE_MAX_DEPTH)
    plain = dict(search_space(parse_method("cb:YetiRank"), Settings(num_leaves=1023)))["depth"]
    assert (plain.high, plain.default) == (10, 10)


def test_trial_zero_is_the_untuned_setting():
    space = dict(search_space(parse_method("cb:YetiRank"), Settings(num_leaves=63, learning_rate=0.05)))
    assert space["depth"].default == 6 and space["learning_rate"].default == 0.05
    for key, p in search_space(parse_method("lgb:LambdaRank"), Settings()):
        assert p.holds(p.default), key


def test_apply_routes_model_and_objective_parameters():
    spec, st = apply(parse_method("lgb:LambdaRank(k=5)"), Settings(rounds=9),
                     {"num_leaves": 15, "learning_rate": 0.2, "lambda_l2": 0.5, OBJ + "sigma": 2.0})
    assert (st.num_leaves, st.learning_rate, st.rounds, st.params) == (15, 0.2, 9, (("lambda_l2", 0.5),))
    assert spec.kwargs == {"k": 5, "sigma": 2.0}


def test_startup_trials_leave_room_for_tpe():
    assert [startup_trials(n) for n in (1, 3, 8, 30, 300)] == [2, 2, 2, 10, 10]


def _fold():
    return tuple(Split.from_data(synthetic(q, 10, 5, seed=s)) for q, s in ((40, 1), (20, 2), (20, 3)))


def test_tune_is_deterministic_with_a_seed_and_calls_train_n_times():
    tr, va, te = _fold()
    st = Settings(rounds=4, num_leaves=7, early_stopping=2, jobs=1)
    spec = parse_method("lgb:LambdaRank")
    calls = []

    def counted(*args):
        calls.append(args[1])
        return train(*args)

    a = tune(spec, st, 2, tr, va, te, seed=3, train_fn=counted, on_trial=lambda n: None)
    b = tune(spec, st, 2, tr, va, te, seed=3, train_fn=train)
    assert len(calls) == 2 and len(a.trial_values) == 2
    assert a.values == b.values and a.trial_values == b.trial_values
    np.testing.assert_array_equal(a.result.test_scores, b.result.test_scores)
    # trial 0 is the untuned setting; the chosen trial is the best on validation (first of ties)
    assert calls[0].num_leaves == 7 and calls[0].learning_rate == 0.1
    assert a.best_valid == max(a.trial_values) and a.trial_values.index(a.best_valid) == a.best_trial
    record = a.record()
    assert set(record["params"]) == {p.name for p in SPACES["lgb"]}
    assert set(record["objective_params"]) == {"sigma", "truncation"}
    assert record["best_valid_ndcg@10"] == a.best_valid and record["trial_valid_ndcg@10"] == a.trial_values
    # compare --click-log validates on the IPS click metric: the record says so, not "ndcg@10"
    clicks = a.record("valid_ips_ndcg@10")
    assert clicks["best_valid_ips_ndcg@10"] == a.best_valid and clicks["trial_valid_ips_ndcg@10"] == a.trial_values
    assert not any("valid_ndcg" in k for k in clicks)
    # another seed samples another trial 1
    c = tune(spec, st, 2, tr, va, te, seed=4, train_fn=train)
    assert c.trial_values[0] == a.trial_values[0]
    assert a.best_trial == 0 or c.values != a.values


def test_tune_rejects_a_bad_budget():
    with pytest.raises(ValueError, match="n_trials"):
        tune(parse_method("lgb:lambdarank"), Settings(), 0, *_fold(), seed=0, train_fn=train)


def test_cli_tune_records_chosen_parameters_per_fold(tmp_path, capsys):
    argv = ["compare", *TINY, "--folds", "1,2", "--tune", "2", "--methods", "lgb:LambdaRank,xgb:rank:ndcg"]
    assert cli_main([*argv, "--out", str(tmp_path / "a")]) == 0
    data = read_results(tmp_path / "a" / "results.json")
    tuning = data["tuning"]
    assert tuning["n_trials"] == 2 and tuning["seed"] == 0
    assert set(tuning["per_method"]) == {"lgb:LambdaRank", "xgb:rank:ndcg"}
    for method, folds in tuning["per_method"].items():
        assert set(folds) == {"1", "2"}
        for rec in folds.values():
            assert len(rec["trial_valid_ndcg@10"]) == 2 and rec["params"]
    # the reported validation NDCG@10 of a fold is the chosen trial's
    for r in data["results"]:
        rec = tuning["per_method"][r["method"]][str(r["fold"])]
        assert r["valid_ndcg@10"] == pytest.approx(rec["best_valid_ndcg@10"], abs=1e-12)
    # same seed, same choices and results
    assert cli_main([*argv, "--out", str(tmp_path / "b")]) == 0
    again = json.loads((tmp_path / "b" / "results.json").read_text())
    assert again["tuning"]["per_method"] == tuning["per_method"]
    assert [r["ndcg@10"] for r in again["results"]] == [r["ndcg@10"] for r in data["results"]]


def test_cli_table_says_tuned_and_the_budget(tmp_path, capsys):
    base = ["compare", *[a for a in TINY if a != "--quiet"], "--folds", "1", "--methods", "lgb:lambdarank"]
    assert cli_main([*base, "--out", str(tmp_path / "u")]) == 0
    untuned = capsys.readouterr().out
    assert "tuned:" not in untuned and "Optuna" not in untuned
    assert read_results(tmp_path / "u" / "results.json")["tuning"] is None
    assert cli_main([*base, "--tune", "1", "--out", str(tmp_path / "t")]) == 0
    assert "tuned: 1 trials of seeded Optuna TPE per method and fold" in capsys.readouterr().out


@pytest.mark.parametrize("value", ["-1", "x", "10001"])
def test_bad_tune_values_are_argparse_errors(value, capsys):
    assert cli_main(["compare", "--tune", value]) == 2
    assert "--tune" in capsys.readouterr().err


def test_a_failing_trial_is_status_1_in_one_line(tmp_path, capsys, monkeypatch):
    from customobj.compare import command

    def fails(spec, settings, tr, va, te):
        raise ValueError("the library gave up\non two lines")

    monkeypatch.setattr(command, "train", fails)  # the real runs; the 2-round check before them is untouched
    code = cli_main(["compare", *TINY, "--folds", "2", "--tune", "3", "--methods", "lgb:lambdarank",
                     "--out", str(tmp_path / "o")])
    assert code == 1 and not (tmp_path / "o").exists()
    assert capsys.readouterr().err == ("customobj compare: error: lgb:lambdarank on fold 2 (tuning) failed: "
                                       "ValueError: the library gave up; on two lines\n")
