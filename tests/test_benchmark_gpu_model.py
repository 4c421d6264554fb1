"""benchmarks/gpu_model.py (issue 42, item 5): the model section of benchmarks/gpu_suite.py derived from a
record with known answers (updates per second and eta, host cost per launch and per split by least
squares and by the direct difference, the longest query's cost per row), the instruction counts
picked from sass.py's loops, docs/gpu-model.md's printed model equal to the module's, and the host
count of histogram updates exact against the CPU twin's own pair-histogram calls."""
import re

import numpy as np
import pytest

from conftest import REPO, import_benchmark

gpu_model = import_benchmark("gpu_model")

CARD = {"sm": 100, "schedulers": 4, "clock_hz": 1e9, "source": "test"}  # 1.28e13 thread instructions/s
INSTRUCTIONS = {"pair": 50, "rho": 40, "row": 60, "source": "test"}
C_LAUNCH, C_SPLIT = 2e-5, 1e-3


def _fit(criterion, rows, launches, splits, bulk):
    """An ``ole`` fit and its ``phases`` fit whose host time is C_LAUNCH L + C_SPLIT S exactly."""
    trees = [{"launches": 999, "splits": 1}] + [{"launches": launches, "splits": splits}] * 3  # tree 1 left out
    ole = {"rows": rows, "criterion": criterion, "per_tree_s": bulk + C_LAUNCH * launches + C_SPLIT * splits,
           "device_stats": {"trees": trees}}
    steps = {"pairs_with": bulk / 4, "children": bulk / 4, "_row_hist": bulk / 4, "gradients": bulk / 4, "_search": 9.0}
    return ole, {"rows": rows, "criterion": criterion, "per_tree_s": 1.0, "steps_s": steps}


def _record(simulator=False, fits=(("ole", 1000, 200, 30, 0.04), ("wse", 1000, 150, 30, 0.01),
                                   ("ole_fast", 1000, 260, 30, 0.02))):
    made = [_fit(*f) for f in fits]
    phases = [p for _, p in made]
    for p in phases:  # wse: no pair histogram
        p["updates"] = {"pair": 0, "rho": 0, "row": 0} if p["criterion"] == "wse" else {"pair": 2e9, "rho": 1e8,
                                                                                          "row": 5e7}
    objectives = {"A()": {"gpu_s": 0.011, "cpu_s": 1.0, "without_big_query": {"gpu_s": 0.010}},
                  "B()": {"gpu_s": 0.030, "cpu_s": 1.0, "without_big_query": {"gpu_s": 0.010}},
                  "C()": {"skipped": "no GPU kernel"}}
    return {"simulator": simulator, "card": CARD, "instructions": INSTRUCTIONS, "ole": [o for o, _ in made],
            "phases": phases, "objectives": objectives, "objective_rows": 1100, "objective_rows_without": 1000,
            "big_query": 100}


def test_histogram_updates_per_second_and_eta_from_a_known_record():
    m = gpu_model.derive(_record())
    assert m["timings"] is True and m["note"] is None and m["card"] == CARD
    assert [h["criterion"] for h in m["histograms"]] == ["ole", "ole_fast"]  # wse has no pair histogram
    ole = m["histograms"][0]
    # the pair launches: pairs_with 0.01 + children 0.01 s; 2e9 updates
    assert ole["seconds"] == pytest.approx(0.02) and ole["updates_per_s"] == pytest.approx(1e11)
    work = 2e9 * 50 + 1e8 * 40 + 5e7 * 60
    assert ole["eta"] == pytest.approx(work / (0.02 * 100 * 4 * 1e9 * 32))


def test_host_cost_by_least_squares_recovers_known_costs():
    h = gpu_model.derive(_record())["host"]
    assert h["method"] == "least squares" and len(h["fits"]) == 3
    assert h["per_launch_s"] == pytest.approx(C_LAUNCH) and h["per_split_s"] == pytest.approx(C_SPLIT)
    assert h["residual_rms_s"] == pytest.approx(0.0, abs=1e-12)
    fit = h["fits"][0]
    assert (fit["launches"], fit["splits"]) == (200, 30)  # the first tree left out
    assert fit["host_s"] == pytest.approx(C_LAUNCH * 200 + C_SPLIT * 30)


