"""benchmarks/mo_lightgbm.py without MO-LightGBM (CI has no build of it): the TSV it writes for the fork
reads back as the split, customobj's side trains every method, the fork's cost equals a loop transcribed
from its ``rank_objective.hpp``, each method gets the fork's settings, a stand-in binary (stock LightGBM
behind the fork's log lines) runs the whole script, and a missing, failing or silent binary is refused with
a clear error, never a silent row."""
import gzip
import json
import math
import os
import stat
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from conftest import import_benchmark
from customobj.multi import METHODS
from test_objectives_parity import ref_lightgbm


@pytest.fixture(scope="module")
def bench():
    return import_benchmark("mo_lightgbm")


@pytest.fixture(scope="module")
def split(bench, data_dir):
    return bench.STUDY.load_split(str(data_dir / "mq2008" / "Fold1" / "vali.txt.gz"), 41)


def test_the_tsv_reads_back_as_the_split(bench, split, tmp_path):
    X, y, y2, group = split
    path = tmp_path / "train.tsv"
    bench.write_tsv(str(path), split)
    with open(path) as f:
        header = f.readline().rstrip("\n").split("\t")
    assert header[:3] == ["target", "qid", "label2"] and len(header) == 3 + X.shape[1]
    table = np.loadtxt(path, skiprows=1, delimiter="\t")
    np.testing.assert_array_equal(table[:, 0], y)
    np.testing.assert_array_equal(table[:, 2], y2)
    np.testing.assert_array_equal(np.diff(np.flatnonzero(np.diff(table[:, 1])) + 1, prepend=0, append=len(y)), group)
    np.testing.assert_allclose(table[:, 3:], X, rtol=1e-8)  # %.9g: nine significant digits
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".part")]


def test_customobj_side_trains_one_ray(bench, split):
    booster, seconds = bench.customobj_model(split, "epo", 3, w=0.5)
    assert booster.num_trees() == 3 and seconds > 0
    row = bench.evaluate(booster.predict(split[0]), split, 0.5)
    assert row["mwl"] == pytest.approx(max(0.5 * (1 - row["ndcg1"]), 0.5 * (1 - row["ndcg2"])))


@pytest.mark.parametrize("method", ["stochastic", "chebyshev", "wc_mgda", "epsilon_constraint", "ec_mgda"])
def test_customobj_side_trains_every_method(bench, split, method):
    """Each method with its ray or bound (the other is not passed on: MultiObjective refuses what a method
    does not read)."""
    booster, _ = bench.customobj_model(split, method, 2, w=0.3, bound=1.5, cap=0.9)
    assert booster.num_trees() == 2 and np.isfinite(booster.predict(split[0])).all()


def _fork_chebyshev_round(bench, scores, labels, group, w):
    """One round of the fork's ``chebyshev_scalarization`` with two labels, transcribed: each label's gradient
    from its LambdaRank loop (``GetGradientsForOneQuery``; the exact sigmoid for its table), all weight on the
    label of larger ``r_k cost_k / queries`` (``ChebyshevScalarization::GetCoefficients``), its cost
    :func:`fork_costs` (held to the fork's loop above)."""
    parts = [ref_lightgbm(list(scores), [float(v) for v in lab], list(group)) for lab in labels]
    k = int(np.argmax([(1 - w) * bench.fork_costs(scores, labels[0], group),
                       w * bench.fork_costs(scores, labels[1], group)]))
    return parts[k][0], parts[k][1], k


