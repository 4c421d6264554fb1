"""The one door to numba.cuda: importing it (with the numpy shim it needs), telling whether a usable
GPU is present, and saying exactly what is missing when it is not.

Nothing here runs at ``import customobj``: numba.cuda is imported on the first GPU call, so the
CPU path never pays for it (nor breaks when the ``cuda`` extra is absent).

Two traps this module handles (issue "customobj on the GPU"):

- numba-cuda 0.30.4 still names ``np.row_stack``, which numpy 2.5 removed: ``from numba import
  cuda`` then fails. :func:`cuda_module` gives numpy the alias (``np.vstack``, its documented
  equivalent) before the import when it is missing.
- numba-cuda has its own copy of numba's cache machinery: :func:`cuda_module` points it at
  customobj's cache folder too (``@cuda.jit(cache=True)`` kernels load in a second process).
- under numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``) device arrays have no
  ``__cuda_array_interface__``; :func:`is_device_array` (``customobj._device``) also recognises
  numba's own device arrays (real or simulated) so the simulator tests can drive the GPU path.
- numba still ships its deprecated built-in ``numba.cuda``, which imports in a core install (no
  ``numba-cuda``) and then blames the driver; customobj's kernels are written for NVIDIA's
  ``numba-cuda``, so without it :func:`cuda_module` names the extra instead.
- the simulator runs a block's threads as Python threads, and its ``cuda.shared.array``
  (``simulator.kernelapi.FakeCUDAShared.array``: the first thread at a source line makes the array,
  the others look it up by file and line) has no lock between the look-up and the store: two threads
  that both miss make two arrays, and the block reduces or scans in different memories, so a correct
  kernel reads memory no thread wrote (seen: a row partition's offsets written out of bounds; LambdaRank's
  ``count_pairs`` in ``benchmarks/gpu_suite.py --simulator``, a pair total of 420,099,481,718,275 and
  then a 1.49 PiB allocation). A GPU has one shared memory per block: the race is the simulator's.
  :func:`cuda_module` installs the same look-up under a lock (:func:`lock_simulator_shared_arrays`) in
  every process that simulates customobj's kernels (the tests, benchmark subprocesses, the CLI), and
  with it barriers whose threads sleep instead of being polled (``customobj._simulator_barrier``).

Which device: ``require_gpu(what, device)`` checks that the :class:`~customobj._device.Device`'s
ordinal exists, and :func:`on_device` makes it numba's current device for a block of work (a fit,
a boosting round); ``"cuda"`` (no ordinal) leaves numba's current device, device 0 by default.
"""
from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import sys
import threading
from typing import Any, ContextManager, NamedTuple

import numpy as np

from ._device import Device, is_device_array

__all__ = ["GPUUnavailableError", "GPUStatus", "cuda_module", "gpu_status", "require_gpu", "is_device_array",
           "on_device", "THREADS", "blocks", "simulated", "device_function"]

#: Threads per block of every customobj kernel (a multiple of the 32-thread warp).
THREADS = 128

_EXTRA_HINT = ("install the extra: pip install '.[cuda]' in customobj's source folder (NVIDIA's numba-cuda "
               "with the NVVM and NVRTC "
               "compilers of CUDA 12; '.[cuda13]' for CUDA 13's)")


class GPUUnavailableError(RuntimeError):
    """A GPU computation was asked for (device arrays, ``device="cuda"``) but cannot run here.

    The message names what is missing: the ``numba-cuda`` package, the NVIDIA driver, or a device.
    customobj never falls back to the CPU silently.
    """


class GPUStatus(NamedTuple):
    """What ``customobj info`` reports about the GPU."""

    available: bool
    reason: str  # why not, when not available; "" otherwise
    name: str = ""
    memory_gib: float = 0.0
    driver: str = ""
    simulator: bool = False


def _shim_numpy() -> None:
    # numba-cuda 0.30.4 references np.row_stack at import; numpy >= 2.5 dropped that alias of vstack.
    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack


def cuda_module() -> Any:
    """``numba.cuda``, imported on first use; :class:`GPUUnavailableError` when the package is absent."""
    if not _numba_cuda_installed():
        # numba's deprecated built-in numba.cuda would import and then blame the driver
        raise GPUUnavailableError(f"NVIDIA's numba-cuda package is not installed: {_EXTRA_HINT}")
    _shim_numpy()
    try:
        from numba import cuda
    except ImportError as exc:
        raise GPUUnavailableError(f"numba.cuda cannot be imported ({exc}): {_EXTRA_HINT}") from None
    if getattr(cuda, "implementation", None) == "Built-in":  # numba-cuda found but not the numba.cuda in use
        raise GPUUnavailableError(f"numba.cuda is numba's deprecated built-in target, not NVIDIA's numba-cuda: "
                                  f"{_EXTRA_HINT}")
    _cache_cuda_kernels()
    if simulated():
        from ._simulator_barrier import sleep_at_simulator_barriers

        lock_simulator_shared_arrays()
        sleep_at_simulator_barriers()
    return cuda


@functools.cache
def lock_simulator_shared_arrays() -> bool:
    """Give numba's CUDA simulator one shared array per block and source line however its threads
    interleave: ``FakeCUDAShared.array``'s look-up and store under a lock, with numba-cuda's key (the
    caller's file and line, so arrays made either way are the same ones). Once per process; True when
    installed, False when this numba-cuda keeps its shared arrays otherwise (left as it is). The
    simulator's own method stays reachable as ``FakeCUDAShared.array.__wrapped__``.

    Examples
    --------
    >>> from numba.cuda.simulator.kernelapi import FakeCUDAShared
    >>> lock_simulator_shared_arrays() and FakeCUDAShared.array.__wrapped__ is not FakeCUDAShared.array
    True
    """
    _shim_numpy()  # importing numba.cuda.simulator imports numba.cuda
    from numba.cuda.simulator import kernelapi

    shared = getattr(kernelapi, "FakeCUDAShared", None)
    if shared is None or not hasattr(shared(0), "_allocations"):
        return False
    unlocked = shared.array
    lock = threading.Lock()
    types, numpy_support = kernelapi.types, kernelapi.numpy_support  # the simulator's own dtype mapping

    def array(self: Any, shape: Any, dtype: Any, alignment: Any = None) -> Any:
        if shape == 0 or alignment is not None:
            # dynamic shared memory: one buffer made at launch, no look-up; alignment: the simulator's error
            return unlocked(self, shape, dtype, alignment)
        if isinstance(dtype, types.Type):
            dtype = numpy_support.as_dtype(dtype)
        # numba-cuda's key (``traceback.extract_stack(...)[-2][0:2]``) without reading every frame's source:
        # ~0.5 ms a thread and block saved; tests/test_ole_cuda_pruning.py 171 s -> 37 s (2 loaded cores)
        caller = sys._getframe(1)
        key = (caller.f_code.co_filename, caller.f_lineno)
        with lock:
            res = self._allocations.get(key)
            if res is None:
                res = self._allocations[key] = np.empty(shape, dtype)
        return res

    array.__wrapped__ = unlocked  # type: ignore[attr-defined]
    shared.array = array
    return True


@functools.cache
def _cache_cuda_kernels() -> None:
    """customobj's ``@cuda.jit(cache=True)`` kernels cache in customobj's folder, as its CPU kernels
    (:func:`customobj._numba_cache.install_cuda`); once per process."""
    from . import _numba_cache

    try:
        from numba.cuda.core import caching
    except ImportError:  # a numba-cuda without its own cache machinery: numba's, installed at import
        return
    _numba_cache.install_cuda(caching)


def _numba_cuda_installed() -> bool:
    try:
        return importlib.util.find_spec("numba_cuda") is not None
    except (ImportError, ValueError):  # a broken installation counts as none
        return False


def _simulated() -> bool:
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def simulated() -> bool:
    """True under numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM``), as numba.cuda fixed it at its import."""
    from numba import config

    return bool(getattr(config, "ENABLE_CUDASIM", 0))


