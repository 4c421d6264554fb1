"""benchmarks/tree_bits.py (TreeBooster's trees recorded, then compared bit for bit) on MQ2008 Fold1 at
a tiny size, in a subprocess: a record compares equal to itself, and a record whose trees changed
is reported as differing (exit 1)."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "tree_bits.py"


def test_a_record_equals_itself_and_a_changed_tree_is_reported(tmp_path, data_dir):
    def run(*args):
        env = {**os.environ, "CUSTOMOBJ_DATA": str(data_dir)}
        return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=600,
                              env=env)

    rec = tmp_path / "trees.npz"
    r = run("--record", str(rec), "--queries", "4", "--only", "wse,ole_fast-prune")
    assert r.returncode == 0, r.stderr[-3000:]
    assert run("--compare", str(rec), "--queries", "4", "--only", "wse,ole_fast-prune").returncode == 0
    with np.load(rec) as got:
        arrays = dict(got)
    assert sorted(arrays) == ["ole_fast-prune/predict", "ole_fast-prune/trees", "wse/predict", "wse/trees"]
    arrays["wse/predict"] = arrays["wse/predict"] + 1e-12  # one ulp-sized change is a difference
    np.savez(rec, **arrays)
    r = run("--compare", str(rec), "--queries", "4", "--only", "wse,ole_fast-prune")
    assert r.returncode == 1 and "4 arrays, 1 differ" in r.stdout and "wse/predict" in r.stdout
