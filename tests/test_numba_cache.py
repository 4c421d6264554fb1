"""customobj._numba_cache: customobj's kernels cache under $CUSTOMOBJ_CACHE_DIR (or the per-user
folder), never beside the sources; NUMBA_CACHE_DIR still wins; other modules keep numba's default.

Each case runs in a fresh interpreter: numba picks a kernel's cache folder when the module defining
it is imported, so the environment must be set before ``import customobj``.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import customobj
from customobj import _numba_cache

PACKAGE_DIRS = [Path(customobj.__file__).resolve().parent,
                Path(customobj.__file__).resolve().parent.parent / "adapters"]

#: Compiles (or loads) a few of customobj's cached metric kernels; cheap once compiled.
SCRIPT = textwrap.dedent("""
    import numpy as np, customobj as co
    s = np.arange(6.0); y = np.array([0, 1, 2, 0, 1, 2.0])
    print(co.metrics.ndcg(s, y, [3, 3], k=2))
""")


def _run(script: str, env_extra: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "CUSTOMOBJ_CACHE_DIR")}
    env.update(env_extra)
    proc = subprocess.run([sys.executable, "-c", script], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc


def _cache_files(root: Path) -> dict[Path, int]:
    """Every .nbi/.nbc under ``root`` with its modification time (ns)."""
    return {p: p.stat().st_mtime_ns for p in root.rglob("*") if p.suffix in (".nbi", ".nbc")}


def _beside_sources() -> dict[Path, int]:
    out: dict[Path, int] = {}
    for d in PACKAGE_DIRS:
        if d.is_dir():
            out.update(_cache_files(d))
    return out


def test_kernels_cache_in_customobj_cache_dir_not_beside_sources(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    before = _beside_sources()
    _run(SCRIPT, {"CUSTOMOBJ_CACHE_DIR": str(cache)}, tmp_path)
    written = _cache_files(cache)
    assert any(p.suffix == ".nbi" for p in written) and any(p.suffix == ".nbc" for p in written)
    assert any("_metric_kernels" in p.name for p in written)
    assert _beside_sources() == before, "numba wrote or rewrote cache files beside customobj's sources"
    # A second process loads the kernels: nothing is compiled or written again.
    _run(SCRIPT, {"CUSTOMOBJ_CACHE_DIR": str(cache)}, tmp_path)
    assert _cache_files(cache) == written


def test_numba_cache_dir_takes_precedence(tmp_path: Path) -> None:
    ours, numbas = tmp_path / "customobj-cache", tmp_path / "numba-cache"
    before = _beside_sources()
    _run(SCRIPT, {"CUSTOMOBJ_CACHE_DIR": str(ours), "NUMBA_CACHE_DIR": str(numbas)}, tmp_path)
    assert any("_metric_kernels" in p.name for p in _cache_files(numbas))
    assert _cache_files(ours) == {}
    assert _beside_sources() == before


def test_other_modules_keep_numbas_default_locator(tmp_path: Path) -> None:
    # "customobj_user" shares customobj's prefix but is not one of its modules.
    (tmp_path / "customobj_user.py").write_text(textwrap.dedent("""
        from numba import njit

        @njit(cache=True)
        def twice(x):
            return 2 * x
    """))
    cache = tmp_path / "cache"
    script = "import customobj, customobj_user; assert customobj_user.twice(3) == 6"
    _run(script, {"CUSTOMOBJ_CACHE_DIR": str(cache), "PYTHONPATH": str(tmp_path)}, tmp_path)
    assert any("twice" in p.name for p in _cache_files(tmp_path / "__pycache__"))
    assert not any("twice" in p.name for p in _cache_files(cache))


def test_cache_root_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(_numba_cache.CACHE_ENV, str(tmp_path / "x"))
    assert _numba_cache.cache_root() == str(tmp_path / "x")
    monkeypatch.setenv(_numba_cache.CACHE_ENV, "~/somewhere")
    assert _numba_cache.cache_root() == os.path.join(os.path.expanduser("~"), "somewhere")
    monkeypatch.delenv(_numba_cache.CACHE_ENV)
    default = _numba_cache.cache_root()
    assert default.endswith(os.path.join("customobj", "numba"))
    assert "site-packages" not in default and not default.startswith(str(PACKAGE_DIRS[0]))


def test_install_is_idempotent() -> None:
    from numba.core import caching

    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl")
    _numba_cache.install()
    _numba_cache.install()
    ours = [c for c in impl._locator_classes if getattr(c, "_customobj", False)]
    assert len(ours) == 1
    # After numba's NUMBA_CACHE_DIR locator, before the in-tree one.
    assert impl._locator_classes.index(ours[0]) == 1
