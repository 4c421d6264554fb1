"""``customobj compare --labels``: the hypervolume against hand-computed and brute-force values, the
argument checks, and one tiny run end to end through the CLI."""
import csv
import itertools
import json

import numpy as np
import pytest

import customobj.adapters  # noqa: F401  (before any lightgbm import, as the CLI does)
from customobj._cli_errors import UsageError
from customobj.cli import main as cli_main
from customobj.compare.multi_label import (
    RAYS,
    BOUND_RAYS,
    hypervolume,
    max_weighted_loss,
    parse_labels,
    parse_multi_methods,
    preferences,
)


pytestmark = pytest.mark.usefixtures("in_empty_folder")  # conftest: compare's default --out lands there


# --- hypervolume ---------------------------------------------------------------------------------
def test_hypervolume_two_labels_by_hand():
    # the staircase of (0.5, 0.2), (0.3, 0.4): 0.5 * 0.2 + 0.3 * (0.4 - 0.2) = 0.16; (0.1, 0.1) is dominated
    pts = np.array([[0.5, 0.2], [0.3, 0.4], [0.1, 0.1]])
    assert hypervolume(pts, np.zeros(2)) == pytest.approx(0.16, abs=1e-12)
    # against the reference (0.2, 0.1): 0.3 * 0.1 + 0.1 * 0.2 = 0.05
    assert hypervolume(pts, np.array([0.2, 0.1])) == pytest.approx(0.05, abs=1e-12)
    # one point: its box; the order of the points does not matter
    assert hypervolume(np.array([[0.6, 0.7]]), np.zeros(2)) == pytest.approx(0.42)
    assert hypervolume(pts[::-1], np.zeros(2)) == hypervolume(pts, np.zeros(2))


def test_hypervolume_three_labels_by_hand():
    # two boxes 1 x 1 x 0.5 and 0.5 x 0.5 x 1 overlapping in 0.5 x 0.5 x 0.5: 0.5 + 0.25 - 0.125
    pts = np.array([[1.0, 1.0, 0.5], [0.5, 0.5, 1.0]])
    assert hypervolume(pts, np.zeros(3)) == pytest.approx(0.625)


def test_hypervolume_points_not_above_the_reference_add_nothing():
    assert hypervolume(np.array([[0.5, 0.0], [0.0, 0.7]]), np.zeros(2)) == 0.0
    assert hypervolume(np.zeros((0, 2)), np.zeros(2)) == 0.0


@pytest.mark.parametrize("m", [2, 3])
def test_hypervolume_equals_counting_lattice_cells(m):
    """Points on a lattice of step 1/10: the volume is the number of dominated unit cells / 10^m."""
    rng = np.random.default_rng(m)
    for _ in range(20):
        pts = rng.integers(0, 11, size=(rng.integers(1, 7), m))
        cells = sum(1 for c in itertools.product(range(10), repeat=m)
                    if any(all(c[d] < p[d] for d in range(m)) for p in pts))
        assert hypervolume(pts / 10.0, np.zeros(m)) == pytest.approx(cells / 10.0 ** m, abs=1e-12)


def test_max_weighted_loss_and_preferences():
    assert max_weighted_loss(np.array([0.8, 0.5]), np.array([0.5, 0.5])) == pytest.approx(0.25)
    assert max_weighted_loss(np.array([0.9, 0.6]), np.array([0.9, 0.1])) == pytest.approx(0.09)
    for m in (2, 3, 4):
        p = preferences(m)
        assert p.shape == (len(RAYS), m) and (p > 0).all()
        np.testing.assert_allclose(p.sum(axis=1), 1.0)
        np.testing.assert_allclose(p[:, 1:].sum(axis=1), RAYS)
    assert set(BOUND_RAYS) <= set(RAYS)


# --- arguments ------------------------------------------------------------------------------------
def test_parse_labels():
    assert parse_labels("label,41") == ["label", 41]
    assert parse_labels("3, label, 5") == [3, "label", 5]
    for text, named in (("label,foo", "'foo'"), ("label,0", "'0'"), ("label,3,3", "'3'")):
        with pytest.raises(UsageError, match=named):
            parse_labels(text)
    with pytest.raises(UsageError, match="at least 2"):
        parse_labels("label")


def test_parse_multi_methods():
    assert parse_multi_methods("linear,epo") == ["linear", "epo"]
    with pytest.raises(UsageError, match="'lambdarank'"):
        parse_multi_methods("linear,lambdarank")
    with pytest.raises(UsageError, match="distinct"):
        parse_multi_methods("epo,epo")


TINY = ["compare", "--synthetic-queries", "30", "--synthetic-docs", "6", "--folds", "1", "--rounds", "3",
        "--num-leaves", "4"]


@pytest.mark.parametrize("extra, named", [
    (["--labels", "label,99"], "unknown label column 99"),
    (["--labels", "label"], "at least 2 label columns"),
    (["--labels", "label,3", "--methods", "linear,foo"], "unknown multi-label method 'foo'"),
    (["--labels", "label,3", "--tune", "2"], "--tune does not apply"),
    (["--labels", "label,3", "--seeds", "2"], "--seeds does not apply"),
    (["--labels", "3,label,21"], "unknown label column 21"),
])
def test_cli_refuses_bad_arguments(extra, named, capsys):
    assert cli_main(TINY + extra + ["--out", "res"]) == 2
    err = capsys.readouterr().err
    assert named in err and len(err.strip().splitlines()) == 1


# --- end to end -----------------------------------------------------------------------------------
def test_cli_end_to_end(tmp_path, capsys):
    out = tmp_path / "res"
    args = TINY + ["--labels", "label,3", "--methods", "linear,epo,epsilon_constraint", "--out", str(out)]
    assert cli_main(args) == 0
    stdout = capsys.readouterr().out
    assert "hypervolume" in stdout and "max weighted loss" in stdout and "bounds met" in stdout
    rows = list(csv.DictReader(open(out / "multi_label.csv")))
    assert [r["method"] for r in rows] == ["linear"] * 5 + ["epo"] * 5 + ["epsilon_constraint"] * 2
    summary = {r["method"]: r for r in csv.DictReader(open(out / "multi_summary.csv"))}
    keys = ["ndcg10_label", "ndcg10_3"]
    for method in ("linear", "epo", "epsilon_constraint"):
        pts = np.array([[float(r[k]) for k in keys] for r in rows if r["method"] == method])
        assert ((pts >= 0) & (pts <= 1)).all()
        assert float(summary[method]["hypervolume"]) == pytest.approx(hypervolume(pts, np.zeros(2)))
        np.testing.assert_allclose(float(summary[method]["ndcg10_label"]), pts[:, 0].mean())
    for r in rows[:10]:
        pref = np.array([float(v) for v in r["preference"].split("/")])
        nd = np.array([float(r[k]) for k in keys])
        assert float(r["max_weighted_loss"]) == pytest.approx(max_weighted_loss(nd, pref))
    for r in rows[10:]:
        met = all(float(c) <= float(b) for c, b in zip(r["train_costs"].split("/"), r["bounds"].split("/")))
        assert r["bound_met_train"] == str(met)
    meta = json.loads((out / "multi_label.json").read_text())
    assert meta["labels"] == ["label", "3"] and meta["hypervolume_reference"] == [0.0, 0.0]
    if (out / "pareto.png").exists():  # matplotlib installed
        for name in ("pareto.png", "weights.png"):
            assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # a second run into the same folder needs --overwrite
    assert cli_main(args) == 2
    assert "--overwrite" in capsys.readouterr().err
