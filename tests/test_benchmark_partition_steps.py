"""benchmarks/partition_steps.py (issue 42, item 4): the OLE GPU learner's partitions counted per launch
under the simulator. A node's split and level partitions launch the kernels they should (and give the
CPU's stable order: the script checks it); a block's lanes share a segment, so 8 lanes cut a launch's
critical path to well under one lane's (the thread-per-segment shape); the command writes its JSON
and refuses bad sizes."""
from __future__ import annotations

import json

import pytest
from _cuda_cases import STATUS
from conftest import import_benchmark

S = import_benchmark("partition_steps")

pytestmark = pytest.mark.skipif(not STATUS.available or not STATUS.simulator,
                                reason="the steps are counted under numba's CUDA simulator")


def test_the_lanes_of_a_segment_shorten_each_launch():
    one, eight = S.measure(100, 1.0, lanes=1), S.measure(100, 1.0, lanes=8)
    assert [s.kernel for s in eight["split"]] == ["mark_rows_blocks", "place_rows_count_sides", "place_sides_blocks"]
    assert [s.kernel for s in eight["level"]] == ["mark_rows_level", "place_rows_count_sides_level",
                                                  "place_sides_blocks"]
    for name in ("split", "level"):
        assert [s.block for s in one[name]] == [1, 1, 1] and [s.block for s in eight[name]] == [8, 8, 8]
        # one segment of 100 rows and 100 pairs: a lane's run is an eighth of it, plus the scans' steps
        for a, b in zip(one[name], eight[name]):
            assert b.critical_path < a.critical_path / 2, (name, a, b)


def test_the_command_writes_its_counts(tmp_path, capsys):
    out = tmp_path / "steps.json"
    assert S.main(["--rows", "40", "--pairs", "0.5", "--lanes", "8", "--out", str(out)]) == 0
    got = json.loads(out.read_text())
    assert [r["rows"] for r in got] == [40] and got[0]["lanes"] == 8
    assert [k["kernel"] for k in got[0]["split"]][0] == "mark_rows_blocks"
    assert "40 rows, level: critical path" in capsys.readouterr().out
    for bad in (["--rows", "1"], ["--pairs", "0"]):
        with pytest.raises(SystemExit):
            S.main(bad)
