"""benchmarks/launch_args.py (issue 42, item 3): the OLE GPU learner's launch arguments counted per tree
under the simulator. Every launch the backend counts (``device_stats_``) is seen, each kernel's launches
sum to the tree's, records are opened into their arrays, and the command writes its JSON and refuses bad
sizes."""
from __future__ import annotations

import json
from typing import NamedTuple

import numpy as np
import pytest
from _cuda_cases import STATUS
from conftest import import_benchmark

S = import_benchmark("launch_args")

needs_simulator = pytest.mark.skipif(not STATUS.available or not STATUS.simulator,
                                     reason="the arguments are counted under numba's CUDA simulator")


class _Record(NamedTuple):
    a: np.ndarray
    b: np.ndarray
    n: int


def test_records_are_opened_into_their_arrays_and_scalars():
    rec = _Record(np.zeros(2), np.ones(3), 4)
    assert S.flatten((rec, np.zeros(1), 2.5, (rec,))) == (5, 3)
    assert S.flatten(()) == (0, 0)


@needs_simulator
def test_every_counted_launch_of_the_tree_is_seen_with_its_arguments():
    r = S.measure("ole_fast", "breadth_first", n_queries=4, num_leaves=8)
    assert r["launches"] == r["device_stats_launches"] > 0
    ks = r["kernels"].values()
    assert r["arrays"] == sum(k["arrays"] for k in ks) and r["scalars"] == sum(k["scalars"] for k in ks)
    # every kernel reads at least one device array, and the fused placing carries its records' arrays
    assert all(k["arrays"] >= k["launches"] for k in ks)
    assert "place_sides_row_hist" in r["kernels"]
    hist = r["kernels"]["place_sides_row_hist"]
    assert hist["arrays"] / hist["launches"] > 8  # records opened: more arrays than its 8 positional arguments
    assert r["arrays_per_split"] == pytest.approx(r["arrays"] / r["splits"])


@needs_simulator
def test_the_modules_example():
    import doctest

    assert doctest.testmod(S).failed == 0


@needs_simulator
def test_the_command_writes_its_counts(tmp_path, capsys):
    out = tmp_path / "args.json"
    assert S.main(["--criterion", "wse", "--growth", "best_first", "--rows", "75", "--top", "2",
                   "--out", str(out)]) == 0
    got = json.loads(out.read_text())
    assert [(r["criterion"], r["growth"], r["rows"]) for r in got] == [("wse", "best_first", 75)]
    assert got[0]["launches"] == got[0]["device_stats_launches"]
    printed = capsys.readouterr().out
    assert "wse, best_first (75 rows" in printed and len(printed.strip().splitlines()) == 3  # header + top 2
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.parametrize("bad", [["--rows", "10"], ["--rows", "0"], ["--top", "-1"], ["--max-bin", "1"],
                                 ["--criterion", "nope"]])
def test_bad_sizes_are_refused(bad):
    with pytest.raises(SystemExit):
        S.main(bad)
