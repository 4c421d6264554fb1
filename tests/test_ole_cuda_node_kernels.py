"""customobj.ole._cuda_node_kernels: a split's two children picked in one launch, each as pick_best
picks it (the first strictly best feature; none: feature -1) with its NaN-slot count beside it
(checked against the histograms under the simulator); the kernel compiles to PTX for sm_80 / sm_90."""
import numpy as np
import pytest

from customobj.ole.common import HIST_COUNT, SPLIT_FEATURE, SPLIT_SIZE

from _cuda_cases import needs_gpu


@needs_gpu
@pytest.mark.parametrize("with_nan", [True, False])
def test_both_children_are_picked_with_their_nan_counts(with_nan):
    from numba import cuda
    from customobj.ole import _cuda_node_kernels as K, _cuda_reduce_kernels as R
    n_bins = np.array([3, 1, 4], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(n_bins + 1)[:-1]]).astype(np.int64)  # each feature's NaN slot last
    rng = np.random.default_rng(0)
    hists = [rng.uniform(size=(int(offsets[-1] + n_bins[-1] + 1), 3)) for _ in range(2)]
    per = rng.normal(size=(2, 3, SPLIT_SIZE))
    per[:, :, SPLIT_FEATURE] = np.arange(3)  # each record names its feature, as feature_bests writes it
    gains = np.array([[0.5, 2.0, 2.0], [0.0, 0.0, 0.0]])  # node 0: a tie (feature 1 wins), node 1: no split
    res = cuda.to_device(np.full((2, SPLIT_SIZE + 1), 7.0))
    K.pick_splits[2, 4](cuda.to_device(per), cuda.to_device(gains), res, cuda.to_device(hists[0]),
                        cuda.to_device(hists[1]), cuda.to_device(offsets), cuda.to_device(n_bins), with_nan)
    got = res.copy_to_host()
    for b in range(2):
        want = cuda.device_array(SPLIT_SIZE)
        R.pick_best[1, 4](cuda.to_device(per[b]), cuda.to_device(gains[b]), want)
        np.testing.assert_array_equal(got[b, :SPLIT_SIZE], want.copy_to_host())
    assert got[0, SPLIT_FEATURE] == 1 and got[1, SPLIT_FEATURE] == -1
    assert got[0, SPLIT_SIZE] == (hists[0][offsets[1] + n_bins[1], HIST_COUNT] if with_nan else 0.0)
    assert got[1, SPLIT_SIZE] == 0.0


_PTX = """
import os
os.environ.pop("NUMBA_ENABLE_CUDASIM", None)
import types as pytypes
from customobj._cuda_runtime import cuda_module
cuda = cuda_module()
from numba import types as T
import numba.cuda.dispatcher as dispatcher
dispatcher.get_current_device = lambda: pytypes.SimpleNamespace(compute_capability=(8, 0))  # no GPU: sm_80
from customobj.ole import _cuda_node_kernels as K
f2, f3, i1 = T.float64[:, ::1], T.float64[:, :, ::1], T.int64[::1]
try:
    for cc in ((8, 0), (9, 0)):
        cuda.compile_ptx(K.pick_splits.py_func, T.void(f3, f2, f2, f2, f2, i1, i1, T.boolean), cc=cc)
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
