"""benchmarks/scale.py: ``--device cuda`` plans LightGBM on every CPU thread, XGBoost's GPU learner
and OLE on the GPU in one run (``--dry-run`` shows it), refuses to run without a real GPU saying why
(numba's simulator does not count), and its options are checked. The GPU timing itself needs a GPU
machine."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "scale.py"


def _run(*argv, **env):
    return subprocess.run([sys.executable, str(SCRIPT), *argv], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, **env))


def test_device_cuda_plans_lightgbm_on_every_thread_beside_xgboost_and_ole_on_the_gpu():
    r = _run("--device", "cuda", "--dry-run", "--size", "web30k", "--rounds", "3")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == f"device=cuda threads={os.cpu_count()} size=web30k rounds=3 (needs a real CUDA GPU)"
    assert [line.split(":")[0] for line in lines[1:]] == ["lgb-native", "xgb-gpu", "ole", "ole_fast"]
    for line in lines[1:]:
        assert "--device cuda" in line and f"--threads {os.cpu_count()}" in line and "--size web30k" in line


def test_the_cpu_plan_is_unchanged_and_threads_can_be_set():
    r = _run("--dry-run", "--threads", "3", "--methods", "lgb-native", "ole")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "device=cpu threads=3 size=small rounds=20"
    assert [line.split(":")[0] for line in r.stdout.splitlines()[1:]] == ["lgb-native", "ole"]
    default = _run("--dry-run")
    assert "xgb-gpu" not in default.stdout and "threads=2" in default.stdout


def test_device_cuda_refuses_without_a_real_gpu():
    r = _run("--device", "cuda", "--rounds", "1", NUMBA_ENABLE_CUDASIM="1")  # the simulator does not count
    assert r.returncode != 0
    assert "benchmarks/scale.py --device cuda needs a CUDA GPU" in r.stderr and "simulator" in r.stderr
    r = _run("--methods", "xgb-gpu", "--rounds", "1", NUMBA_ENABLE_CUDASIM="1")
    assert r.returncode != 0 and "benchmarks/scale.py xgb-gpu needs a CUDA GPU" in r.stderr


@pytest.mark.parametrize("argv, message", [(("--device", "tpu"), "invalid choice"),
                                           (("--rounds", "0"), "--rounds must be at least 1"),
                                           (("--threads", "0"), "--threads must be at least 1"),
                                           (("--methods", "ole_slow"), "invalid choice")])
def test_bad_options_are_refused(argv, message):
    r = _run(*argv, "--dry-run")
    assert r.returncode == 2 and message in r.stderr
