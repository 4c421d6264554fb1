"""benchmarks/lookahead.py (issue 42, item 3): best-first lookahead counted on real data. Every
lookahead grows the one-a-batch trees, batches fall and expansions rise with it, the command runs on an
MQ2008 fold and writes its JSON atomically, bad arguments are refused."""
from __future__ import annotations

import json

import pytest
from conftest import import_benchmark

S = import_benchmark("lookahead")


def test_more_lookahead_means_fewer_batches_for_the_same_trees():
    r = S.measure(S._tiny(), "ole_fast", num_leaves=12, trees=2, lookaheads=(1, 2, 4, 64), min_data_in_leaf=5)
    got = r["lookahead"]
    assert r["same_trees"] and set(got) == {"1", "2", "4", "64"}
    one = got["1"]
    assert one["batches_per_tree"] == one["expansions_per_tree"] == one["splits_per_tree"]
    assert one["rows_ratio"] == one["pairs_ratio"] == 1.0 and one["pairs_expanded_per_tree"] > 0
    assert one["most_leaves_held"] == one["splits_per_tree"] + 1
    batches = [got[k]["batches_per_tree"] for k in ("1", "2", "4", "64")]
    expansions = [got[k]["expansions_per_tree"] for k in ("1", "2", "4", "64")]
    assert batches == sorted(batches, reverse=True) and batches[-1] < batches[0]
    assert expansions == sorted(expansions) and all(got[k]["rows_ratio"] >= 1.0 <= got[k]["pairs_ratio"] for k in got)
    assert all(got[k]["most_leaves_held"] <= 2 * 12 - 1 for k in got)  # grower.leaves_held


@pytest.mark.parametrize("bad", [(), (0,), (1, -2)])
def test_lookaheads_below_one_are_refused(bad):
    with pytest.raises(ValueError, match="lookaheads"):
        S.measure(S._tiny(), "ole", lookaheads=bad)


def test_the_command_on_an_mq2008_fold_writes_its_json(data_dir, tmp_path, capsys):
    out = tmp_path / "la.json"
    rc = S.main(["--data", str(data_dir / "mq2008" / "Fold1"), "--criteria", "ole", "--num-leaves", "8", "--trees", "2",
                 "--lookahead", "1,4", "--out", str(out)])
    assert rc == 0
    doc = json.loads(out.read_text())
    (r,) = doc["results"]
    assert r["criterion"] == "ole" and r["rows"] > 9000 and r["same_trees"]
    assert r["lookahead"]["4"]["batches_per_tree"] < r["lookahead"]["1"]["batches_per_tree"]
    assert "same trees: True" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [(["--lookahead", "1,x"], "--lookahead"), (["--num-leaves", "1"], "--num-leaves"),
                                           (["--trees", "0"], "--trees")])
def test_bad_arguments_are_refused(argv, message, capsys):
    with pytest.raises(SystemExit):
        S.main(argv)
    assert message in capsys.readouterr().err


def test_a_folder_without_training_data_is_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match="train.txt"):
        S.main(["--data", str(tmp_path)])
