"""The type hints are kept: mypy (configured in ``pyproject.toml``, ``[tool.mypy]``) reports no error over
``customobj/`` and ``adapters/``, and every function and method of the public API is annotated.

mypy runs in a subprocess with its cache in the system's temporary folder (one per checkout), so only
the first run checks every file and a rerun only what changed. Without mypy the test is skipped,
except under CI (``pip install -e '.[test]'`` installs it).
"""
from __future__ import annotations

import hashlib
import importlib
import inspect
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import REPO

#: Modules whose ``__all__`` is the public API (``customobj.adapters.dask`` needs the dask extra).
PUBLIC = ["customobj", "customobj.objectives", "customobj.metrics", "customobj.data", "customobj.groups",
          "customobj.pairs", "customobj.combine", "customobj.adapters", "customobj.adapters.lightgbm",
          "customobj.adapters.xgboost", "customobj.adapters.metrics", "customobj.adapters.callbacks",
          "customobj.adapters.exact_leaves", "customobj.multi"]


def _mypy_cache() -> Path:
    tag = hashlib.sha256(str(REPO).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"customobj-mypy-{tag}"


def test_mypy_reports_no_error() -> None:
    try:
        import mypy  # noqa: F401
    except ImportError:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("mypy is not installed (pip install -e '.[test]')")
        pytest.skip("mypy is not installed (pip install -e '.[test]')")
    # No file arguments: the files, options and per-module overrides are pyproject.toml's.
    proc = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(_mypy_cache()),
                           "--no-error-summary", "--hide-error-context"],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    errors = [line for line in proc.stdout.splitlines() if ": error:" in line]
    assert proc.returncode == 0 and errors == [], f"mypy (rc {proc.returncode}):\n{proc.stdout[-8000:]}{proc.stderr[-2000:]}"


def _public_callables() -> list[tuple[str, object]]:
    """``(qualified name, function)`` of every public function, and every public method and property
    of every public class, that customobj itself defines."""
    found: dict[str, object] = {}
    for modname in PUBLIC:
        module = importlib.import_module(modname)
        for name in module.__all__:
            obj = getattr(module, name)
            where = getattr(obj, "__module__", "") or ""
            if not where.startswith("customobj"):
                continue
            if inspect.isfunction(obj):
                found[f"{where}.{obj.__qualname__}"] = obj
            elif inspect.isclass(obj):
                for klass in obj.__mro__:
                    if not klass.__module__.startswith("customobj"):
                        continue
                    for attr, member in vars(klass).items():
                        if attr.startswith("_") and attr != "__init__":
                            continue
                        if isinstance(member, (staticmethod, classmethod)):
                            member = member.__func__
                        if isinstance(member, property):
                            member = member.fget
                        if inspect.isfunction(member):
                            found[f"{klass.__module__}.{member.__qualname__}"] = member
    return sorted(found.items())


PUBLIC_CALLABLES = _public_callables()


def _missing(func: object) -> list[str]:
    sig = inspect.signature(func)  # type: ignore[arg-type]
    params = list(sig.parameters.values())
    if params and params[0].name in ("self", "cls"):
        params = params[1:]
    missing = [p.name for p in params if p.annotation is inspect.Parameter.empty]
    if sig.return_annotation is inspect.Signature.empty:
        missing.append("return")
    return missing


def test_the_walk_finds_the_public_api() -> None:
    names = {name for name, _ in PUBLIC_CALLABLES}
    # objective methods are found through the base class, adapters' functions in their modules
    for name in ("customobj.objectives.base.Objective.grad_hess", "customobj.objectives.base.Objective.pair_couplings",
                 "customobj.objectives.pairwise.QBRank.__init__", "customobj.metrics.ndcg",
                 "customobj.adapters.lightgbm.lightgbm_objective", "customobj.groups.Groups.from_qid"):
        assert name in names
    assert len(PUBLIC_CALLABLES) > 80


def test_public_api_is_annotated() -> None:
    bare = {name: miss for name, func in PUBLIC_CALLABLES if (miss := _missing(func))}
    assert bare == {}, "public functions without type hints (name: parameters / return):\n" + "\n".join(
        f"  {name}: {', '.join(miss)}" for name, miss in bare.items())


def test_a_bare_function_is_reported() -> None:
    # the check above can fail: a parameter or a return without a hint is named
    def typed(x: int) -> int:
        return x

    def bare(x, y: int):  # type: ignore[no-untyped-def]
        return x

    assert _missing(typed) == []
    assert _missing(bare) == ["x", "return"]
