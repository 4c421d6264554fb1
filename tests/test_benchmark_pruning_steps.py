"""benchmarks/pruning_steps.py (issue 42, item 4): ole_fast's pair pruning partition counted per launch
under the simulator. Its two launches keep the CPU's pairs in the CPU's order (the script checks it); a
block's lanes share a segment, so 8 lanes shorten each launch's critical path against one thread walking
the segment (the shape before); the command writes its JSON and refuses bad sizes."""
from __future__ import annotations

import json

import pytest
from _cuda_cases import STATUS
from conftest import import_benchmark

S = import_benchmark("pruning_steps")

pytestmark = pytest.mark.skipif(not STATUS.available or not STATUS.simulator,
                                reason="the steps are counted under numba's CUDA simulator")


def test_the_lanes_of_a_segment_shorten_each_launch():
    one, eight = S.measure(600, 0.3, lanes=1), S.measure(600, 0.3, lanes=8)
    assert one["kept"] == eight["kept"] > 0 and one["segments"] == eight["segments"]
    for r, lanes in ((one, 1), (eight, 8)):
        assert [s.kernel for s in r["steps"]] == ["count_kept_blocks", "place_kept_blocks"]
        assert all(s.block == lanes and s.grid == r["segments"] for s in r["steps"])
    for a, b in zip(one["steps"], eight["steps"]):
        assert b.critical_path < a.critical_path, (a, b)


def test_the_modules_example():
    import doctest

    assert doctest.testmod(S).failed == 0


def test_the_command_writes_its_counts(tmp_path, capsys):
    out = tmp_path / "steps.json"
    assert S.main(["--pairs", "300", "--lanes", "8", "--eps", "0.5", "--out", str(out)]) == 0
    got = json.loads(out.read_text())
    assert [(r["pairs"], r["lanes"], r["eps"]) for r in got] == [(300, 8, 0.5)]
    assert [k["kernel"] for k in got[0]["steps"]] == ["count_kept_blocks", "place_kept_blocks"]
    assert "300 pairs" in capsys.readouterr().out and not list(tmp_path.glob("*.tmp"))
    for bad in (["--pairs", "1"], ["--eps", "1.0"], ["--lanes", "3"]):
        with pytest.raises(SystemExit):
            S.main(bad)
