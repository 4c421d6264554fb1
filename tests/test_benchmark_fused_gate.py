"""benchmarks/fused_gate.py (issue 41's round cost): the fused LambdaRank pass of m labels against the
per-label walk, timed on tiny settings here (its structure, not its times): every setting and mode gets a
ratio, the gated driver runs, MQ2008's labels are graded per query, the JSON is written atomically and bad
arguments are refused."""
from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import import_benchmark

S = import_benchmark("fused_gate")


def test_synthetic_settings_get_a_ratio_per_mode(tmp_path, capsys):
    out = tmp_path / "gate.json"
    assert S.main(["--no-data", "--sizes", "6", "50", "--labels", "2", "--rows", "200", "--repeats", "1",
                   "--inner", "1", "--out", str(out)]) == 0
    got = json.loads(out.read_text())
    assert [(r["case"], r["mode"]) for r in got] == [(f"synthetic {n} rows", mode) for n in (6, 50)
                                                     for mode in ("GRAD", "GRAD_LOSS")]
    assert all(r["m"] == 2 and r["ratio"] > 0 and r["ms"] > 0 and r["other_ms"] > 0 for r in got)
    assert "fused" in capsys.readouterr().out and not list(tmp_path.glob("*.tmp"))


def test_the_gated_driver_on_mq2008(data_dir, capsys):
    got = S.measure(data_dir / S.DEFAULT_DATA, [], [3], repeats=1, rows=100, inner=1, gate=True)
    assert [(r["case"], r["m"], r["mode"]) for r in got] == [("MQ2008", 3, "GRAD"), ("MQ2008", 3, "GRAD_LOSS")]
    assert got[0]["rows"] == 9630 and "gated" in capsys.readouterr().out


def test_a_feature_is_graded_within_each_query():
    col = np.array([3.0, 1.0, 2.0, 10.0, 10.0, 0.0, 5.0])
    got = S._graded(col, np.array([3, 4]))
    np.testing.assert_array_equal(got, [3.0, 0.0, 1.0, 2.0, 3.0, 0.0, 1.0])
    assert got.min() >= 0 and got.max() <= 4


@pytest.mark.parametrize("bad", [["--sizes", "1"], ["--labels", "1"], ["--repeats", "0"], ["--rows", "0"],
                                 ["--data", "/nonexistent/file.txt"]])
def test_bad_arguments_are_refused(bad):
    with pytest.raises(SystemExit):
        S.main(bad + (["--no-data"] if "--data" not in bad else []))