def test_per_label_lightgbm_takes_the_forks_chebyshev_step(bench):
    """With ``--per-label lightgbm`` a Chebyshev round's gradient is the fork's (its per-label LambdaRank, the
    label it picks): the default ``LambdaRank()`` trains another per-label loss, which is why customobj's
    Chebyshev at ``w = .8`` lay farther from its ray than the fork's (docs/multi-objective.md). Queries longer
    than the fork's truncation (30), scores where the two costs pick different labels."""
    from customobj.multi import MultiObjective

    rng = np.random.default_rng(5)
    group = np.array([45, 12, 33, 8])
    y1 = rng.integers(0, 3, group.sum()).astype(float)
    y2 = rng.integers(0, 4, group.sum()).astype(float)
    checked = set()
    for w in (0.2, 0.5, 0.8):
        scores = rng.normal(size=group.sum()) + 0.8 * (y2 if w == 0.8 else y1)
        want_g, want_h, want_k = _fork_chebyshev_round(bench, scores, (y1, y2), group, w)
        for per_label in ("lightgbm", "customobj"):
            obj = MultiObjective([bench.per_label_loss(per_label), bench.per_label_loss(per_label)], labels=[None, y2],
                                 method="chebyshev", preference=[1 - w, w])
            g, h = obj.grad_hess(scores, y1, group=group)
            if per_label == "lightgbm":  # customobj picks by its own cost: here the same label as the fork's
                assert obj.fitted_attributes()["label_weights_"][0].tolist() == [1.0 - want_k, float(want_k)]
                np.testing.assert_allclose(g, want_g, rtol=1e-10, atol=1e-13)
                np.testing.assert_allclose(h, want_h, rtol=1e-10, atol=1e-13)
            else:
                assert np.abs(g - want_g).max() > 0.05 * np.abs(want_g).max()
        checked.add(want_k)
    assert checked == {0, 1}  # both labels picked on some ray


def test_per_label_lightgbm_trains_stock_lambdarank_on_a_label(bench, split):
    """The fork's per-label loss is LightGBM's ``lambdarank``: customobj's side with all weight on label 1
    (``w = 0``) and ``per_label="lightgbm"`` trains stock LightGBM's model; with ``LambdaRank()`` it does not."""
    import lightgbm as lgb

    X, y, _, group = split
    native = lgb.train(dict(bench.STUDY.LGB, objective="lambdarank"), lgb.Dataset(X, y, group=group), 3).predict(X)
    ours = bench.customobj_model(split, "linear", 3, w=0.0, per_label="lightgbm")[0].predict(X)
    other = bench.customobj_model(split, "linear", 3, w=0.0)[0].predict(X)
    assert np.ptp(native) > 0.1
    np.testing.assert_allclose(ours, native, rtol=0, atol=1e-4)  # LightGBM's sigmoid table: the one difference
    assert np.abs(other - native).max() > 1e-2
    assert bench.customobj_cost(native, y, group, "lightgbm") != pytest.approx(bench.customobj_cost(native, y, group))


def test_mgda_u_reaches_customobjs_side(bench, split):
    """``u`` is read by EC-MGDA (a different model), and not passed to a method that refuses it (EPO)."""
    base = bench.customobj_model(split, "ec_mgda", 3, bound=1.0, cap=0.9)[0].predict(split[0])
    same = bench.customobj_model(split, "ec_mgda", 3, bound=1.0, cap=0.9, u=0.1)[0].predict(split[0])
    big = bench.customobj_model(split, "ec_mgda", 3, bound=1.0, cap=0.9, u=10.0)[0].predict(split[0])
    np.testing.assert_array_equal(same, base)  # 0.1 is the default
    assert np.abs(big - base).max() > 1e-6
    assert bench.customobj_model(split, "epo", 2, w=0.5, u=10.0)[0].num_trees() == 2


