"""Pieces shared by the LightGBM and XGBoost adapters: objective checks, per-dataset state."""
from __future__ import annotations

import weakref

import numpy as np

from customobj.groups import Groups
from customobj.objectives.base import Objective
from customobj.objectives.pointwise import McRank

__all__ = ["require_objective", "TrainState", "prepare_state", "rows_weight", "ranking_scores", "check_outputs",
           "known_outputs", "AdapterObjective"]


class AdapterObjective:
    """What the LightGBM and XGBoost objective callables share: the wrapped customobj objective,
    a per-dataset state cache (weakly keyed by Dataset / DMatrix), identity by objective, and
    pickling / deep-copying that carries the objective only.

    Subclasses set ``_factory`` (the public function's name, used in error messages and repr) and
    may extend :meth:`_init_caches` with the caches of their scikit-learn calling convention.
    """

    _factory = "adapter"

    def __init__(self, objective: Objective) -> None:
        self.objective = require_objective(objective, self._factory)
        self._init_caches()

    def _init_caches(self) -> None:
        # Dataset / DMatrix -> TrainState
        self._states: weakref.WeakKeyDictionary[object, TrainState] = weakref.WeakKeyDictionary()

    def __repr__(self) -> str:
        return f"{self._factory}({self.objective!r})"

    def fitted_attributes(self, data: object) -> dict:
        """What the objective learned on the training set ``data`` (the Dataset / DMatrix this callable
        trained on), by attribute name: ``Unbiased``'s ``position_bias_`` and
        ``position_bias_unclicked_`` (:meth:`customobj.objectives.Objective.fitted_attributes`); the
        objective itself stays as it was built.

        Examples
        --------
        >>> import lightgbm as lgb, customobj
        >>> from customobj.adapters import lightgbm_objective
        >>> d = customobj.data.synthetic(30, 10, 5, seed=0)
        >>> log = customobj.data.simulate_clicks(d, ranker=d.X[:, 0], sessions=2, seed=0)
        >>> f = lightgbm_objective(customobj.Unbiased(customobj.LambdaRank()))
        >>> ds = lgb.Dataset(log.X, log.y, group=log.group, position=log.position)
        >>> booster = lgb.train({"objective": f, "verbose": -1}, ds, 3)
        >>> float(f.fitted_attributes(ds)["position_bias_"][0])
        1.0
        """
        state = self._states.get(data)
        if state is None:
            raise ValueError(f"{self._factory}: no training round ran on this {type(data).__name__} yet; pass the "
                             "Dataset / DMatrix it trained on")
        return self.objective.fitted_attributes(state.prep)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.objective == self.objective

    def __hash__(self) -> int:
        return hash((type(self), self.objective))

    def __getstate__(self) -> dict:
        # The per-dataset caches hold weak references (not picklable) and are rebuilt where the
        # callable lands (a Dask worker, a loaded model): only the objective travels.
        return {"objective": self.objective}

    def __setstate__(self, state: dict) -> None:
        type(self).__init__(self, state["objective"])

    def __deepcopy__(self, memo: dict) -> "AdapterObjective":
        # lightgbm.train and scikit-learn's clone deep-copy params; the caches are per data set,
        # so sharing them is what we want.
        return self


def require_objective(objective: object, where: str) -> Objective:
    """``objective`` itself when it is a customobj objective; TypeError naming ``where`` otherwise."""
    if not isinstance(objective, Objective):
        raise TypeError(
            f"{where} expects a customobj objective (e.g. customobj.LambdaRank()), got {type(objective).__name__}"
        )
    return objective


def known_outputs(objective: Objective, where: str) -> int:
    """The objective's number of outputs per row; ValueError saying what to do while it is unknown
    (McRank without ``n_classes`` before it has seen labels)."""
    k = objective.n_outputs
    if k is None:
        name = type(objective).__name__
        raise ValueError(
            f"{where}: {name} does not know its number of classes yet, so the number of outputs per row "
            f"(num_class) cannot be set: pass {name}(n_classes=K) with K = highest grade + 1, or call "
            f".prepare(labels) on the training labels first (K is then inferred from them)"
        )
    return k


class TrainState:
    """Everything an adapter needs per training set, built once: the prepared data and
    reusable output buffers (so a boosting round allocates nothing of size n)."""

    __slots__ = ("prep", "grad", "hess", "out_grad", "out_hess", "scores", "stamp")

    def __init__(self, prep, shape, out_dtype, out_order="C"):
        self.prep = prep
        self.stamp = None  # adapters._stamp.Stamp of the fields it was built from
        self.grad = np.zeros(shape, dtype=np.float64)
        self.hess = np.zeros(shape, dtype=np.float64)
        # What the library receives. LightGBM casts to float32 anyway and reads (n, K) column by
        # column, so a Fortran-ordered float32 buffer reaches it without a further copy.
        self.out_grad = np.zeros(shape, dtype=out_dtype, order=out_order)
        self.out_hess = np.zeros(shape, dtype=out_dtype, order=out_order)
        self.scores = np.zeros(shape, dtype=np.float64)  # float64 copy of the library's scores


