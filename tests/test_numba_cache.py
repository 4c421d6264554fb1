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
from typing import NamedTuple

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
#: Compiles (or loads) one small cached metric kernel: about 1 s cold where :data:`SCRIPT`'s ndcg
#: (sorting included) takes 5-20 s. For the tests of where the cache goes, whether it warns and
#: whether it speaks, which do not depend on the kernel; :data:`SCRIPT` is compiled once, by
#: :func:`filled_cache`.
CHEAP_SCRIPT = textwrap.dedent("""
    import numpy as np, customobj as co
    from customobj import _metric_kernels
    print(_metric_kernels.count_pairs_upper(np.array([0, 3, 6])))
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


class FilledCache(NamedTuple):
    """A cold run of :data:`COLD_SCRIPT` into an empty ``CUSTOMOBJ_CACHE_DIR``, then a warm run of
    :data:`SCRIPT` from it: what several tests below check, compiled once for the module (a cold
    run compiles the metric kernels: the slowest step here)."""

    cache: Path
    cold: subprocess.CompletedProcess
    warm: subprocess.CompletedProcess
    written: dict  # the cache files after the cold run
    after_warm: dict  # and after the warm one
    beside_before: dict  # cache files beside the sources before the cold run
    beside_after: dict  # and after the warm one


#: :data:`SCRIPT` and a second ndcg call: the compile notice must still come once.
COLD_SCRIPT = SCRIPT + "print(co.metrics.ndcg(s, y, [3, 3], k=1))\n"


@pytest.fixture(scope="module")
def filled_cache(tmp_path_factory: pytest.TempPathFactory) -> FilledCache:
    tmp = tmp_path_factory.mktemp("filled")
    cache = tmp / "cache"
    before = _beside_sources()
    cold = _run(COLD_SCRIPT, {"CUSTOMOBJ_CACHE_DIR": str(cache)}, tmp)
    written = _cache_files(cache)
    warm = _run(SCRIPT, {"CUSTOMOBJ_CACHE_DIR": str(cache)}, tmp)
    return FilledCache(cache, cold, warm, written, _cache_files(cache), before, _beside_sources())


def test_kernels_cache_in_customobj_cache_dir_not_beside_sources(filled_cache: FilledCache) -> None:
    written = filled_cache.written
    assert any(p.suffix == ".nbi" for p in written) and any(p.suffix == ".nbc" for p in written)
    assert any("_metric_kernels" in p.name for p in written)
    assert filled_cache.beside_after == filled_cache.beside_before, \
        "numba wrote or rewrote cache files beside customobj's sources"
    # A second process loads the kernels: nothing is compiled or written again.
    assert filled_cache.after_warm == written


def test_numba_cache_dir_takes_precedence(tmp_path: Path) -> None:
    ours, numbas = tmp_path / "customobj-cache", tmp_path / "numba-cache"
    before = _beside_sources()
    _run(CHEAP_SCRIPT, {"CUSTOMOBJ_CACHE_DIR": str(ours), "NUMBA_CACHE_DIR": str(numbas)}, tmp_path)
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
              "m.count_pairs_upper(np.array([0, 3, 6]))\n"  # one small kernel: ~1 s to compile
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
    import numpy as np

    import customobj as co

    # The reference: the couplings in this process (compiled here or loaded from the suite's cache;
    # the same kernels and the same numbers as a cold child, without a third cold compile of ~20 s).
    d = co.data.synthetic(60, 20, 4, seed=0)
    first = f"{co.LambdaRank(truncation=10).pair_couplings(np.zeros(len(d.y)), d.y, d.group)[2].sum()}\n"
    cache2 = {"CUSTOMOBJ_CACHE_DIR": str(tmp_path / "cache2")}
    _run(_GRADIENTS, cache2, tmp_path)  # the parallel kernel compiled and cached alone
    for _ in range(2):  # compiled beside a parallel kernel loaded from the cache, then loaded itself
        assert _run(_COUPLINGS, cache2, tmp_path).stdout == first
    # Compiled together (by this process or an earlier one of the suite), then loaded by a child.
    own = {k: os.environ[k] for k in ("CUSTOMOBJ_CACHE_DIR", "NUMBA_CACHE_DIR") if k in os.environ}
    assert _run(_COUPLINGS, own, tmp_path).stdout == first


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


# --- a cache folder that cannot be written: never the package, one warning, compile in memory -------
#: root ignores file permissions, so the unwritable folders here fail for everyone: a path through a
#: regular file (NotADirectoryError), or writes refused by the child itself (a read-only mount).
_COUNT = textwrap.dedent("""
    import numba
    from customobj import _metric_kernels as m
    ks = [k for k in vars(m).values() if isinstance(k, numba.core.registry.CPUDispatcher)]
    print(sum(len(k.stats.cache_hits) for k in ks), sum(len(k.stats.cache_misses) for k in ks))
""")
COUNT_SCRIPT, CHEAP_COUNT_SCRIPT = SCRIPT + _COUNT, CHEAP_SCRIPT + _COUNT


def _no_cache_env(tmp_path: Path) -> dict[str, str]:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    return {"HOME": str(blocker / "home"), "XDG_CACHE_HOME": str(blocker / "cache")}


def test_unwritable_home_cache_compiles_in_memory_with_one_warning(tmp_path: Path) -> None:
    before = _beside_sources()
    proc = _run(CHEAP_COUNT_SCRIPT, _no_cache_env(tmp_path), tmp_path)
    assert proc.stdout.split()[0] == "6"
    hits, misses = map(int, proc.stdout.split()[1:])
    assert hits == 0 and misses > 0
    assert proc.stderr.count("KernelCacheWarning") == 1, proc.stderr
    assert "cannot write its kernel cache folder" in proc.stderr and "CUSTOMOBJ_CACHE_DIR" in proc.stderr
    assert "compiling numba kernels" not in proc.stderr  # the warning already says it
    assert _beside_sources() == before, "numba wrote kernels into the package"
    assert not any(p.is_dir() for p in PACKAGE_DIRS[0].rglob("__pycache__")
                   if any(q.suffix in (".nbi", ".nbc") for q in p.iterdir()))


def test_unwritable_customobj_cache_dir_is_not_a_fallback_to_the_package(tmp_path: Path) -> None:
    before = _beside_sources()
    env = _no_cache_env(tmp_path)
    env[_numba_cache.CACHE_ENV] = str(tmp_path / "a-file" / "kernels")
    proc = _run("import customobj, customobj.ole; from customobj import TreeBooster\n" + CHEAP_SCRIPT, env, tmp_path)
    assert proc.stderr.count("KernelCacheWarning") == 1 and str(tmp_path / "a-file" / "kernels") in proc.stderr
    assert _beside_sources() == before


def test_a_prefilled_cache_made_read_only_loads_and_writes_nothing(filled_cache: FilledCache, tmp_path: Path) -> None:
    import shutil

    cache = tmp_path / "cache"  # filled when the image was built: a copy (mtimes kept) of the module's
    shutil.copytree(filled_cache.cache, cache)
    filled = _cache_files(cache)
    assert filled and sorted(p.name for p in filled) == sorted(p.name for p in filled_cache.after_warm)
    # Then read-only: the child refuses every write under the folder, as a read-only mount does.
    refuse = textwrap.dedent(f"""
        import builtins, os, tempfile
        ROOT = {str(cache)!r}
        def _refused(path):
            return os.path.abspath(str(path)).startswith(ROOT)
        _tf, _open, _mk = tempfile.TemporaryFile, builtins.open, os.makedirs
        def TemporaryFile(*a, dir=None, **k):
            if dir is not None and _refused(dir):
                raise PermissionError(30, "Read-only file system", dir)
            return _tf(*a, dir=dir, **k)
        def guarded_open(file, mode="r", *a, **k):
            if any(c in mode for c in "wax+") and isinstance(file, (str, bytes, os.PathLike)) and _refused(os.fsdecode(file)):
                raise PermissionError(30, "Read-only file system", file)
            return _open(file, mode, *a, **k)
        tempfile.TemporaryFile, builtins.open = TemporaryFile, guarded_open
    """)
    proc = _run(refuse + COUNT_SCRIPT, {"CUSTOMOBJ_CACHE_DIR": str(cache)}, tmp_path)
    hits, misses = map(int, proc.stdout.split()[1:])
    assert hits > 0 and misses == 0, proc.stdout  # loaded from the read-only cache, nothing compiled
    assert proc.stderr.count("KernelCacheWarning") == 1
    assert _cache_files(cache) == filled


def test_a_cold_cache_says_once_that_kernels_compile(filled_cache: FilledCache) -> None:
    cold = filled_cache.cold
    assert cold.stderr.count("customobj: compiling numba kernels on first use") == 1, cold.stderr
    assert _numba_cache.COLD_START_NOTE in cold.stderr and str(filled_cache.cache) in cold.stderr
    assert filled_cache.warm.stderr == ""


def test_cache_status_names_the_folder_and_whether_it_can_be_written(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv(_numba_cache.CACHE_ENV, str(tmp_path / "k"))
    assert _numba_cache.cache_status()["folder"] == str(tmp_path / "k")
    assert _numba_cache.cache_status()["writable"] is True
    (tmp_path / "f").write_text("x")
    monkeypatch.setenv(_numba_cache.CACHE_ENV, str(tmp_path / "f" / "k"))
    assert _numba_cache.cache_status()["writable"] is False


def test_the_notice_can_be_silenced_in_a_process(tmp_path: Path) -> None:
    proc = _run("from customobj import _numba_cache; _numba_cache.silence_compile_notice()\n" + CHEAP_SCRIPT,
                {"CUSTOMOBJ_CACHE_DIR": str(tmp_path / "cold")}, tmp_path)
    assert proc.stderr == ""


#: Imports every GPU kernel module of customobj with numba-cuda's real target (no GPU needed to
#: import) and prints each kernel that would not cache in customobj's folder.
CUDA_SCRIPT = textwrap.dedent("""
    import importlib, os, pkgutil, customobj
    from customobj._cuda_runtime import cuda_module
    cuda_module()
    from numba.cuda.dispatcher import CUDACache, CUDADispatcher
    root, bad, n = os.environ["CUSTOMOBJ_CACHE_DIR"], [], 0
    for info in pkgutil.walk_packages(customobj.__path__, "customobj."):
        last = info.name.rsplit(".", 1)[-1]  # GPU kernels: objectives' and clicks' _X_cuda, ole/cuda's _X_kernels
        if last.endswith("_cuda") or (info.name.startswith("customobj.ole.cuda.") and last.endswith("_kernels")):
            module = importlib.import_module(info.name)
            for name, obj in vars(module).items():
                if isinstance(obj, CUDADispatcher) and not obj.targetoptions.get("device"):
                    n += 1
                    cache = getattr(obj, "_cache", None)
                    if not isinstance(cache, CUDACache) or not cache._cache_path.startswith(root):
                        bad.append(f"{info.name}.{name}")
    print(n, bad)
""")


def test_cuda_kernels_cache_in_customobj_cache_dir(tmp_path: Path) -> None:
    # numba-cuda compiles (and saves) a kernel only with a driver; without one this checks that every
    # kernel has its disk cache on (cache=True) and that the cache lies in customobj's folder
    pytest.importorskip("numba.cuda")
    cache = tmp_path / "cache"
    before = _beside_sources()
    proc = _run(CUDA_SCRIPT, {"CUSTOMOBJ_CACHE_DIR": str(cache), "NUMBA_ENABLE_CUDASIM": "0"}, tmp_path)
    n, bad = proc.stdout.strip().split(" ", 1)
    assert int(n) >= 20 and bad == "[]", proc.stdout
    assert _beside_sources() == before


_RACE_SCRIPT = textwrap.dedent("""
    import os, sys, time
    import numpy as np
    import numba.core.caching as caching
    # Both processes reach the index write only when both have read the index (or after 8 s): without a
    # lock across processes they both read it empty and take the same data file name.
    save_index = caching.IndexDataCacheFile._save_index
    def save_index_after_the_other(self, overloads):
        open(os.path.join(sys.argv[2], "ready-" + sys.argv[1]), "w").close()
        deadline = time.monotonic() + 8.0
        while len(os.listdir(sys.argv[2])) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        return save_index(self, overloads)
    caching.IndexDataCacheFile._save_index = save_index_after_the_other
    from customobj.objectives._lambdarank_kernels import _widen_in_place
    written = np.arange(5, dtype=np.int32 if sys.argv[1] == "32" else np.int64)
    rows = np.zeros(5, dtype=np.int64)
    _widen_in_place(rows, written)
    assert rows.tolist() == [0, 1, 2, 3, 4]
""")


def test_two_processes_saving_two_signatures_keep_both(tmp_path: Path) -> None:
    """Two processes that compile two signatures of one kernel on a cold cache at once (xdist or Dask
    workers) each keep their own data file: the save holds a lock across processes (``_index_lock``).
    Without it both read the empty index, take ``<name>.1.nbc`` and the index maps one signature to the
    other's machine code."""
    cache, barrier = tmp_path / "cache", tmp_path / "barrier"
    barrier.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "CUSTOMOBJ_CACHE_DIR")}
    env["CUSTOMOBJ_CACHE_DIR"] = str(cache)
    procs = [subprocess.Popen([sys.executable, "-c", _RACE_SCRIPT, bits, str(barrier)], cwd=tmp_path, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for bits in ("32", "64")]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    data = sorted(p.name for p in cache.rglob("*_widen_in_place*.nbc"))
    assert len(data) == 2, data
    # and a third process loads each signature's own code from them, compiling nothing
    before = _cache_files(cache)
    _run("import numpy as np\nfrom customobj.objectives._lambdarank_kernels import _widen_in_place\n"
         "for dt in (np.int32, np.int64):\n    rows = np.zeros(5, dtype=np.int64)\n"
         "    _widen_in_place(rows, np.arange(5, dtype=dt))\n    assert rows.tolist() == [0, 1, 2, 3, 4]\n",
         {"CUSTOMOBJ_CACHE_DIR": str(cache)}, tmp_path)
    assert _cache_files(cache) == before