def test_fork_settings_map_each_method(bench):
    assert bench.fork_settings("linear", w=0.2) == {"mo_preferences": "0.2,0.8"}  # label 2 first in the fork
    assert bench.fork_settings("wc_mgda", w=0.5) == {"mo_preferences": "0.5,0.5", "mo_mgda_use_fix_u": "true"}
    assert bench.fork_settings("epsilon_constraint", bound=1.25, cap=0.9) == {"mo_preferences": "0.5,0.5",
                                                                              "mo_ub_sec_obj": "1.25"}
    assert bench.fork_settings("ec_mgda", bound=1.25, cap=0.9) == {
        "mo_preferences": "0.5,0.5", "mo_ub_sec_obj": "1.25", "mo_ec_mgda_w": "0.9", "mo_mgda_use_fix_u": "true"}
    assert bench.fork_settings("ec_mgda", bound=1.0, cap=0.5, tune_u=True) == {
        "mo_preferences": "0.5,0.5", "mo_ub_sec_obj": "1", "mo_ec_mgda_w": "0.5"}  # the fork's own default
    assert bench.fork_settings("ec_mgda", bound=1.0, cap=0.5, u=0.3) == {  # --mgda-u: the fixed u
        "mo_preferences": "0.5,0.5", "mo_ub_sec_obj": "1", "mo_ec_mgda_w": "0.5", "mo_mgda_use_fix_u": "true",
        "mo_mgda_min_u": "0.3"}
    assert bench.fork_settings("wc_mgda", w=0.5, u=2.0)["mo_mgda_min_u"] == "2"
    assert "mo_mgda_min_u" not in bench.fork_settings("epo", w=0.5, u=2.0)  # a method without u: not passed on
    assert set(bench.FORK) == set(METHODS)  # every method of customobj's that the fork has, and no other
    assert bench.MO_NAMES["epsilon_constraint"] == "e_constraint"


def _fork_cost_loop(scores, label, group, sigma=1.0):
    """The fork's cost: LightGBM's LambdaRank loop (test_objectives_parity's transcription) with the cost the
    fork adds per pair, on its sigmoid table (``GetSigmoid``: the bin's lower edge, clamped at the ends)."""
    bins, lo = 1024 * 1024, -50.0 / sigma / 2
    factor = bins / (-2 * lo)

    def table(x):
        i = 0 if x <= lo else bins - 1 if x >= -lo else int((x - lo) * factor)
        return 1.0 / (1.0 + math.exp((i / factor + lo) * sigma))

    costs: list = []
    ref_lightgbm(list(scores), [float(v) for v in label], list(group), sigmoid=sigma, rho=table, costs=costs)
    return sum(costs) / len(group)


def test_fork_costs_equal_the_forks_loop(bench):
    rng = np.random.default_rng(3)
    group = np.array([40, 7, 1, 5, 12, 3])  # 40 rows: pairs cut at the top 30; 1 row: no pair
    label = rng.integers(0, 5, group.sum()).astype(float)
    label[48:53] = 0  # a query without relevant rows (max DCG 0)
    for scores in (rng.normal(size=group.sum()), np.round(rng.normal(size=group.sum())),  # ties
                   30 * rng.normal(size=group.sum()),  # beyond the sigmoid table's range
                   np.zeros(group.sum())):  # all scores equal: no norm division
        assert bench.fork_costs(scores, label, group) == pytest.approx(_fork_cost_loop(scores, label, group), rel=1e-12)
    tied = bench.fork_costs(np.zeros(group.sum()), label, group)
    assert tied == pytest.approx(_fork_cost_loop(np.zeros(group.sum()), label, group), rel=1e-12) and tied > 0
    assert bench.fork_costs(np.zeros(5), np.zeros(5), [5]) == 0.0


def test_cost_check_compares_the_printed_costs_at_the_last_rounds_start(bench, split, tmp_path):
    import lightgbm as lgb

    X, y, y2, group = split
    columns = np.column_stack([np.repeat(np.arange(group.size), group), y2, X])
    booster = lgb.train(dict(objective="lambdarank", verbose=-1, num_threads=1), lgb.Dataset(columns, y, group=group), 3)
    path = tmp_path / "model.txt"
    path.write_text(booster.model_to_string())
    fold = SimpleNamespace(train=split, args=SimpleNamespace(rounds=3))
    s = booster.predict(columns, num_iteration=2)
    printed = (bench.fork_costs(s, y2, group), bench.fork_costs(s, y, group))
    assert bench.cost_check(str(path), fold, printed) == pytest.approx(0.0, abs=1e-15)
    assert bench.cost_check(str(path), fold, (printed[0] * 1.1, printed[1])) == pytest.approx(0.1 / 1.1, rel=1e-9)
    assert bench.cost_check(str(path), fold, None) is None


