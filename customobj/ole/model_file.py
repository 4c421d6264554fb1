"""``TreeBooster`` model files: a versioned JSON schema, checked in full on every load and save.

A model file is one JSON object, written as strict JSON (no ``NaN`` tokens), without duplicate keys::

    {"format": "customobj.ole.TreeBooster", "version": 2,
     "params": {...}, "objective": {"class": ..., "params": ..., "repr": ...} | null,
     "n_features": F, "n_outputs": K, "feature_names": [...] | null, "feature_infos": [...],
     "best_iteration": int | null, "evals_result": {...}, "tree_class": [...], "trees": [...],
     "objective_fitted": {name: {"shape": [...], "values": [...]}}}

``objective_fitted`` (optional in version 2) holds the objective's numeric fitted arrays as ``fit`` set
them (``MultiObjective``'s ``label_weights_``, ``Unbiased``'s ``position_bias_``), read back as float64.

Version 1 (customobj before the schema) is the same without ``feature_names``, and could not
store a non-finite metric value; it is still read. Version 2 writes the non-finite values of the
evaluation history as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` so that the file stays
strict JSON and the history round-trips exactly. docs/model-files.md lists every field and check.

Saving serialises and validates the whole model first and then writes through
:func:`customobj._io.atomic_write_text`: a failed save leaves the previous file intact.
"""
from __future__ import annotations

import json
import math
import numbers
import os
import re
from typing import NoReturn

import numpy as np

from .._io import atomic_write_text, read_regular_file
from .tree import Tree
from .tree_schema import check_tree, is_finite_number, is_number, tree_to_record

__all__ = ["FORMAT", "FORMAT_VERSION", "SUPPORTED_VERSIONS", "to_dict", "dumps", "save", "check_record", "from_record",
           "loads", "load"]

FORMAT = "customobj.ole.TreeBooster"
FORMAT_VERSION = 2
SUPPORTED_VERSIONS = (1, 2)
#: Largest number of outputs per row a file may declare (McRank: grades); predict allocates rows x K.
MAX_OUTPUTS = 65536

#: The saved hyperparameters (``n_jobs`` is not saved: it never changes the model) and their JSON types;
#: those in ``_NULLABLE`` may also be null.
PARAM_TYPES = {"criterion": str, "num_leaves": int, "learning_rate": float, "n_estimators": int, "max_bin": int,
               "min_data_in_leaf": int, "min_sum_hessian_in_leaf": float, "lambda_l2": float, "max_depth": int,
               "growth": str, "feature_fraction": float, "bagging_fraction": float, "random_state": int,
               "leaf_solver": str, "line_search": bool, "importance_type": str, "verbose": bool,
               "ole_fast_features": int, "ole_fast_epsilon": float}
#: Hyperparameters added after format version 2 was fixed: files written before them lack them, and
#: TreeBooster's default applies on load.
_OPTIONAL_PARAMS = {"ole_fast_features", "ole_fast_epsilon"}
_COMMON_KEYS = ("format", "version", "params", "objective", "n_features", "n_outputs", "feature_infos",
                "best_iteration", "evals_result", "tree_class", "trees")
_KEYS = {1: _COMMON_KEYS, 2: _COMMON_KEYS + ("feature_names",)}
#: Fields a version may hold but need not (added after the version was fixed).
_OPTIONAL_KEYS: dict = {1: (), 2: ("objective_fitted",)}
#: A fitted objective attribute's name: a lower-case identifier ending in "_" (scikit-learn's fitted style).
_FITTED_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}_")
_NULLABLE = {"random_state"}
_SCALARS = (bool, int, float, str, type(None))
_NONFINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_INFO = re.compile(r"\[([^:\[\]\s]+):([^:\[\]\s]+)\]")


def _fail(where: str, message: str) -> NoReturn:
    raise ValueError(f"{where} {message}")


# --- writing ---------------------------------------------------------------------------------------
def _n_features(model) -> int | None:
    n = getattr(model, "n_features_in_", None)
    return getattr(model, "n_features_", None) if n is None else n


