"""benchmarks/gpu_suite.py (issue 32, item 6): it refuses without a GPU, prints its plan with
``--dry-run``, skips what is not installed and says so, and runs end to end under numba's CUDA
simulator on tiny data, writing one valid JSON (a functional check: the simulator run is no timing)
with its model section (issue 42, item 5; benchmarks/gpu_model.py) labelled as not timings."""
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from _cuda_cases import needs_gpu

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "gpu_suite.py"
TINY = ["--sizes", "60", "--objective-rows", "40", "--big-query", "12", "--docs", "10", "--features", "4",
        "--trees", "2", "--rounds", "1", "--repeat", "1", "--num-leaves", "4", "--criteria", "ole", "wse",
        "--objectives", "LambdaRank()", "SquaredError()"]


def _run(args, **env):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, **env))


def _suite():
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import gpu_suite
    finally:
        sys.path.remove(str(SCRIPT.parent))
    return gpu_suite


def test_refuses_without_a_real_gpu():
    r = _run(TINY + ["--out", os.devnull], NUMBA_ENABLE_CUDASIM="1")  # the simulator is no GPU unless asked
    assert r.returncode != 0 and "benchmarks/gpu_suite.py needs a CUDA GPU" in r.stderr


def test_dry_run_prints_the_plan_and_runs_nothing(tmp_path):
    out = tmp_path / "x.json"
    r = _run(["--dry-run", "--out", str(out)])
    assert r.returncode == 0 and "plan (budget 480 s" in r.stdout
    for part in ("objectives", "ole", "phases", "2,400,000 rows", "240,000 rows", "ole_fast"):
        assert part in r.stdout
    assert not out.exists()


def test_missing_packages_and_skips_are_said(monkeypatch):
    suite = _suite()
    monkeypatch.setattr(suite, "_importable", lambda name: name not in ("xgboost", "lightgbm"))
    plan = suite.make_plan(suite.parse_args(["--skip", "phases"]))
    why = {part: w for part, _, _, w in plan}
    assert why["xgboost"] == "xgboost is not installed" and why["lightgbm"] == "lightgbm is not installed"
    assert why["phases"] == "--skip" and why["ole"] is None and why["objectives"] is None


@needs_gpu
def test_runs_end_to_end_under_the_simulator_and_writes_valid_json(tmp_path):
    out = tmp_path / "suite.json"
    r = _run(TINY + ["--simulator", "--skip", "lightgbm", "--budget", "600", "--out", str(out)],
             NUMBA_ENABLE_CUDASIM="1")
    assert r.returncode == 0, r.stderr[-3000:]
    rec = json.loads(out.read_text())
    assert rec["simulator"] is True and "simulator" in rec["device"] and rec["kernel_cache"] is None
    assert set(rec["objectives"]) == {"LambdaRank()", "SquaredError()"}
    # the GPU takes float32 margins (XGBoost's), the CPU their float64 copy
    assert all(row["gpu_s"] > 0 and row["max_rel_diff"] < 1e-5 for row in rec["objectives"].values())
    assert rec["objective_rows"] >= 12 + 4 * 2  # four queries of at least two rows, the 12-row one appended
    assert [(o["criterion"], o["trees"]) for o in rec["ole"]] == [("ole", 2), ("wse", 2)]
    for o in rec["ole"]:
        assert o["device_stats"]["n_trees"] == 2 and o["per_split"]["allocations"] == 0
        assert o["device_memory_peak_mb"] > 0 and o["gradients"] == "device"
    assert [p["criterion"] for p in rec["phases"]] == ["ole", "wse"]
    assert "_search" in rec["phases"][0]["steps_s"] and "pairs" in rec["phases"][0]["steps_s"]
    skipped = {s["part"].split(",")[0]: s["why"] for s in rec["skipped"]}
    assert any("XGBoost" in k for k in skipped) and any("LightGBM" in k for k in skipped)
    assert any("instructions" in k and "simulator" in w for k, w in skipped.items())
    assert "wrote" in r.stdout and "no number below is a timing" in r.stdout
    # the model section (benchmarks/gpu_model.py), labelled: the simulator's numbers are no timings
    model = rec["model"]
    assert model["timings"] is False and "not timings" in model["note"] and "not timings" in r.stdout
    assert "docs/gpu-model.md" in model["card"]["source"] and "docs/gpu-model.md" in model["instructions"]["source"]
    assert [h["criterion"] for h in model["histograms"]] == ["ole"] and model["histograms"][0]["updates_per_s"] > 0
    assert model["host"]["method"] == "least squares" and len(model["host"]["fits"]) == 2  # ole, wse
    assert {q["objective"] for q in model["longest_query"]} == {"LambdaRank()", "SquaredError()"}
    assert rec["objective_rows"] - rec["objective_rows_without"] == rec["big_query"] == 12
    # the updates counted on the host during the GPU fit: the CPU twin's own pair histograms' (same trees)
    from test_benchmark_gpu_model import cpu_pair_updates
    suite = _suite()
    d = suite.make_data(60, suite.parse_args(TINY))
    counted, truth = cpu_pair_updates(d, "ole", 3, **dict(suite.OLE_PARAMS, num_leaves=4))
    gpu = rec["phases"][0]["updates"]
    assert truth > 0 and gpu["pair"] == truth and gpu["rho"] == counted["rho"]
    assert rec["phases"][1]["updates"] == {"pair": 0, "rho": 0, "row": 0}  # wse: no pair histogram


@pytest.mark.parametrize("argv", [["--bogus"], ["--trees", "1"], ["--skip", "nothing"]])
def test_bad_arguments_are_refused(argv):
    r = _run(argv)
    assert r.returncode == 2 and "usage" in r.stderr


def test_every_timed_phase_is_a_method_of_its_class():
    """A phase the backend no longer has (a renamed step) would stop the suite on the card."""
    import importlib
    for module, name, cls in _suite().PHASES:
        assert callable(getattr(getattr(importlib.import_module(module), cls), name, None)), (module, cls, name)


@needs_gpu
def test_instruction_counts_and_the_card_fall_back_to_the_pages_values_and_say_so(monkeypatch, tmp_path):
    """A card without the attribute (here: the simulator's), no ptxas: the model's values are the page's,
    labelled; counted loops (sass.measure's, faked) become the record's instructions, sourced."""
    suite = _suite()
    card = suite.card()
    assert card["sm"] == suite.gpu_model.ASSUMED["SM"] and "unread" in card["source"]
    s = suite.Suite(suite.parse_args(["--out", str(tmp_path / "x.json")]), "test")
    def no_tools(**kw):
        raise RuntimeError("ptxas and nvdisasm are needed")
    sass = types.SimpleNamespace(measure=no_tools)
    monkeypatch.setattr(suite, "_load", lambda name: sass)
    s.instructions()
    assert "instructions" not in s.record and "ptxas" in s.record["skipped"][-1]["why"]
    loops = {"k": {"sm_52": [{"longest": 47, "native": 2}, {"longest": 36, "native": 2},
                             {"longest": 55, "native": 5}], "sm_52_cas": 0}}
    sass.measure = lambda **kw: loops
    s.instructions()
    assert s.record["instructions"] == {"pair": 47, "rho": 36, "row": 55, "source": "benchmarks/sass.py, sm_52"}
