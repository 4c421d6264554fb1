"""``MultiObjective`` on the GPU (``method="linear"``): each label's gradient and hessian on the card,
added with their weights there, so the per-label gradients never cross the bus.

The other methods solve a small problem each round from the per-label costs and Gram matrix:
``_round_route``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["grad_hess", "label_data"]


def label_data(prep: Any, sub: Any, data: Any) -> Any:
    """The device data label ``sub`` (a ``Prepared`` of ``MultiObjective``'s state) trains on: the data
    set's own (``data``) for the data set's label, else its label's copies, uploaded once and kept on ``sub``."""
    from ..objectives.devices import device_data

    return data if sub is prep else device_data(sub, data.cuda)


def grad_hess(obj: Any, s: Any, prep: Any, data: Any, g: Any, h: Any) -> None:
    """The route of :meth:`customobj.multi.MultiObjective.device_route`: per label, its own route into
    scratch (on its own labels' device copies), then ``out += weight * scratch`` (``Scaled``'s kernel)."""
    from ..objectives import _pointwise_cuda as CW
    from ..objectives._launch import flat, launch, zero

    state = prep.state_for(obj)
    weights = obj._settings.preference
    for k, part in enumerate(obj.objectives):
        sub = state.preps[k]
        sub_data = label_data(prep, sub, data)
        sub.state_for(part)
        cg = data.scratch(("multi_grad", k), g.shape, np.float64)
        ch = data.scratch(("multi_hess", k), h.shape, np.float64)
        zero(cg, ch)
        sub_data.route(part)(part, s, sub, sub_data, cg, ch)
        for dst, src in ((g, cg), (h, ch)):
            launch(CW.add_scaled, dst.size, flat(dst), flat(src), float(weights[k]))
    state.weights.append(weights.copy())
