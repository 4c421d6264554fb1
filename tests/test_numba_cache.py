"""customobj._numba_cache: customobj's kernels cache under $CUSTOMOBJ_CACHE_DIR (or the per-user
folder), never beside the sources; NUMBA_CACHE_DIR still wins; other modules keep numba's default.

Each case runs in a fresh interpreter: numba picks a kernel's cache folder when the module defining
it is imported, so the environment must be set before ``import customobj``.
"""
from __future__ import annotations

import ast
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


def test_stamp_covers_every_kernel_module() -> None:
    """A kernel inlines kernels of other modules, so its cache entry must go stale when any of them
    changes: the stamp holds every numba-using source file (adapters/ included in a checkout)."""
    stamp = _numba_cache.package_stamp()
    files = {path.replace(os.sep, "/") for path, _, _ in stamp}
    assert "customobj/_metric_kernels.py" in files and "customobj/objectives/_lambdarank_kernels.py" in files
    assert "customobj/ole/pairhist.py" in files
    assert "customobj/_io.py" not in files  # no numba: editing it recompiles nothing
    for path, mtime_ns, size in stamp:
        st = os.stat(os.path.join(str(PACKAGE_DIRS[0].parent), path))
        assert (st.st_mtime_ns, st.st_size) == (mtime_ns, size)
    from numba.core import caching

    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl")
    (ours,) = [c for c in impl._locator_classes if getattr(c, "_customobj", False)]
    from customobj import _metric_kernels

    locator = ours.from_function(_metric_kernels.dcg_query.py_func, _metric_kernels.__file__)
    own, package = locator.get_source_stamp()
    assert package == stamp and own


def test_editing_another_kernel_module_recompiles(tmp_path: Path) -> None:
    """End to end on a copy of the package: a cached kernel loads in a second process, and after
    another kernel module's file changes the cache is stale (recompiled), not silently reused."""
    import shutil

    copy = tmp_path / "pkg"
    shutil.copytree(PACKAGE_DIRS[0], copy / "customobj", ignore=shutil.ignore_patterns("__pycache__"))
    cache = tmp_path / "cache"
    script = ("import numpy as np, customobj, numba\n"
              "from customobj import _metric_kernels as m\n"
              "customobj.metrics.ndcg(np.arange(6.0), np.arange(6.0) % 3, [3, 3], k=2)\n"
              "ks = [k for k in vars(m).values() if isinstance(k, numba.core.registry.CPUDispatcher)]\n"
              "print(sum(len(k.stats.cache_hits) for k in ks), sum(len(k.stats.cache_misses) for k in ks))\n")
    env = {"CUSTOMOBJ_CACHE_DIR": str(cache), "PYTHONPATH": str(copy)}
    first = _run(script, env, tmp_path).stdout.split()
    again = _run(script, env, tmp_path).stdout.split()
    other = copy / "customobj" / "objectives" / "_pointwise_kernels.py"
    other.write_text(other.read_text() + "\n# edited\n")
    after = _run(script, env, tmp_path).stdout.split()
    hits, misses = zip(*[(int(a), int(b)) for a, b in (first, again, after)])
    # compiled, then loaded, then compiled again (stale): never loaded after the edit
    assert hits[0] == 0 and misses[0] > 0, first
    assert hits[1] > 0 and misses[1] == 0, again
    assert hits[2] == 0 and misses[2] > 0, after


# --- cached kernels that call parallel kernels ----------------------------------------------------
#: The sequence that crashed: a parallel kernel compiled and cached alone (LambdaRank's gradients),
#: then a cached kernel calling it compiled in a process that loaded it from the cache (the pair
#: couplings), then that kernel loaded from the cache by a third process.
_GRADIENTS = textwrap.dedent("""
    import numpy as np, customobj as co
    d = co.data.synthetic(60, 20, 4, seed=0)
    print(co.LambdaRank(truncation=10).grad_hess(np.zeros(len(d.y)), d.y, d.group)[0].sum())
""")
_COUPLINGS = _GRADIENTS.replace("grad_hess(", "pair_couplings(").replace(")[0].sum()", ")[2].sum()")


def test_kernels_loaded_from_the_cache_in_any_order_do_not_crash(tmp_path: Path) -> None:
    env = {"CUSTOMOBJ_CACHE_DIR": str(tmp_path / "cache")}
    first = _run(_COUPLINGS, env, tmp_path).stdout  # nothing cached: compiled in this process
    _run(_GRADIENTS, {"CUSTOMOBJ_CACHE_DIR": str(tmp_path / "cache2")}, tmp_path)
    for _ in range(2):  # compiled beside a parallel kernel loaded from the cache, then loaded itself
        assert _run(_COUPLINGS, {"CUSTOMOBJ_CACHE_DIR": str(tmp_path / "cache2")}, tmp_path).stdout == first
    assert _run(_COUPLINGS, env, tmp_path).stdout == first


def _jitted(tree: ast.AST) -> "dict[str, bool]":
    """Name -> parallel, of every function of ``tree`` decorated with numba's ``njit`` / ``jit``."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for dec in node.decorator_list:
                text = ast.unparse(dec)
                if "jit" in text and "cuda" not in text:
                    out[node.name] = "parallel=True" in text
    return out


def test_no_kernel_calls_a_parallel_kernel() -> None:
    """The class of the crash above: a jitted function that calls a ``parallel=True`` one (the
    parallel kernels are called from Python only)."""
    trees = [ast.parse(p.read_text(encoding="utf-8")) for d in PACKAGE_DIRS if d.is_dir() for p in d.rglob("*.py")]
    parallel = {name for t in trees for name, par in _jitted(t).items() if par}
    found = []
    for tree in trees:
        jitted = _jitted(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name in jitted:
                for call in ast.walk(node):
                    if isinstance(call, ast.Call):
                        f = call.func
                        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
                        if name in parallel and name != node.name:
                            found.append(f"{node.name} calls {name}")
    assert not found, found
