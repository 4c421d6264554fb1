"""The GPU round of the adapters (``xgboost_objective(obj, device="cuda")``): margins into a reused
device buffer, the objective on the GPU (``customobj.objectives.devices``), float32 gradients and
hessians handed back as device arrays; nothing of size n returns to the host.

The device is chosen once, at the boundary (``customobj._device.as_device``: ``"cpu"``, ``"cuda"``,
``"cuda:N"``), and checked once (:func:`check_gpu_objective`: a GPU, that ordinal, the objective's
kernels); a round runs on that device (``_cuda_runtime.on_device``). The buffers are scratch of the
data set's :class:`~customobj.objectives.devices.DeviceData`, so they live as long as its ``Prepared``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from customobj._cuda_runtime import blocks, THREADS, is_device_array, on_device, require_gpu
from customobj._device import Device
from customobj.objectives.base import Objective

__all__ = ["check_gpu_objective", "device_round"]

#: Largest magnitude float32 holds (gradients beyond it would reach the library as inf).
FLOAT32_MAX = float(np.finfo(np.float32).max)


def check_gpu_objective(objective: Objective, where: str, device: Device = Device.CUDA) -> None:
    """Refuse now, not in round 1: no usable GPU or no such ordinal (GPUUnavailableError), or no GPU
    kernel (NotImplementedError)."""
    require_gpu(f'{where}(..., device="{device}")', device)
    from customobj.objectives import devices

    devices.kernels_for(objective, device)


def device_round(objective: Objective, prep: Any, preds: Any, shape: tuple, library: str,
                 device: Device = Device.CUDA) -> tuple:
    """One round on ``device`` (checked once, by :func:`check_gpu_objective`): ``(grad, hess)`` as
    float32 device arrays of ``shape``."""
    from customobj.objectives import devices

    data = prep.device_data
    # the GPU is looked for once per data set, in its first round, when its device copies are made
    cuda = data.cuda if isinstance(data, devices.DeviceData) else \
        require_gpu(f"{library} training with device='{device}'", device)
    with on_device(cuda, device):
        return _round(objective, prep, devices.device_data(prep, cuda), preds, shape, library)


def _round(objective, prep, data, preds, shape, library):
    from customobj.objectives import devices
    from customobj.objectives import _pointwise_cuda as CW

    if is_device_array(preds):
        margins = preds
    else:
        host = np.ascontiguousarray(preds).reshape(shape)
        margins = data.scratch("margins", shape, host.dtype)
        margins.copy_to_device(host)
    g64 = data.scratch("grad64", shape, np.float64)
    h64 = data.scratch("hess64", shape, np.float64)
    devices.grad_hess_prepared(objective, margins, prep, g64, h64)
    bad = data.scratch("bad32", (1,), np.int64)
    CW.fill[1, THREADS](bad, 0)
    out = []
    for name, src in (("grad32", g64), ("hess32", h64)):
        dst = data.scratch(name, shape, np.float32)
        CW.to_float32[blocks(src.size), THREADS](src.reshape(src.size), dst.reshape(dst.size), FLOAT32_MAX, bad)
        out.append(dst)
    # The flag's copy also waits for the kernels (same stream) before XGBoost, on its own stream, reads them.
    if int(bad.copy_to_host()[0]):
        raise ValueError(
            f"{type(objective).__name__} produced a gradient or hessian beyond the float32 range {library} trains "
            "with (3.4e38): the scores (margins) or labels are too large; lower the learning rate or rescale the labels"
        )
    return out[0], out[1]
