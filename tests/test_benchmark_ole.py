"""benchmarks/ole.py (TreeBooster against LightGBM, and on the GPU against XGBoost): ``--device cuda``
refuses to run without a real GPU, saying why (numba's simulator does not count), and rejects an
unknown device. The GPU timing itself needs a GPU machine."""
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "ole.py"


def test_device_cuda_refuses_without_a_real_gpu():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")  # the simulator does not count as a GPU
    r = subprocess.run([sys.executable, str(SCRIPT), "--device", "cuda", "--queries", "5"], capture_output=True,
                       text=True, timeout=300, env=env)
    assert r.returncode != 0
    assert "benchmarks/ole.py --device cuda needs a CUDA GPU" in r.stderr and "simulator" in r.stderr


def test_an_unknown_device_is_refused():
    r = subprocess.run([sys.executable, str(SCRIPT), "--device", "tpu"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "invalid choice" in r.stderr
