"""Data arriving at :class:`~customobj.ole.TreeBooster`: features, labels, query structure.

Everything is checked once, as it comes in, with messages that name the argument; the error texts
also contain the phrases scikit-learn's estimator checks look for ("Reshape your data", "sparse",
"Complex data not supported", "0 feature(s)"), so the booster passes ``check_estimator``.
"""
from __future__ import annotations

import numpy as np

from .._validation import INT_LIMIT, SCORE_LIMIT, as_1d_float, as_scores
from ..groups import PER_ROW_IDS_HINT, Groups, as_groups

__all__ = ["as_matrix", "check_feature_names", "resolve_groups", "as_fit_labels", "check_fit_rows",
           "training_targets", "checked_callbacks"]


def _from_objects(arr: np.ndarray, name: str) -> np.ndarray:
    """Object arrays of numbers (what ``DataFrame.to_numpy()`` gives for mixed columns) -> float64."""
    if any(isinstance(v, (str, bytes)) for v in arr.flat):
        raise TypeError(f"{name} holds strings; pass numeric features (encode text and categories first)")
    try:
        return arr.astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} has dtype object and could not be converted to numbers: {exc}") from None


def as_matrix(X, name: str = "X", *, keep_float32: bool = False, for_fit: bool = False) -> np.ndarray:
    """``X`` as a C-contiguous 2-D float64 array (float32 kept as is with ``keep_float32``).

    NaN is a missing value and +-inf an ordinary (extreme) value, as in LightGBM. ``for_fit``
    also refuses 0 rows and 0 features: nothing can be learnt from them.
    """
    if hasattr(X, "tocsr") and hasattr(X, "nnz"):
        raise TypeError(f"{name} must be a dense 2-D array, got a scipy.sparse matrix (sparse input is not "
                        "supported); use .toarray()")
    if X is None:
        raise TypeError(f"{name} must be a 2-D array of features, got None")
    if hasattr(X, "to_numpy") and not isinstance(X, np.ndarray):
        X = X.to_numpy()
    try:
        arr = np.asarray(X)
    except Exception as exc:  # ragged nested lists and the like
        raise TypeError(f"{name} could not be converted to an array: {exc}") from None
    if arr.dtype.kind == "c":
        raise ValueError(f"{name} has complex dtype {arr.dtype}: Complex data not supported")
    if arr.dtype == object:
        arr = _from_objects(arr, name)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D (rows x features), got shape {arr.shape}. Reshape your data: "
                         "X.reshape(-1, 1) for a single feature, X.reshape(1, -1) for a single row")
    if for_fit and arr.shape[0] == 0:
        raise ValueError(f"{name} has 0 rows (shape={arr.shape}) while a minimum of 1 is required to fit")
    if for_fit and arr.shape[1] == 0:
        raise ValueError(f"{name} has 0 feature(s) (shape={arr.shape}) while a minimum of 1 is required.")
    if keep_float32 and arr.dtype == np.float32:
        return np.ascontiguousarray(arr)  # binning converts exactly per value; no float64 copy of X
    return np.ascontiguousarray(arr, dtype=np.float64)


def check_feature_names(estimator, X, *, reset: bool) -> None:
    """Set (``reset``) or check ``n_features_in_`` and ``feature_names_in_`` the scikit-learn way.

    ``X`` is the caller's object (a DataFrame keeps its column names), already known to convert to a
    2-D numeric array. Mismatches raise scikit-learn's own messages ("X has 3 features, but
    TreeBooster is expecting 4 features as input", "The feature names should match ...").
    """
    try:
        from sklearn.utils.validation import validate_data  # scikit-learn >= 1.6
    except ImportError:  # pragma: no cover - older scikit-learn: the same checks as methods
        estimator._check_feature_names(X, reset=reset)
        estimator._check_n_features(X, reset=reset)
        return
    validate_data(estimator, X, skip_check_array=True, reset=reset)


def resolve_groups(group, qid, n_rows: int, *, name: str = "group", qid_name: str = "qid"):
    """Query structure from ``group`` (query sizes) or ``qid`` (one query id per row); ``None`` if neither.

    ``qid`` survives row subsetting (cross-validation splits), query sizes do not. Rows of one
    query must be contiguous in both conventions.
    """
    if group is not None and qid is not None:
        raise ValueError(f"pass {name}= (query sizes) or {qid_name}= (one query id per row), not both")
    if qid is not None:
        if isinstance(qid, Groups):
            raise TypeError(f"{qid_name} must hold one query id per row; pass a Groups as {name}=")
        try:
            return Groups.from_qid(qid, n_rows)
        except (TypeError, ValueError) as exc:
            raise type(exc)(str(exc).replace("qid", qid_name, 1) if qid_name != "qid" else str(exc)) from None
    if group is None:
        return None
    try:
        return as_groups(group, n_rows, name=name)
    except ValueError as exc:
        sizes = np.asarray(group) if not isinstance(group, Groups) else None
        if sizes is not None and sizes.ndim == 1 and sizes.shape[0] == n_rows:
            core = str(exc).replace(PER_ROW_IDS_HINT, "")
            raise ValueError(f"{core}; {name} holds one entry per row: if these are query ids, pass them as "
                             f"{qid_name}= (or {name}=customobj.Groups.from_qid(ids))") from None
        if "sum to" in str(exc) and "MAX_ROWS" not in str(exc):  # sizes of other rows: a CV split
            raise ValueError(f"{exc}. Under cross-validation (GridSearchCV, cross_val_score) scikit-learn "
                             f"splits the rows but passes {name}= whole: pass {qid_name}= (one query id per "
                             "row) instead, which is split with the rows") from None
        raise


