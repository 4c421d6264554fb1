"""Where numba keeps customobj's compiled kernels: a per-user cache folder, never the package folder.

numba's default (``cache=True``) writes ``.nbi`` / ``.nbc`` files into ``__pycache__`` beside the
source. For an installed package that is ``site-packages/customobj/**/__pycache__``: files pip did
not install, so ``pip uninstall`` leaves them behind, and the leftover ``customobj/`` folder then
becomes a namespace package that shadows a later editable install (``import customobj`` finds an
empty package, ``customobj.LambdaRank`` is an ``AttributeError``). So customobj's kernels are cached
under a per-user folder instead:

- ``$CUSTOMOBJ_CACHE_DIR`` when set;
- otherwise the platform's user cache folder (``~/.cache/customobj/numba`` on Linux).

``NUMBA_CACHE_DIR`` still takes precedence for everything, as numba documents. Entries stay keyed by
the source file's path, modification time and size (numba's own index), so an edited or reinstalled
module recompiles. numba's stamp covers only the kernel's own file, but customobj's kernels call
kernels of other modules (the DCG discount, the pair loops), and numba compiles those into the
caller: so the stamp here also covers every kernel module of the package (path, mtime, size of each
``.py`` file that uses numba), and editing any of them recompiles every kernel instead of loading
code built from the old callee. An installed package never changes, so this costs users nothing.

If the folder cannot be written (a read-only container, a read-only HOME, a path through a file),
customobj still never falls back to numba's in-tree locator (the package folder): its kernels load
what the folder already holds (a cache filled when an image was built, then made read-only) and
compile the rest in memory, for this process only, with one warning naming the folder and how to
fix it (``CUSTOMOBJ_CACHE_DIR``). Nothing is written anywhere.

When a kernel compiles while the cache is writable (the first use in an environment, or after an
upgrade), one line on stderr says so, once per process: the first use is otherwise tens of seconds
of silence (:data:`COLD_START_NOTE`).

:func:`install` must run before the first ``@njit(cache=True)`` decorator of customobj executes
(numba picks a kernel's cache folder when the decorator runs), so ``customobj/__init__.py`` calls
it first.
"""
from __future__ import annotations

import contextlib
import os
import sys
import warnings
from typing import Any, Callable, Iterator

#: Environment variable naming the folder for customobj's compiled kernels.
CACHE_ENV = "CUSTOMOBJ_CACHE_DIR"
#: What a cold start costs, printed with the compile notice (the figures of docs/install.md).
COLD_START_NOTE = ("tens of seconds for a first objective, a minute or two for a first "
                   "`customobj compare`")


class KernelCacheWarning(UserWarning):
    """customobj's kernel cache folder cannot be written: kernels compile in memory."""