def test_a_constrained_result_says_which_bounds_were_met(bench, split):
    fold = SimpleNamespace(train=split, test=split)
    s = split[2] + 0.1 * np.arange(split[2].size) % 1  # ranks label 2 well
    ref = dict(bound=1e9, target=bench.ndcg(s, split[2], split[3], 10))
    met = bench.constrained_result(s, s, fold, ref, bench.customobj_cost)
    assert met["met_test"] and met["met_train"] and met["ndcg2"] == ref["target"]
    missed = bench.constrained_result(-s, -s, fold, dict(ref, bound=1e-9), bench.customobj_cost)
    assert not missed["met_test"] and not missed["met_train"] and missed["train_cost2"] > 1e-9


def _script(tmp_path, body):
    path = tmp_path / "fake_lightgbm"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_a_failing_binary_is_an_error_with_its_output(bench, tmp_path):
    binary = _script(tmp_path, "echo 'Unknown parameter mg_combination'; exit 3")
    with pytest.raises(RuntimeError, match="MO-LightGBM failed.*Unknown parameter"):
        bench.mo_lightgbm(binary, str(tmp_path), "linear", {"mo_preferences": "0.5,0.5"}, 2, "t")


def test_a_binary_without_timings_is_refused(bench, tmp_path):
    binary = _script(tmp_path, f"touch {tmp_path}/model_t.txt; echo Finished training")  # no elapsed-time lines
    with pytest.raises(RuntimeError, match="no timing"):
        bench.mo_lightgbm(binary, str(tmp_path), "epo", {"mo_preferences": "0.5,0.5"}, 2, "t")


def test_a_run_that_crashes_before_finishing_is_refused(bench, tmp_path):
    binary = _script(tmp_path, f"touch {tmp_path}/model_t.txt; echo '1.0 seconds elapsed, finished iteration 1'; "
                     "kill -SEGV $$")  # a partial model and a crash: no "Finished training"
    with pytest.raises(RuntimeError, match="MO-LightGBM failed.*rc -11"):
        bench.mo_lightgbm(binary, str(tmp_path), "linear", {"mo_preferences": "0.5,0.5"}, 2, "t")


_W = "echo '[LightGBM] [Info] multigrad-combination-coefficients: [{},]'"


def test_a_finished_run_that_crashes_at_exit_gives_its_time_weights_and_costs(bench, tmp_path):
    binary = _script(tmp_path, f"touch {tmp_path}/model_t.txt; {_W.format('0.4,0.6')}; "
                     "echo '[LightGBM] [Debug] losses (before norm) = 9 9'; echo '0.5 seconds elapsed, finished iteration 1'; "
                     f"{_W.format('0.25,0.75')}; echo '[LightGBM] [Debug] losses (before norm) =  1.5 2.25'; "
                     "echo '1.25 seconds elapsed, finished iteration 2'; echo Finished training; kill -SEGV $$")
    got = bench.mo_lightgbm(binary, str(tmp_path), "epsilon_constraint", {"mo_ub_sec_obj": "1"}, 2, "t")
    assert got == (1.25, [[0.4, 0.6], [0.25, 0.75]], (1.5, 2.25))