def check_fit_rows(n_rows: int, y: np.ndarray, sample_weight, *, name: str = "X") -> None:
    """Lengths of the per-row arrays against ``X``: messages say which has how many rows."""
    if y.shape[0] != n_rows:
        raise ValueError(f"{name} has {n_rows} rows but y has {y.shape[0]}")
    if sample_weight is not None:
        try:
            w = np.asarray(sample_weight) if not hasattr(sample_weight, "to_numpy") else sample_weight.to_numpy()
        except ValueError as exc:  # ragged nested lists
            raise ValueError(f"sample_weight must be 1-D (one weight per row): {exc}") from None
        if w.ndim != 1:
            raise ValueError(f"sample_weight must be 1-D (one weight per row), got shape {w.shape}")
        if w.shape[0] != n_rows:
            raise ValueError(f"{name} has {n_rows} rows but sample_weight has {w.shape[0]}")
        if w.size and w.dtype.kind in "biuf" and not np.any(w != 0):
            raise ValueError("sample_weight: every weight is zero; at least one row needs a positive weight")


def as_fit_labels(y, name: str = "y") -> np.ndarray:
    """``y`` as a 1-D float64 array (values are checked by the objective: finite, grades, ...)."""
    if y is None:
        raise ValueError("TreeBooster requires y to be passed, but the target y is None "
                         "(y: one relevance label per row)")
    if hasattr(y, "to_numpy") and not isinstance(y, np.ndarray):
        y = y.to_numpy()
    if isinstance(y, np.ndarray) and y.dtype == object:
        y = _from_objects(y, name)
    return as_1d_float(y, name, finite=False)


def as_fit_positions(position, n_rows: int, name: str = "position"):
    """Each row's display position (LightGBM's ``Dataset(position=)``: integer ids, here ``>= 0``,
    one per row) as a read-only int64 array, or None; numbered as the objective's ``first_position``
    says (the objectives that read positions check their range and order; the others ignore them).

    Examples
    --------
    >>> as_fit_positions([1, 2, 1], 3).tolist()
    [1, 2, 1]
    >>> as_fit_positions([0, 1.5], 2)
    Traceback (most recent call last):
    ...
    ValueError: position must hold integer display positions >= 0 (one per row); found 1.5 at row 1
    """
    if position is None:
        return None
    arr = np.asarray(position)
    if arr.dtype == object:
        arr = _from_objects(arr, name)
    if arr.ndim != 1 or arr.shape[0] != n_rows:
        raise ValueError(f"{name} must be 1-D with one display position per row ({n_rows} rows), got shape "
                         f"{arr.shape}")
    if arr.dtype.kind == "b" or arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold integer display positions, got dtype {arr.dtype}")
    with np.errstate(invalid="ignore"):
        bad = np.flatnonzero(~(arr >= 0) | (arr != np.floor(arr)) | (arr > INT_LIMIT))
    if bad.size:
        raise ValueError(f"{name} must hold integer display positions >= 0 (one per row); found "
                         f"{arr[bad[0]]} at row {int(bad[0])}")
    out = np.ascontiguousarray(arr, dtype=np.int64)
    out.setflags(write=False)
    return out


def training_targets(obj, n: int, y, group, qid, sample_weight, init_score, position=None) -> tuple:
    """Labels, queries, weights and display positions checked and prepared for ``obj``; the
    starting raw scores."""
    y = as_fit_labels(y)
    check_fit_rows(n, y, sample_weight)
    position = as_fit_positions(position, n)
    groups = resolve_groups(group, qid, n)
    if groups is None and obj.needs_group:
        raise ValueError(f"{type(obj).__name__} is a ranking objective: fit needs group= (query sizes) or "
                         "qid= (one query id per row)")
    prep = obj.prepare(y, groups, sample_weight, position=position)
    K = obj.n_outputs
    shape = (n,) if K == 1 else (n, K)
    scores = np.zeros(shape, dtype=np.float64)
    if init_score is not None:
        init = as_scores(init_score, n, allow_2d=K > 1, name="init_score", max_abs=SCORE_LIMIT,
                         hint=" (a starting raw score, added to every tree's output; the objectives refuse "
                              "scores beyond this)")
        if K > 1 and init.shape != shape:
            raise ValueError(f"init_score must have shape {shape} (rows x the {K} outputs of "
                             f"{type(obj).__name__}), got shape {init.shape}")
        scores += init
    return prep, scores


def checked_callbacks(callbacks) -> list:
    """``callbacks`` as a list, each checked to be callable."""
    callbacks = list(callbacks or [])
    for cb in callbacks:
        if not callable(cb):
            raise TypeError(f"callbacks must be callables, got {type(cb).__name__}")
    return callbacks