def cache_root() -> str:
    """The folder that holds customobj's numba cache (created on first use)."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return os.path.abspath(os.path.expanduser(explicit))
    from numba.misc.appdirs import AppDirs

    return os.path.join(AppDirs(appname="customobj", appauthor=False).user_cache_dir, "numba")


_PACKAGE_STAMP: tuple | None = None


def package_stamp() -> tuple:
    """``(relative path, mtime_ns, size)`` of every numba-using source file of customobj (and of
    the checkout's adapters/ folder), computed once per process: a hundred small reads, ~ms."""
    global _PACKAGE_STAMP
    if _PACKAGE_STAMP is None:
        here = os.path.dirname(os.path.abspath(__file__))
        roots = [here]
        sibling = os.path.join(os.path.dirname(here), "adapters")  # customobj.adapters in a checkout
        if os.path.isfile(os.path.join(sibling, "__init__.py")):
            roots.append(sibling)
        entries = []
        for root in roots:
            for folder, dirs, files in os.walk(root):
                dirs[:] = sorted(d for d in dirs if d != "__pycache__")
                for name in sorted(files):
                    if not name.endswith(".py"):
                        continue
                    path = os.path.join(folder, name)
                    try:
                        with open(path, "rb") as fh:
                            if b"numba" not in fh.read():
                                continue
                        st = os.stat(path)
                    except OSError:
                        continue
                    entries.append((os.path.relpath(path, os.path.dirname(here)), st.st_mtime_ns, st.st_size))
        _PACKAGE_STAMP = tuple(entries)
    return _PACKAGE_STAMP


def _locator_base() -> tuple[Any, Any, Any]:
    from numba.core import caching

    # numba >= 0.60 made the locator classes public; 0.59 still has the underscored names.
    base = getattr(caching, "UserWideCacheLocator", None) or getattr(caching, "_UserWideCacheLocator")
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl")
    return base, impl, caching.FunctionCache


def _is_ours(py_func: Any) -> bool:
    module = getattr(py_func, "__module__", "") or ""
    return module == "customobj" or module.startswith("customobj.")


_STATE = {"warned": False, "noted": False}


def _warn_read_only(root: str, exc: OSError) -> None:
    if _STATE["warned"]:
        return
    _STATE["warned"] = True
    warnings.warn(
        f"customobj cannot write its kernel cache folder {root} ({exc.strerror or exc}): kernels it "
        f"holds still load, the others compile in memory for this process only ({COLD_START_NOTE}, "
        f"again in every process). Set {CACHE_ENV} to a writable folder to keep them.",
        KernelCacheWarning, stacklevel=2)


def cache_status() -> dict:
    """Where customobj's kernels are cached and whether that folder can be written (``customobj info``).

    Examples
    --------
    >>> from customobj._numba_cache import cache_status
    >>> sorted(cache_status())
    ['folder', 'numba_cache_dir', 'writable']
    """
    import tempfile

    root = cache_root()
    try:
        os.makedirs(root, exist_ok=True)
        tempfile.TemporaryFile(dir=root).close()
        writable = True
    except OSError:
        writable = False
    return {"folder": root, "writable": writable, "numba_cache_dir": os.environ.get("NUMBA_CACHE_DIR") or None}


def silence_compile_notice() -> None:
    """No compile notice in this process (a test runner: the notice would join captured stderr)."""
    _STATE["noted"] = True


def _compile_notice() -> Any:
    """A numba event listener: one line on stderr at the first compile of a customobj kernel whose
    cache can be written (a cold cache); silent when kernels load from the cache."""
    from numba.core import event

    class CompileNotice(event.Listener):
        def on_start(self, ev: Any) -> None:
            disp = (ev.data or {}).get("dispatcher")
            if _STATE["noted"] or disp is None or not _is_ours(getattr(disp, "py_func", None)):
                return
            locator = getattr(getattr(getattr(disp, "_cache", None), "_impl", None), "locator", None)
            if locator is None or not getattr(locator, "_customobj", False) or locator.read_only:
                return  # NUMBA_CACHE_DIR's or read-only: the warning already said it
            _STATE["noted"] = True
            print(f"customobj: compiling numba kernels on first use ({COLD_START_NOTE}; once: later "
                  f"runs load them from {cache_root()})", file=sys.stderr, flush=True)

        def on_end(self, ev: Any) -> None:
            pass

    return CompileNotice()


def install() -> None:
    """Put customobj's kernels (modules ``customobj.*``) in :func:`cache_root`; idempotent."""
    base, impl, function_cache = _locator_base()
    if _install_locator(base, impl, function_cache):
        from numba.core import event

        event.register("numba:compile", _compile_notice())


def install_cuda(caching: Any) -> None:
    """The same for numba-cuda's kernels (``@cuda.jit(cache=True)``), whose cache machinery is its own
    copy of numba's (``caching``: ``numba.cuda.core.caching``): called by
    :func:`customobj._cuda_runtime.cuda_module` when numba.cuda is imported; idempotent.

    numba-cuda keys a cached kernel by its source stamp (here also the package's, as for the CPU
    kernels), its signature, the CUDA runtime's version and the device's compute capability, so a
    second process on the same card loads the kernel instead of compiling it (NVVM, 10-30 s for the
    OLE grower's). Under the simulator nothing is compiled, so nothing is cached.
    """
    base = getattr(caching, "UserWideCacheLocator", None) or getattr(caching, "_UserWideCacheLocator")
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl")
    _install_locator(base, impl, caching.Cache)


@contextlib.contextmanager
def _index_lock(cache: Any) -> Iterator[None]:
    """Hold an exclusive lock on ``cache``'s index (a ``.lock`` file beside its ``.nbi``) across processes.

    numba saves a compiled signature by reading the function's index, taking the first data file name
    (``<name>.<n>.nbc``) no entry of that index uses, writing the index, then the data. Two processes
    that compile two signatures of one function on a cold cache (pytest-xdist's workers, Dask workers on
    one machine, a user's pool) both read the same index, take the same name and overwrite each other:
    the index then maps one signature to the other's machine code, which later processes load without
    a check (seen in the suite: LambdaRank's GRAD loop loaded from GRAD_LOSS's file). Under the lock the
    second process reads the first's index and takes the next name. POSIX only (``fcntl``); where there is
    none, or the lock file cannot be made, the save goes on unlocked, as numba's own does.
    """
    try:
        import fcntl
    except ImportError:  # Windows: numba's own behaviour
        yield
        return
    try:
        cache._impl.locator.ensure_cache_path()
        handle = open(cache._cache_file._index_path + ".lock", "a+b")
    except OSError:
        yield
        return
    with handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _install_locator(base: Any, impl: Any, function_cache: Any) -> bool:
    """Insert customobj's locator into ``impl``'s locators (and read-only loads and saves into
    ``function_cache``); False when it is there already."""
    if any(getattr(cls, "_customobj", False) for cls in impl._locator_classes):
        return False

    class CustomobjCacheLocator(base):  # numba's (or numba-cuda's) class: known at run time only
        """numba's user-wide locator, rooted at :func:`cache_root`, for customobj's modules only;
        read-only (load, never save) when that folder cannot be written."""

        _customobj = True

        def __init__(self, py_func: Callable[..., Any], py_file: str) -> None:
            super().__init__(py_func, py_file)
            self._cache_path = os.path.join(cache_root(), self.get_suitable_cache_subpath(py_file))
            self.read_only = False

        def ensure_cache_path(self) -> None:
            if not self.read_only:
                super().ensure_cache_path()

        def get_source_stamp(self) -> tuple:
            # numba's stamp of the kernel's own file, and of every kernel module it may inline
            return (super().get_source_stamp(), package_stamp())

        @classmethod
        def from_function(cls, py_func: Callable[..., Any], py_file: str) -> Any:
            if not _is_ours(py_func) or not os.path.exists(py_file):
                return None
            self = cls(py_func, py_file)
            try:
                self.ensure_cache_path()
            except OSError as exc:  # never None: the next locator would write into the package
                self.read_only = True
                _warn_read_only(cache_root(), exc)
            return self

    # After numba's NUMBA_CACHE_DIR locator (the user's explicit choice), before the in-tree one.
    classes = list(impl._locator_classes)
    classes.insert(1, CustomobjCacheLocator)
    impl._locator_classes = classes

    # A read-only locator's cache is read where it can be (a folder filled beforehand), never written.
    load, save = function_cache.load_overload, function_cache.save_overload

    def load_overload(self: Any, sig: Any, target_context: Any) -> Any:
        if not getattr(self._impl.locator, "read_only", False):
            return load(self, sig, target_context)
        try:
            return load(self, sig, target_context)
        except OSError:  # no such folder, a file in the path, no permission: compile in memory
            return None

    def save_overload(self: Any, sig: Any, data: Any) -> None:
        if getattr(self._impl.locator, "read_only", False):
            return
        if not _is_ours(self._py_func):
            save(self, sig, data)
            return
        with _index_lock(self):
            save(self, sig, data)

    function_cache.load_overload, function_cache.save_overload = load_overload, save_overload
    return True
