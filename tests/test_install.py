"""The README's two install commands work on a fresh machine in either order (issue 12).

Each sequence runs in a scratch venv (``--system-site-packages``, so numpy / numba / LightGBM are not
downloaded again) on a copy of this checkout (so pip's in-tree build leaves nothing in the real
one). customobj itself is always installed into the scratch venv, and every import is checked to
resolve to that venv or that copy: the system site-packages may hold an editable customobj of
another checkout (in CI: the CI clone's), which must never be what the test imports.

- Sequence A: ``pip install .``, kernels compile (their numba cache must not land in
  site-packages), then ``pip install -e .``; imports from an unrelated folder resolve to the
  checkout; ``pip uninstall`` leaves no ``customobj`` folder.
- Sequence B: the reverse order, plus the console script (``--help``, ``info``) and PyPI's unrelated
  ``adapters`` package (AdapterHub) installed beside customobj: both keep their own files.
- The built wheel installs ``customobj`` (with ``customobj.adapters`` and ``py.typed``) and nothing
  else at the top level.

Build isolation stays on (the wheel's build requirements come from the index).
"""
from __future__ import annotations

import base64
import csv
import hashlib
import os
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import REPO

pytestmark = pytest.mark.slow

#: What a fresh clone holds that the copy leaves out (build products, caches, results).
_IGNORE = shutil.ignore_patterns(".git", "build", "dist", "*.egg-info", "__pycache__", "*.pyc", "*.nbi",
                                 "*.nbc", ".pytest_cache", ".hypothesis", "results", "compare-results",
                                 "examples-output", "out")

#: The README's import check, run from a folder that is neither the checkout nor the venv; with
#: ``compile`` it also runs (so compiles and caches) one of customobj's numba kernels (a small one:
#: ~1 s cold, where NDCG's sorts take 5-20 s; where the cache lands is the same for every kernel).
_IMPORTS = """
import sys
import customobj, customobj.adapters
customobj.LambdaRank
if sys.argv[1:] == ["compile"]:
    import numpy as np
    from customobj import _metric_kernels
    assert _metric_kernels.count_pairs_upper(np.array([0, 5, 12])) == 10 + 21
print(customobj.__file__)
print(customobj.adapters.__file__)
"""


#: With AdapterHub's ``adapters`` installed: where ``adapters`` would come from (not imported: it
#: needs torch), and customobj.adapters in use: LightGBM trained by its objective adapter, with
#: SquaredError (cheap kernels: a cold NDCG metric here cost ~6 s more CPU in a fresh cache).
_BESIDE_ADAPTERHUB = """
import importlib.util
import numpy as np
import customobj as co, customobj.adapters as ad, lightgbm as lgb
X, y, g = co.synthetic(n_queries=10, docs_per_query=8, n_features=4, seed=0)
d = lgb.Dataset(X, y, group=g)
booster = lgb.train({"objective": ad.lightgbm_objective(co.SquaredError()), "verbose": -1, "min_data_in_leaf": 2},
                    d, 2)
pred = booster.predict(X)  # leaves fitted to customobj's gradients: what the objective adds up to
assert booster.num_trees() == 2 and np.isfinite(pred).all() and np.ptp(pred) > 0, pred
print(importlib.util.find_spec("adapters").origin)
print(co.__file__)
print(ad.__file__)
"""