def _check_fitted(model: object) -> int:
    """The fitted ``model``'s feature count; ``ValueError`` if it is not fitted."""
    n = _n_features(model)
    if n is None or getattr(model, "trees_", None) is None:
        name = type(model).__name__
        raise ValueError(f"this {name} is not fitted yet: call fit() or {name}.load()")
    return n


def _objective_spec(obj):
    if obj is None:
        return None
    params = {k: v.item() if isinstance(v, np.generic) else v for k, v in obj._params()}
    simple = all(isinstance(v, _SCALARS) for v in params.values())
    return {"class": type(obj).__name__, "repr": repr(obj), "params": params if simple else None}


def _param_value(key, v):
    """A hyperparameter as a plain JSON value (numpy scalars from a parameter grid included)."""
    want = PARAM_TYPES[key]
    if v is None:
        return v
    if isinstance(v, bool) or isinstance(v, np.bool_):
        return bool(v) if want is bool else v
    if want is int and isinstance(v, numbers.Integral):
        return int(v)
    if want is float and isinstance(v, numbers.Real):
        return float(v)
    if want is bool and isinstance(v, numbers.Integral):  # verbose=0 / 1, as scikit-learn users write it
        return bool(v)
    if want is str and isinstance(v, str):
        return str(v)
    return v  # the schema check names it


def _tree_record(tree, k):
    try:
        return tree_to_record(tree)
    except KeyError as exc:
        raise ValueError(f"model: trees[{k}] is missing the field {exc.args[0]!r}") from None
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"model: trees[{k}] cannot be written: {exc}") from None


def _history_value(v):
    v = float(v)
    if math.isfinite(v):
        return v
    return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")


def _fitted_record(items) -> dict:
    """The objective's numeric fitted arrays as ``{name: {"shape", "values"}}`` (non-finite values as strings)."""
    arrays = ((str(name), np.asarray(value)) for name, value in items)
    return {name: {"shape": [int(n) for n in a.shape], "values": [_history_value(v) for v in a.ravel()]}
            for name, a in arrays if a.dtype.kind in "biuf"}


def _check_fitted_objective(d, where) -> None:
    if type(d) is not dict:
        _fail(where, "must be an object of the objective's fitted arrays")
    for name, rec in d.items():
        at = f"{where}.{name}"
        if not _FITTED_NAME.fullmatch(name):
            _fail(at, "is not a fitted attribute name (lower case, ending in '_')")
        if type(rec) is not dict or set(rec) != {"shape", "values"}:
            _fail(at, 'must be {"shape": [...], "values": [...]}')
        shape, values = rec["shape"], rec["values"]
        if type(shape) is not list or len(shape) > 4 or not all(_is_int(n) and 0 <= n <= 2**31 for n in shape):
            _fail(at + ".shape", "must be a list of at most 4 non-negative integers")
        if type(values) is not list or len(values) != math.prod(shape):
            _fail(at + ".values", f"must be a list of prod(shape) = {math.prod(shape)} numbers")
        if not all(is_number(v) or (type(v) is str and v in _NONFINITE) for v in values):
            _fail(at + ".values", 'must hold numbers (or "NaN", "Infinity", "-Infinity")')


def to_dict(model) -> dict:
    """The model as a validated version-2 record of plain JSON values.

    Raises ``ValueError`` if the model is not fitted or holds something a file may not (a NaN leaf
    value, a malformed tree): what ``save`` would write is always what ``load`` accepts.
    """
    n_features = _check_fitted(model)
    names = getattr(model, "feature_names_in_", None)
    d = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "params": {k: _param_value(k, getattr(model, k)) for k in PARAM_TYPES},
        "objective": _objective_spec(model.objective),
        "n_features": int(n_features),
        "n_outputs": int(model.n_outputs_),
        "feature_names": None if names is None else [str(s) for s in names],
        "feature_infos": [str(s) for s in model.feature_infos_],
        "best_iteration": None if model.best_iteration_ is None else int(model.best_iteration_),
        "evals_result": {str(name): {str(m): [_history_value(v) for v in vals] for m, vals in hist.items()}
                         for name, hist in model.evals_result_.items()},
        "tree_class": [int(k) for k in model.tree_class_],
        "trees": [_tree_record(t, k) for k, t in enumerate(model.trees_)],
        "objective_fitted": _fitted_record(getattr(model, "_objective_fitted", ())),
    }
    check_record(d, "model")  # never write what load would refuse
    return d


