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
    assert "STATUS False" in out and "pip install 'customobj[cuda]'" in out
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
