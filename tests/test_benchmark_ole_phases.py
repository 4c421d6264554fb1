"""benchmarks/ole_phases.py (where an OLE tree's time goes) at a tiny size, in a subprocess (its
timers wrap module functions for the life of the process): every timed step that an OLE tree runs
is reported, no step takes longer than the whole tree it nests in, the serial steps are marked and
summed, and bad arguments are refused."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "ole_phases.py"


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=600)


def test_an_ole_fit_reports_its_steps_per_tree():
    r = run("--criteria", "ole", "--queries", "40", "--rounds", "3", "--threads", "1")
    assert r.returncode == 0, r.stderr
    head, *rows = r.stdout.strip().splitlines()
    per_tree = float(re.match(r"ole: ([0-9.]+) s per tree", head).group(1))
    *rows, last = rows
    steps = {m.group(1): float(m.group(2)) for m in (re.match(r"\s+(\w+)\s+([0-9.]+) s", line) for line in rows)}
    for step in ("round_gradients", "grow_round", "pair_hist", "row_hist", "partition_pairs", "lambdarank_pair_fill",
                 "sum_couplings"):
        assert step in steps
    assert 0 < steps["grow_round"] <= per_tree
    assert steps["pair_hist"] <= steps["grow_round"]
    # the serial steps are marked and summed on the last line
    serial = [line.split()[0] for line in rows if line.endswith("serial")]
    assert "sum_couplings" in serial and "pair_hist" not in serial
    total = float(re.match(r"\s+serial steps, together\s+([0-9.]+) s", last).group(1))
    assert total == pytest.approx(sum(steps[name] for name in serial), abs=1e-3) and total <= per_tree


def test_bad_arguments_are_refused():
    r = run("--rounds", "1")
    assert r.returncode == 2 and "--rounds must be >= 2" in r.stderr
