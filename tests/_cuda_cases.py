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
NVVM_MISSING = ("NVIDIA's NVVM library is not installed: pip install '.[cuda]' (numba-cuda[cu12], which "
                "brings NVVM and NVRTC) to compile the kernels to PTX")

#: Code for the PTX tests' child processes (numba.cuda imported, simulator off): ``cuda_kernels(package)``,
#: every numba.cuda kernel (not device function) the ``_cuda_*`` modules of ``package`` define, by
#: ``module.name``; and ``check_listed(sigs, package, own)``, which prints the kernels ``sigs`` leaves out (of modules not in ``own``, which list their kernels in their own tests). The
#: tests list each kernel's launch signature; a new kernel without one fails them (no hard-coded count).
LIST_KERNELS = """
def cuda_kernels(package):
    import importlib, pkgutil
    from numba.cuda.dispatcher import CUDADispatcher
    found = {}
    for info in pkgutil.iter_modules(importlib.import_module(package).__path__):
        # GPU kernel modules: _<family>_cuda beside CPU kernels, _<component>_kernels in ole/cuda/
        if info.name.startswith("_") and info.name.endswith(("_cuda", "_kernels")):
            module = importlib.import_module(package + "." + info.name)
            for name, obj in vars(module).items():
                if (isinstance(obj, CUDADispatcher) and not obj.targetoptions.get("device")
                        and obj.py_func.__module__ == module.__name__):
                    found[info.name + "." + name] = obj
    return found


def check_listed(sigs, package, own=()):
    listed = {id(kernel) for kernel, _ in sigs}
    kernels = {name: k for name, k in cuda_kernels(package).items() if name.split(".")[0] not in own}
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


def assert_bits_equal_cpu(obj, scores, labels, sizes, weight=None):
    """The device gradient and hessian of ``obj`` equal the CPU's bit for bit: a block per query adds
    its sums in the CPU's row order (``_block_cuda.add_staged``). Only the simulator is held to it (a
    card's ``exp`` / ``log`` may differ in the last bits)."""
    if not STATUS.simulator:
        pytest.skip("bit for bit only under the simulator (the device's libm may differ)")
    g, h = obj.grad_hess(scores, labels, sizes, weight)
    gd, hd = (a.copy_to_host() for a in obj.grad_hess(to_device(scores), labels, sizes, weight))
    np.testing.assert_array_equal(gd, g, err_msg=repr(obj))
    np.testing.assert_array_equal(hd, h, err_msg=repr(obj))
    return g, h


def assert_simulated_bits(gpu, cpu, rtol=1e-12):
    """``gpu`` equals ``cpu`` bit for bit under the simulator, to ``rtol`` (of the largest entry) on a card,
    whose FMA contraction and ``exp`` / ``log`` may differ in the last bits."""
    gpu, cpu = np.asarray(gpu), np.asarray(cpu)
    if STATUS.simulator:
        np.testing.assert_array_equal(gpu, cpu)
    else:
        np.testing.assert_allclose(gpu, cpu, rtol=rtol, atol=rtol * float(np.abs(cpu).max(initial=0.0)))


def route_cost(obj, s, y, sizes, w=None):
    """``(the CPU's _grad_hess_loss, the per-query costs of obj.device_route().grad_hess_loss)`` at ``s`` (every
    entry written: NaN before); the route's gradients and hessians asserted to be the CPU's."""
    from numba import cuda

    from customobj.objectives import devices

    prep = obj.prepare(y, sizes, w)
    g, h = np.zeros(y.size), np.zeros(y.size)
    loss = obj._grad_hess_loss(s, prep, prep.state_for(obj), g, h)
    gd, hd = cuda.to_device(np.zeros(y.size)), cuda.to_device(np.zeros(y.size))
    per_query = cuda.to_device(np.full(len(sizes), np.nan))
    obj.device_route().grad_hess_loss(obj, to_device(s), prep, devices.device_data(prep, cuda), gd, hd, per_query)
    assert_simulated_bits(gd.copy_to_host(), g)
    assert_simulated_bits(hd.copy_to_host(), h)
    return loss, per_query.copy_to_host()


def query_order_sum(values):
    """``values`` added from 0 in order: how ``MultiObjective``'s GPU round adds the per-query costs."""
    total = 0.0
    for v in values:
        total += v
    return total


def assert_case_gpu_equals_cpu(case, obj):
    """:func:`assert_gpu_equals_cpu` on a ``(name, scores, labels, sizes, weight)`` case; the result finite."""
    _, s, y, sizes, w = case
    g, h = assert_gpu_equals_cpu(obj, s, y, sizes, w)
    assert np.isfinite(g).all() and np.isfinite(h).all()


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


def query_level_cases():
    """:func:`degenerate_cases` plus an empty query (with weights), extreme scores and all labels 0."""
    yield from degenerate_cases()
    sizes = [3, 0, 4, 1, 2]
    s, y, _, w = data(5, sizes=sizes, weights=True)
    yield "empty query", s, y, sizes, w
    yield "extreme scores", np.where(s > 0, 600.0, -600.0) + s, y, sizes, None
    yield "all labels zero", s, np.zeros_like(y), sizes, None


def assert_rounds_equal_cpu(obj, rounds=3, seed=6):
    """A stochastic objective's rounds on two prepared copies of weighted data, one fed host and one
    device scores: the same noise round after round. Returns the CPU gradients of each round."""
    s, y, sizes, w = data(seed, weights=True)
    cpu, gpu = obj.prepare(y, sizes, w), obj.prepare(y, sizes, w)
    seen = []
    for _ in range(rounds):
        g, h = obj.grad_hess_prepared(s, cpu)
        gd, hd = (a.copy_to_host() for a in obj.grad_hess_prepared(to_device(s), gpu))
        scale = float(np.abs(g).max())
        np.testing.assert_allclose(gd, g, rtol=1e-9, atol=1e-9 * scale)
        np.testing.assert_allclose(hd, h, rtol=1e-9, atol=1e-9 * scale)
        seen.append(g)
    return seen


