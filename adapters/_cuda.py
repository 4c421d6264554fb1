"""The GPU round of the adapters (``xgboost_objective(obj, device="cuda")``): margins into a reused
device buffer, the objective on the GPU (``customobj.objectives.devices``), float32 gradients and
hessians handed back as device arrays; nothing of size n returns to the host.

The device is chosen once, at the boundary (:func:`as_device`); the buffers are scratch of the data
set's :class:`~customobj.objectives.devices.DeviceData`, so they live as long as its ``Prepared``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from customobj._cuda_runtime import blocks, THREADS, is_device_array, require_gpu
from customobj._validation import check_choice
from customobj.objectives.base import Objective

__all__ = ["DEVICES", "as_device", "check_gpu_objective", "device_round"]

#: The ``device=`` values the adapters take (XGBoost's own names).
DEVICES = ("cpu", "cuda")
#: Largest magnitude float32 holds (gradients beyond it would reach the library as inf).
FLOAT32_MAX = float(np.finfo(np.float32).max)


def as_device(device: str) -> bool:
    """``device`` checked (``"cpu"`` or ``"cuda"``); True for the GPU."""
    if not isinstance(device, str):
        raise TypeError(f"device must be 'cpu' or 'cuda', got {type(device).__name__}")
    return check_choice(device, "device", set(DEVICES)) == "cuda"


def check_gpu_objective(objective: Objective, where: str) -> None:
    """Refuse now, not in round 1: no usable GPU (GPUUnavailableError) or no GPU kernel (NotImplementedError)."""
    require_gpu(f'{where}(..., device="cuda")')
    from customobj.objectives import devices

    devices.kernels_for(objective, devices.Device.CUDA)


def device_round(objective: Objective, prep: Any, preds: Any, shape: tuple, library: str) -> tuple:
    """One round on the GPU: ``(grad, hess)`` as float32 device arrays of ``shape``."""
    from customobj.objectives import devices
    from customobj.objectives import _cuda_pointwise as CW

    cuda = require_gpu(f"{library} training with device='cuda'")
    data = devices.device_data(prep, cuda)
    if is_device_array(preds):
        margins = preds
    else:
        host = np.ascontiguousarray(preds).reshape(shape)
        margins = data.scratch("margins", shape, host.dtype)
        margins.copy_to_device(host)
    g64 = data.scratch("grad64", shape, np.float64)
    h64 = data.scratch("hess64", shape, np.float64)
    objective.grad_hess_prepared(margins, prep, g64, h64)
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
