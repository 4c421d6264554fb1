"""The training loop of compare (customobj/compare/runner.py): seeds and run counts (the seed
summary it feeds, report.summarize / format_table, is tested in tests/test_compare_report.py)."""
import csv

import numpy as np
import pytest

import customobj.adapters  # noqa: F401  (before any lightgbm import, as the CLI does)
from customobj.cli import main as cli_main
from customobj.compare.methods import parse_methods
from customobj.compare.report import evaluate, read_results
from customobj.compare.runner import n_runs, run_all, seed_list
from customobj.compare.trainers import Settings, Split, train
from customobj.data import synthetic


pytestmark = pytest.mark.usefixtures("in_empty_folder")  # conftest: compare's default --out lands there


class _Bar:
    def __init__(self):
        self.n = 0

    def update(self, n=1):
        self.n += n

    def set_description(self, text):
        pass


def test_seed_list_and_run_counts():
    assert seed_list(5, 3) == [5, 6, 7]
    specs = parse_methods("lgb:lambdarank,lgb:RankNet,ens:lgb:lambdarank+xgb:RankNet")
    # 3 single methods (the ensemble adds xgb:RankNet only); 2 folds
    assert n_runs(specs, 2, 1, 0) == 6
    assert n_runs(specs, 2, 3, 0) == 18
    assert n_runs(specs, 2, 3, 4) == 2 * 3 * (4 + 2)  # the first seed's run is the chosen trial


def _fold():
    return tuple(Split.from_data(synthetic(q, 10, 6, seed=s)) for q, s in ((40, 1), (20, 2), (20, 3)))


def test_seeds_repeat_each_run_and_the_paired_input_is_their_mean():
    tr, va, te = _fold()
    # feature_fraction < 1 makes the seed matter to LightGBM
    st = Settings(rounds=5, num_leaves=7, early_stopping=0, jobs=1, params=(("feature_fraction", 0.5),))
    specs = parse_methods("lgb:lambdarank")
    bar = _Bar()
    out = run_all(specs, [(1, tr, va, te)], st, seeds=[0, 1, 2], n_trials=0, train_fn=train, bar=bar)
    assert bar.n == 3
    assert [(r["fold"], r["seed"]) for r in out.rows] == [(1, 0), (1, 1), (1, 2)]
    per_seed = []
    for seed, row in zip((0, 1, 2), out.rows):
        res = train(specs[0], Settings(**{**vars(st), "seed": seed}), tr, va, te)
        metrics, pq = evaluate(res.test_scores, te)
        assert row["ndcg@10"] == metrics["ndcg@10"]
        per_seed.append(pq)
    assert len({r["ndcg@10"] for r in out.rows}) > 1, "the seeds gave identical models"
    np.testing.assert_allclose(out.per_query["lgb:lambdarank"][0], np.mean(per_seed, axis=0))
    assert len(out.curves["lgb:lambdarank"]) == 1  # the first seed's curve per fold


BAGGED = "lgb:lambdarank(bagging_fraction=0.7,bagging_freq=1)"


def test_cli_seeds(tmp_path, monkeypatch, capsys):
    from customobj.compare import report

    titles, draw = [], report.curves_png
    monkeypatch.setattr(report, "curves_png", lambda curves, title: titles.append(title) or draw(curves, title))
    out = tmp_path / "o"
    code = cli_main(["compare", "--synthetic-queries", "40", "--synthetic-docs", "8", "--rounds", "3",
                     "--num-leaves", "7", "--quiet", "--folds", "1", "--seeds", "2", "--seed", "7",
                     "--methods", f"{BAGGED},ole:RankNet", "--out", str(out)])
    assert code == 0
    # issue 39: the method the seed does not change is named (its seed spread is 0)
    assert "the seed changes nothing in ole:RankNet[ole] (no bagging" in capsys.readouterr().err
    assert len(titles) == 1 and "seed 7 (the first of 2" in titles[0]  # issue 30: which seed curves.png shows
    with open(out / "results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    bagged = parse_methods(BAGGED)[0].label
    assert sorted((r["method"], r["seed"]) for r in rows) == [
        (bagged, "7"), (bagged, "8"), ("ole:RankNet[ole]", "7"), ("ole:RankNet[ole]", "8")]
    assert len({r["ndcg@10"] for r in rows if r["method"] == bagged}) == 2  # the seed changed the bagged one
    data = read_results(out / "results.json")
    assert data["seeds"] == [7, 8]
    assert all(s["n_seeds"] == 2 for s in data["summary"])


def test_seeds_that_change_nothing_are_refused(tmp_path, capsys):
    """Issue 39: --seeds K with default settings trained K identical copies of every method."""
    code = cli_main(["compare", "--synthetic-queries", "40", "--synthetic-docs", "8", "--rounds", "3",
                     "--num-leaves", "7", "--quiet", "--folds", "1", "--seeds", "3",
                     "--methods", "lgb:lambdarank,xgb:rank:ndcg,ole:RankNet", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "--seeds 3: the seed changes nothing in lgb:lambdarank, xgb:rank:ndcg, ole:RankNet[ole]" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("argv, message", [
    (["--seeds", "0"], "--seeds"),
    (["--seeds", "1001"], "--seeds"),
    (["--seed", "2147483647", "--seeds", "2"], "goes past 2147483647"),
])
def test_bad_seeds(argv, message, tmp_path, capsys):
    assert cli_main(["compare", *argv, "--out", str(tmp_path), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.splitlines()) == 1


def test_every_per_position_curve_a_method_reports_is_recorded_with_its_quantity():
    """Issue 33: besides ``position_bias`` (the examination), a trainer may report other per-position
    estimates (``TrainResult.click_curves``: an affine correction's alpha / beta); each becomes a record
    of its quantity for position_bias.csv / .png."""
    from dataclasses import replace

    tr, va, te = _fold()
    st = Settings(rounds=2, num_leaves=7, early_stopping=0, jobs=1)

    def fake(spec, settings, *parts):
        res = train(spec, settings, *parts)
        return replace(res, position_bias=np.array([1.0, 0.5]), click_curves={"alpha": [0.9, 0.4], "beta": [0.1, 0.2]})

    out = run_all(parse_methods("lgb:LambdaRank"), [(1, tr, va, te)], st, seeds=[0], n_trials=0, train_fn=fake,
                  bar=_Bar())
    assert out.position_bias == {"lgb:LambdaRank": [
        {"fold": 1, "seed": 0, "quantity": "examination", "estimated": [1.0, 0.5]},
        {"fold": 1, "seed": 0, "quantity": "alpha", "estimated": [0.9, 0.4]},
        {"fold": 1, "seed": 0, "quantity": "beta", "estimated": [0.1, 0.2]}]}
