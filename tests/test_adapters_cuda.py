"""The adapters' GPU round (adapters/_cuda.py): margins to the device, float32 device outputs equal to
the CPU round's, the float32 overflow check, and the device option checked at the boundary."""
from __future__ import annotations

import numpy as np
import pytest

import customobj
from customobj.adapters import _cuda as C
from _cuda_cases import data, needs_gpu, to_device


def test_device_option_is_checked_once():
    assert C.as_device("cuda") is True and C.as_device("cpu") is False
    with pytest.raises(ValueError, match="device"):
        C.as_device("gpu")
    with pytest.raises(TypeError, match="device"):
        C.as_device(1)


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