@pytest.mark.parametrize("weights", [["0.5,0.5"], ["0.5,0.5", "nan,0.5"], ["0.5,0.5", "1"]])
def test_a_run_with_missing_or_bad_weights_is_refused(bench, tmp_path, weights):
    """A round without its weights, a NaN weight, or a round of one weight for two labels: wrong output."""
    lines = "; ".join(_W.format(w) for w in weights)
    binary = _script(tmp_path, f"touch {tmp_path}/model_t.txt; {lines}; echo '1.0 seconds elapsed, finished iteration 2'; "
                     "echo Finished training")
    with pytest.raises(RuntimeError, match="rounds of weights"):
        bench.mo_lightgbm(binary, str(tmp_path), "wc_mgda", {"mo_preferences": "0.5,0.5"}, 2, "t")


def test_stochastic_label_aggregation_reports_its_draws(bench, tmp_path):
    draw = "echo '[LightGBM] [Info] multilable-sample-distribution: [0.45,0.55,]'"
    binary = _script(tmp_path, f"touch {tmp_path}/model_t.txt; {draw}; {draw}; echo '2 seconds elapsed, finished iteration 2';"
                     " echo Finished training")
    assert bench.mo_lightgbm(binary, str(tmp_path), "stochastic", {"mo_preferences": "0.5,0.5"}, 2, "t") == (
        2.0, [[0.45, 0.55], [0.45, 0.55]], None)


# A stand-in for the fork: no imports beyond the standard library (numpy and LightGBM take seconds to import
# in each process on loaded cores): it copies a model file that stock LightGBM wrote for the same columns,
# with the fork's parameters block, and prints the fork's log lines (weights, e_constraint's costs, timings,
# "Finished training").
_STAND_IN = """#!{python}
import shutil
import sys
conf = dict(line.split(" = ", 1) for line in open(sys.argv[1].split("=", 1)[1]).read().splitlines())
with open({log!r}, "a") as f:
    f.write(repr(sorted(conf.items())) + "\\n")
shutil.copyfile({model!r}, conf["output_model"])
for i in range(1, int(conf["num_iterations"]) + 1):
    print("[LightGBM] [Info] multigrad-combination-coefficients: [0.5,0.5,]")
    if conf["mg_combination"] == "e_constraint":
        print("[LightGBM] [Debug] losses (before norm) = 1.5 2.5")
    print(f"[LightGBM] [Info] {{0.01 * i:f}} seconds elapsed, finished iteration {{i}}")
print("[LightGBM] [Info] Finished training")
"""


def small_fold(data_dir, root):
    """``root/Fold1`` with MQ2008 Fold 1's first 600 validation rows (about 30 queries) as both its training
    and its test split; returns the fold's folder."""
    fold = root / "Fold1"
    fold.mkdir(parents=True)
    with gzip.open(data_dir / "mq2008" / "Fold1" / "vali.txt.gz", "rt") as f:
        head = [next(f) for _ in range(600)]
    for part in ("train", "test"):
        with gzip.open(fold / f"{part}.txt.gz", "wt") as f:
            f.writelines(head)
    return fold


