"""The composites' GPU routes (``Sum``, ``Scaled``: their ``device_route()``): each part's own route
into the same outputs, or into scratch then scaled (kernels: ``_pointwise_cuda``). See ``_launch`` for
what a route is.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._launch import flat, launch, zero


def sum_parts(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any) -> None:
    """``Sum``: each part's route adds into the same outputs."""
    for part in obj.parts:
        prep.state_for(part)
        part.device_route().grad_hess(part, s, prep, data, g, h)


def scaled(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any) -> None:
    """``Scaled``: the child's route into scratch, then ``out += factor * scratch``."""
    from . import _pointwise_cuda as CW

    child = obj.objective
    prep.state_for(child)
    cg = data.scratch(("scaled_grad", obj), g.shape, np.float64)  # equal Scaled parts run one after the other
    ch = data.scratch(("scaled_hess", obj), h.shape, np.float64)
    zero(cg, ch)
    child.device_route().grad_hess(child, s, prep, data, cg, ch)
    for dst, src in ((g, cg), (h, ch)):
        launch(CW.add_scaled, dst.size, flat(dst), flat(src), obj.factor)
