"""benchmarks/objective_steps.py (issue 42, items 2 and 5): the objectives' GPU kernels counted per
simulated thread. The counter is checked on hand-made threads (a warp's issue count over barrier phases,
the critical path, the work) and on a kernel of its own whose threads loop a known number of times; then
LambdaRank without truncation (and with LightGBM's norm, and QueryRMSE's dense couplings) on one query
longer than several simulated warps against short queries: the long query's critical path per row is no
more than theirs, its work per kept pair no more, and the launches are the same; the same for LightGBM's
XENDCG and YetiRank, whose per-query kernels run a block per query (and YetiRank's sums a thread per row,
as long in a long query as in a short one), and Affine's pair kernel (a block per query, on clicks) and
its in-bag coupling kernels (a block per chunk of the pair list), and RankNet's listed couplings (a block per
chunk of its label pair list)."""
from __future__ import annotations

import json
import types

import pytest
from _cuda_cases import STATUS
from conftest import import_benchmark

from customobj import XENDCG, LambdaRank, ListNet, QueryRMSE, StructuredDCG, YetiRank

S = import_benchmark("objective_steps")

if STATUS.available:  # a kernel of the test's own (the simulator swaps ``cuda`` among its module's globals)
    from numba import cuda

    @cuda.jit
    def _loops(out):
        t = cuda.threadIdx.x
        acc = 0
        for _ in range(t):
            acc += 1
        cuda.syncthreads()
        out[t] = acc

# YetiRank's and XENDCG's seeded streams run as Python under the simulator, where numpy warns on the uint64
# wraparound the generators rely on (compiled code wraps silently).
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")

needs_simulator = pytest.mark.skipif(not STATUS.available or not STATUS.simulator,
                                     reason="the steps are counted under numba's CUDA simulator")


def _thread(block, tid, steps):
    return types.SimpleNamespace(blockIdx=(block, 0, 0), threadIdx=types.SimpleNamespace(x=tid, y=0, z=0), _steps=steps)


def test_issue_counts_sum_each_phases_slowest_lane_per_warp():
    launch = S._Launch("k", (2, 1, 1), (40, 1, 1))
    # block 0: lanes 0-31 one warp, 32-39 another; two barrier phases
    launch.threads = [_thread(0, t, [t, 100 - t]) for t in range(40)] + [_thread(1, 0, [7])]
    got = S._launch_steps(launch)
    # warp 0: max(0..31) + max(100..69) = 31 + 100; warp 1: 39 + 68; block 1's lane 0: 7 (it took no barrier)
    assert got.work == (31 + 100) + (39 + 68) + 7
    assert got.critical_path == 131 and got.barriers == 1 and got.grid == 2 and got.block == 40


@needs_simulator
def test_a_kernels_threads_are_counted_by_their_loops_and_barriers():
    import numpy as np

    out = cuda.device_array(8, np.int64)
    _, (got,) = S.counted(lambda: _loops[1, 8](out), roots=(__file__,))
    assert got.kernel == "_loops" and got.barriers == 1
    np.testing.assert_array_equal(out.copy_to_host(), np.arange(8))
    _, (two,) = S.counted(lambda: _loops[1, 2](out), roots=(__file__,))
    _, (one,) = S.counted(lambda: _loops[1, 1](out), roots=(__file__,))
    per_iteration = two.critical_path - one.critical_path
    assert per_iteration > 0 and got.critical_path == one.critical_path + 7 * per_iteration  # lane 7's 7 loops


@needs_simulator
@pytest.mark.parametrize("obj", [LambdaRank(), LambdaRank(norm=True), QueryRMSE(), XENDCG.like_lightgbm(seed=1),
                                 YetiRank(permutations=2, seed=1)], ids=repr)
def test_a_long_query_costs_no_more_per_row_than_short_ones(obj):
    # 24 rows: three of the simulator's 8-lane warps per upper row, against 6 queries of 4 rows
    res = S.compare(obj, 24, 4)
    long, short = res["long"], res["short"]
    assert long["rows"] == short["rows"] == 24 and long["pairs"] > 0 and short["pairs"] > 0
    assert long["critical_path_per_row"] <= short["critical_path_per_row"], res
    assert long["work_per_pair"] <= short["work_per_pair"], res
    assert long["launches"] == short["launches"] == len(long["kernels"])


#: The kernels that work a query per block (one warp on a card, 8 threads under the simulator), by objective.
PER_QUERY = {"QueryRMSE": ["query_rmse_queries"], "ListNet": ["softmax_queries"] * 2,
             "XENDCG": ["xendcg_lightgbm_queries", "xendcg_mass_queries", "softmax_queries"],
             "YetiRank": ["yetirank_count_pairs", "yetirank_fill_pairs"], "StructuredDCG": ["structured_queries"],
             "Affine": ["affine_queries"]}


@needs_simulator
@pytest.mark.parametrize("obj", [QueryRMSE(), ListNet(), XENDCG.like_lightgbm(seed=1), YetiRank(permutations=2, seed=1),
                                 StructuredDCG(k=3), S.OBJECTIVES["affine"]], ids=lambda o: type(o).__name__)
