"""customobj.ole._cuda_node_kernels: the chosen feature's NaN-slot count written beside the split
(checked against the histogram under the simulator), and the kernel compiles to PTX for sm_80 / sm_90."""
import numpy as np
import pytest

from customobj.ole.common import HIST_COUNT, SPLIT_FEATURE, SPLIT_SIZE

from _cuda_cases import needs_gpu


@needs_gpu
@pytest.mark.parametrize("feature", [0, 2, -1])
def test_the_nan_count_of_the_chosen_feature_comes_with_the_split(feature):
    from numba import cuda
    from customobj.ole import _cuda_node_kernels as K
    n_bins = np.array([3, 1, 4], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(n_bins + 1)[:-1]]).astype(np.int64)  # each feature's NaN slot last
    hist = np.random.default_rng(0).uniform(size=(int(offsets[-1] + n_bins[-1] + 1), 3))
    res = np.full(SPLIT_SIZE + 1, 7.0)
    res[SPLIT_FEATURE] = feature
    d = cuda.to_device(res)
    K.split_nan_count[1, 1](cuda.to_device(hist), cuda.to_device(offsets), cuda.to_device(n_bins), d)
    out = d.copy_to_host()
    want = hist[offsets[feature] + n_bins[feature], HIST_COUNT] if feature >= 0 else 0.0
    assert out[SPLIT_SIZE] == want and np.array_equal(out[:SPLIT_SIZE], res[:SPLIT_SIZE])


_PTX = """
import os
os.environ.pop("NUMBA_ENABLE_CUDASIM", None)
from customobj._cuda_runtime import cuda_module
cuda = cuda_module()
from numba import types as T
from customobj.ole import _cuda_node_kernels as K
f1, f2, i1 = T.float64[::1], T.float64[:, ::1], T.int64[::1]
try:
    for cc in ((8, 0), (9, 0)):
        cuda.compile_ptx(K.split_nan_count.py_func, T.void(f2, i1, i1, f1), cc=cc)
except Exception as exc:
    print("NO-NVVM" if "NVVM" in str(exc) or "nvvm" in str(exc) else "FAILED", type(exc).__name__, exc)
    raise SystemExit
print("COMPILED")
"""


def test_the_kernel_compiles_for_a_real_gpu():
    from _isolated import run_isolated
    out = run_isolated(_PTX, timeout=600)
    if "NO-NVVM" in out:
        pytest.skip("NVIDIA's NVVM library is not installed")
    assert "COMPILED" in out, out