#: The cases the pair-coupling checks run (each a few kernel launches more than the gradients).
COUPLING_CASES = [c for c in query_level_cases() if c[0] in ("random", "weights", "empty query", "all labels equal",
                                                             "extreme scores")]


#: Queries longer than a simulated warp (8 lanes, ``_launch.query_threads``): a one-row query, one of 19 rows
#: (three warp-wide steps from its first row), a two-row one and one of 11 rows.
LONG_SIZES = [1, 19, 2, 11]


def long_query_cases():
    """``(name, scores, labels, sizes, weight)`` on :data:`LONG_SIZES`: random, weighted, the 19-row
    query's labels all equal (no pair of its own) and every query's (no pair at all)."""
    s, y, sizes, w = data(8, sizes=LONG_SIZES, weights=True)
    yield "long", s, y, sizes, None
    yield "long, weights", s, y, sizes, w
    y_equal = y.copy()
    y_equal[1:20] = 2.0
    yield "long query, labels equal", s, y_equal, sizes, None
    yield "long, no pairs", s, np.ones_like(y), sizes, None


def assert_kept_couplings_equal_cpu(obj, s, y, sizes, w=None):
    """``devices``' couplings route (``_couplings_route``) against the CPU's ``grad_hess_couplings_prepared``
    on a fresh prepared copy each (so a stochastic objective samples the same round on both): the pairs
    of coupling > 0 (what the CPU booster keeps), in the CPU's order, and the gradients."""
    from customobj.objectives._couplings_route import grad_hess_couplings_prepared

    g, h, (i, j, c) = obj.grad_hess_couplings_prepared(s, obj.prepare(y, sizes, w))
    keep = c > 0
    gd, hd, (id_, jd, cd) = grad_hess_couplings_prepared(obj, to_device(s), obj.prepare(y, sizes, w),
                                                         index_dtype=np.int32)
    np.testing.assert_array_equal(id_.copy_to_host(), i[keep])  # the CPU's pairs, in the CPU's order
    np.testing.assert_array_equal(jd.copy_to_host(), j[keep])
    for cpu, gpu in ((g, gd), (h, hd), (c[keep], cd)):
        np.testing.assert_allclose(gpu.copy_to_host(), cpu, rtol=1e-9,
                                   atol=1e-9 * max(1.0, float(np.abs(cpu).max(initial=0.0))))
    return i[keep], c[keep]


def assert_device_trees_equal_cpu(obj):
    """``TreeBooster(device="cuda", criterion="ole")`` (bagged) takes gradients and couplings on the device
    and grows the CPU's trees."""
    from customobj.ole import TreeBooster
    from _ole_cases import QUIET, make_rank_data, tree_dicts

    X, y, group = make_rank_data(6, n_queries=5)
    kw = dict(num_leaves=4, n_estimators=2, min_data_in_leaf=4, max_bin=8, objective=obj, criterion="ole",
              bagging_fraction=0.8, random_state=1, **QUIET)
    cpu, gpu = TreeBooster(**kw).fit(X, y, group), TreeBooster(device="cuda", **kw).fit(X, y, group)
    assert gpu.device_gradients_ == "device"
    assert tree_dicts(gpu) == tree_dicts(cpu)


_PTX = """
import os
os.environ.pop("NUMBA_ENABLE_CUDASIM", None)
import importlib, types as pytypes
from customobj._cuda_runtime import cuda_module
cuda = cuda_module()
from numba import types as T
import numba.cuda.dispatcher as dispatcher
dispatcher.get_current_device = lambda: pytypes.SimpleNamespace(compute_capability=(8, 0))  # no GPU: sm_80
K = importlib.import_module({module!r})
f1, i1, f2, b, i, f = T.float64[::1], T.int64[::1], T.float64[:, ::1], T.boolean, T.int64, T.float64
j1 = T.int32[::1]
SIGS = {{name: tuple(eval(t) for t in types) for name, types in {sigs!r}.items()}}
kernels = {{n for n, v in vars(K).items() if isinstance(v, dispatcher.CUDADispatcher) and not n.startswith("_")}}
assert kernels == set(SIGS), kernels ^ set(SIGS)
first = next(iter(SIGS))
try:
    cuda.compile_ptx(getattr(K, first).py_func, T.void(*SIGS[first]), cc=(8, 0))
except Exception as exc:
    if "nvvm" not in repr(exc).lower():
        raise
    print("NO-NVVM", type(exc).__name__)
    raise SystemExit
for name, sig in SIGS.items():
    cuda.compile_ptx(getattr(K, name).py_func, T.void(*sig), cc=(8, 0))
print("COMPILED", len(SIGS))
"""


def assert_kernels_compile(module, signatures):
    """Every public ``cuda.jit`` kernel of ``module`` (none left out; ``_``-named ones are its device
    functions) types and compiles to PTX for sm_80 with the argument types it is launched with:
    ``{kernel: ("f1", "i1", ...)}`` (``f1``/``i1``/``j1`` contiguous float64/int64/int32 arrays, ``f2`` a
    C-contiguous float64 matrix, ``b``/``i``/``f`` bool/int64/float64 scalars). Needs NVIDIA's NVVM
    library (skips without it), not a GPU."""
    from _isolated import run_isolated

    out = run_isolated(_PTX.format(module=module, sigs=signatures), timeout=600)
    if "NO-NVVM" in out:
        pytest.skip(NVVM_MISSING)
    assert f"COMPILED {len(signatures)}" in out, out


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