def prepare_state(objective, labels, ptr, weight, *, library, group_hint, out_dtype, out_order="C", position=None):
    """Validate and prepare one training set; ``labels`` come from :func:`as_label_array` (converted
    once, by the adapter that read them), ``ptr`` is None when the data has no query groups,
    ``position`` the rows' display positions (LightGBM's ``position`` field) or None."""
    name = type(objective).__name__
    if ptr is None and objective.needs_group:
        raise ValueError(
            f"{name} is a group-wise (ranking) objective but the {library} training data has no query "
            f"groups: {group_hint}"
        )
    groups = Groups.from_ptr(ptr, labels.shape[0]) if ptr is not None else None
    prep = objective.prepare(labels, groups, weight, position=position)
    k = known_outputs(objective, library)
    shape = (prep.n_rows,) if k == 1 else (prep.n_rows, k)
    return TrainState(prep, shape, out_dtype, out_order)


def copy_out(state, objective, library):
    """Copy the float64 gradient / hessian into the library's (float32) output buffers.

    The objective's float64 values are finite, but a value beyond float32's range (about 3.4e38,
    e.g. from scores near customobj's 1e100 limit or labels of 1e17) would reach the library as
    inf; numpy flags that overflow in the cast itself, so the check costs nothing per round.
    """
    try:
        with np.errstate(over="raise"):
            np.copyto(state.out_grad, state.grad, casting="same_kind")
            np.copyto(state.out_hess, state.hess, casting="same_kind")
    except FloatingPointError:
        big = max(float(np.abs(state.grad).max()), float(np.abs(state.hess).max()))
        raise ValueError(
            f"{type(objective).__name__} produced a gradient or hessian of {big:.3g}, beyond the float32 range "
            f"{library} trains with (3.4e38): the scores (margins) or labels are too large; lower the "
            "learning rate or rescale the labels"
        ) from None
    return state.out_grad, state.out_hess


def as_label_array(labels):
    """The library's label field as an array: refused unless 1-D (one grade per row)."""
    try:
        labels = np.asarray(labels)
    except ValueError as exc:  # ragged nested lists
        raise ValueError(f"labels (y) must be a 1-D array with one grade per row: {exc}") from None
    if labels.ndim != 1:
        raise ValueError(f"labels (y) must be a 1-D array with one grade per row, got shape {labels.shape}")
    return labels


def rows_weight(weight, ptr, n_rows):
    """Row weights from a library's weight field: ``None`` when absent; per-query weights
    (XGBoost's ranking convention, one weight per group) are repeated over the query's rows."""
    if weight is None:
        return None
    try:
        w = np.asarray(weight, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"weight must be a numeric array, got {type(weight).__name__}") from None
    if w.ndim != 1:
        raise ValueError(f"weight must be a 1-D array (one per row or per query), got shape {w.shape}")
    if w.size == 0:
        return None
    if w.shape[0] == n_rows:
        return w
    if ptr is not None and w.shape[0] == len(ptr) - 1:
        return np.repeat(w, np.diff(np.asarray(ptr, dtype=np.int64)))
    raise ValueError(f"weight has {w.shape[0]} entries; expected one per row ({n_rows}) or per query")


def check_outputs(objective, preds, library, hint):
    """Raise when the library's score shape does not match the objective's number of outputs."""
    k = known_outputs(objective, library)
    if preds.dtype.kind not in "iuf":
        raise TypeError(f"{library} passed scores (preds) of dtype {preds.dtype}: expected real numbers")
    if preds.ndim not in (1, 2):
        raise ValueError(f"{library} passed scores (preds) of shape {preds.shape}: expected 1-D (one per row) "
                         "or 2-D (rows x outputs)")
    got = 1 if preds.ndim == 1 else preds.shape[1]
    if got != k:
        raise ValueError(
            f"{type(objective).__name__} has {k} output(s) per row but {library} passed scores of shape "
            f"{preds.shape}; {hint}"
        )


def as_preds(preds, library: str, dtype=None) -> np.ndarray:
    """The scores a library passed (``preds``) as an array; ragged or non-numeric scores are a
    ``ValueError`` naming them, not numpy's message about sequences."""
    try:
        return np.asarray(preds, dtype=dtype)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{library} passed scores (preds) that are not a numeric array: {exc}") from None


def ranking_scores(preds):
    """One ranking score per row: the margin itself, or for (n, K) multiclass margins the
    expected grade ``sum_k k p_k`` under their softmax (:meth:`McRank.expected_grade`)."""
    preds = as_preds(preds, "the metric's caller", np.float64)
    if preds.ndim == 1:
        return preds
    if preds.ndim == 2 and preds.shape[1] == 1:
        return preds[:, 0]
    return McRank.expected_grade(preds)
