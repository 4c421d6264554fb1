"""benchmarks/gpu.py (customobj's GPU objectives against XGBoost's native rank:ndcg): it refuses to run
without a real GPU, saying why, and every objective in its table builds and has a GPU route but
the ones it reports as skipped. The timing itself needs a GPU (tests/test_adapters_xgboost.py covers
training there)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "gpu.py"


def test_refuses_without_a_real_gpu():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")  # the simulator does not count as a GPU
    r = subprocess.run([sys.executable, str(SCRIPT), "--quick"], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode != 0
    assert "benchmarks/gpu.py needs a CUDA GPU" in r.stderr and "simulator" in r.stderr


def test_every_benchmarked_objective_builds_and_has_a_gpu_route():
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import gpu
    finally:
        sys.path.remove(str(SCRIPT.parent))
    from customobj.objectives.devices import Device, kernels_for

    built = gpu._objectives(50)
    assert [e for e, _ in built] == gpu.OBJECTIVES and gpu.REFERENCE in gpu.OBJECTIVES
    for _, obj in built:
        assert callable(kernels_for(obj, Device.CUDA))


@pytest.mark.parametrize("argv", [["--bogus"]])
def test_bad_arguments_are_refused(argv):
    r = subprocess.run([sys.executable, str(SCRIPT), *argv], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "usage" in r.stderr
