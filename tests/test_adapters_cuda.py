"""The adapters' GPU round (adapters/_cuda.py): margins to the device, float32 device outputs equal to
the CPU round's, the float32 overflow check, and the device option checked at the boundary."""
from __future__ import annotations

import numpy as np
import pytest

import customobj
from customobj._device import as_device
from customobj.adapters import _cuda as C
from _cuda_cases import data, needs_gpu, to_device


def test_device_option_is_checked_once():
    from customobj.adapters import XGBoostObjective

    for name in ("cpu", "cuda:0"):
        f = XGBoostObjective(customobj.RankNet(), device=name, check_device=False)
        assert str(f.device) == name and f.on_gpu == (name != "cpu")
    with pytest.raises(ValueError, match="device must be 'cpu', 'cuda' or 'cuda:N'"):
        XGBoostObjective(customobj.RankNet(), device="gpu")
    with pytest.raises(TypeError, match="device must be"):
        XGBoostObjective(customobj.RankNet(), device=1)


@needs_gpu
@pytest.mark.parametrize("obj", [customobj.LambdaRank.like_xgboost(), customobj.RankNet(), customobj.SquaredError()],
                         ids=repr)
@pytest.mark.parametrize("on_device", [False, True], ids=["host-margins", "device-margins"])
def test_round_equals_the_cpu_round_in_float32(obj, on_device):
    s, y, sizes, _ = data(30)
    prep = obj.prepare(y, sizes)
    margins = s.astype(np.float32)
    g, h = obj.grad_hess_prepared(margins.astype(np.float64), prep)
    for _ in range(2):  # the second round reuses the buffers
        gd, hd = C.device_round(obj, prep, to_device(margins) if on_device else margins, (y.size,), "XGBoost")
        assert gd.dtype == np.float32 and hd.dtype == np.float32
        np.testing.assert_allclose(gd.copy_to_host(), g.astype(np.float32), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(hd.copy_to_host(), h.astype(np.float32), rtol=1e-6, atol=1e-7)
    assert prep.device_data.scratch("grad32", (y.size,), np.float32) is gd


@needs_gpu
def test_gradients_beyond_float32_are_refused():
    s, y, _, _ = data(31)
    obj = customobj.SquaredError()
    prep = obj.prepare(y)
    with pytest.raises(ValueError, match="beyond the float32 range XGBoost"):
        C.device_round(obj, prep, 1e60 * s, (y.size,), "XGBoost")


@needs_gpu
def test_objectives_without_gpu_kernels_are_refused_up_front():
    class MyLoss(customobj.Objective):  # a loss of its own, without a device_route
        def _grad_hess(self, scores, prep, state, out_grad, out_hess):
            out_grad += scores

    class MyRankNet(customobj.RankNet):  # a subclass inherits its parent's GPU route
        pass

    with pytest.raises(NotImplementedError, match="MyLoss"):
        C.check_gpu_objective(MyLoss(), "xgboost_objective")
    C.check_gpu_objective(MyRankNet(), "xgboost_objective")


@needs_gpu
def test_an_ordinal_selects_that_device_and_a_missing_one_is_refused_up_front():
    from customobj._cuda_runtime import cuda_module, GPUUnavailableError
    from customobj.adapters import xgboost_objective

    n = len(cuda_module().gpus)
    s, y, sizes, _ = data(32)
    obj = customobj.RankNet()
    prep = obj.prepare(y, sizes)
    g, _ = obj.grad_hess_prepared(s, prep)
    xgboost_objective(obj, device=f"cuda:{n - 1}")  # the last device exists
    gd, _ = C.device_round(obj, prep, s.astype(np.float32), (y.size,), "XGBoost", as_device(f"cuda:{n - 1}"))
    np.testing.assert_allclose(gd.copy_to_host(), g.astype(np.float32), rtol=1e-6, atol=1e-7)
    with pytest.raises(GPUUnavailableError, match=rf"device='cuda:{n}', but .* {n} CUDA device"):
        xgboost_objective(obj, device=f"cuda:{n}")
