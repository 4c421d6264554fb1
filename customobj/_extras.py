"""Optional dependencies: which ``pip install '.[extra]'`` brings each, and one clear error
when one is missing.

The core install (numpy, numba, scipy, scikit-learn, LightGBM, tqdm) runs every objective, metric,
``TreeBooster``, the LightGBM adapters and ``customobj compare`` with its LightGBM and OLE methods.
What only some workflows use is an extra, so a CPU user does not download XGBoost's CUDA build and
NVIDIA's NCCL (469 MB for NCCL alone) or Optuna's database stack to rank with LightGBM:

=============== =================================== ==============================================
extra           installs                            for
=============== =================================== ==============================================
``xgboost``     xgboost (with its CUDA build)       the XGBoost adapters, compare's ``xgb:`` methods
``xgboost-cpu`` xgboost-cpu (no CUDA, no NCCL)      the same, CPU only (use one of the two)
``tune``        optuna                              ``customobj compare --tune``
``plot``        matplotlib                          compare's ``curves.png``, the examples' figures
``dask``        dask, distributed, pandas, pyarrow  ``customobj.adapters.dask``
``catboost``    catboost                            compare's ``cb:`` methods
``parquet``     pyarrow                             ``customobj.data.read_click_log`` on a file
``all``         every extra above but xgboost-cpu
=============== =================================== ==============================================
"""
from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

__all__ = ["EXTRA_OF", "MissingExtraError", "available", "require", "require_installed", "install_hint"]

#: Importable module -> the extra that installs it.
EXTRA_OF = {
    "xgboost": "xgboost",
    "optuna": "tune",
    "matplotlib": "plot",
    "dask": "dask",
    "distributed": "dask",
    "catboost": "catboost",
    "pyarrow": "parquet",
}


class MissingExtraError(ImportError):
    """An optional dependency is not installed; the message names the extra that brings it."""


def install_hint(module: str) -> str:
    """How to install ``module``: ``pip install '.[<extra>]'`` in customobj's source folder (customobj is
    on no package index: it installs from its clone).

    Examples
    --------
    >>> from customobj._extras import install_hint
    >>> install_hint("optuna")
    "pip install '.[tune]' (in customobj's source folder)"
    >>> install_hint("xgboost")
    "pip install '.[xgboost]' (in customobj's source folder; or '.[xgboost-cpu]': no CUDA, no NCCL)"
    """
    extra = EXTRA_OF[module]
    if extra == "xgboost":
        return "pip install '.[xgboost]' (in customobj's source folder; or '.[xgboost-cpu]': no CUDA, no NCCL)"
    return f"pip install '.[{extra}]' (in customobj's source folder)"


def available(module: str) -> bool:
    """Whether ``module`` can be imported (found, not imported: importing XGBoost costs a second).

    Examples
    --------
    >>> from customobj._extras import available
    >>> available("numpy"), available("no_such_module_here")
    (True, False)
    """
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package that fails, a broken __spec__
        return False


def _missing(module: str, purpose: str) -> MissingExtraError:
    # The one message of require and require_installed.
    return MissingExtraError(f"{purpose} needs {module}, which is not installed: {install_hint(module)}",
                             name=module)


def require(module: str, purpose: str) -> ModuleType:
    """Import ``module`` for ``purpose``, or raise :class:`MissingExtraError` naming the extra.

    Parameters
    ----------
    module : str
        A key of :data:`EXTRA_OF`.
    purpose : str
        What needs it, first in the message (``"customobj compare --tune"``).

    Examples
    --------
    >>> import sys
    >>> from customobj._extras import require
    >>> hidden = sys.modules.pop("optuna", None); sys.modules["optuna"] = None  # as if not installed
    >>> try:
    ...     require("optuna", "customobj compare --tune")
    ... except ImportError as exc:
    ...     print(exc)
    customobj compare --tune needs optuna, which is not installed: pip install '.[tune]' (in customobj's source folder)
    >>> _ = sys.modules.pop("optuna"); sys.modules.update({"optuna": hidden} if hidden else {})
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if exc.name is not None and exc.name.split(".")[0] != module:
            raise  # the package is there but one of its own dependencies is missing: say that
        raise _missing(module, purpose) from None


def require_installed(module: str, purpose: str) -> None:
    """:func:`require` without importing ``module`` (found is enough): for a module that imports the
    extra lazily, so that importing it (say, while building the API docs) stays cheap.

    Examples
    --------
    >>> from customobj._extras import require_installed
    >>> require_installed("numpy", "this example")
    """
    if not available(module):
        raise _missing(module, purpose)
