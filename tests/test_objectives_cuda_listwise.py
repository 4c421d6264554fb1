"""GPU QueryRMSE, ListNet, QuerySoftMax and XENDCG (customobj/objectives/_cuda_listwise.py, routed by
_listwise_routes.py) against their CPU twins under the simulator: random and degenerate data (one-row
queries, equal labels, tied or equal scores, weights, an empty query, extreme scores), XENDCG's noise
over several rounds in both conventions (the same seeds, the same draws), and the kernels typed and
compiled to PTX for sm_80."""
from __future__ import annotations

import numpy as np
import pytest

from customobj import ListNet, QueryRMSE, QuerySoftMax, XENDCG
from _cuda_cases import assert_gpu_equals_cpu, data, degenerate_cases, needs_gpu, to_device
from _isolated import run_isolated

pytestmark = needs_gpu

LOSSES = [QueryRMSE(), ListNet(), QuerySoftMax(), QuerySoftMax(beta=2.5), XENDCG(), XENDCG(seed=9),
          XENDCG(convention="lightgbm"), XENDCG.like_lightgbm(seed=3)]


def _cases():
    yield from degenerate_cases()
    s, y, _, w = data(5, sizes=[3, 0, 4, 1, 2], weights=True)
    yield "empty query", s, y, [3, 0, 4, 1, 2], w
    yield "extreme scores", np.where(s > 0, 600.0, -600.0) + s, y, [3, 0, 4, 1, 2], None
    yield "all labels zero", s, np.zeros_like(y), [3, 0, 4, 1, 2], None


@pytest.mark.parametrize("obj", LOSSES, ids=repr)
@pytest.mark.parametrize("case", list(_cases()), ids=lambda c: c[0])
def test_gpu_equals_cpu(case, obj):
    _, s, y, sizes, w = case
    g, h = assert_gpu_equals_cpu(obj, s, y, sizes, w)
    assert np.isfinite(g).all() and np.isfinite(h).all()


@pytest.mark.parametrize("obj", [XENDCG(seed=4), XENDCG(seed=4, convention="lightgbm")], ids=repr)
def test_xendcg_rounds_draw_the_cpus_noise(obj):
    # Each grad_hess is a round with new noise; the device draws the CPU's numbers round after round.
    s, y, sizes, w = data(6, weights=True)
    cpu, gpu = obj.prepare(y, sizes, w), obj.prepare(y, sizes, w)
    seen = []
    for _ in range(3):
        g, h = obj.grad_hess_prepared(s, cpu)
        gd, hd = (a.copy_to_host() for a in obj.grad_hess_prepared(to_device(s), gpu))
        scale = float(np.abs(g).max())
        np.testing.assert_allclose(gd, g, rtol=1e-9, atol=1e-9 * scale)
        np.testing.assert_allclose(hd, h, rtol=1e-9, atol=1e-9 * scale)
        seen.append(g)
    assert not np.array_equal(seen[0], seen[1])  # the noise did change between rounds


def test_gradients_sum_to_zero_per_query_on_the_device():
    # Shift invariance of all four losses (QueryRMSE, softmax): a query's gradients sum to 0.
    s, y, sizes, _ = data(7)
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    for obj in (QueryRMSE(), ListNet(), QuerySoftMax(beta=2.0), XENDCG()):
        g = obj.grad_hess(to_device(s), y, sizes)[0].copy_to_host()
        np.testing.assert_allclose(np.add.reduceat(g, ptr[:-1]), 0.0, atol=1e-12)


_PTX = """
import os
os.environ.pop("NUMBA_ENABLE_CUDASIM", None)
import types as pytypes
from customobj._cuda_runtime import cuda_module
cuda = cuda_module()
from numba import types as T
import numba.cuda.dispatcher as dispatcher
dispatcher.get_current_device = lambda: pytypes.SimpleNamespace(compute_capability=(8, 0))  # no GPU: sm_80
from customobj.objectives import _cuda_listwise as K
f1, i1, f2, b, i, f = T.float64[::1], T.int64[::1], T.float64[:, ::1], T.boolean, T.int64, T.float64
# The argument types customobj/objectives/_listwise_routes.py launches them with.
SIGS = {
    "query_rmse_queries": (f1, f1, i1, f1, b, f2),
    "query_rmse_rows": (f1, f1, i1, f1, b, f2, f1, f1),
    "softmax_queries": (f1, i1, f1, f1, b, f, f2),
    "softmax_rows": (f1, i1, f1, f1, b, f, f2, f1, f1),
    "xendcg_mass_queries": (f1, i1, f1, i, i, f1),
    "xendcg_lightgbm_queries": (f1, f1, i1, i, i, f2),
    "xendcg_lightgbm_rows": (f1, f1, i1, i1, i, i, f1, b, f2, f1, f1),
}
kernels = {n for n, v in vars(K).items() if isinstance(v, dispatcher.CUDADispatcher)}
assert kernels == set(SIGS), kernels ^ set(SIGS)
try:
    cuda.compile_ptx(K.softmax_rows.py_func, T.void(*SIGS["softmax_rows"]), cc=(8, 0))
except Exception as exc:
    if "NVVM" not in repr(exc) and "nvvm" not in repr(exc):
        raise
    print("NO-NVVM", type(exc).__name__)
    raise SystemExit
for name, sig in SIGS.items():
    cuda.compile_ptx(getattr(K, name).py_func, T.void(*sig), cc=(8, 0))
print("COMPILED", len(SIGS))
"""


def test_every_kernel_compiles_for_a_real_gpu():
    out = run_isolated(_PTX, timeout=600)
    if "NO-NVVM" in out:
        pytest.skip("NVIDIA's NVVM library is not installed (pip install nvidia-cuda-nvcc-cu12 to compile PTX)")
    assert "COMPILED 7" in out
