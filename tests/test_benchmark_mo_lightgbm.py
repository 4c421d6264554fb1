"""benchmarks/mo_lightgbm.py without MO-LightGBM (CI has no build of it): the TSV it writes for the fork
reads back as the split, customobj's side trains and scores one ray, and a missing or failing binary is
refused with a clear error, never a silent row."""
import os
import stat

import numpy as np
import pytest

from conftest import import_benchmark


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
    booster, seconds = bench.customobj_model(split, "epo", 0.5, 3)
    assert booster.num_trees() == 3 and seconds > 0
    row = bench.evaluate(booster.predict(split[0]), split, 0.5)
    assert row["mwl"] == pytest.approx(max(0.5 * (1 - row["ndcg1"]), 0.5 * (1 - row["ndcg2"])))


def _script(tmp_path, body):
    path = tmp_path / "fake_lightgbm"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_a_failing_binary_is_an_error_with_its_output(bench, tmp_path):
    binary = _script(tmp_path, "echo 'Unknown parameter mg_combination'; exit 3")
    with pytest.raises(RuntimeError, match="MO-LightGBM failed.*Unknown parameter"):
        bench.mo_lightgbm(binary, str(tmp_path), "linear", 0.5, 2, "t")


def test_a_binary_without_timings_is_refused(bench, tmp_path):
    binary = _script(tmp_path, f"touch {tmp_path}/model_t.txt; echo Finished training")  # no elapsed-time lines
    with pytest.raises(RuntimeError, match="no timing"):
        bench.mo_lightgbm(binary, str(tmp_path), "epo", 0.5, 2, "t")


def test_a_run_that_crashes_before_finishing_is_refused(bench, tmp_path):
    binary = _script(tmp_path, f"touch {tmp_path}/model_t.txt; echo '1.0 seconds elapsed, finished iteration 1'; "
                     "kill -SEGV $$")  # a partial model and a crash: no "Finished training"
    with pytest.raises(RuntimeError, match="MO-LightGBM failed.*rc -11"):
        bench.mo_lightgbm(binary, str(tmp_path), "linear", 0.5, 2, "t")


def test_a_finished_run_that_crashes_at_exit_gives_its_time(bench, tmp_path):
    binary = _script(tmp_path, f"touch {tmp_path}/model_t.txt; echo '0.5 seconds elapsed, finished iteration 1'; "
                     "echo '1.25 seconds elapsed, finished iteration 2'; echo Finished training; kill -SEGV $$")
    assert bench.mo_lightgbm(binary, str(tmp_path), "linear", 0.5, 2, "t") == 1.25


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
    (["--molgbm", "{exe}", "--methods", "wc_mgda"], "--methods"),
    (["--molgbm", "{exe}", "--rays", "0,0.5"], "--rays"),
])
def test_bad_arguments_are_refused(bench, tmp_path, capsys, argv, message):
    exe = _script(tmp_path, "exit 0")
    with pytest.raises(SystemExit):
        bench.main([a.replace("{exe}", exe) for a in argv])
    assert message in capsys.readouterr().err
