"""Shared checks of the GPU kernels against their CPU twins (imported by the ``test_*cuda*`` and
``test_objectives_devices`` modules: ``from _cuda_cases import ...``).

On a machine without NVIDIA's driver the suite runs them on numba's CUDA simulator (tests/conftest.py
selects it), so they run in CI; the data stay tiny because the simulator runs each GPU thread as a
Python thread.

Tolerance: the GPU sums a row's terms in the CPU's order, so most entries are equal bit for bit; a
sum that an objective composes differently (``Sum`` adds each part's total instead of each term) or
an ``exp`` / ``log`` of the device's libm may differ in the last bits. ``rtol=1e-9`` of the entry,
with an absolute floor of 1e-9 times the largest entry (a near-cancelled sum has no relative scale).
"""
from __future__ import annotations

import numpy as np
import pytest

from customobj._cuda_runtime import gpu_status

STATUS = gpu_status()
needs_gpu = pytest.mark.skipif(not STATUS.available, reason=f"no GPU and no CUDA simulator: {STATUS.reason}")
needs_real_gpu = pytest.mark.skipif(not STATUS.available or STATUS.simulator,
                                    reason="needs a real CUDA GPU (the simulator has no __cuda_array_interface__)"
                                    if STATUS.available else f"needs a CUDA GPU: {STATUS.reason}")

#: Why the PTX tests skip: they compile every kernel for sm_80 with NVIDIA's NVVM (no GPU needed), which
#: the ``cuda`` extra brings (numba-cuda's cu12 extra: NVVM, NVRTC and nvJitLink wheels; pyproject.toml).
NVVM_MISSING = ("NVIDIA's NVVM library is not installed: pip install 'customobj[cuda]' (numba-cuda[cu12], which "
                "brings NVVM and NVRTC) to compile the kernels to PTX")

#: Code for the PTX tests' child processes (numba.cuda imported, simulator off): ``cuda_kernels(package)``,
#: every numba.cuda kernel (not device function) the ``_cuda_*`` modules of ``package`` define, by
#: ``module.name``; and ``check_listed(sigs, package)``, which prints the kernels ``sigs`` leaves out. The
#: tests list each kernel's launch signature; a new kernel without one fails them (no hard-coded count).
LIST_KERNELS = """
def cuda_kernels(package):
    import importlib, pkgutil
    from numba.cuda.dispatcher import CUDADispatcher
    found = {}
    for info in pkgutil.iter_modules(importlib.import_module(package).__path__):
        if info.name.startswith("_cuda_"):
            module = importlib.import_module(package + "." + info.name)
            for name, obj in vars(module).items():
                if (isinstance(obj, CUDADispatcher) and not obj.targetoptions.get("device")
                        and obj.py_func.__module__ == module.__name__):
                    found[info.name + "." + name] = obj
    return found


def check_listed(sigs, package):
    listed = {id(kernel) for kernel, _ in sigs}
    kernels = cuda_kernels(package)
    print("UNLISTED", sorted(name for name, k in kernels.items() if id(k) not in listed))
    print("KERNELS", len(kernels), "LISTED", len(listed & {id(k) for k in kernels.values()}))
"""

#: Query sizes with a one-row query, a two-row query and a mid-size one.
SIZES = [1, 5, 2, 7, 4]


def data(seed=0, sizes=SIZES, grades=4, tied=False, weights=False, per_query=False):
    """``(scores, labels, sizes, weight)``: random grades; ``tied`` rounds scores so many tie;
    ``per_query`` gives every row of a query the same weight."""
    rng = np.random.default_rng(seed)
    n = int(sum(sizes))
    y = rng.integers(0, grades, n).astype(np.float64)
    s = rng.normal(size=n)
    if tied:
        s = np.round(s)
    w = rng.uniform(0.2, 3.0, n) if weights else None
    if weights and per_query:
        w = np.repeat(rng.uniform(0.2, 3.0, len(sizes)), sizes)
    return s, y, list(sizes), w


def to_device(a):
    from numba import cuda

    return cuda.to_device(np.ascontiguousarray(a))


def assert_gpu_equals_cpu(obj, scores, labels, sizes, weight=None):
    """The GPU gradient and hessian of ``obj`` equal the CPU's (see the module docstring)."""
    g, h = obj.grad_hess(scores, labels, sizes, weight)
    gd, hd = obj.grad_hess(to_device(scores), labels, sizes, weight)
    gd, hd = gd.copy_to_host(), hd.copy_to_host()
    for cpu, gpu in ((g, gd), (h, hd)):
        assert gpu.shape == cpu.shape and gpu.dtype == np.float64
        scale = max(1.0, float(np.abs(cpu).max(initial=0.0)))
        np.testing.assert_allclose(gpu, cpu, rtol=1e-9, atol=1e-9 * scale, err_msg=repr(obj))
    return g, h


def degenerate_cases():
    """``(name, scores, labels, sizes, weight)``: random, one-row queries, equal labels, ties, weights."""
    s, y, sizes, _ = data(1)
    yield "random", s, y, sizes, None
    yield "one-row queries", s[:4], y[:4], [1, 1, 1, 1], None
    yield "all labels equal", s, np.full_like(y, 2.0), sizes, None
    s2, y2, _, _ = data(2, tied=True)
    yield "tied scores", s2, y2, sizes, None
    yield "all scores equal", np.zeros_like(s), y, sizes, None
    s3, y3, _, w3 = data(3, weights=True)
    yield "weights", s3, y3, sizes, w3


_NVVM_PROBE = """
import os
os.environ.pop("NUMBA_ENABLE_CUDASIM", None)
from numba import cuda
def k(a):
    a[0] = 1.0
try:
    cuda.compile_ptx(k, "void(float64[:])", cc=(8, 0))
    print("NVVM")
except Exception as exc:
    print("NO-NVVM", type(exc).__name__)
"""


def compile_listed_kernels(check: str) -> int:
    """Run ``check`` (code that compiles each kernel's listed signature and calls ``check_listed``, see
    :data:`LIST_KERNELS`) in a child process with the simulator off; skip without NVVM. Asserts that
    no kernel was left unlisted and every listed one compiled; returns how many kernels the code defines."""
    from _isolated import run_isolated

    if "NO-NVVM" in run_isolated(_NVVM_PROBE):
        pytest.skip(NVVM_MISSING)
    out = run_isolated("import os\nos.environ.pop('NUMBA_ENABLE_CUDASIM', None)\n" + LIST_KERNELS + check,
                       timeout=600)
    assert "UNLISTED []" in out, out  # every kernel found in the code was listed and compiled
    kernels = int(out.split("KERNELS ")[1].split()[0])
    assert f"LISTED {kernels}" in out and "COMPILED" in out, out
    return kernels
