"""``customobj compare`` end to end, with tiny settings (small synthetic data, a few rounds)."""
import csv
import json
import math

import numpy as np
import pytest

import customobj.adapters  # noqa: F401  (before any lightgbm import, as the CLI does; else a warning joins stderr)
from customobj.cli import main as cli_main
from customobj.compare import command
from customobj.compare.report import (
    RESULT_COLUMNS,
    RESULTS_SCHEMA_VERSION,
    TEST_METRICS,
    read_results,
)


pytestmark = pytest.mark.usefixtures("in_empty_folder")  # conftest: compare's default --out lands there

TINY = ["--synthetic-queries", "60", "--synthetic-docs", "10", "--rounds", "6", "--num-leaves", "7",
        "--early-stopping", "3", "--quiet"]
METHODS = ("lgb:lambdarank,xgb:rank:ndcg,cb:YetiRank,lgb:LambdaRank(truncation=10),"
           "xgb:MPBoost(ddf=logdd,lam=3),lgb:McRank,ole:RankNet[ole],ole:RankNet(sigma=2)[wse]")
LABELS = ["lgb:lambdarank", "xgb:rank:ndcg", "cb:YetiRank", "lgb:LambdaRank(truncation=10)",
          "xgb:MPBoost(ddf=logdd,lam=3)", "lgb:McRank", "ole:RankNet[ole]", "ole:RankNet(sigma=2)[wse]"]


