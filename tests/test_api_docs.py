"""The documentation site (docs/: the Markdown user guide through MyST, and the API reference of
docs/api through Sphinx autodoc + napoleon) builds without a single warning.

Runs exactly the documented command, ``python -m sphinx -W --keep-going -b html docs <out>``,
inside a small wrapper that afterwards reports which heavy libraries the build imported: importing
the documented modules must not pull in LightGBM, XGBoost, Dask or matplotlib (nor train anything).
Every docs/*.md page must be in a toctree (Sphinx warns otherwise, and a warning fails the build).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

DOCS = REPO / "docs"
API = DOCS / "api"
#: One page per public module (the file names under docs/api).
PAGES = ["customobj", "objectives", "metrics", "data", "groups", "clicks", "multi", "ole", "adapters", "adapters.lightgbm",
         "adapters.xgboost", "adapters.metrics", "adapters.callbacks", "adapters.exact_leaves", "adapters.dask"]
# (not pandas: documenting TreeBooster, a scikit-learn estimator, imports scikit-learn, which
# imports pandas itself from version 1.9 on)
HEAVY = ["lightgbm", "xgboost", "dask", "distributed", "matplotlib", "catboost"]

_WRAPPER = """
import json, sys
from sphinx.cmd.build import main
rc = main(sys.argv[1:])
heavy = [m for m in {heavy!r} if m in sys.modules]
print("CUSTOMOBJ-DOCS " + json.dumps({{"rc": rc, "heavy": heavy}}))
"""


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> dict:
    try:
        import myst_parser  # noqa: F401
        import sphinx  # noqa: F401
    except ImportError:
        msg = "sphinx or myst-parser is not installed (pip install -e '.[docs]')"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(msg)
        pytest.skip(msg)
    out = tmp_path_factory.mktemp("docs-html")
    args = ["-W", "--keep-going", "-b", "html", str(DOCS), str(out)]
    proc = subprocess.run([sys.executable, "-c", _WRAPPER.format(heavy=HEAVY), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=600,
                          env={k: v for k, v in os.environ.items() if k != "SPHINXOPTS"})
    line = [x for x in proc.stdout.splitlines() if x.startswith("CUSTOMOBJ-DOCS ")]
    report = json.loads(line[-1].split(" ", 1)[1]) if line else {"rc": proc.returncode, "heavy": None}
    return {"proc": proc, "out": out, "api": out / "api", **report}


def test_builds_without_warnings(build: dict) -> None:
    proc = build["proc"]
    assert proc.returncode == 0 and build["rc"] == 0, f"sphinx failed:\n{proc.stderr[-8000:]}"
    problems = [x for x in proc.stderr.splitlines() if "WARNING" in x or "ERROR" in x or "CRITICAL" in x]
    assert problems == [], "\n".join(problems)


def test_every_public_module_has_a_page(build: dict) -> None:
    assert sorted(p.stem for p in API.glob("*.rst")) == sorted(["index", *PAGES])
    index = (API / "index.rst").read_text()
    for page in PAGES:
        assert f"   {page}\n" in index, f"{page} is not in the toctree"
        assert (build["api"] / f"{page}.html").is_file(), f"api/{page}.html was not built"
    # The members really are documented (autodoc found them), not just the page titles.
    objectives = (build["api"] / "objectives.html").read_text()
    assert 'id="customobj.objectives.LambdaRank"' in objectives
    assert 'id="customobj.adapters.lightgbm.lightgbm_objective"' in (
        build["api"] / "adapters.lightgbm.html").read_text()
    # customobj.ole loads TreeBooster lazily (module __getattr__): documented all the same
    assert 'id="customobj.ole.TreeBooster"' in (build["api"] / "ole.html").read_text()
    clicks = (build["api"] / "clicks.html").read_text()
    assert 'id="customobj.clicks.Unbiased"' in clicks and 'id="customobj.clicks.RegressionEM.predict"' in clicks


def test_build_imports_no_heavy_library(build: dict) -> None:
    assert build["heavy"] == [], f"building the API docs imported {build['heavy']}"


def test_every_user_guide_page_is_built_with_its_tables_and_links(build: dict) -> None:
    """The Markdown pages are parsed as Markdown (MyST), not shown as text: a table becomes a table
    and a link to another page a link to its HTML page."""
    pages = sorted(p.stem for p in DOCS.glob("*.md"))
    assert "contributing" in pages and "results" in pages
    for page in pages:
        assert (build["out"] / f"{page}.html").is_file(), f"docs/{page}.md was not built"
    contributing = (build["out"] / "contributing.html").read_text()
    assert "<table" in contributing and 'href="tests.html"' in contributing
    assert 'href="api/index.html"' in (build["out"] / "index.html").read_text()
