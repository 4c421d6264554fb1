"""benchmarks/grade_walk.py (NDCG's grade walk against the walk over every pair): the synthetic settings hold
the share of pairs of different gains their names claim, the two workers answer in turn and every chosen
setting gets a ratio (here both workers run the shipped kernels from the suite's cache, so the structure is
tested, not the times), the JSON is written atomically and bad arguments are refused."""
from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import import_benchmark

S = import_benchmark("grade_walk")


def test_the_synthetic_grades_give_their_share_of_pairs():
    for name, _, probs in S.SYNTHETIC:
        p = np.array(probs) / sum(probs)
        assert abs(1.0 - p @ p - float(name.split("share ")[1])) < 0.01, name


def test_two_workers_time_the_chosen_settings(tmp_path, monkeypatch, capsys):
    start = S._start
    # the shipped shares in both, from the suite's cache: no compilation of the kernels twice
    monkeypatch.setattr(S, "_start", lambda share, data, cache: start(None, data, None))
    out = tmp_path / "walk.json"
    assert S.main(["--no-data", "--repeats", "2", "--calls", "1", "--only", "30 rows, share 0.20",
                   "--out", str(out)]) == 0
    got = json.loads(out.read_text())["results"]
    assert [(r["setting"], r["mode"]) for r in got] == [("synthetic 30 rows, share 0.20", mode)
                                                        for mode in ("GRAD", "GRAD_LOSS", "FILL")]
    assert all(r["ratio"] > 0 and r["walk_ms"] > 0 and r["every_pair_ms"] > 0 for r in got)
    assert "grade walk" in capsys.readouterr().out and not list(tmp_path.glob("*.tmp"))


def test_a_worker_of_other_shares_needs_its_own_cache():
    with pytest.raises(ValueError, match="cache folder of its own"):
        S._start(0.5, None, None)


@pytest.mark.parametrize("bad", [["--repeats", "0"], ["--calls", "0"], ["--data", "/nonexistent/file.txt"]])
def test_bad_arguments_are_refused(bad):
    with pytest.raises(SystemExit):
        S.main(bad + (["--no-data"] if "--data" not in bad else []))