def _read_csv(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("compare")
    code = cli_main(["compare", *TINY, "--folds", "1,2", "--methods", METHODS,
                     "--baseline", "lgb:LambdaRank( truncation = 10 )", "--out", str(out)])
    return code, out


def test_end_to_end_files(tiny_run):
    code, out = tiny_run
    assert code == 0
    rows = _read_csv(out / "results.csv")
    assert list(rows[0]) == list(RESULT_COLUMNS)
    assert sorted((r["method"], r["fold"]) for r in rows) == sorted((m, f) for m in LABELS for f in ("1", "2"))
    for r in rows:
        for col, _ in TEST_METRICS:
            v = float(r[col])
            assert math.isfinite(v) and 0.0 <= v <= 1.0, (r["method"], col, v)
        assert 1 <= int(r["best_round"]) <= int(r["rounds_trained"]) <= 6
        assert float(r["train_time_s"]) > 0

    summary = _read_csv(out / "summary.csv")
    assert [s["method"] for s in summary] == LABELS
    assert all(s["n_folds"] == "2" for s in summary)
    for s in summary:
        vals = [float(r["ndcg@10"]) for r in rows if r["method"] == s["method"]]
        assert float(s["ndcg@10_mean"]) == pytest.approx(np.mean(vals))
        assert float(s["ndcg@10_std"]) == pytest.approx(np.std(vals))

    paired = _read_csv(out / "paired.csv")
    assert [p["method"] for p in paired] == [m for m in LABELS if m != "lgb:LambdaRank(truncation=10)"]
    assert all(p["baseline"] == "lgb:LambdaRank(truncation=10)" for p in paired)
    n_test_queries = 2 * 12  # 60 queries in 5 parts; each fold tests on one part
    assert all(int(p["n_queries"]) == n_test_queries for p in paired)
    assert all(int(p["wins"]) + int(p["losses"]) + int(p["ties"]) == n_test_queries for p in paired)

    data = read_results(out / "results.json")
    assert data["schema_version"] == RESULTS_SCHEMA_VERSION
    assert data["methods"] == LABELS and data["folds"] == [1, 2]
    assert data["baseline"] == "lgb:LambdaRank(truncation=10)"
    assert data["settings"]["rounds"] == 6 and data["settings"]["early_stopping"] == 3
    assert len(data["results"]) == 2 * len(LABELS)
    for m in LABELS:
        per_fold = data["curves"][m]["per_fold"]
        assert len(per_fold) == 2
        res = [r for r in data["results"] if r["method"] == m]
        for curve, r in zip(per_fold, res):
            assert len(curve) == r["rounds_trained"]
            assert all(0.0 <= v <= 1.0 for v in curve)
    assert (out / "curves.png").stat().st_size > 10_000


def test_recorded_curves_agree_with_customobj_metric(tiny_run):
    """The libraries' validation NDCG@10 at the kept round equals customobj.metrics.ndcg on the
    validation predictions (same gain, same convention for queries without relevant rows)."""
    _, out = tiny_run
    data = json.loads((out / "results.json").read_text())
    for r in data["results"]:
        if r["method"].startswith("cb:"):
            continue  # CatBoost's own NDCG implementation, only checked to be in [0, 1]
        fold_index = data["folds"].index(r["fold"])
        curve = data["curves"][r["method"]]["per_fold"][fold_index]
        assert curve[r["best_round"] - 1] == pytest.approx(r["valid_ndcg@10"], abs=1e-5), r["method"]


def test_reproducible_from_seed(tmp_path, tiny_run):
    _, first = tiny_run
    methods = "lgb:lambdarank,xgb:rank:ndcg,cb:YetiRank,ole:RankNet[ole]"
    code = cli_main(["compare", *TINY, "--folds", "1,2", "--methods", methods, "--no-plot", "--out", str(tmp_path)])
    assert code == 0
    assert not (tmp_path / "curves.png").exists()
    again = {(r["method"], r["fold"]): r for r in _read_csv(tmp_path / "results.csv")}
    for r in _read_csv(first / "results.csv"):
        if (r["method"], r["fold"]) in again:
            for col, _ in TEST_METRICS:
                assert r[col] == again[(r["method"], r["fold"])][col], (r["method"], col)


def test_existing_results_need_overwrite_and_survive_a_failed_run(tiny_run, tmp_path, capsys, monkeypatch):
    """A folder with results is refused without --overwrite; with it, a run that fails (here: drawing
    the plot, after training) leaves every earlier file byte for byte; a successful one replaces them
    and removes the curves.png it does not draw."""
    import shutil

    from customobj.compare import report

    _, first = tiny_run
    out = tmp_path / "results"
    shutil.copytree(first, out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    argv = ["compare", *TINY, "--folds", "1", "--methods", "lgb:lambdarank", "--out", str(out)]
    capsys.readouterr()
    assert cli_main(argv) == 2
    assert capsys.readouterr().err == (f"customobj compare: error: --out {out} already holds compare results "
                                       "(results.csv, summary.csv, paired.csv, curves.png, results.json); "
                                       "pass --overwrite to replace them, or choose another --out\n")

    def broken_plot(curves, title):
        raise RuntimeError("no display")

    monkeypatch.setattr(report, "curves_png", broken_plot)
    assert cli_main([*argv, "--overwrite"]) == 1
    assert "RuntimeError: no display" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # nothing lost, no temporary left

    assert cli_main([*argv, "--overwrite", "--no-plot"]) == 0
    assert f"wrote results.csv, summary.csv, paired.csv, results.json to {out.resolve()}" in capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == ["paired.csv", "results.csv", "results.json", "summary.csv"]
    assert read_results(out / "results.json")["methods"] == ["lgb:lambdarank"]


def test_the_default_folder_is_replaced_so_the_readme_command_runs_twice(tmp_path, capsys):
    """Issue 30: the README's `customobj compare`, run a second time, refused its own ./compare-results.
    Without --out the earlier results are replaced as a whole; a folder named with --out is still kept."""
    argv = ["compare", *TINY, "--folds", "1", "--no-plot"]
    assert cli_main([*argv, "--methods", "lgb:lambdarank,lgb:RankNet"]) == 0
    default = tmp_path / "compare-results"  # the autouse fixture runs each test in tmp_path
    assert read_results(default / "results.json")["methods"] == ["lgb:lambdarank", "lgb:RankNet"]
    capsys.readouterr()
    assert cli_main([*argv, "--methods", "lgb:RankNet"]) == 0
    out = capsys.readouterr().out
    assert "replaced the earlier results in ./compare-results" in out
    assert read_results(default / "results.json")["methods"] == ["lgb:RankNet"]
    assert sorted(p.name for p in default.iterdir()) == ["paired.csv", "results.csv", "results.json", "summary.csv"]
    assert cli_main([*argv, "--methods", "lgb:RankNet", "--out", str(default)]) == 2  # named: protected
    assert "pass --overwrite" in capsys.readouterr().err


def test_a_failing_run_is_status_1_naming_method_and_fold(tmp_path, capsys, monkeypatch):
    calls = []

    def fail_on_fold_2(spec, settings, tr, va, te):
        calls.append(spec.label)
        raise ValueError("the library gave up\non two lines")

    monkeypatch.setattr(command, "train", fail_on_fold_2)  # the real runs; the 2-round trial is untouched
    code = cli_main(["compare", *TINY, "--folds", "2", "--methods", "lgb:lambdarank", "--out", str(tmp_path / "o")])
    assert code == 1 and calls == ["lgb:lambdarank"]
    assert capsys.readouterr().err == ("customobj compare: error: lgb:lambdarank on fold 2 failed: ValueError: "
                                       "the library gave up; on two lines\n")
    assert not (tmp_path / "o").exists()


def test_letor_one_fold(data_dir, tmp_path, capsys):
    code = cli_main(["compare", "--letor", str(data_dir / "mq2008"), "--folds", "1", "--rounds", "3",
                     "--methods", "lgb:lambdarank, xgb:RankNet", "--out", str(tmp_path), "--no-plot"])
    assert code == 0
    rows = _read_csv(tmp_path / "results.csv")
    assert [(r["method"], r["fold"]) for r in rows] == [("lgb:lambdarank", "1"), ("xgb:RankNet", "1")]
    assert all(0 < float(r["ndcg@10"]) <= 1 for r in rows)
    printed = capsys.readouterr().out
    assert "NDCG@10" in printed and "paired comparison with lgb:lambdarank" in printed
    assert "156 queries" in printed  # MQ2008 Fold1 test queries


def test_train_valid_test_files(data_dir, tmp_path):
    fold = data_dir / "mq2008" / "Fold1"
    code = cli_main(["compare", "--train", str(fold / "vali.txt.gz"), "--valid", str(fold / "test.txt.gz"),
                         "--test", str(fold / "test.txt.gz"), "--rounds", "2", "--methods", "lgb:regression",
                         "--out", str(tmp_path), "--no-plot", "--quiet"])
    assert code == 0
    assert [r["fold"] for r in _read_csv(tmp_path / "results.csv")] == ["1"]


@pytest.mark.parametrize("argv, message", [
    (["--methods", "lgb:Nope"], "invalid method 'lgb:Nope'"),
    (["--methods", "lgb:RankNet(bogus=1)"], "invalid options for lgb:RankNet(bogus=1)"),
    (["--methods", "lgb:lambdarank(lambdarank_truncation_level=-5)"],
     "lgb:lambdarank(lambdarank_truncation_level=-5) fails on the first"),
    (["--methods", "lgb:lambdarank", "--baseline", "xgb:rank:ndcg"], "--baseline xgb:rank:ndcg is not one of"),
    (["--letor", "/nonexistent/dir"], "no such directory"),
    (["--train", "a.txt"], "missing --valid, --test"),
    (["--folds", "6"], "synthetic data has folds 1..5"),
    (["--methods", "lgb:Logistic", "--synthetic-queries", "20"], "lgb:Logistic cannot train on fold 1"),
    (["--letor", "x", "--train", "a", "--valid", "b", "--test", "c"], "not both"),
    (["--methods", "lgb:lambdarank", "--device", "cuda"], "--device cuda applies to XGBoost methods"),
    (["--methods", "xgb:RankNet", "--device", "cuda"], "--device cuda needs a CUDA GPU"),
])
def test_bad_arguments_exit_2(argv, message, tmp_path, capsys):
    code = cli_main(["compare", *argv, "--out", str(tmp_path), "--quiet", "--synthetic-queries", "40",
                     "--synthetic-docs", "10", "--rounds", "2"])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("customobj compare: error:") and message in err and len(err.splitlines()) == 1, err


@pytest.mark.parametrize("argv", [["--rounds", "0"], ["--learning-rate", "-1"], ["--folds", "a"],
                                  ["--jobs", "x"], ["--early-stopping", "-1"], ["--bogus"], ["--device", "gpu"]])
def test_bad_option_values_are_argparse_errors(argv, capsys):
    assert cli_main(["compare", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("customobj compare: error: ") and err.endswith("(see customobj compare --help)\n")


def test_missing_catboost_is_a_clear_error(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(command, "catboost_available", lambda: False)
    code = cli_main(["compare", "--methods", "lgb:lambdarank,cb:YetiRank", "--out", str(tmp_path), "--quiet"])
    assert code == 2 and not any(tmp_path.iterdir())
    assert "cb:YetiRank needs CatBoost, an optional extra: pip install '.[catboost]'" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["cuda", "cuda:1"])
def test_device_cuda_trains_xgboost_methods_on_the_gpu(name, tmp_path, monkeypatch):
    from customobj._device import as_device
    from customobj.compare import command, trainers

    seen = []
    monkeypatch.setattr(command, "_check_gpu_methods",
                        lambda specs, device: seen.append(([s.label for s in specs], device)))
    def fake_xgb(spec, st, *splits):
        seen.append(st.device)
        raise RuntimeError("stop here: no GPU to train on")

    monkeypatch.setitem(trainers._TRAINERS, "xgb", fake_xgb)
    cli_main(["compare", *TINY, "--folds", "1", "--methods", "xgb:RankNet", "--device", name, "--quiet",
              "--no-plot", "--out", str(tmp_path)])
    assert seen[0] == (["xgb:RankNet"], as_device(name)) and name in seen[1:]  # the ordinal reaches both


# --- a core install: no XGBoost, Optuna or matplotlib -----------------------------------------------
def _without(monkeypatch, *modules):
    from customobj import _extras

    real = _extras.available
    monkeypatch.setattr(command, "available", lambda m: m not in modules and real(m))


def test_default_methods_without_xgboost_run_the_others_and_say_so(monkeypatch, tmp_path, capsys):
    _without(monkeypatch, "xgboost", "matplotlib")
    out = tmp_path / "o"
    assert cli_main(["compare", *[a for a in TINY if a != "--quiet"], "--folds", "1", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert err.count("note: XGBoost is not installed") == 1 and "pip install '.[xgboost]'" in err
    assert err.count("note: matplotlib is not installed") == 1 and "'.[plot]'" in err
    methods = read_results(out / "results.json")["methods"]
    assert methods and not any(m.startswith("xgb:") for m in methods)
    assert len(methods) == len([m for m in command.split_methods(command.DEFAULT_METHODS) if not m.startswith("xgb:")])
    assert not (out / "curves.png").exists()


def test_an_xgb_method_or_tune_without_its_extra_is_a_usage_error(monkeypatch, tmp_path, capsys):
    _without(monkeypatch, "xgboost", "optuna")
    assert cli_main(["compare", "--methods", "lgb:lambdarank,xgb:rank:ndcg", "--out", str(tmp_path), "--quiet"]) == 2
    assert "xgb:rank:ndcg needs XGBoost, an optional extra: pip install '.[xgboost]'" in capsys.readouterr().err
    assert cli_main(["compare", "--methods", "lgb:lambdarank", "--tune", "3", "--out", str(tmp_path), "--quiet"]) == 2
    assert "--tune needs Optuna, an optional extra: pip install '.[tune]'" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


# --- friction: what the user meant ------------------------------------------------------------------
def test_help_points_at_nothing_that_is_not_installed(capsys):
    with pytest.raises(SystemExit):
        cli_main(["compare", "--help"])
    out = capsys.readouterr().out
    assert "docs/" not in out and ".md" not in out
    assert "--tune" in out and "minimum data per leaf" in out