def test_host_cost_of_one_fit_is_the_direct_difference():
    h = gpu_model.derive(_record(fits=(("ole", 1000, 200, 30, 0.04),)))["host"]
    host = C_LAUNCH * 200 + C_SPLIT * 30
    assert h["method"] == "direct difference" and "1 fit" in h["why"]
    assert h["per_launch_s"] == pytest.approx(host / 200) and h["per_split_s"] == pytest.approx(host / 30)
    assert gpu_model.derive(_record(fits=()))["host"]["method"] is None


def test_the_longest_query_per_row_against_the_others():
    q = {r["objective"]: r for r in gpu_model.derive(_record())["longest_query"]}
    assert set(q) == {"A()", "B()"}  # C() has no GPU kernel
    assert q["A()"]["per_row_without_s"] == pytest.approx(1e-5) and q["A()"]["ratio"] == pytest.approx(1.0)
    assert q["B()"]["big_query_per_row_s"] == pytest.approx(2e-4) and q["B()"]["ratio"] == pytest.approx(20.0)
    assert q["A()"]["per_row_s"] == pytest.approx(0.011 / 1100)


def test_a_simulator_record_is_labelled_and_falls_back_to_the_pages_values(capsys):
    rec = _record(simulator=True)
    del rec["card"], rec["instructions"]
    m = gpu_model.derive(rec)
    assert m["timings"] is False and "not timings" in m["note"]
    a = gpu_model.ASSUMED
    assert (m["card"]["sm"], m["card"]["clock_hz"], m["instructions"]["pair"]) == (a["SM"], a["F"], a["I"])
    assert "docs/gpu-model.md" in m["card"]["source"] and "docs/gpu-model.md" in m["instructions"]["source"]
    gpu_model.print_model(m)
    out = capsys.readouterr().out
    assert "not timings" in out and "least squares" in out and "longest query A()" in out


def test_assumed_values_are_the_pages():
    a = gpu_model.derive(_record())["assumed"]
    assert a["eta"] == gpu_model.ASSUMED["ETA"] and a["instructions"]["pair"] == gpu_model.ASSUMED["I"]
    # updates per second the page implies: U over its pair-histogram time
    assert a["updates_per_s"]["central"] == pytest.approx(10.1e9 / (gpu_model.per_tree_ms("central")["hist"] / 1e3))


def test_the_pages_printed_model_is_the_modules():
    text = (REPO / "docs" / "gpu-model.md").read_text()
    printed = re.search(r"which prints[^\n]*\n\n((?:    .*\n)+)", text).group(1)
    lines = [ln[4:] for ln in printed.splitlines()]
    assert lines[1:] == gpu_model.model_lines()
    assert "27.1 ms of pair histograms" in lines[0] and f"I = {gpu_model.ASSUMED['I']}" in lines[0]


def test_the_pages_host_term_by_growth_is_the_modules():
    text = (REPO / "docs" / "gpu-model.md").read_text()
    printed = re.search(r"which gives[^\n]*\n\n((?:    .*\n)+)", text).group(1)
    lines = [ln[4:] for ln in printed.splitlines()]
    assert lines[1:] == gpu_model.growth_lines()
    a = gpu_model.ASSUMED
    launches, reads, splits = a["TREE_COUNTS"]["ole_fast", "breadth_first"]
    # the host term is its counts at their costs: a read per level, not per split, is what breadth-first saves
    assert gpu_model.host_ms("central", "ole_fast", "breadth_first") == pytest.approx(
        launches * a["HOST_LAUNCH_MS"]["central"] + reads * a["HOST_READ_MS"]["central"]
        + splits * a["HOST_SPLIT_MS"]["central"])
    assert reads < a["TREE_COUNTS"]["ole_fast", "best_first"][1]
    assert f"{gpu_model.host_ms('central', 'ole_fast', 'best_first'):.1f} ms best-first" in lines[0]


