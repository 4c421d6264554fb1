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
If the folder cannot be created, numba's usual locators apply.

:func:`install` must run before the first ``@njit(cache=True)`` decorator of customobj executes
(numba picks a kernel's cache folder when the decorator runs), so ``customobj/__init__.py`` calls
it first.
"""
from __future__ import annotations

import os
from typing import Any, Callable

#: Environment variable naming the folder for customobj's compiled kernels.
CACHE_ENV = "CUSTOMOBJ_CACHE_DIR"


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


def _locator_base() -> tuple[Any, Any]:  # numba's classes: numba ships no stubs
    from numba.core import caching

    # numba >= 0.60 made the locator classes public; 0.59 still has the underscored names.
    base = getattr(caching, "UserWideCacheLocator", None) or getattr(caching, "_UserWideCacheLocator")
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl")
    return base, impl


def install() -> None:
    """Put customobj's kernels (modules ``customobj.*``) in :func:`cache_root`; idempotent."""
    base, impl = _locator_base()
    if any(getattr(cls, "_customobj", False) for cls in impl._locator_classes):
        return

    class CustomobjCacheLocator(base):  # type: ignore[misc, valid-type]  # numba's class: known at run time only
        """numba's user-wide locator, rooted at :func:`cache_root`, for customobj's modules only."""

        _customobj = True

        def __init__(self, py_func: Callable[..., Any], py_file: str) -> None:
            super().__init__(py_func, py_file)
            self._cache_path = os.path.join(cache_root(), self.get_suitable_cache_subpath(py_file))

        def get_source_stamp(self) -> tuple:
            # numba's stamp of the kernel's own file, and of every kernel module it may inline
            return (super().get_source_stamp(), package_stamp())

        @classmethod
        def from_function(cls, py_func: Callable[..., Any], py_file: str) -> Any:
            module = getattr(py_func, "__module__", "") or ""
            if module != "customobj" and not module.startswith("customobj."):
                return None
            return super().from_function(py_func, py_file)

    # After numba's NUMBA_CACHE_DIR locator (the user's explicit choice), before the in-tree one.
    classes = list(impl._locator_classes)
    classes.insert(1, CustomobjCacheLocator)
    impl._locator_classes = classes