def dumps(model) -> str:
    """The model file's text: one line of strict JSON, keys sorted (the same model gives the same bytes)."""
    return json.dumps(to_dict(model), sort_keys=True, allow_nan=False)


def save(model, path: str | os.PathLike) -> None:
    """Write ``model`` to ``path``: serialise and validate first, then replace the file atomically.

    Parameters
    ----------
    model : TreeBooster
        A fitted model.
    path : str or os.PathLike
        The file; its folder must exist. A failed save (unfitted model, full disk, interrupted
        process) leaves a previous file at ``path`` intact.

    Examples
    --------
    >>> import os, tempfile
    >>> from customobj import SquaredError
    >>> from customobj.data import synthetic
    >>> from customobj.ole import TreeBooster, model_file
    >>> d = synthetic(n_queries=5, docs_per_query=10, n_features=3)
    >>> model = TreeBooster(SquaredError(), n_estimators=2, verbose=False).fit(d.X, d.y)
    >>> path = os.path.join(tempfile.mkdtemp(), "model.json")
    >>> model_file.save(model, path)
    >>> model_file.load(TreeBooster, path).to_json() == model.to_json()
    True
    """
    atomic_write_text(path, dumps(model))


# --- reading ---------------------------------------------------------------------------------------
def _no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        dup = next(k for k in keys if keys.count(k) > 1)
        raise ValueError(f"the key {dup!r} appears twice in one object")
    return dict(pairs)


def _is_int(v):
    return type(v) is int


def _check_int(v, where, lo, hi=None):
    if not _is_int(v) or v < lo or (hi is not None and v > hi):
        rng = f">= {lo}" if hi is None else f"in {lo}..{hi}"
        _fail(where, f"= {v!r} must be an integer {rng}")
    return v


def _check_params(params, where) -> None:
    if type(params) is not dict:
        _fail(where, f"must be an object, got {type(params).__name__}")
    for key in PARAM_TYPES:
        if key not in params and key not in _OPTIONAL_PARAMS:
            _fail(where, f"is missing the hyperparameter {key!r}")
    extra = sorted(set(params) - set(PARAM_TYPES))
    if extra:
        _fail(where, f"has an unknown hyperparameter {extra[0]!r}")
    for key, want in PARAM_TYPES.items():
        if key not in params:
            continue
        v = params[key]
        if v is None and key in _NULLABLE:
            continue
        ok = _is_int(v) if want is int else is_finite_number(v) if want is float else type(v) is want
        if not ok:
            _fail(f"{where}.{key}", f"= {v!r} must be {'a finite number' if want is float else want.__name__}")


def _check_objective(spec, where):
    if spec is None:
        return
    if type(spec) is not dict or set(spec) != {"class", "repr", "params"}:
        _fail(where, "must be null or an object with the fields 'class', 'params' and 'repr'")
    for key in ("class", "repr"):
        if type(spec[key]) is not str:
            _fail(f"{where}.{key}", f"must be a string, got {type(spec[key]).__name__}")
    p = spec["params"]
    if p is not None and (type(p) is not dict or not all(type(v) in _SCALARS for v in p.values())):
        _fail(f"{where}.params", "must be null or an object of scalar options")


def _check_infos(infos, n_features, where):
    if type(infos) is not list or len(infos) != n_features:
        _fail(where, f"must be a list of n_features = {n_features} strings")
    for j, s in enumerate(infos):
        m = _INFO.fullmatch(s) if type(s) is str else None
        ok = s == "none"
        if m:
            try:
                lo, hi = float(m.group(1)), float(m.group(2))
                ok = lo <= hi  # False for NaN; infinite when the feature held +-inf
            except ValueError:
                ok = False
        if not ok:
            _fail(f"{where}[{j}]", f"= {s!r} must be 'none' or '[min:max]' with min <= max")