class Venv:
    """A scratch venv on top of the running interpreter's site-packages."""

    def __init__(self, root: Path, cache: Path) -> None:
        self.root = root
        # No pip of its own (ensurepip costs seconds): the running interpreter's pip, found through
        # the system site-packages (or the parent venv, below), installs into this venv.
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(root)],
                       check=True, capture_output=True, timeout=120)
        self.python = root / "bin" / "python"
        self.site = Path(self.run("import sysconfig; print(sysconfig.get_paths()['purelib'])",
                                  cwd=root).strip())
        if sys.prefix != sys.base_prefix:
            # The tests run in a venv: its packages (numpy, numba, ...) are not in the system
            # site-packages, so list its folders after the scratch venv's own (a plain path line: its
            # .pth hooks, e.g. an editable customobj, are not run).
            own = [p for p in site.getsitepackages() if p.startswith(sys.prefix)]
            (self.site / "_parent_env.pth").write_text("".join(p + "\n" for p in own))
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "NUMBA_CACHE_DIR", "VIRTUAL_ENV", "PYTHONHOME")}
        env.update(CUSTOMOBJ_CACHE_DIR=str(cache), PIP_DISABLE_PIP_VERSION_CHECK="1")
        self.env = env

    def run(self, code: str, cwd: Path, *args: str) -> str:
        return self._check([str(self.python), "-c", code, *args], cwd)

    def pip(self, *args: str, cwd: Path) -> str:
        return self._check([str(self.python), "-m", "pip", *args], cwd)

    def script(self, name: str, *args: str, cwd: Path) -> str:
        return self._check([str(self.root / "bin" / name), *args], cwd)

    def _check(self, cmd: list[str], cwd: Path) -> str:
        proc = subprocess.run(cmd, cwd=cwd, env=getattr(self, "env", None), capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, f"{' '.join(cmd)} failed in {cwd}:\n{proc.stdout}\n{proc.stderr}"
        return proc.stdout

    def imports(self, cwd: Path, *, compile: bool = False) -> tuple[Path, Path]:
        """``customobj.__file__`` and ``customobj.adapters.__file__`` as seen from ``cwd``."""
        lines = self.run(_IMPORTS, cwd, *(["compile"] if compile else [])).strip().splitlines()
        return Path(lines[-2]).resolve(), Path(lines[-1]).resolve()

    def compiled_files(self) -> list[Path]:
        pkg = self.site / "customobj"
        return [p for p in pkg.rglob("*") if p.suffix in (".nbi", ".nbc")] if pkg.exists() else []

    def leftovers(self) -> list[str]:
        """Anything of customobj's in site-packages (folder, metadata, editable hooks)."""
        if not self.site.exists():  # pip removes a site-packages folder its uninstall left empty
            return []
        return sorted(p.name for p in self.site.iterdir()
                      if p.name == "customobj" or p.name.startswith(("customobj-", "__editable__.customobj",
                                                                     "__editable___customobj")))


def _verify_record(site: Path, dist: str) -> int:
    """Check every hashed file of ``dist``'s RECORD in ``site`` is the one pip installed."""
    (info,) = [p for p in site.glob("*.dist-info") if p.name.lower().startswith(dist.lower() + "-")]
    checked = 0
    with open(info / "RECORD", newline="") as fh:
        for path, digest, _ in csv.reader(fh):
            if not digest:
                continue
            algo, _, want = digest.partition("=")
            got = base64.urlsafe_b64encode(hashlib.new(algo, (site / path).read_bytes()).digest())
            assert got.rstrip(b"=").decode() == want, f"{dist}: {path} was overwritten"
            checked += 1
    return checked


@pytest.fixture
def work(tmp_path: Path) -> dict[str, Path]:
    src = tmp_path / "checkout"
    shutil.copytree(REPO, src, ignore=_IGNORE)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    return {"src": src, "elsewhere": elsewhere, "cache": tmp_path / "numba-cache", "tmp": tmp_path}


def _assert_installed_copy(venv: Venv, where: Path, *, compile: bool = False) -> None:
    co_file, ad_file = venv.imports(where, compile=compile)
    assert co_file == (venv.site / "customobj" / "__init__.py").resolve(), co_file
    assert ad_file == (venv.site / "customobj" / "adapters" / "__init__.py").resolve(), ad_file


def _assert_checkout(venv: Venv, where: Path, src: Path) -> None:
    co_file, ad_file = venv.imports(where)
    assert co_file == (src / "customobj" / "__init__.py").resolve(), co_file
    assert ad_file == (src / "adapters" / "__init__.py").resolve(), ad_file


def _assert_compiled_outside(venv: Venv, cache: Path) -> None:
    assert any(p.suffix == ".nbi" for p in cache.rglob("*")), "no kernel was cached in CUSTOMOBJ_CACHE_DIR"
    assert venv.compiled_files() == [], "numba wrote its cache into site-packages/customobj"


def test_install_then_editable(work: dict[str, Path]) -> None:
    src, elsewhere, cache = work["src"], work["elsewhere"], work["cache"]
    venv = Venv(work["tmp"] / "venv", cache)

    venv.pip("install", "-q", "--no-deps", ".", cwd=src)
    _assert_installed_copy(venv, elsewhere, compile=True)
    _assert_compiled_outside(venv, cache)

    venv.pip("install", "-q", "--no-deps", "-e", ".", cwd=src)
    assert not (venv.site / "customobj").exists(), "the non-editable install left its folder behind"
    _assert_checkout(venv, elsewhere, src)

    venv.pip("uninstall", "-y", "customobj", cwd=elsewhere)
    assert venv.leftovers() == []


def test_editable_then_install_beside_pypi_adapters(work: dict[str, Path]) -> None:
    src, elsewhere, cache = work["src"], work["elsewhere"], work["cache"]
    venv = Venv(work["tmp"] / "venv", cache)

    venv.pip("install", "-q", "--no-deps", "-e", ".", cwd=src)
    _assert_checkout(venv, elsewhere, src)

    venv.pip("install", "-q", "--no-deps", ".", cwd=src)
    assert not [p for p in venv.site.glob("__editable__*customobj*")], "editable hooks left behind"
    _assert_installed_copy(venv, elsewhere, compile=True)
    _assert_compiled_outside(venv, cache)
    assert "usage: customobj" in venv.script("customobj", "--help", cwd=elsewhere)
    info = venv.script("customobj", "info", cwd=elsewhere)
    assert "customobj" in info and "lightgbm" in info

    # PyPI's unrelated "adapters" (AdapterHub) beside customobj: each keeps its own files.
    venv.pip("install", "-q", "--no-deps", "adapters", cwd=elsewhere)
    assert _verify_record(venv.site, "adapters") > 0
    assert _verify_record(venv.site, "customobj") > 0
    out = venv.run(_BESIDE_ADAPTERHUB, elsewhere).strip().splitlines()
    assert [Path(x).resolve() for x in out[-3:]] == [
        (venv.site / "adapters" / "__init__.py").resolve(),
        (venv.site / "customobj" / "__init__.py").resolve(),
        (venv.site / "customobj" / "adapters" / "__init__.py").resolve(),
    ], out

    venv.pip("uninstall", "-y", "customobj", cwd=elsewhere)
    assert venv.leftovers() == []
    assert _verify_record(venv.site, "adapters") > 0


def test_wheel_has_one_top_level_package(work: dict[str, Path]) -> None:
    out = work["tmp"] / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", ".", "-w", str(out)],
                   cwd=work["src"], check=True, capture_output=True, timeout=300)
    (wheel,) = out.glob("customobj-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        (record,) = [n for n in zf.namelist() if n.endswith(".dist-info/RECORD")]
        paths = [row[0] for row in csv.reader(zf.read(record).decode().splitlines()) if row]
    top = {p.split("/")[0] for p in paths}
    assert top == {"customobj", record.split("/")[0]}, top
    assert "customobj/py.typed" in paths
    assert "customobj/adapters/__init__.py" in paths and "customobj/adapters/dask.py" in paths
    assert not any(p.endswith((".nbi", ".nbc")) for p in paths)
