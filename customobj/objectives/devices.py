"""The objective device seam: which kernels serve an objective on which device.

The device follows the data. ``Objective.grad_hess(scores, ...)`` with ``scores`` in GPU memory
(anything with ``__cuda_array_interface__``: a numba device array, CuPy, PyTorch) calls
:func:`grad_hess_prepared` here, which runs the numba.cuda kernels of ``_cuda_*`` and returns
numba device arrays; host arrays keep the CPU kernels, untouched. Each objective names its own GPU
drivers (``Objective.device_route()``, from its family's ``_<family>_route``; a subclass inherits its parent's); one
without raises ``NotImplementedError`` naming it, and a machine without a usable GPU raises
:class:`GPUUnavailableError` (from ``customobj._cuda_runtime``, re-exported here) naming what is
missing. Nothing ever falls back to the CPU silently. Pair couplings on the device
(``grad_hess_couplings_prepared``, for ``TreeBooster(device="cuda")``'s OLE criteria) live in
``_couplings_route``, which calls this seam for the gradients.

Labels, groups, weights and each objective's label-only state (the CPU objects' own ``_state``,
built once) go to the device once per :class:`~customobj.objectives.base.Prepared`, cached on it
(:class:`DeviceData`). :func:`grad_hess` (the ``(scores, labels, group)`` form) keeps the last
prepared data of each objective and reuses it while the labels, groups and weights are equal
(compared on the host, O(n)): a changed label is noticed and uploaded again.

Examples
--------
Under numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``) or on a GPU::

    from numba import cuda
    import customobj
    grad, hess = customobj.RankNet().grad_hess(cuda.to_device(scores), labels, group)
    grad.copy_to_host()
"""
from __future__ import annotations

import weakref
from typing import Any, Callable, Protocol

import numpy as np

from .._cuda_runtime import GPUUnavailableError, is_device_array, require_gpu
from .._device import Device, DeviceKind, as_device, device_of
from .._validation import SCORE_LIMIT
from ..groups import as_groups
from ._arrays import kernel_weights
from ._launch import flat, launch, zero
from .prepared import Prepared



class RoutedObjective(Protocol):
    """What the device seam needs of an objective (``base.Objective`` provides it; base imports this
    module for ``Objective.grad_hess`` on device scores, so nothing here imports base)."""

    n_outputs: int

    def _cache_key(self) -> tuple: ...

    def check_prepared(self, prep: Prepared) -> None: ...

    def _state(self, prep: Prepared) -> Any: ...

    def prepare(self, labels: Any, group: Any = None, weight: Any = None) -> Prepared: ...

    def device_route(self) -> Any: ...

    def _grad_hess(self, scores: Any, prep: Any, state: Any, out_grad: Any, out_hess: Any) -> Any: ...

__all__ = ["Device", "device_of", "kernels_for", "grad_hess", "grad_hess_prepared", "grad_hess_scores",
           "DeviceData", "device_data", "GPUUnavailableError"]