def _check_history(evals, n_iterations, where):
    if type(evals) is not dict:
        _fail(where, f"must be an object, got {type(evals).__name__}")
    for name, hist in evals.items():
        if type(hist) is not dict:
            _fail(f"{where}.{name}", "must be an object of metric histories")
        for metric, vals in hist.items():
            w = f"{where}.{name}.{metric}"
            if type(vals) is not list or len(vals) != n_iterations:
                _fail(w, f"must be a list of {n_iterations} values (one per boosting round)")
            for i, v in enumerate(vals):
                if not (is_number(v) or (type(v) is str and v in _NONFINITE)):
                    _fail(f"{w}[{i}]", f"= {v!r} must be a number or one of {sorted(_NONFINITE)}")


def check_record(d: object, source: str) -> list:
    """Validate a model record (parsed JSON) against its version's schema; returns the checked trees.

    Every violation raises ``ValueError`` naming ``source`` and the field.
    """
    if not isinstance(d, dict) or type(d) is not dict:  # isinstance narrows d for the checker
        _fail(f"{source}:", f"must hold a JSON object, got {type(d).__name__}")
    if d.get("format") != FORMAT:
        _fail(f"{source}:", f"is not a {FORMAT} model file (format = {d.get('format')!r})")
    version = d.get("version")
    if not _is_int(version) or version not in SUPPORTED_VERSIONS:
        _fail(f"{source}: version", f"= {version!r} is not supported; this customobj reads versions "
              f"{', '.join(map(str, SUPPORTED_VERSIONS))} (a newer customobj may have written it)")
    keys = _KEYS[version]
    for key in keys:
        if key not in d:
            _fail(f"{source}:", f"is missing the field {key!r} (required by version {version})")
    extra = sorted(set(d) - set(keys) - set(_OPTIONAL_KEYS[version]))
    if extra:
        _fail(f"{source}:", f"has an unknown field {extra[0]!r} for version {version}")
    at = f"{source}: "
    _check_params(d["params"], at + "params")
    _check_objective(d["objective"], at + "objective")
    F = _check_int(d["n_features"], at + "n_features", 1)
    K = _check_int(d["n_outputs"], at + "n_outputs", 1, MAX_OUTPUTS)
    names = d.get("feature_names")
    if names is not None and (type(names) is not list or len(names) != F
                              or not all(type(s) is str and s for s in names)):
        _fail(at + "feature_names", f"must be null or a list of n_features = {F} non-empty strings")
    _check_infos(d["feature_infos"], F, at + "feature_infos")
    trees, tree_class = d["trees"], d["tree_class"]
    if type(trees) is not list or len(trees) % K:
        _fail(at + "trees", f"must be a list whose length is a multiple of n_outputs = {K}")
    if type(tree_class) is not list or len(tree_class) != len(trees):
        _fail(at + "tree_class", f"must be a list of {len(trees)} integers (one per entry of trees)")
    for t, k in enumerate(tree_class):  # round r holds trees r*K .. r*K+K-1, one per output, in order
        if not _is_int(k) or k != t % K:
            _fail(f"{at}tree_class[{t}]", f"= {k!r} must be {t % K} (tree {t} of a model with n_outputs = {K})")
    n_iter = len(trees) // K
    best = d["best_iteration"]
    if best is not None:
        _check_int(best, at + "best_iteration", 1, max(n_iter, 1))
    _check_history(d["evals_result"], n_iter, at + "evals_result")
    if "objective_fitted" in d:
        _check_fitted_objective(d["objective_fitted"], at + "objective_fitted")
    return [check_tree(tree, f"{at}trees[{t}]", F) for t, tree in enumerate(trees)]


