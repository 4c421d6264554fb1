"""customobj objectives as XGBoost custom objectives (``xgboost.train(..., obj=f)``).

``f(preds, dtrain)``: labels, weights and query offsets (``get_uint_info("group_ptr")``) are read
from the DMatrix once and prepared once per DMatrix (weak-keyed cache).

What XGBoost does for a custom objective (checked on 3.2):

- ``preds`` are float32 margins that include ``base_margin`` (model adaptation: put the base
  model's scores there) and ``base_score``. With a custom objective XGBoost does not estimate
  ``base_score``; unless set it adds the constant 0.5 to every margin. Ranking losses do not see a
  constant shift, but pointwise terms (SquaredError, Logistic, the regression part of QBRank) do:
  :func:`xgboost_params` sets ``base_score=0`` unless you chose one.
- the margins are copied once per round into a reused float64 buffer (the objective works in
  float64); grad/hess buffers are reused too.
- weights: for ranking data XGBoost stores one weight per query; they are spread over the
  query's rows (customobj weights are per row).
- multi-output (McRank, ``K`` grades): set ``num_class=K``; margins arrive as ``(n, K)`` and
  grad/hess go back as ``(n, K)``.

XGBRanker: does not work. It rejects callable objectives (it must run a ``rank:*`` objective)
and, unlike LightGBM's estimators, XGBoost's scikit-learn objective signature
``(y_true, y_pred[, sample_weight])`` carries no query information, so a ranking objective
cannot be passed through XGBRegressor either. Use ``xgboost.train`` with a ``DMatrix(group=...)``
or ``DMatrix(qid=...)``. Pointwise objectives work with XGBRegressor through
:func:`xgboost_sklearn_objective`.
``xgboost.dask.train(obj=...)`` silently splits queries across workers: use ``customobj.adapters.dask.train_xgboost``, which aligns partitions to whole queries.
Inside a distributed training (XGBoost's communicator is up on the worker) each data set's
``Prepared.collective`` is XGBoost's allreduce, so ``Unbiased`` estimates one set of propensities
from all workers' rows.

GPU (``xgboost_objective(obj, device="cuda")`` with XGBoost's ``device="cuda"``): the margins
(host float32 from XGBoost) are copied once per round into a reused device buffer, the objective
runs in numba.cuda (``customobj.objectives.devices``) and grad/hess go back to XGBoost as float32
device arrays (``__cuda_array_interface__``, accepted since XGBoost 2.1); nothing of size n
returns to the host. Needs ``customobj[cuda]`` and an NVIDIA GPU; refused at once otherwise.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, TypeGuard

import numpy as np

from customobj._cuda_runtime import is_device_array
from customobj.objectives.base import Objective

from customobj._device import Device, as_device

from ._cuda import check_gpu_objective, device_round
from ._data import (AdapterObjective, TrainState, as_label_array, as_preds, check_outputs, copy_out, known_outputs,
                    prepare_state, require_objective, rows_weight)
from ._stamp import Stamp, xgboost_fields

if TYPE_CHECKING:  # the libraries' types, for the checker only
    import xgboost

__all__ = ["xgboost_objective", "xgboost_params", "xgboost_sklearn_objective", "XGBoostObjective"]

_GROUP_HINT = "build the DMatrix with group= (query sizes) or qid="


def _dmatrix_ptr(dtrain):
    ptr = dtrain.get_uint_info("group_ptr")
    if ptr is None or len(ptr) < 2:
        return None
    return np.asarray(ptr, dtype=np.int64)


def _new_state(objective, labels, ptr, weight):
    """``labels``: the array :func:`as_label_array` made (labels are converted once, by the caller)."""
    w = rows_weight(weight, ptr, labels.shape[0])
    return prepare_state(objective, labels, ptr, w, library="XGBoost", group_hint=_GROUP_HINT,
                         out_dtype=np.float32)


def _check_rows(preds, n_rows):
    """One score per row of the training data: a ValueError naming ``preds`` (not numpy's
    broadcast message from the copy into the round's buffer)."""
    shape = tuple(getattr(preds, "shape", ()))
    if not shape or shape[0] != n_rows:
        raise ValueError(f"XGBoost passed scores (preds) of shape {shape} for a training set of {n_rows} rows: "
                         f"expected {n_rows} scores, one per row of the DMatrix (or y_true) the objective was called with")


def _host_preds(objective, preds, n_rows):
    """XGBoost's host scores as an array of the objective's output shape (an (n, 1) column as 1-D)."""
    preds = as_preds(preds, "XGBoost")
    if preds.ndim == 2 and objective.n_outputs == 1 and preds.shape[1] == 1:
        preds = preds[:, 0]
    check_outputs(objective, preds, "XGBoost", f"set params num_class={known_outputs(objective, 'XGBoost')}")
    _check_rows(preds, n_rows)
    return preds


def _grad_hess(objective, state, preds):
    preds = _host_preds(objective, preds, state.scores.shape[0])
    np.copyto(state.scores, preds, casting="same_kind")
    objective.grad_hess_prepared(state.scores, state.prep, state.grad, state.hess)
    return copy_out(state, objective, "XGBoost")


_SKLEARN_GROUPS = (
    "{name} needs query groups, which XGBoost's scikit-learn estimators never pass to a custom objective "
    "(and XGBRanker rejects callables): use xgboost.train with customobj.adapters.xgboost_objective and a "
    "DMatrix built with group= or qid="
)


def _is_dmatrix(data: object) -> TypeGuard[xgboost.DMatrix]:
    """Whether ``data`` has a DMatrix's accessors (duck-typed: xgboost is imported only on use)."""
    return hasattr(data, "get_uint_info") and hasattr(data, "get_label")


class XGBoostObjective(AdapterObjective):
    """A customobj objective as an XGBoost objective, for both of XGBoost's calling conventions.

    - ``xgboost.train(obj=f)``: ``f(preds, dtrain)``; labels, weights and query offsets are read
      from the DMatrix and prepared once per DMatrix (weakly keyed), again when ``set_label`` /
      ``set_weight`` / ``set_group`` changed them (a sample hash of XGBoost's buffers, see
      ``adapters._stamp``).
    - ``XGBRegressor`` / ``XGBClassifier(objective=f)``: ``f(y_true, y_pred, sample_weight=...)``;
      pointwise objectives only (no query groups reach it). XGBoost hands a fresh label array
      every round, so the previous round's labels and weights are compared (O(n), like the score copy).

    The second argument tells the two apart: a DMatrix, or the score array. Pickles (objective only).
    """

    _factory = "xgboost_objective"

    def __init__(self, objective: Objective, *, device: "str | Device" = "cpu", check_device: bool = True) -> None:
        # check_device=False defers the GPU check to where the callable runs: a Dask client without a
        # GPU builds it for GPU workers (it is checked again there when unpickled).
        self.device = as_device(device)  # the one parse; below only the record is read
        self.on_gpu = self.device.is_cuda
        super().__init__(objective)
        if self.on_gpu and check_device:
            check_gpu_objective(self.objective, self._factory, self.device)

    def __repr__(self) -> str:
        return super().__repr__() if not self.on_gpu else f"{self._factory}({self.objective!r}, device='{self.device}')"

    def __eq__(self, other: object) -> bool:
        return super().__eq__(other) and getattr(other, "device", None) == self.device

    def __hash__(self) -> int:
        return hash((type(self), self.objective, self.device))

    def __getstate__(self) -> dict:
        return {"objective": self.objective, "device": str(self.device)}

    def __setstate__(self, state: dict) -> None:
        type(self).__init__(self, state["objective"], device=state.get("device", "cpu"))

    def _init_caches(self) -> None:
        super()._init_caches()  # DMatrix -> TrainState
        # scikit-learn calls: (labels copy, weight copy or None, TrainState)
        self._last: tuple[np.ndarray, np.ndarray | None, TrainState] | None = None

    def state_for(self, dtrain: xgboost.DMatrix) -> TrainState:
        """The prepared data and buffers of ``dtrain`` (built on first use and after its labels,
        weights or groups changed)."""
        fields = xgboost_fields(dtrain)
        state = self._states.get(dtrain)
        if state is None or not state.stamp.matches(fields):
            ptr = _dmatrix_ptr(dtrain)
            state = _new_state(self.objective, as_label_array(dtrain.get_label()), ptr, dtrain.get_weight())
            state.prep.collective = _worker_collective()
            state.stamp = Stamp(fields, by="content")  # views of XGBoost's buffers: hashed, never kept
            self._states[dtrain] = state
        return state

    def _sklearn_state(self, y_true, sample_weight) -> TrainState:
        if self.objective.needs_group:
            raise ValueError(_SKLEARN_GROUPS.format(name=type(self.objective).__name__))
        y = as_label_array(y_true)
        w = None if sample_weight is None or np.size(sample_weight) == 0 else np.asarray(sample_weight)
        last = self._last
        if last is not None and np.array_equal(last[0], y) and (
            (w is None and last[1] is None) or (w is not None and last[1] is not None and np.array_equal(last[1], w))
        ):
            return last[2]
        state = _new_state(self.objective, y, None, w)
        self._last = (y.copy(), None if w is None else w.copy(), state)
        return state

    def __call__(self, first: np.ndarray, second: object,
                 sample_weight: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(preds, dtrain)`` from ``xgboost.train``, or ``(y_true, y_pred, sample_weight=...)``
        from the scikit-learn estimators; returns float32 ``(grad, hess)``."""
        if _is_dmatrix(second):
            state = self.state_for(second)
            if self.on_gpu:
                return _grad_hess_gpu(self.objective, state, first, self.device)
            return _grad_hess(self.objective, state, first)
        if not isinstance(second, np.ndarray):
            raise TypeError(
                "xgboost_objective is called as f(preds, dtrain) by xgboost.train or f(y_true, y_pred, "
                f"sample_weight=...) by XGBRegressor; got a {type(second).__name__} second argument"
            )
        state = self._sklearn_state(first, sample_weight)
        if self.on_gpu:
            return _grad_hess_gpu(self.objective, state, second, self.device)
        return _grad_hess(self.objective, state, second)


class _XGBoostCollective:
    """``customobj.objectives.prepared.Collective`` over ``xgboost.collective.allreduce``: sums and maxima
    over the workers of one distributed XGBoost training (xgboost.dask, Spark, Ray)."""

    def _reduce(self, values, op):
        from xgboost import collective

        return collective.allreduce(np.ascontiguousarray(values, dtype=np.float64), op)

    def sum(self, values: np.ndarray) -> np.ndarray:
        from xgboost.collective import Op

        return self._reduce(values, Op.SUM)

    def max(self, values: np.ndarray) -> np.ndarray:
        from xgboost.collective import Op

        return self._reduce(values, Op.MAX)


def _worker_collective():
    """The collective of the distributed training this process is a worker of (XGBoost's communicator
    is up: inside ``xgboost.dask.train``), else None: one machine, nothing to combine."""
    from xgboost import collective

    return _XGBoostCollective() if collective.is_distributed() else None


def _grad_hess_gpu(objective, state, preds, device):
    if not is_device_array(preds):
        preds = _host_preds(objective, preds, state.grad.shape[0])
    else:
        _check_rows(preds, state.grad.shape[0])
    return device_round(objective, state.prep, preds, state.grad.shape, "XGBoost", device)


def xgboost_objective(objective: Objective, *, device: "str | Device" = "cpu") -> XGBoostObjective:
    """Wrap a customobj objective for ``xgboost.train(params, dtrain, obj=...)`` (and, pointwise
    objectives, ``XGBRegressor(objective=...)``); see :class:`XGBoostObjective`.

    ``device="cuda"`` (or ``"cuda:N"``, CUDA device ``N``): compute on the GPU and hand XGBoost device
    arrays (train with the same XGBoost ``device`` too; see the module docstring). Raises ``GPUUnavailableError`` naming what is
    missing (package, driver, device) when no GPU can be used, ``NotImplementedError`` for an
    objective without GPU kernels; never a silent CPU fallback.

    Examples
    --------
    >>> import xgboost, customobj
    >>> from customobj.adapters import xgboost_objective, xgboost_params
    >>> d = customobj.data.synthetic(20, 10, 5)
    >>> obj = customobj.RankNet()
    >>> booster = xgboost.train(xgboost_params(obj, {"tree_method": "hist"}),
    ...                         xgboost.DMatrix(d.X, d.y, group=d.group), 5, obj=xgboost_objective(obj))
    """
    return XGBoostObjective(objective, device=device)


def xgboost_params(objective: Objective, params: dict | None = None, *, device: "str | Device | None" = None) -> dict:
    """A copy of ``params`` completed for a custom objective: ``base_score=0`` unless set (so
    pointwise terms see the true margin), ``num_class=K`` for multi-output objectives, and
    ``disable_default_eval_metric`` (the default metric would evaluate a meaningless objective).
    ``device`` (``"cpu"``, ``"cuda"`` or ``"cuda:N"``): XGBoost's ``device`` parameter, set to match the
    objective's (``xgboost_objective(obj, device=...)``); a different ``params["device"]`` is an error."""
    require_objective(objective, "xgboost_params")
    out = dict(params or {})
    if device is not None:
        dev = as_device(device)
        if "device" in out and as_device(out["device"], "params['device']") != dev:
            raise ValueError(f"params device={out['device']!r} but device={str(dev)!r}: train where the objective runs")
        out["device"] = str(dev)
    out.setdefault("base_score", 0.0)
    out.setdefault("disable_default_eval_metric", 1)
    k = known_outputs(objective, "xgboost_params")
    if k > 1:
        if out.get("num_class", k) != k:
            raise ValueError(f"{type(objective).__name__} has {k} outputs but params num_class={out['num_class']}")
        out["num_class"] = k
    return out


def xgboost_sklearn_objective(objective: Objective) -> XGBoostObjective:
    """A ``(y_true, y_pred, sample_weight)`` objective for XGBRegressor / XGBClassifier: the same
    picklable callable as :func:`xgboost_objective`, refusing at once objectives that need query
    groups (XGBoost's estimators pass none; see the module docstring).

    Examples
    --------
    >>> import xgboost, customobj
    >>> from customobj.adapters import xgboost_sklearn_objective
    >>> d = customobj.data.synthetic(20, 10, 5)
    >>> model = xgboost.XGBRegressor(n_estimators=5, base_score=0.0,
    ...                              objective=xgboost_sklearn_objective(customobj.SquaredError())).fit(d.X, d.y)
    """
    obj = require_objective(objective, "xgboost_sklearn_objective")
    if obj.needs_group:
        raise ValueError(_SKLEARN_GROUPS.format(name=type(obj).__name__))
    return XGBoostObjective(obj)
