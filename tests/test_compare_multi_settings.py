"""customobj/compare/multi_settings.py: ``compare --labels``' ``--preferences`` and ``--bounds`` parsed
into records (a bad entry is a UsageError naming the option), and both options end to end."""
import csv
import json

import numpy as np
import pytest

import customobj.adapters  # noqa: F401  (before any lightgbm import, as the CLI does)
from customobj._cli_errors import UsageError
from customobj.cli import main as cli_main
from customobj.compare.multi_settings import (BOUND_RAYS, RAYS, Bound, parse_bounds, parse_preferences,
                                              preference_vectors)

TINY = ["compare", "--synthetic-queries", "30", "--synthetic-docs", "6", "--folds", "1", "--rounds", "3",
        "--num-leaves", "4", "--no-plot", "--quiet"]


@pytest.fixture(autouse=True)
def _outside_the_repository(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def test_defaults_and_parsed_values():
    assert parse_preferences(None) == RAYS and parse_preferences(" 0.25 ,0.75") == (0.25, 0.75)
    assert parse_bounds(None) == tuple(Bound(w, None) for w in BOUND_RAYS)
    assert parse_bounds("w=0.4,0.8") == (Bound(0.4, None), Bound(None, 0.8))
    assert [b.name for b in parse_bounds("w=0.4,0.8")] == ["bound from w=0.4", "bound 0.8"]
    p = preference_vectors((0.2, 0.6), 3)
    np.testing.assert_allclose(p, [[0.8, 0.1, 0.1], [0.4, 0.3, 0.3]])


BAD_PREFERENCES = [("0", "strictly between 0 and 1"), ("1.0", "strictly between 0 and 1"),
                   ("0.3,,0.5", "an empty entry"), ("0.3,0.3", "given twice"),
                   ("x", "'x' is not a number"), ("nan", "strictly between")]
BAD_BOUNDS = [("w=1.5", "strictly between 0 and 1"), ("-1", "positive number"),
              ("0", "positive number"), ("inf", "positive number"),
              ("cheap", "neither w=SHARE"), ("w=0.3,w=0.3", "given twice")]


@pytest.mark.parametrize("option, parse, text, named",
                         [("--preferences", parse_preferences, t, n) for t, n in BAD_PREFERENCES]
                         + [("--bounds", parse_bounds, t, n) for t, n in BAD_BOUNDS])
def test_bad_option_values_name_the_option_and_the_defect(option, parse, text, named):
    with pytest.raises(UsageError, match=option) as e:
        parse(text)
    assert named in str(e.value)


@pytest.mark.parametrize("extra", [["--preferences", "0.5"], ["--bounds", "w=0.5"]])
def test_options_need_labels(extra, capsys):
    assert cli_main(TINY + ["--methods", "lgb:LambdaRank"] + extra + ["--out", "res"]) == 2
    assert "applies only with --labels" in capsys.readouterr().err


def test_preferences_and_bounds_end_to_end(tmp_path):
    out = tmp_path / "res"
    args = TINY + ["--labels", "label,3", "--methods", "linear,epsilon_constraint", "--preferences", "0.4",
                   "--bounds", "w=0.4,50", "--out", str(out)]
    assert cli_main(args) == 0
    rows = list(csv.DictReader(open(out / "multi_label.csv")))
    assert [(r["method"], r["setting"]) for r in rows] == [
        ("linear", "w=0.4"), ("epsilon_constraint", "bound from w=0.4"), ("epsilon_constraint", "bound 50")]
    assert rows[0]["preference"] == "0.6/0.4"
    assert rows[2]["bounds"] == "50" and rows[2]["bound_met_train"] == "True"  # far above any LambdaRank cost here
    met = all(float(c) <= 50 for c in rows[2]["test_costs"].split("/"))
    assert rows[2]["bound_met_test"] == str(met) and rows[1]["ndcg10_targets"]
    meta = json.loads((out / "multi_label.json").read_text())
    assert meta["rays"] == [0.4] and meta["bounds"] == ["bound from w=0.4", "bound 50"]
