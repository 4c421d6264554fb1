"""customobj._extras: the optional dependencies, the extra that brings each (pyproject.toml), and
the error that names it when one is missing."""
from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import pytest

from customobj import _extras

PYPROJECT = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())


def _names(requirements):
    return {re.split(r"[<>=\[ ;]", r, maxsplit=1)[0].lower() for r in requirements}


def test_the_core_install_leaves_out_what_only_some_workflows_use():
    core = _names(PYPROJECT["project"]["dependencies"])
    assert {"numpy", "numba", "lightgbm", "scipy", "scikit-learn"} <= core
    assert not core & {"optuna", "xgboost", "xgboost-cpu", "matplotlib", "dask", "catboost"}


def test_every_extra_is_declared_and_test_pulls_every_optional_dependency():
    extras = PYPROJECT["project"]["optional-dependencies"]
    for module, extra in _extras.EXTRA_OF.items():
        assert module in _names(extras[extra]), (module, extra)
    optional = set().union(*(_names(v) for k, v in extras.items() if k not in ("all", "xgboost-cpu")))
    assert optional <= _names(extras["test"]), optional - _names(extras["test"])
    assert "customobj[xgboost,tune,plot,dask,catboost]" in extras["all"]


def test_a_missing_extra_names_the_pip_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "optuna", None)  # what an uninstalled package looks like to import
    assert not _extras.available("optuna")
    with pytest.raises(_extras.MissingExtraError,
                       match=r"^customobj compare --tune needs optuna, which is not installed: "
                             r"pip install '\.\[tune\]' \(in customobj's source folder\)$") as err:
        _extras.require("optuna", "customobj compare --tune")
    assert isinstance(err.value, ImportError) and err.value.name == "optuna"


def test_a_broken_dependency_inside_an_installed_extra_is_not_blamed_on_the_extra(monkeypatch):
    def broken(name, *a, **k):
        raise ModuleNotFoundError("No module named 'sqlalchemy'", name="sqlalchemy")

    monkeypatch.setattr(_extras.importlib, "import_module", broken)
    with pytest.raises(ModuleNotFoundError, match="sqlalchemy"):
        _extras.require("optuna", "x")


def test_the_dask_adapter_says_which_extra_it_needs(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    monkeypatch.delitem(sys.modules, "customobj.adapters.dask", raising=False)
    with pytest.raises(ImportError, match=r"customobj.adapters.dask needs distributed, .*'\.\[dask\]'"):
        import customobj.adapters.dask  # noqa: F401


def test_the_cuda_extra_brings_what_compiling_needs():
    # Only the NVIDIA driver on the machine: NVVM and NVRTC must come as wheels, with numba-cuda's cu12
    # extra (CUDA 12 code runs on a CUDA 12 or 13 driver); cuda13 brings CUDA 13's (issue 30 point 11).
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert any(re.fullmatch(r"numba-cuda\[cu12\]>=[0-9.]+", r) for r in extras["cuda"]), extras["cuda"]
    assert any(re.fullmatch(r"numba-cuda\[cu13\]>=[0-9.]+", r) for r in extras["cuda13"]), extras["cuda13"]
    assert any(r.startswith("numba-cuda[cu12]") for r in extras["test"])  # CI compiles the kernels to PTX too


def test_the_gpu_hints_name_the_cuda_extra():
    from _cuda_cases import NVVM_MISSING
    from customobj import _cuda_runtime

    for hint in (NVVM_MISSING, _cuda_runtime._EXTRA_HINT):
        assert "pip install '.[cuda]'" in hint and "NVVM" in hint, hint