def device_function(fn: Any) -> Any:
    """The GPU form of a shared ``@njit`` scalar function (the one switch, used by every ``_cuda_*`` module).

    numba's CUDA target compiles an ``@njit`` function called from a kernel as a device function, so
    the CPU kernels and the GPU kernels run the same source. Under the simulator a kernel's arrays
    are Python objects that compiled code cannot take, so there the kernels call the Python source
    (``py_func``); its own calls to other ``@njit`` helpers still run compiled on the same scalars.
    """
    return fn.py_func if simulated() else fn


def gpu_status() -> GPUStatus:
    """The GPU as numba.cuda sees it: name, memory and driver, or why there is none (never raises).

    Examples
    --------
    >>> status = gpu_status()
    >>> status.available or bool(status.reason)
    True
    """
    try:
        cuda = cuda_module()
    except GPUUnavailableError as exc:
        return GPUStatus(False, str(exc))
    if _simulated():
        return GPUStatus(True, "", name="numba CUDA simulator (NUMBA_ENABLE_CUDASIM=1, runs on the CPU)",
                         simulator=True)
    try:
        if not cuda.is_available():
            err = cuda.cuda_error()
            why = " ".join(str(err).split()) if err else "no CUDA device found"
            return GPUStatus(False, f"no usable NVIDIA driver or device: {why}")
    except Exception as exc:  # an environment report never crashes; it says what went wrong
        return GPUStatus(False, f"the CUDA driver failed: {type(exc).__name__}: {' '.join(str(exc).split())}")
    return GPUStatus(True, "", *_describe(cuda))


def _describe(cuda: Any) -> tuple:
    """``(name, memory GiB, driver)`` of the current device; best effort: the GPU is usable either way."""
    name, memory, driver = "CUDA device", 0.0, "unknown"
    try:
        dev = cuda.get_current_device()
        name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
        memory = cuda.current_context().get_memory_info()[1] / 2**30
        major, minor = cuda.cudadrv.driver.driver.get_version()
        driver = f"CUDA {major}.{minor}"
    except Exception:  # a detail missing from the report, never a reason to refuse the GPU
        pass
    return name, memory, driver


def require_gpu(what: str, device: Device = Device.CUDA) -> Any:
    """``numba.cuda`` when a GPU (or the simulator) is usable and ``device``'s ordinal exists; else
    :class:`GPUUnavailableError` saying that ``what`` needs one and what is missing. Called once per
    fit or prepared data set; a GPU found once is not probed again (a failure is, so installing a
    driver later is seen)."""
    try:
        cuda = _usable_cuda()
    except GPUUnavailableError as exc:
        raise GPUUnavailableError(f"{what} needs a CUDA GPU: {exc}") from None
    if device.ordinal is not None:
        count = len(cuda.gpus)
        if device.ordinal >= count:
            where = "the simulator (NUMBA_ENABLE_CUDASIM=1) simulates" if simulated() else "numba sees"
            raise GPUUnavailableError(
                f"{what} asks for device={str(device)!r}, but {where} {count} CUDA device{'s' if count != 1 else ''} "
                f"(ordinals 0 to {count - 1}; CUDA_VISIBLE_DEVICES renumbers them)")
    return cuda


def on_device(cuda: Any, device: Device) -> ContextManager:
    """A ``with`` block whose numba.cuda work runs on ``device``: ``cuda.gpus[N]`` for ``"cuda:N"``
    (its primary context pushed for the block), nothing for ``"cuda"`` (numba's current device).
    Check the ordinal first (:func:`require_gpu`)."""
    if device.ordinal is None:
        return contextlib.nullcontext()
    return cuda.gpus[device.ordinal]


@functools.cache
def _usable_cuda() -> Any:
    status = gpu_status()
    if not status.available:
        raise GPUUnavailableError(status.reason)  # not cached: functools.cache keeps results only
    return cuda_module()


def blocks(n: int) -> int:
    """Blocks of :data:`THREADS` threads covering ``n`` work items (at least one)."""
    return max(1, (n + THREADS - 1) // THREADS)
