"""``MultiObjective`` on the GPU (``method="linear"``): each label's gradient and hessian on the card,
added with their weights there, so the per-label gradients never cross the bus.

The other methods read each round's per-label costs, which the GPU routes of the per-label losses do
not compute: they refuse device scores (``MultiObjective.device_route``) and run on the CPU.
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["grad_hess"]


def grad_hess(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any) -> None:
    """The route of :meth:`customobj.multi.MultiObjective.device_route`: per label, its own route into
    scratch (on its own labels' device copies), then ``out += weight * scratch`` (``Scaled``'s kernel)."""
    from ..objectives import _pointwise_cuda as CW
    from ..objectives._launch import flat, launch, zero
    from ..objectives.devices import device_data

    state = prep.state_for(obj)
    weights = obj._settings.preference
    for k, part in enumerate(obj.objectives):
        sub = state.preps[k]
        sub_data = data if sub is prep else device_data(sub, data.cuda)  # its labels uploaded once
        sub.state_for(part)
        cg = data.scratch(("multi_grad", k), g.shape, np.float64)
        ch = data.scratch(("multi_hess", k), h.shape, np.float64)
        zero(cg, ch)
        sub_data.route(part)(part, s, sub, sub_data, cg, ch)
        for dst, src in ((g, cg), (h, ch)):
            launch(CW.add_scaled, dst.size, flat(dst), flat(src), float(weights[k]))
    state.weights.append(weights.copy())
