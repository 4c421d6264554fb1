"""benchmarks/ole_paper.py (Xia et al.'s Figure 2 protocol) end to end on a tiny size, in-process.

Checks that every output exists and that the numbers agree with each other: the curves' last
points are the table's NDCG@10, the table's difference is the curve difference and the mean of the
per-query differences, the p-values are scipy's on those differences; and that bad arguments give
one-line errors.
"""
import csv
import json
import math

import numpy as np
import pytest

from conftest import import_benchmark

ole_paper = import_benchmark("ole_paper")

ROUNDS = 3
ARGV = ["--queries", "40", "--rows", "24", "--features", "12", "--rounds", str(ROUNDS), "--leaves", "4", "6",
        "--threads", "1", "--no-progress"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("ole_paper")
    assert ole_paper.main([*ARGV, "--out", str(out)]) == 0
    return out


def test_outputs_exist(run):
    for name in ("curves.csv", "results.json", "table.txt", "ole_paper.png"):
        assert (run / name).stat().st_size > 0, name
    assert (run / "ole_paper.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not [p.name for p in run.iterdir() if p.name.startswith(".")]  # no temporary files left


def test_numbers_are_consistent(run):
    from scipy import stats

    def no_constants(name):
        raise AssertionError(f"results.json holds {name}: not standard JSON")

    doc = json.loads((run / "results.json").read_text(), parse_constant=no_constants)
    with open(run / "curves.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 2 * 3 * ROUNDS
    last = {(int(r["leaves"]), r["criterion"]): float(r["test_ndcg10"]) for r in rows if int(r["round"]) == ROUNDS}
    curves = {(c["leaves"], c["criterion"]): c for c in doc["curves"]}
    table = doc["table"]
    assert {(t["leaves"], t["criterion"]) for t in table} == set(last) == {(lv, c) for lv in (4, 6)
                                                                             for c in ("se", "ole", "ole_fast")}
    for t in table:
        key = (t["leaves"], t["criterion"])
        assert 0.0 <= t["test_ndcg10"] <= 1.0
        assert t["test_ndcg10"] == last[key]
        assert len(curves[key]["per_query"]) == doc["data"]["test"]
        assert math.isclose(np.mean(curves[key]["per_query"]), t["test_ndcg10"], rel_tol=1e-12)
        assert t["tree_wall_s"] > 0 and t["tree_cpu_s"] >= 0
        se = last[(t["leaves"], "se")]
        assert math.isclose(t["diff_points"], 100 * (last[key] - se), abs_tol=1e-9)
        assert math.isclose(t["paired"]["mean"], t["diff_points"], abs_tol=1e-9)
        p = t["paired"]
        assert p["wins"] + p["losses"] + p["ties"] == doc["data"]["test"]
        diff = 100 * (np.asarray(curves[key]["per_query"]) - np.asarray(curves[(t["leaves"], "se")]["per_query"]))
        if t["criterion"] == "se":
            assert t["wall_ratio"] == 1.0 and p["ties"] == doc["data"]["test"]
            assert p["wilcoxon_p"] is None and p["ttest_p"] is None  # undefined: every query ties
        elif np.any(diff != 0):
            assert math.isclose(p["wilcoxon_p"], stats.wilcoxon(diff).pvalue, rel_tol=1e-9)
    text = (run / "table.txt").read_text()
    ole4 = next(t for t in table if (t["leaves"], t["criterion"]) == (4, "ole"))
    assert f"{100 * ole4['test_ndcg10']:.3f}" in text and f"{ole4['diff_points']:+.3f}" in text


def test_split_is_seeded_and_disjoint():
    group = np.full(50, 3)
    a = ole_paper.split_queries(group, 7)
    b = ole_paper.split_queries(group, 7)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert [len(x) for x in a] == [30, 10, 10]
    assert np.array_equal(np.sort(np.concatenate(a)), np.arange(50))
    assert not all(np.array_equal(x, y) for x, y in zip(a, ole_paper.split_queries(group, 8)))


@pytest.mark.parametrize("extra, needle", [
    (["--queries", "2"], "--queries"),
    (["--rounds", "0"], "--rounds"),
    (["--rounds", "ten"], "--rounds"),
    (["--learning-rate", "nan"], "--learning-rate"),
    (["--learning-rate", "5"], "--learning-rate"),
    (["--rows", "1"], "--rows"),
    (["--leaves", "10", "10"], "--leaves"),
    (["--criteria", "wse"], "--criteria"),
])
def test_bad_arguments_are_one_line(extra, needle, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        ole_paper.main(["--out", str(tmp_path / "o"), *extra])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err and err.startswith("ole_paper.py: error:")


def test_out_must_be_a_folder(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(SystemExit):
        ole_paper.main(["--out", str(f)])
    assert "not a folder" in capsys.readouterr().err
