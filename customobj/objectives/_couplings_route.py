"""Gradients, hessians and pair couplings on the GPU in one call: the device twin of
``Objective.grad_hess_couplings_prepared`` for the objectives whose ``device_route()`` has a
``couplings`` driver (``_<family>_route``).

``TreeBooster(device="cuda")`` with ``criterion="ole" | "ole_fast" | "ole_float64"`` needs each round's
pairs ``(i, j, c)`` (rows ``i``, ``j`` and their hessian coupling ``h_ij = c``) next to the gradients
(Xia, Zhai, Wang: a child's second derivative is ``sum h_i - 2 sum h_ij`` over its pairs). Here they are
computed where the scores are: the objective's gradient launches (``devices.grad_hess_prepared``),
then the loss's count kernel, a scan of the counts into offsets and its fill kernel. No atomics, all
float64; the pairs come in the CPU's order (by query, by upper then lower sorted position) with the
CPU's values (the same float64 operations; a device ``exp`` may differ in the last bit on a GPU), so
the trees grown from them are the CPU's.

Only the pair count crosses the bus (one integer a round), to size the output.

Every loss whose ``device_route().couplings`` is set writes its pairs with kernels of its own
(which ones, and how they are launched: docs/gpu-design.md). A route with a fused ``grad_hess_couplings``
driver is run instead of ``grad_hess`` then ``couplings``: ``MultiObjective`` (its labels' pairs weighted
by the round's solve), the composites ``Sum`` and ``Scaled`` (each part's pairs right after its own
gradients, concatenated or scaled: ``_composite_route``) and ``Unbiased`` (each leaf's debiased pairs from
the round's pass, before its estimate: ``clicks._unbiased_route``). A user's loss without a coupling
kernel, or a composite holding one, has none: :func:`couplings_reason` says so.

Examples
--------
>>> import customobj
>>> couplings_reason(customobj.LambdaRank()) is None
True
>>> couplings_reason(customobj.LambdaRank() + 2.0 * customobj.RankNet()) is None
True
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .base import Objective, Prepared
from . import _launch as R
from ._launch import PairBuffer, chunks, launch, sized
from . import devices

__all__ = ["couplings_reason", "grad_hess_couplings_prepared", "in_bag_pairs"]


def couplings_reason(obj: Objective) -> Optional[str]:
    """Why ``obj``'s pair couplings cannot be computed on the GPU, or None when they can (its
    ``device_route()`` has a ``couplings`` driver)."""
    try:
        route = obj.device_route()
    except NotImplementedError as exc:
        return str(exc)
    if route.couplings is None and route.grad_hess_couplings is None:
        return f"the pair couplings of {type(obj).__name__} have no GPU kernel"
    return None


def grad_hess_couplings_prepared(obj: Objective, scores: Any, prep: Prepared, out_grad: Any = None,
                                 out_hess: Any = None, pair_buffer: Optional[PairBuffer] = None,
                                 index_dtype: type = np.int64) -> tuple:
    """``(grad, hess, (i, j, c))`` at device ``scores``, all numba device arrays (float64; the rows of
    ``index_dtype``), equal to the CPU's ``obj.grad_hess_couplings_prepared(host scores, prep)``.

    ``out_grad`` / ``out_hess`` as for ``devices.grad_hess_prepared``; ``pair_buffer(m)`` returns the
    device arrays the ``m`` pairs are written to (default: new arrays of ``index_dtype``).

    Raises
    ------
    NotImplementedError
        ``obj`` has no coupling kernel (:func:`couplings_reason`).
    """
    why = couplings_reason(obj)
    if why is not None:
        raise NotImplementedError(f"{why}: pass host (numpy) scores to compute them on the CPU")
    if pair_buffer is None:
        index = np.dtype(index_dtype)

        def pair_buffer(m: int) -> tuple:
            data = prep.device_data  # set by the gradient call, which runs first
            assert isinstance(data, devices.DeviceData)
            cuda = data.cuda
            return cuda.device_array(m, index), cuda.device_array(m, index), cuda.device_array(m, np.float64)
    route = obj.device_route()
    if route.grad_hess_couplings is not None:  # one driver for both (MultiObjective)
        fused, found = route.grad_hess_couplings, []

        def driver(o: Any, s: Any, p: Any, d: Any, g: Any, h: Any) -> None:
            found.append(fused(o, s, p, d, g, h, pair_buffer))
        grad, hess, _, _ = devices.grad_hess_scores(obj, scores, prep, out_grad, out_hess, driver)
        return grad, hess, found[0]
    # the float64 scores the gradient kernels read (converted and checked once) and their scratch
    grad, hess, s, data = devices.grad_hess_scores(obj, scores, prep, out_grad, out_hess)
    assert route.couplings is not None  # couplings_reason said so above
    return grad, hess, route.couplings(obj, s, prep, data, pair_buffer)


def in_bag_pairs(pairs: tuple, in_bag: Any, pair_buffer: PairBuffer) -> tuple:
    """``pairs`` (device arrays) with coupling > 0 and both rows in the bag (``in_bag``: a bool device
    array per row), in order, written to ``pair_buffer(m)``: what the CPU booster keeps of the
    objective's pairs under ``bagging_fraction < 1`` (``compact_pairs``)."""
    from numba import cuda

    from . import _pairwise_cuda as CP

    n_seg = chunks(pairs[0].shape[0], R.LIST_CHUNK)
    # the pair count changes from round to round: fresh (small) counts, not a scratch kept per count
    scratch = (cuda.device_array(max(n_seg, 1), np.int64), cuda.device_array(n_seg + 1, np.int64))
    offsets, out = sized(scratch, pair_buffer, CP.count_in_bag, n_seg, *pairs, in_bag, R.LIST_CHUNK)
    if out[0].shape[0] > 0:
        launch(CP.place_in_bag, n_seg, *pairs, in_bag, R.LIST_CHUNK, offsets, *out)
    return out
