"""The docstring examples of every customobj module run as written (doctest).

One test per module of ``customobj`` and ``customobj.adapters`` (private modules too: their
examples document helpers the public ones rely on). Each object's examples run once, in the module
that defines it. ``customobj.adapters.dask`` needs the ``dask`` extra; without it that module is
skipped, saying so (CI installs it).
"""
from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import customobj
import customobj.adapters

#: Modules that need an optional extra, and the top-level packages whose absence skips them.
OPTIONAL = {"customobj.adapters.dask": {"dask", "distributed"}}


def _modules() -> list[str]:
    names = {customobj.__name__, customobj.adapters.__name__}
    for pkg in (customobj, customobj.adapters):
        for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            names.add(info.name)
    return sorted(names)


MODULES = _modules()


def test_modules_are_found():
    # the walk must see both packages and their subpackages, or the parametrised tests below would
    # pass by checking nothing
    for name in ("customobj.metrics", "customobj.objectives.pointwise", "customobj.ole.booster",
                 "customobj.adapters.lightgbm", "customobj.adapters.xgboost", "customobj.compare.stats"):
        assert name in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as err:
        missing = (err.name or "").split(".")[0]
        if missing in OPTIONAL.get(name, ()):
            pytest.skip(f"{name} needs the optional {missing!r} package (pip install -e '.[dask]')")
        raise
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    failures = []
    for test in finder.find(module, name):
        runner.run(test, out=failures.append)
    assert not failures, "".join(failures)
