"""The numba.cuda door (customobj/_cuda_runtime.py): the import with numpy's ``row_stack`` shim, the
GPU report, the errors that name what is missing, and what counts as a device array."""
from __future__ import annotations

import numpy as np
import pytest

from customobj import _cuda_runtime as R
from _cuda_cases import STATUS, needs_gpu
from _isolated import run_isolated


def test_numba_cuda_imports_even_where_numpy_lacks_row_stack():
    # numba-cuda 0.30.4 names np.row_stack, which numpy 2.5 removed: simulate that numpy here.
    out = run_isolated("""
import numpy as np
if hasattr(np, "row_stack"):
    del np.row_stack
from customobj._cuda_runtime import cuda_module
cuda = cuda_module()
print("OK", np.row_stack is np.vstack, hasattr(cuda, "jit"))
""")
    assert "OK True True" in out


def test_status_never_raises_and_explains_itself():
    status = R.gpu_status()
    assert isinstance(status, R.GPUStatus)
    assert status.available != bool(status.reason)
    if status.simulator:
        assert "simulator" in status.name


def test_without_the_package_the_error_names_the_extra():
    out = run_isolated("""
import sys
sys.modules["numba.cuda"] = None
from customobj._cuda_runtime import gpu_status, require_gpu, GPUUnavailableError
print("STATUS", gpu_status().available, gpu_status().reason)
try:
    require_gpu("the test")
except GPUUnavailableError as exc:
    print("ERR", exc)
""")
    assert "STATUS False" in out and "pip install '.[cuda]'" in out
    assert "ERR the test needs a CUDA GPU" in out


@needs_gpu
def test_device_arrays_are_recognised_and_host_arrays_are_not():
    from numba import cuda

    assert R.is_device_array(cuda.to_device(np.ones(2)))
    assert not R.is_device_array(np.ones(2)) and not R.is_device_array([1.0]) and not R.is_device_array(None)

    class Interface:
        __cuda_array_interface__: dict = {}

    assert R.is_device_array(Interface())


@pytest.mark.parametrize("n, expected", [(0, 1), (1, 1), (R.THREADS, 1), (R.THREADS + 1, 2)])
def test_blocks_cover_every_item(n, expected):
    assert R.blocks(n) == expected


def test_require_gpu_returns_numba_cuda_when_available():
    if not STATUS.available:
        with pytest.raises(R.GPUUnavailableError, match="needs a CUDA GPU"):
            R.require_gpu("x")
    else:
        assert hasattr(R.require_gpu("x"), "to_device")


def test_the_cpu_path_never_imports_numba_cuda():
    out = run_isolated("""
import sys
import numpy as np
import customobj, customobj.adapters
customobj.LambdaRank().grad_hess(np.zeros(4), [1.0, 0.0, 2.0, 0.0], [4])
print("LOADED", "numba.cuda" in sys.modules)
""")
    assert "LOADED False" in out


# A core install: numba-cuda absent, numba's deprecated built-in numba.cuda still importable. With
# ``sys.modules["numba_cuda"] = None`` the package cannot be found (its numba.cuda redirect gives up),
# which is what a machine without it sees.
_CORE_INSTALL = """
import os, sys, time, warnings
os.environ["NUMBA_ENABLE_CUDASIM"] = "{sim}"
sys.modules["numba_cuda"] = None
warnings.simplefilter("ignore")  # numba-cuda's own redirect warns that it cannot find itself
import numpy as np
import customobj
from customobj._cuda_runtime import gpu_status, GPUUnavailableError
print("STATUS", gpu_status().available, gpu_status().reason)
from customobj.ole import TreeBooster
X = np.random.default_rng(0).normal(size=(40, 3))
try:
    TreeBooster(device="cuda", n_estimators=2).fit(X, np.arange(40) % 3, [20, 20])
except GPUUnavailableError as exc:
    print("FIT", exc)
"""


@pytest.mark.parametrize("sim", ["0", "1"], ids=["driver-probe", "simulator"])
def test_a_core_install_names_the_extra_not_the_driver(sim):
    out = run_isolated(_CORE_INSTALL.format(sim=sim))
    status = next(ln for ln in out.splitlines() if ln.startswith("STATUS"))
    fit = next(ln for ln in out.splitlines() if ln.startswith("FIT"))
    assert status.startswith("STATUS False") and "pip install '.[cuda]'" in status, status
    assert "numba-cuda" in status and "driver" not in status, status
    assert 'TreeBooster(device="cuda") needs a CUDA GPU' in fit and "pip install '.[cuda]'" in fit, fit


def test_the_builtin_numba_cuda_is_refused_even_where_numba_cuda_is_installed(monkeypatch):
    import types

    fake = types.SimpleNamespace(implementation="Built-in")
    monkeypatch.setattr(R, "_numba_cuda_installed", lambda: True)
    monkeypatch.setitem(__import__("sys").modules, "numba.cuda", fake)
    import numba

    monkeypatch.setattr(numba, "cuda", fake, raising=False)
    with pytest.raises(R.GPUUnavailableError, match=r"deprecated built-in .*pip install '\.\[cuda\]'"):
        R.cuda_module()


@needs_gpu
def test_an_ordinal_beyond_the_devices_is_refused_naming_the_count():
    from customobj._device import as_device

    n = len(R.cuda_module().gpus)
    assert hasattr(R.require_gpu("x", as_device(f"cuda:{n - 1}")), "to_device")
    with pytest.raises(R.GPUUnavailableError, match=rf"x asks for device='cuda:{n}', but .* {n} CUDA device"):
        R.require_gpu("x", as_device(f"cuda:{n}"))


@needs_gpu
def test_on_device_selects_the_ordinal_and_cuda_leaves_the_current_device():
    from customobj._device import Device, as_device

    cuda = R.cuda_module()
    with R.on_device(cuda, Device.CUDA):
        a = cuda.to_device(np.arange(3.0))
    with R.on_device(cuda, as_device("cuda:0")):
        b = cuda.to_device(np.arange(3.0))
        assert cuda.gpus.current.id == 0
    np.testing.assert_array_equal(a.copy_to_host(), b.copy_to_host())