class DeviceData:
    """The device copies of one prepared data set, built on first GPU use and kept on the
    ``Prepared`` (label-only, so valid for its lifetime): query offsets, the query of each row,
    labels, weights, each objective's uploaded state, and scratch reused every round."""

    def __init__(self, prep: Prepared, cuda: Any) -> None:
        self.cuda = cuda
        self.n_rows = prep.n_rows
        ptr = np.ascontiguousarray(prep.ptr, dtype=np.int64)
        self.n_queries = ptr.size - 1
        self.ptr = cuda.to_device(ptr)
        self.qid = cuda.to_device(np.repeat(np.arange(self.n_queries, dtype=np.int64), np.diff(ptr)))
        self.labels = cuda.to_device(prep.labels)
        self.weights, self.use_weights = self.optional(prep.weight)
        self._arrays: dict = {}
        self._routes: dict = {}

    def route(self, objective: RoutedObjective) -> Callable:
        """``kernels_for(objective, Device.CUDA)``, asked once per objective and data set."""
        if objective not in self._routes:
            self._routes[objective] = kernels_for(objective, Device.CUDA)
        return self._routes[objective]

    def optional(self, w: "np.ndarray | None") -> tuple:
        """``(device array, used)`` of optional weights; "none" is a length-1 stand-in the kernels never read."""
        w, used = kernel_weights(w)
        return self.cuda.to_device(w if w.size else np.ones(1)), used

    def array(self, key: tuple, build: Callable[[], np.ndarray]) -> Any:
        """The device copy of ``build()``, uploaded once per ``key`` (objective identity + name)."""
        return self.arrays(key, lambda: (build(),))[0]

    def arrays(self, key: tuple, build: Callable[[], tuple]) -> tuple:
        """Device copies of the arrays ``build()`` returns together, uploaded once per ``key``."""
        if key not in self._arrays:
            self._arrays[key] = tuple(self.cuda.to_device(np.ascontiguousarray(a)) for a in build())
        return self._arrays[key]

    def nbytes(self) -> int:
        """Bytes of every device array held here (``TreeBooster(device="cuda")`` counts them in its peak)."""
        held = [self.ptr, self.qid, self.labels, self.weights]
        for v in self._arrays.values():
            held.extend(v if isinstance(v, tuple) else (v,))
        return sum(int(a.size) * np.dtype(a.dtype).itemsize for a in held)

    def scratch(self, name: object, shape: tuple, dtype: type) -> Any:
        """A device buffer reused across rounds (contents undefined)."""
        key = ("scratch", name, shape, np.dtype(dtype).str)
        if key not in self._arrays:
            self._arrays[key] = self.cuda.device_array(shape, dtype=dtype)
        return self._arrays[key]

    def pair_scratch(self, name: object, m: int) -> tuple:
        """``m`` pairs' worth ``(i, j, c)`` (int64, int64, float64) of a pair buffer reused across rounds, whose
        count changes from round to round: grown, by half again, when too small (counted by :meth:`nbytes`)."""
        key = ("pairs", name)
        buf = self._arrays.get(key)
        if buf is None or buf[0].shape[0] < m:
            self._arrays.pop(key, None)  # freed before the larger one exists
            c = max(1, m + m // 2)
            buf = self._arrays[key] = (self.cuda.device_array(c, np.int64), self.cuda.device_array(c, np.int64),
                                       self.cuda.device_array(c, np.float64))
        return tuple(a[:m] for a in buf)


def device_data(prep: Prepared, cuda: Any) -> DeviceData:
    """The device copies of ``prep`` (uploaded on first use, then kept on it)."""
    data = prep.device_data
    if not isinstance(data, DeviceData):
        data = prep.device_data = DeviceData(prep, cuda)
    return data


def kernels_for(objective: RoutedObjective, device: "Device | str") -> Callable:
    """The function that adds ``objective``'s gradients and hessians on ``device``:
    ``(scores, prep, state, out_grad, out_hess)`` for the CPU (the objective's own numba kernels),
    ``(objective, scores, prep, device_data, out_grad, out_hess)`` for CUDA (its
    ``device_route().grad_hess``; ``NotImplementedError`` naming the loss when it has none).

    Examples
    --------
    >>> import customobj
    >>> kernels_for(customobj.RankNet(), Device.CPU).__name__
    '_grad_hess'
    >>> kernels_for(customobj.RankNet(), Device.CUDA).__name__
    'label_pair_loss'
    """
    if as_device(device).kind is DeviceKind.CPU:
        return objective._grad_hess
    return objective.device_route().grad_hess  # DeviceKind.CUDA, any ordinal: the same kernels


def _device_scores(objective, scores, prep, data, cuda):
    """``scores`` as a float64 device array of the right shape; ValueError on bad values (checked on the device)."""
    from . import _pointwise_cuda as CW

    if not hasattr(scores, "copy_to_host"):
        scores = cuda.as_cuda_array(scores)
    k = objective.n_outputs
    if k is None:
        objective.check_prepared(prep)
        k = objective.n_outputs
    shape = (prep.n_rows,) if k == 1 else (prep.n_rows, k)
    got = tuple(scores.shape)
    if got != shape and not (k == 1 and got == (prep.n_rows, 1)):
        raise ValueError(f"scores on the GPU have shape {got}; expected {shape}")
    if np.dtype(scores.dtype).kind not in "iuf":
        raise TypeError(f"scores must be real numbers, got a device array of dtype {scores.dtype}")
    out = data.scratch("scores", shape, np.float64)
    bad = data.scratch("bad", (1,), np.int64)
    launch(CW.fill, 1, bad, 0)
    src = flat(scores) if scores.is_c_contiguous() else None
    if src is None:
        raise ValueError("scores on the GPU must be C-contiguous")
    launch(CW.to_float64, out.size, src, flat(out), SCORE_LIMIT, bad)
    if int(bad.copy_to_host()[0]):
        # the refusal's own path: the CPU's check on a host copy gives the CPU's message (the position named)
        objective._check_scores(np.asarray(scores.copy_to_host()), prep)
        raise ValueError(f"scores must be finite with |scores| <= {SCORE_LIMIT:g} (customobj._validation.SCORE_LIMIT); "
                         "the scores on the GPU are not (margins this large mean the model diverged)")
    return out


def grad_hess_prepared(objective: RoutedObjective, scores: Any, prep: Prepared, out_grad: Any = None,
                       out_hess: Any = None) -> tuple:
    """``objective``'s gradient and hessian at device ``scores`` as float64 numba device arrays.

    ``out_grad`` / ``out_hess``: optional float64 device arrays of the scores' shape, overwritten.
    """
    return grad_hess_scores(objective, scores, prep, out_grad, out_hess)[:2]


def grad_hess_scores(objective: RoutedObjective, scores: Any, prep: Prepared, out_grad: Any, out_hess: Any,
                     driver: "Callable | None" = None) -> tuple:
    """:func:`grad_hess_prepared`, then the checked float64 scores the kernels read and the ``DeviceData``
    (for kernels that read the same round again: the pair couplings). ``driver``: called instead of the
    objective's ``grad_hess`` route, with its arguments (a fused ``DeviceRoute.grad_hess_couplings``)."""
    data = prep.device_data
    if not isinstance(data, DeviceData):  # the data set's first GPU call: the GPU looked for once
        data = device_data(prep, require_gpu(f"{type(objective).__name__}.grad_hess with scores on the GPU"))
    route = data.route(objective) if driver is None else driver
    prep.state_for(objective)
    cuda = data.cuda
    s = _device_scores(objective, scores, prep, data, cuda)
    g = _output(cuda, out_grad, s.shape, "out_grad")
    h = _output(cuda, out_hess, s.shape, "out_hess")
    zero(g, h)
    route(objective, s, prep, data, g, h)
    return g, h, s, data


def _output(cuda, out, shape, name):
    if out is None:
        return cuda.device_array(shape, dtype=np.float64)
    if not is_device_array(out) or tuple(out.shape) != shape or np.dtype(out.dtype) != np.float64:
        raise ValueError(f"{name} must be a float64 device array of shape {shape}")
    return out


#: The seam's one cache: per objective, its last ``(labels, ptr, weight, Prepared)`` (see module doc).
_LAST: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _host(x):
    if x is None:
        return None
    return x.copy_to_host() if hasattr(x, "copy_to_host") else np.asarray(x)


def grad_hess(objective: RoutedObjective, scores: Any, labels: Any, group: Any = None, weight: Any = None) -> tuple:
    """``objective.grad_hess`` with device ``scores``: the data prepared and uploaded once while equal."""
    y = _host(labels)
    w = _host(weight)
    ptr = None if group is None else as_groups(group, np.shape(y)[0] if np.ndim(y) else 0).ptr
    last = _LAST.get(objective)
    if last is None or not (_same(last[0], y) and _same(last[1], ptr) and _same(last[2], w)):
        prep = objective.prepare(y, group, w)
        last = (np.array(y, copy=True), None if ptr is None else ptr.copy(), None if w is None else w.copy(), prep)
        _LAST[objective] = last
    return grad_hess_prepared(objective, scores, last[3])


def _same(a, b):
    if a is None or b is None:
        return a is None and b is None
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b)

