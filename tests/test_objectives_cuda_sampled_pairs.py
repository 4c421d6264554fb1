"""GPU LambdaLoss (its three weightings) and YetiRank (customobj/objectives/_cuda_sampled_pairs.py,
routed by _listwise_routes.py) against their CPU twins under the simulator: random and degenerate data
(one-row queries, equal labels, tied or equal scores, weights, an empty query, extreme scores), YetiRank's
seeded permutations over several rounds (the same draws), the pair budget, and the kernels typed and
compiled to PTX for sm_80."""
from __future__ import annotations

import numpy as np
import pytest

from customobj import LambdaLoss, YetiRank
from _cuda_cases import assert_gpu_equals_cpu, data, degenerate_cases, needs_gpu, to_device
from _isolated import run_isolated

# The simulator runs the seeded streams' Python source, where numpy warns on the uint64 wraparound
# the generators rely on (compiled code, on the CPU or a GPU, wraps silently).
pytestmark = [needs_gpu, pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")]

LOSSES = [LambdaLoss(weighting="ndcg1"), LambdaLoss(weighting="ndcg2", sigma=2.0), LambdaLoss(),
          LambdaLoss(mu=0.5, sigma=0.7), YetiRank(), YetiRank(permutations=3, decay=0.5, seed=2**40 + 7)]


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


def test_yetirank_rounds_sample_the_cpus_permutations():
    # Each grad_hess is a round with new permutations; the device samples the CPU's, round after round.
    obj = YetiRank(permutations=4, seed=11)
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
    assert not np.array_equal(seen[0], seen[1])  # the permutations did change between rounds


def test_lambdaloss_weights_follow_the_device_ranking():
    # Reversing the scores reverses the positions: the NDCG-Loss1 weights, and so the gradients, change.
    s, y, sizes, _ = data(8)
    obj = LambdaLoss(weighting="ndcg1")
    g1 = assert_gpu_equals_cpu(obj, s, y, sizes)[0]
    g2 = assert_gpu_equals_cpu(obj, -s, y, sizes)[0]
    assert not np.allclose(g1, g2)


def test_yetirank_pair_budget_is_refused_on_the_device(monkeypatch):
    s, y, sizes, _ = data(9)
    monkeypatch.setattr("customobj._validation.MAX_PAIRS", 3)
    with pytest.raises(ValueError, match="YetiRank's sampled pairs"):
        YetiRank().grad_hess(to_device(s), y, sizes)


_PTX = """
import os
os.environ.pop("NUMBA_ENABLE_CUDASIM", None)
import types as pytypes
from customobj._cuda_runtime import cuda_module
cuda = cuda_module()
from numba import types as T
import numba.cuda.dispatcher as dispatcher
dispatcher.get_current_device = lambda: pytypes.SimpleNamespace(compute_capability=(8, 0))  # no GPU: sm_80
from customobj.objectives import _cuda_sampled_pairs as K
f1, i1, b, i, f = T.float64[::1], T.int64[::1], T.boolean, T.int64, T.float64
# The argument types customobj/objectives/_listwise_routes.py launches them with.
SIGS = {
    "lambdaloss_weights": (i1, i1, i1, f1, f1, i, f, f1),
    "yetirank_ranks": (f1, i1, i1, i, i, i, i1),
    "yetirank_sums": (f1, f1, i1, f1, i, f, i1, f1, f1),
}
kernels = {n for n, v in vars(K).items() if isinstance(v, dispatcher.CUDADispatcher)}
assert kernels == set(SIGS), kernels ^ set(SIGS)
try:
    cuda.compile_ptx(K.lambdaloss_weights.py_func, T.void(*SIGS["lambdaloss_weights"]), cc=(8, 0))
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
    assert "COMPILED 3" in out
