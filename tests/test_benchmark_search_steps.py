"""benchmarks/search_steps.py (issue 42, item 4): the OLE GPU split search counted per simulated thread.
One split's two children searched by ``search_nodes`` as the grower launches it: the splits equal the CPU's
``find_best_split`` records, and a block of 8 lanes per feature has a shorter critical path than one lane
walking the feature's thresholds alone (the search before item 4), for the same launch grid."""
from __future__ import annotations

import pytest
from _cuda_cases import STATUS
from conftest import import_benchmark

S = import_benchmark("search_steps")

needs_simulator = pytest.mark.skipif(not STATUS.available or not STATUS.simulator,
                                     reason="the steps are counted under numba's CUDA simulator")


@needs_simulator
def test_lanes_over_the_bins_shorten_the_search_and_keep_the_cpu_splits():
    one, eight = (S.measure(features=2, bins=32, rows=300, lanes=lanes) for lanes in (1, 8))
    assert one["equal_cpu"] and eight["equal_cpu"]
    assert one["grid"] == eight["grid"] == 4 and (one["block"], eight["block"]) == (1, 8)  # a block per feature, node
    assert eight["critical_path"] < 0.6 * one["critical_path"], (one, eight)
    assert eight["barriers"] > one["barriers"]  # the scans' and the pick's barriers


@needs_simulator
def test_the_modules_example():
    import doctest

    assert doctest.testmod(S).failed == 0


def test_the_command_refuses_bad_sizes(capsys):
    with pytest.raises(SystemExit):
        S.main(["--bins", "1"])
    assert "--bins" in capsys.readouterr().err