def test_the_whole_script_runs_against_a_stand_in_binary(bench, data_dir, tmp_path, capsys):
    """Every method of one kind and the other on a small fold (MQ2008 Fold 1's first 600 validation rows as
    both splits), two rounds: one row per model with both sides' figures, each bound from its own linear model,
    the fork's configuration as :func:`fork_settings` says, and the summary lines."""
    import lightgbm as lgb

    fold = small_fold(data_dir, tmp_path / "data")
    X, y, y2, group = bench.STUDY.load_split(str(fold / "train.txt.gz"), 41)
    columns = np.column_stack([np.repeat(np.arange(group.size), group), y2, X])  # the fork's: qid, label2, features
    booster = lgb.train(dict(objective="lambdarank", verbose=-1, num_threads=1), lgb.Dataset(columns, y, group=group), 2)
    model = tmp_path / "model_source.txt"
    model.write_text(booster.model_to_string().replace("end of parameters", "[ignore_column: name:label2]\nend of parameters"))
    log = tmp_path / "confs.txt"
    exe = tmp_path / "stand_in"
    exe.write_text(_STAND_IN.format(python=sys.executable, log=str(log), model=str(model)))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    out = tmp_path / "rows.json"
    bench.main(["--molgbm", str(exe), "--data", str(tmp_path / "data"), "--folds", "1", "--rounds", "2", "--rays", "0.5",
                "--bound-weights", "0.4", "--methods", "wc_mgda,epsilon_constraint,ec_mgda", "--out", str(out)])
    rows = json.loads(out.read_text())
    assert [(r["method"], r["w"]) for r in rows] == [("wc_mgda", 0.5), ("epsilon_constraint", 0.4), ("ec_mgda", 0.4)]
    for r in rows:
        for side in ("customobj", "mo_lightgbm"):
            assert 0 < r[side]["ndcg1"] <= 1 and r[side]["seconds"] > 0
    ec = rows[1]
    assert ec["customobj"]["bound"] > 0 and ec["mo_lightgbm"]["bound"] > 0
    assert ec["mo_lightgbm"]["cost_check"] > 0 and rows[2]["mo_lightgbm"]["cost_check"] is None
    confs = [dict(eval(line)) for line in log.read_text().splitlines()]  # noqa: S307 (our own repr)
    assert [c["mg_combination"] for c in confs] == ["wc_mgda", "linear_scalarization", "e_constraint", "ec_mgda"]
    assert confs[1]["mo_preferences"] == "0.4,0.6"  # the bound's linear model, label 2 first
    assert float(confs[2]["mo_ub_sec_obj"]) == pytest.approx(ec["mo_lightgbm"]["bound"], rel=1e-8)
    assert confs[3]["mo_ec_mgda_w"] == "0.9" and confs[3]["mo_mgda_use_fix_u"] == "true"
    printed = capsys.readouterr().out
    assert "ec_mgda bound from w=0.40, customobj minus MO-LightGBM over 1 folds" in printed
    assert "wc_mgda w=0.50, customobj minus MO-LightGBM over 1 folds" in printed


def test_fork_model_files_predict_through_stock_lightgbm(bench, split, tmp_path):
    """A model file with the fork's parameters block (``ignore_column: name:label2`` there breaks stock LightGBM's
    reading of the block) scores as the booster that wrote it."""
    import lightgbm as lgb

    X, y, y2, group = split
    columns = np.column_stack([np.repeat(np.arange(group.size), group), y2, X])
    booster = lgb.train(dict(objective="lambdarank", verbose=-1, num_threads=1), lgb.Dataset(columns, y, group=group), 3)
    text = booster.model_to_string().replace("end of parameters", "[ignore_column: name:label2]\n[mo_labels: name:label2]\n"
                                             "end of parameters")
    path = tmp_path / "model.txt"
    path.write_text(text)
    np.testing.assert_array_equal(bench.predict_fork_model(str(path), split), booster.predict(columns))


@pytest.mark.parametrize("argv, message", [
    (["--molgbm", "/nonexistent/lightgbm"], "not an executable"),
    (["--molgbm", "{exe}", "--methods", "weighted_sum"], "--methods"),
    (["--molgbm", "{exe}", "--rays", "0,0.5"], "--rays"),
    (["--molgbm", "{exe}", "--bound-weights", "1"], "--bound-weights"),
    (["--molgbm", "{exe}", "--rounds", "1"], "--rounds"),
    (["--molgbm", "{exe}", "--secondary-cap", "1"], "--secondary-cap"),
    (["--molgbm", "{exe}", "--mgda-u", "0"], "--mgda-u"),
    (["--molgbm", "{exe}", "--per-label", "xgboost"], "--per-label"),
])
def test_bad_arguments_are_refused(bench, tmp_path, capsys, argv, message):
    exe = _script(tmp_path, "exit 0")
    with pytest.raises(SystemExit):
        bench.main([a.replace("{exe}", exe) for a in argv])
    assert message in capsys.readouterr().err