def test_instruction_counts_pick_each_kind_of_loop():
    loop = lambda longest, native: {"longest": longest, "native": native}  # noqa: E731
    measured = {"pair_hist_shared": {"sm_90": [loop(47, 2), loop(36, 2)], "sm_90_cas": 0},
                "child_hists": {"sm_90": [loop(55, 5), loop(48, 2), loop(46, 2), loop(37, 2)], "sm_90_cas": 0},
                "row_hist_shared": {"sm_90": [loop(53, 5)], "sm_90_cas": 0}}
    assert gpu_model.instruction_counts(measured) == {"pair": 48, "rho": 37, "row": 55}


class _Leaf:
    def __init__(self, start, end, pstart, pend, needed=True):
        self.start, self.end, self.pstart, self.pend = start, end, pstart, pend
        self.hist = object() if needed else None


def test_update_counter_replays_the_plan_of_each_split():
    c = gpu_model.UpdateCounter()
    c._tree = (True, False, 10)  # pairs on, not ole_fast, 10 features
    parent = _Leaf(0, 420, 0, 600)
    c.split(parent, _Leaf(0, 20, 0, 10), _Leaf(20, 420, 10, 510))  # the small left child and the 90 split pairs
    assert (c.pair, c.rho) == ((10 + 90) * 10, 420 * 10)
    c.clear()
    c.split(parent, _Leaf(0, 20, 0, 10), _Leaf(20, 420, 10, 510, needed=False))  # the larger is never split
    assert (c.pair, c.rho) == (10 * 10, 20 * 10)
    c.clear()
    c._tree = (True, True, 3)  # ole_fast, 3 features chosen: each searched child's own pairs
    c.split(parent, _Leaf(0, 20, 0, 10), _Leaf(20, 420, 10, 510))
    assert (c.pair, c.rho) == ((10 + 500) * 3, 420 * 3)
    c._tree = (False, False, 10)  # no pairs (wse): nothing
    c.split(parent, _Leaf(0, 20, 0, 10), _Leaf(20, 420, 10, 510))
    assert c.pair == (10 + 500) * 3


def cpu_pair_updates(d, criterion, trees=3, **params):
    """``(counter's per-tree counts, the CPU's pair_hist calls' (pair, feature) updates per tree)``
    over trees 2..``trees`` of a CPU fit: the truth the host count must equal."""
    from customobj import LambdaRank
    from customobj.ole import TreeBooster
    from customobj.ole.backend import CPUBackend, _HostTree

    counter, truth, original = gpu_model.UpdateCounter(), [0], CPUBackend.pair_hist

    def pair_hist(self, buf, start, end, features=None):
        truth[0] += (end - start) * (self.data.n_bins.size if features is None else len(features))
        return original(self, buf, start, end, features)

    def tick(booster, iteration, evals):
        if iteration == 0:  # tree 1 left out, as the suite's phases do
            counter.clear()
            truth[0] = 0
        return False

    restore = counter.install(_HostTree, histograms=False)
    CPUBackend.pair_hist = pair_hist
    try:
        TreeBooster(LambdaRank(truncation=30), criterion=criterion, n_estimators=trees, verbose=False,
                    **params).fit(d.X, d.y, d.group, eval_metric=None, callbacks=[tick])
    finally:
        CPUBackend.pair_hist = original
        restore()
    n = trees - 1
    return {k: v / n for k, v in counter.counts().items()}, truth[0] / n


@pytest.mark.parametrize("criterion", ["ole", "ole_fast"])
def test_update_counter_equals_the_cpu_twins_pair_histograms(criterion):
    from customobj.data import synthetic
    from customobj.ole.leaf_table import LeafTable

    d = synthetic(30, 12, 5, seed=3)
    counted, truth = cpu_pair_updates(d, criterion, num_leaves=8, min_data_in_leaf=3, max_bin=15)
    assert truth > 0 and counted["pair"] == truth
    assert counted["rho"] > 0 and counted["row"] == 0  # no row build counted on the CPU
    assert isinstance(LeafTable.__dict__["pair_ranges"], staticmethod)  # put back as it was
