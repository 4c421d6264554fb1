"""benchmarks/multi_objective.py at a tiny size: the per-query grading of a feature into a label, one
fold of the study end to end (its grid, EPO rays and epsilon-constraint rows agree with each other), and
the per-round cost and LP benchmarks run (their timings mean nothing here: correctness only)."""
import importlib.util
import sys

import numpy as np
import pytest

from conftest import REPO


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_multi_objective", REPO / "benchmarks" / "multi_objective.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_grade_per_query_scales_within_each_query(bench):
    values = np.array([0.0, 0.5, 1.0, 3.0, 3.0, 10.0, 20.0])
    got = bench.grade_per_query(values, np.array([3, 2, 2]))
    assert got.tolist() == [0, 2, 4, 0, 0, 0, 4]  # a query of equal values is all 0


def test_one_fold_of_the_study(bench, data_dir, capsys, tmp_path):
    args = bench.parser().parse_args(["study", "--data", str(data_dir / "mq2008"), "--rounds", "2", "--folds", "1",
                                      "--rays", "0.5", "--bound-weights", "0.3", "--penalties", "1",
                                      "--plot", str(tmp_path / "front.png")])  # the script's own defaults
    r = bench.study_fold(args.data, 1, args)
    assert sorted(r["grid"]) == pytest.approx(bench.GRID.tolist())
    g1, g2, l1, l2, t1, t2 = r["grid"][0.5]  # test NDCG@10, test costs, training costs
    assert r["mwl_ls"] == pytest.approx(max(0.5 * (1 - g1), 0.5 * (1 - g2)))
    assert r["mwl_ls_cost"] == pytest.approx(max(0.5 * l1, 0.5 * l2))
    assert r["mwl_ls_train"] == pytest.approx(max(0.5 * t1, 0.5 * t2))
    (ec,) = r["ec"]
    assert ec["bound"] == r["grid"][0.3][5]  # the bound: label 2's training cost of the w = 0.3 linear model
    assert ec["best_ls_ndcg1"] == max(v[0] for v in r["grid"].values() if v[1] >= ec["ndcg2_target"] - 0.01)
    assert ec["met"] == (ec["ec_ndcg2"] >= ec["ndcg2_target"] - 0.01)
    bench.plot_front([r], args, args.plot)
    assert (tmp_path / "front.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bench.main(["rounds", "--data", str(data_dir / "mq2008" / "Fold1"), "--repeats", "1", "--scales", "1,2"])
    out = capsys.readouterr().out
    assert out.count("round / (m x single round) median") == 2 * 3 * 2 * 2  # scales x methods x m x libraries
    rows = sorted({int(line.split()[0][5:]) for line in out.splitlines() if line.startswith("rows=")})
    assert len(rows) == 2 and rows[1] == 2 * rows[0]
    with pytest.raises(SystemExit):
        bench.main(["rounds", "--scales", "0"])


def test_kernel_benchmark_runs(bench, data_dir, capsys):
    bench.main(["kernel", "--data", str(data_dir / "mq2008" / "Fold1"), "--repeats", "2", "--scales", "1,2"])
    lines = [line for line in capsys.readouterr().out.splitlines() if "GRAD_LOSS / GRAD median" in line]
    assert len(lines) == 2 and float(lines[0].split("median ")[1].split()[0]) > 0


def test_train_benchmark_runs(bench, data_dir, capsys):
    bench.main(["train", "--data", str(data_dir / "mq2008" / "Fold1"), "--rounds", "1", "--repeats", "1",
                "--labels", "2", "--methods", "linear,epo"])
    lines = [line for line in capsys.readouterr().out.splitlines() if "training / (m x single training)" in line]
    assert len(lines) == 2 * 2  # methods x libraries
    for line in lines:
        per_m, whole = (float(line.split(key)[1].split()[0].rstrip(","))
                        for key in ("single training) median ", "training median "))
        assert whole > 0 and per_m == pytest.approx(whole / 2, abs=1e-3)  # m = 2 (both printed to 3 decimals)
    for bad in (["--labels", "1"], ["--rounds", "0"]):
        with pytest.raises(SystemExit):
            bench.main(["train", *bad])


def test_scaled_split_repeats_the_queries(bench):
    X, y, group = np.arange(10.0).reshape(5, 2), np.array([0.0, 1, 2, 0, 1]), np.array([3, 2])
    X3, y3, g3 = bench.scaled_split(X, y, group, 3)
    assert X3.shape == (15, 2) and g3.tolist() == [3, 2] * 3 and g3.sum() == y3.size
    np.testing.assert_array_equal(X3[10:], X)
    np.testing.assert_array_equal(y3[5:10], y)


@pytest.mark.parametrize("m", [2, 4])
def test_lp_benchmark_routes_agree(bench, capsys, m):
    bench.main(["lp", "--labels", str(m), "--calls", "6"])
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith(f"m={m} ")]
    names = [line.split(":")[0].split(" ", 1)[1].strip() for line in lines]
    assert names[:2] == ["linprog", "milp"] and ("closed form" in names) == (m == 2)
    for line in lines[1:]:  # every route gives linprog's weights
        assert float(line.rsplit(" ", 1)[1]) <= 1e-12, line