def _objective_from_spec(spec, n_outputs, where):
    """Rebuild a customobj objective from its class name and scalar options.

    None (the model predicts but cannot be refitted) when the file stores none or names a class
    this customobj does not have; only the public objective classes are ever looked up.
    """
    if spec is None or spec["params"] is None:
        return None
    from .. import objectives
    from ..objectives.base import Objective
    name = spec["class"]
    cls = getattr(objectives, name, None) if name in objectives.__all__ else None
    if not (isinstance(cls, type) and issubclass(cls, Objective)) or cls is Objective:  # the abstract base
        return None
    try:
        obj = cls(**spec["params"])
    except (TypeError, ValueError) as exc:
        _fail(f"{where}.params", f"are not valid options of {name}: {exc}")
    if obj.n_outputs is not None and obj.n_outputs != n_outputs:
        _fail(where, f"{obj!r} has {obj.n_outputs} outputs per row but n_outputs = {n_outputs}")
    return obj


def _set_fitted(model, name, value):
    """Set a fitted attribute unless the class defines it as a read-only property (an alias)."""
    prop = getattr(type(model), name, None)
    if isinstance(prop, property) and prop.fset is None:
        return
    setattr(model, name, value)


def from_record(cls: type, d: dict, source: str):
    """A fitted ``cls`` from a parsed model file, after :func:`check_record`."""
    trees = check_record(d, source)
    objective = _objective_from_spec(d["objective"], d["n_outputs"], f"{source}: objective")
    try:
        model = cls(objective=objective, **d["params"])
    except (TypeError, ValueError) as exc:
        _fail(f"{source}: params", f"are not accepted by {cls.__name__}: {exc}")
    F = d["n_features"]
    for name in ("n_features_in_", "n_features_"):
        _set_fitted(model, name, F)
    names = d.get("feature_names")
    if names is not None:  # as scikit-learn stores them; absent when the model was fitted without names
        model.feature_names_in_ = np.asarray(names, dtype=object)
    model.n_outputs_ = d["n_outputs"]
    model.feature_infos_ = list(d["feature_infos"])
    model.best_iteration_ = d["best_iteration"]
    model.evals_result_ = {name: {m: [_NONFINITE.get(v, v) if type(v) is str else float(v) for v in vals]
                                  for m, vals in hist.items()} for name, hist in d["evals_result"].items()}
    model.tree_class_ = list(d["tree_class"])
    model.trees_ = [Tree.from_fields(t) for t in trees]
    model.bin_mapper_ = None
    fitted = []
    for name, rec in d.get("objective_fitted", {}).items():
        if hasattr(model, name):  # never overwrite the booster's own state (trees_, ...) from a file
            _fail(f"{source}: objective_fitted.{name}", f"names an attribute {cls.__name__} already has")
        value = np.array([_NONFINITE.get(v, v) if type(v) is str else v for v in rec["values"]],
                         dtype=np.float64).reshape(rec["shape"])
        setattr(model, name, value)
        fitted.append((name, value))
    model._objective_fitted = tuple(fitted)
    return model


def loads(cls: type, text: str, source: str = "<string>"):
    """A fitted ``cls`` from model-file text; ``source`` names it in error messages."""
    try:
        # Python's bare NaN / Infinity tokens parse as floats, so that the schema check names the
        # field holding one (every field that needs a finite number refuses them)
        d = json.loads(text, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{source}: not valid JSON ({exc}); the file is damaged or truncated") from None
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"{source}: not valid JSON ({exc})") from None
    return from_record(cls, d, source)


def load(cls: type, path: str | os.PathLike):
    """Read, validate and rebuild a model file.

    Parameters
    ----------
    cls : type
        ``TreeBooster`` (or a subclass): built with the saved hyperparameters.
    path : str or os.PathLike
        A file written by :func:`save` (format version 1 or 2).

    Raises
    ------
    ValueError
        The file is not valid JSON, not UTF-8, of another version, or breaks the schema; the
        message starts with the path and names the field (``trees[3].left_child[5] = ...``); or
        the path is not a regular file (a folder, a FIFO, a device).
    FileNotFoundError
        No such file.
    """
    source = os.fspath(path)
    raw = read_regular_file(source, reader="TreeBooster.load")  # a FIFO would block, /dev/zero never end
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{source}: not a UTF-8 text file ({exc.reason} at byte {exc.start})") from None
    return loads(cls, text, source)
