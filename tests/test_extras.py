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
                             r"pip install 'customobj\[tune\]'$") as err:
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
    with pytest.raises(ImportError, match=r"customobj.adapters.dask needs distributed, .*customobj\[dask\]"):
        import customobj.adapters.dask  # noqa: F401