def test_the_per_query_kernels_run_a_block_per_query(obj):
    # 3 queries of 5 rows: each per-query kernel with a loop over the query's rows is launched as 3 blocks
    # of the simulator's 8 threads (softmax_qscale_queries: one multiplication per query, a thread each)
    from customobj.objectives._launch import query_threads

    p = S.measure(obj, [5, 5, 5])
    per_query = [(s.kernel, s.grid, s.block) for s in p.steps if s.kernel.endswith(("_queries", "_pairs"))
                 and s.kernel not in ("scan_pairs", "softmax_qscale_queries") and not s.kernel.startswith("dense_")]
    assert [k for k, _, _ in per_query] == PER_QUERY[type(obj).__name__], per_query
    assert all(grid == 3 and block == query_threads() for _, grid, block in per_query), per_query


@needs_simulator
def test_affines_in_bag_kernels_run_a_block_per_chunk(monkeypatch):
    # 3 queries of 5 rows: 30 listed pairs, chunks of 8: 4 blocks of the simulator's 8 threads each, every
    # thread a run of one pair; the threads' runs are placed by one scan, so no thread walks the chunk
    from customobj.objectives import _launch

    monkeypatch.setattr(_launch, "LIST_CHUNK", 8)
    p = S.measure(S.OBJECTIVES["affine"], [5, 5, 5])
    bag = {s.kernel: s for s in p.steps if s.kernel.endswith("_in_bag")}
    assert sorted(bag) == ["count_in_bag", "place_in_bag"] and p.pairs > 0
    assert all(s.grid == 4 and s.block == _launch.query_threads() and s.barriers > 0 for s in bag.values()), bag


@needs_simulator
def test_ranknets_listed_coupling_kernels_run_a_block_per_chunk(monkeypatch):
    # 3 queries of 5 rows, chunks of 8 listed pairs: a block of the simulator's 8 threads per chunk, every
    # thread a run of one pair, placed by one scan; the chunk's path is then one pair's, not eight
    from customobj.objectives import _launch

    monkeypatch.setattr(_launch, "LIST_CHUNK", 8)
    prep = S.OBJECTIVES["ranknet"].prepare(S.data([5, 5, 5])[1], [5, 5, 5])
    listed = S.OBJECTIVES["ranknet"].listed_pairs(prep).pi.shape[0]
    p = S.measure(S.OBJECTIVES["ranknet"], [5, 5, 5])
    kept = {s.kernel: s for s in p.steps if s.kernel.endswith("_kept_pairs")}
    assert sorted(kept) == ["count_kept_pairs", "fill_kept_pairs"] and listed > 8 and p.pairs > 0
    assert all(s.grid == _launch.chunks(listed, 8) and s.block == _launch.query_threads() and s.barriers > 0
               for s in kept.values()), kept
    # a lane walks one pair: the count's path is below 8 times a pair's coupling (the old thread per chunk)
    monkeypatch.setattr(_launch, "LIST_CHUNK", 1)
    one = {s.kernel: s for s in S.measure(S.OBJECTIVES["ranknet"], [5, 5, 5]).steps}["count_kept_pairs"]
    assert kept["count_kept_pairs"].critical_path < 2 * one.critical_path, (kept, one)


@needs_simulator
def test_yetirank_rows_cost_the_same_in_a_long_query():
    # a thread per row, O(permutations) each: the long query's row kernel is no longer than a short query's
    res = S.compare(YetiRank(permutations=2, seed=1), 24, 4)
    path = {name: {k["kernel"]: k["critical_path"] for k in res[name]["kernels"]} for name in ("long", "short")}
    assert path["long"]["yetirank_rows"] <= path["short"]["yetirank_rows"], path


@needs_simulator
def test_the_modules_example():
    import doctest

    assert doctest.testmod(S).failed == 0


def test_the_command_refuses_bad_sizes(capsys):
    with pytest.raises(SystemExit):
        S.main(["--long", "3", "--short", "5"])
    assert "--short" in capsys.readouterr().err


@needs_simulator
def test_the_command_prints_and_writes_its_counts(tmp_path, capsys):
    out = tmp_path / "steps.json"
    assert S.main(["--long", "6", "--short", "3", "--out", str(out)]) == 0
    (res,) = json.loads(out.read_text())
    text = capsys.readouterr().out
    assert f"critical path {res['long']['critical_path']} steps" in text and res["lanes"] == 8
    assert [k["kernel"] for k in res["long"]["kernels"]][-3:] == ["count_pairs", "scan_pairs", "fill_pairs"]


@needs_simulator
def test_the_command_counts_the_objectives_it_is_given_at_a_cards_warp(tmp_path):
    out = tmp_path / "steps.json"
    assert S.main(["--long", "4", "--short", "2", "--lanes", "32", "--objective", "queryrmse", "--objective",
                   "structured", "--out", str(out)]) == 0
    res = json.loads(out.read_text())
    assert [r["objective"] for r in res] == [repr(QueryRMSE()), repr(StructuredDCG())]
    blocks = {k["kernel"]: k["block"] for r in res for k in r["long"]["kernels"]}
    assert blocks["query_rmse_queries"] == blocks["structured_queries"] == 32
    assert res[1]["long"]["pairs"] == 0  # StructuredDCG has no coupling kernels: its gradients alone
