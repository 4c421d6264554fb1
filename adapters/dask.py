"""Distributed training with customobj objectives on ``xgboost.dask`` and ``lightgbm.dask``.

Both libraries train data-parallel: each worker builds a local DMatrix / Dataset from the
partitions it holds, computes gradients for its own rows with the custom objective, and the
workers sum gradient histograms. A ranking objective needs all rows of a query in one place, so
the functions here first make every partition hold whole queries
(:func:`repartition_by_query`, or :func:`query_partitions` which checks the user's own
partitioning and raises ValueError naming a query that straddles two partitions). A worker's
data is then a union of whole queries, and its objective call sees correct query offsets:
XGBoost's ``group_ptr`` (from the dense, increasing ``qid`` codes given to ``DaskDMatrix``) and
LightGBM's group sizes (one Dask chunk of sizes per partition, as ``DaskLGBMRanker`` wants).

- :func:`train_xgboost` -> ``{"booster": xgboost.Booster, "history": {...}}`` (as ``xgboost.dask.train``);
- :func:`train_lightgbm` -> a fitted ``lightgbm.DaskLGBMRanker`` (``.to_local()`` gives an ``LGBMRanker``);
- :func:`lightgbm_history` -> the per-round validation curve of a LightGBM model on whole
  validation data, computed on the client;
- :func:`train_regression_em` -> a fitted ``customobj.RegressionEM`` (XGBoost), its examination
  estimated from all workers' rows.

Click debiasing (docs/distributed.md, "Clicks"): ``Unbiased`` estimates one set of propensities
from all workers' rows with :func:`train_xgboost` (XGBoost's allreduce adds the workers'
per-position sums every round; the estimate comes back as ``out["fitted_attributes"]``);
:func:`train_lightgbm` refuses an objective that estimates from all rows (``NotImplementedError``:
lightgbm.dask has no collective operation for Python code), and takes ``Unbiased(propensity=...)``.

Several labels (docs/multi-objective.md, "Dask"): a ``MultiObjective``'s label columns, numpy or Dask
arrays / Series aligned with ``y``, are split with the query-aligned partitions and checked next to each
(``adapters._dask_labels``). :func:`train_xgboost` gives the one-machine weights for every method (costs
and Gram matrix summed by XGBoost's allreduce); so does :func:`train_lightgbm` (the sums go through Dask
``Variable``s, ``adapters._dask_collective``: lightgbm.dask has no collective for Python code); the rows
carry their partitions with the label columns, which find the training workers, so a method that reads
costs or the Gram matrix without label columns is given the data's label as its columns.

Early stopping and histories (checked on lightgbm 4.7, xgboost 3.2):

- XGBoost reduces its native metrics (``params["eval_metric"]``) over the workers, so every
  worker sees the same curve: ``early_stopping_rounds=`` works and ``history`` is the curve of
  all validation queries. A Python ``custom_metric`` (:func:`customobj.adapters.xgboost_metric`)
  is evaluated by each worker on its own queries only: :func:`train_xgboost` refuses it together
  with early stopping (the workers could stop at different rounds).
- LightGBM evaluates each worker's own part of the validation data and does not reduce the
  values: with ``lightgbm.early_stopping`` the workers stop at different rounds and training
  hangs, and ``evals_result_`` is one worker's partial curve. :func:`train_lightgbm` refuses early
  stopping before anything runs; train a fixed number of rounds and choose the round with
  :func:`lightgbm_history`, which scores every round on all validation queries.

Checked on xgboost 3.2, lightgbm 4.7, dask/distributed 2026.8. Notes:

- XGBoost: ``DaskDMatrix`` refuses ``qid`` with ``weight`` ("per-group weight is not
  implemented"), so :func:`train_xgboost` has no weights. The objective is shipped as
  ``customobj.adapters.xgboost_objective(objective)``, which pickles the customobj objective only and
  builds its per-DMatrix state on the worker.
- LightGBM: the objective goes through ``customobj.adapters.lightgbm_sklearn_objective`` (the Dask
  estimators are the scikit-learn ones, called as ``f(y_true, y_pred, weight, group)`` with the
  worker's local query sizes). LightGBM's network is one per process: run workers as separate
  processes (``LocalCluster(processes=True)``, ``dask worker`` processes).
- Neither library can boost from the average with a custom objective; ranking losses do not
  need it. ``xgboost_params`` sets ``base_score=0``.
"""
from __future__ import annotations

import json
import uuid
import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from customobj._device import Device, as_device
from customobj.multi import MultiObjective
from customobj.multi.methods import warn_unmet_bounds
from customobj.objectives.base import Objective
from customobj._extras import require_installed

from ._threads import configure_threads

# An extra: say which now, not a bare ModuleNotFoundError later (found, not imported: dask loads lazily)
require_installed("dask", "customobj.adapters.dask")
require_installed("distributed", "customobj.adapters.dask")
from ._dask_partition import (
    QueryPartitions,
    _is_dask,
    _n_workers,
    place_partitions,
    query_partitions,
    query_ptr,
    repartition_by_query,
    scatter_by_query,
)
from ._dask_collective import lightgbm_refusal, release_collective
from ._dask_em import train_regression_em
from ._dask_labels import (PARTITION_WEIGHT_BASE, LabelBlocks, LabelledLightGBMObjective, converts_labels,
                           data_label_columns, has_label_columns, local_objective, released, split_labels,
                           walk_objectives)
from ._data import require_objective
from .lightgbm import lightgbm_sklearn_objective
from .xgboost import XGBoostObjective, xgboost_params

if TYPE_CHECKING:  # the libraries' types, for the checker only
    import lightgbm
    from distributed import Client

__all__ = [
    "repartition_by_query",
    "query_partitions",
    "query_ptr",
    "place_partitions",
    "scatter_by_query",
    "QueryPartitions",
    "train_xgboost",
    "train_lightgbm",
    "lightgbm_history",
    "train_regression_em",
]

configure_threads()


#: LightGBM's parameter names (and aliases) that turn early stopping on.
_LGB_EARLY_STOPPING = ("early_stopping_round", "early_stopping_rounds", "early_stopping", "n_iter_no_change")

_LGB_NO_EARLY_STOPPING = (
    "lightgbm.dask cannot stop early: each worker evaluates only its own validation queries, the workers "
    "stop at different rounds and training hangs. Train a fixed num_boost_round with eval_set=, then "
    "customobj.adapters.dask.lightgbm_history(model, eval_set, 'ndcg@10') gives the curve on all validation "
    "queries: predict with num_iteration = its best round. Or use train_xgboost(..., early_stopping_rounds=) "
    "with params['eval_metric'] (XGBoost reduces its metrics over the workers)"
)


def _is_early_stopping_callback(cb: object) -> bool:
    return "earlystopping" in type(cb).__name__.lower().replace("_", "")


def _has_early_stopping(callbacks: object) -> bool:
    """Whether the ``callbacks`` keyword argument (None or a list) holds an early-stopping callback."""
    if not callbacks:
        return False
    if not isinstance(callbacks, Iterable):
        raise TypeError(f"callbacks must be a list of callbacks, got {type(callbacks).__name__}")
    return any(_is_early_stopping_callback(cb) for cb in callbacks)


def _aligned(client, X, y, qid_or_group, npartitions, weight, kind):
    """Query-aligned partitions placed round-robin on the workers: the user's (checked) if ``X``
    is Dask and ``npartitions`` is None, else ``npartitions`` (default: one per worker) cut at
    query boundaries. Numpy data is scattered slice by slice, never put in the task graph."""
    if npartitions is None and _is_dask(X):
        return place_partitions(client, query_partitions(X, y, qid_or_group, weight=weight, kind=kind))
    if npartitions is None:
        npartitions = _n_workers(client)
    if not _is_dask(X):
        return scatter_by_query(client, X, y, qid_or_group, npartitions, weight=weight, kind=kind)
    parts = repartition_by_query(X, y, qid_or_group, npartitions, weight=weight, kind=kind)
    return place_partitions(client, parts)


def _check_no_positions(objective):
    """``Unbiased(position=...)`` holds one position per row of the whole data set, which no worker has:
    on Dask the positions are each session's row order. Refused here, not as a length error on a worker."""
    for o in walk_objectives([objective]):
        if getattr(o, "position", None) is not None:
            raise ValueError(
                f"{type(o).__name__}(position=...) gives positions for all rows, but each Dask worker trains on its "
                "own sessions: drop position= and give the rows of each session in display order (on Dask the "
                "positions are each session's row order, XGBoost's convention)")


def _check_single_output(objective, library):
    # An unknown count (McRank before it has seen labels) is already 2 or more: refuse the objective
    # itself, not first ask for n_classes and then refuse it anyway.
    k = objective.n_outputs
    if k != 1:
        outputs = f"{k} outputs per row" if k is not None else "one output per grade for each row (2 or more)"
        raise ValueError(
            f"{type(objective).__name__} has {outputs}; the Dask ranking path of "
            f"{library} trains one score per row: use a single-output objective (LambdaRank, RankNet, QBRank, ...)"
        )


def train_xgboost(client: object, params: dict | None, X: object, y: object, qid_or_group: object,
                  objective: object, *, num_boost_round: int = 10, npartitions: int | None = None,
                  evals: list | None = None, kind: str = "auto", **train_kwargs: object) -> dict:
    """Train ``xgboost.dask`` with a customobj ``objective`` on query-aligned partitions.

    ``X``, ``y``: numpy or Dask (array / DataFrame); ``qid_or_group``: per-row query ids
    (contiguous) or query sizes. With Dask ``X`` and ``npartitions=None`` the existing
    partitions are kept and checked (ValueError if a query straddles two); otherwise the data is
    cut into ``npartitions`` (default: number of workers) partitions of whole queries.
    ``evals``: ``[(X, y, qid_or_group, name), ...]`` aligned the same way; evaluate with a native
    metric, e.g. ``params["eval_metric"] = "ndcg@10"`` (XGBoost reduces it over workers).
    ``params`` are completed by :func:`customobj.adapters.xgboost_params` (``base_score=0``, no default metric).
    Other keyword arguments go to ``xgboost.dask.train``. Returns its ``{"booster", "history"}`` plus
    ``"fitted_attributes"``: what the objective learned on the training data
    (:meth:`customobj.objectives.Objective.fitted_attributes`; ``Unbiased``: ``position_bias_``,
    ``position_bias_unclicked_``, estimated from all workers' rows; ``MultiObjective``: each round's
    ``label_weights_``, ``label_costs_``, ``label_duals_``, the same on every worker), ``{}`` for most objectives.
    A ``MultiObjective`` whose bound was not met is said with a ``UserWarning`` here, as on one machine.

    A ``MultiObjective``'s label columns (numpy, or Dask arrays / Series aligned with ``y``) are split with
    the partitions and checked there before any worker trains (a bad one: ValueError/TypeError naming
    ``labels[k]`` and the partition); each row carries its partition and offset in the DMatrix's
    ``label_lower_bound`` / ``label_upper_bound`` (so at most ``2**24 - 1`` rows a partition). Two workers
    give the one-machine weights (to the last bits of the round's sums, added in another order) and model.
    """
    import xgboost.dask as xgb_dask

    objective = require_objective(objective, "train_xgboost")
    _check_single_output(objective, "XGBoost")
    _check_no_positions(objective)
    if "obj" in train_kwargs:
        raise TypeError("train_xgboost builds obj= from objective; do not pass obj")
    stops = train_kwargs.get("early_stopping_rounds") or _has_early_stopping(train_kwargs.get("callbacks"))
    custom = train_kwargs.get("custom_metric") is not None or train_kwargs.get("feval") is not None
    if evals and not (params or {}).get("eval_metric") and not custom:
        raise ValueError(
            "train_xgboost: evals= records no history without a metric (customobj objectives turn XGBoost's "
            "default metric off): set params['eval_metric'], e.g. 'ndcg@10'"
        )
    if stops and custom:
        raise ValueError(
            "train_xgboost: early stopping on a custom_metric would stop each worker on its own queries (the "
            "workers could stop at different rounds and hang): stop on a native metric instead, "
            "params['eval_metric'] = 'ndcg@10', which XGBoost reduces over the workers"
        )
    labelled = has_label_columns(objective)
    # device="cuda" (or "cuda:N") in params: the GPU objective, checked on each worker (the client may have no GPU).
    device = as_device((params or {}).get("device", "cpu"), "params['device']")
    parts = _aligned(client, X, y, qid_or_group, npartitions, None, kind)
    dev = []
    for item in evals or ():
        if len(item) != 4:
            raise ValueError("evals entries must be (X, y, qid_or_group, name)")
        Xe, ye, ge, name = item
        pe = _aligned(client, Xe, ye, ge, npartitions, None, kind)
        dev.append((xgb_dask.DaskDMatrix(client, pe.X, pe.y, qid=pe.qid), name))
    # MultiObjective's label columns: split with the partitions, each row carrying its identity (_dask_labels)
    plan = split_labels(client, objective, parts) if labelled and isinstance(objective, MultiObjective) else None
    try:
        rows = {} if plan is None else {"label_lower_bound": plan.lower, "label_upper_bound": plan.upper}
        dtrain = xgb_dask.DaskDMatrix(client, parts.X, parts.y, qid=parts.qid, **rows)
        f = _KeyedXGBoostObjective(objective if plan is None else plan.template, device=device, check_device=False,
                                   label_blocks=None if plan is None else plan.blocks)
        given: Any = train_kwargs.get("callbacks") or []
        train_kwargs["callbacks"] = [*given, _fitted_attributes_callback(f.key)]
        out = xgb_dask.train(client, xgboost_params(objective, params), dtrain, num_boost_round,
                             evals=dev or None, obj=f, **train_kwargs)
    finally:
        released(client, plan)
    stored = out["booster"].attr(_FITTED_ATTR)
    out["fitted_attributes"] = {k: np.asarray(v) for k, v in json.loads(stored).items()} if stored else {}
    if isinstance(objective, MultiObjective) and "label_costs_" in out["fitted_attributes"]:
        # an unmet bound was said on the workers (their logs): said here too, never silently
        warn_unmet_bounds(objective._settings, out["fitted_attributes"]["label_costs_"], stacklevel=2)
    return out


#: The booster attribute that brings the objective's fitted attributes (JSON) from the workers.
_FITTED_ATTR = "customobj_fitted_attributes"
#: On a worker: the objective callables of the trainings in this process, by key (weakly held).
_WORKER_OBJECTIVES: "weakref.WeakValueDictionary[str, _KeyedXGBoostObjective]" = weakref.WeakValueDictionary()


class _KeyedXGBoostObjective(XGBoostObjective):
    """An XGBoost objective callable that the fitted-attributes callback of the same training finds on the
    worker: Dask ships the objective and the callbacks as separate objects, so they meet by key."""

    def __init__(self, objective: Objective, *, device: "str | Device" = "cpu", check_device: bool = True,
                 key: str | None = None, label_blocks: LabelBlocks | None = None) -> None:
        super().__init__(objective, device=device, check_device=check_device)
        self.key = key or uuid.uuid4().hex
        # a MultiObjective's label columns: its partitions' blocks, found when the DMatrix is first seen
        self.label_blocks = label_blocks
        _WORKER_OBJECTIVES[self.key] = self

    def state_for(self, dtrain: Any) -> Any:
        if self.label_blocks is not None:
            assert isinstance(self.objective, MultiObjective)
            self.objective = local_objective(self.objective, self.label_blocks,
                                             dtrain.get_float_info("label_lower_bound"),
                                             dtrain.get_float_info("label_upper_bound"))[0]
            self.label_blocks = None  # this worker's columns found: the training DMatrix is the only one called
        return super().state_for(dtrain)

    def __getstate__(self) -> dict:
        return dict(super().__getstate__(), key=self.key, label_blocks=self.label_blocks)

    def __setstate__(self, state: dict) -> None:
        type(self).__init__(self, state["objective"], device=state.get("device", "cpu"), key=state["key"],
                            label_blocks=state.get("label_blocks"))


def _store_fitted_attributes(key: str, model: Any) -> None:
    """On a worker, after training: what the objective of key ``key`` learned on the training data
    (``Unbiased``: the propensities, the same on every worker) as a booster attribute, which the booster
    brings back to the client (and keeps when saved)."""
    f = _WORKER_OBJECTIVES.get(key)
    states = list(f._states.values()) if f is not None else []  # only the training DMatrix reaches f
    if f is not None and states:
        found = f.objective.fitted_attributes(states[-1].prep)
        model.set_attr(**{_FITTED_ATTR: json.dumps({k: np.asarray(v).tolist() for k, v in found.items()})})


def _fitted_attributes_callback(key: str) -> object:
    """The XGBoost callback that runs :func:`_store_fitted_attributes` after training (a local class:
    xgboost is imported on use; its method refers to the module's function, which workers import)."""
    from xgboost.callback import TrainingCallback

    class FittedAttributes(TrainingCallback):
        def after_training(self, model):
            _store_fitted_attributes(key, model)
            return model

    return FittedAttributes()


def train_lightgbm(client: Client | None, params: dict | None, X: object, y: object, qid_or_group: object,
                   objective: object, *, num_boost_round: int = 100, npartitions: int | None = None,
                   weight: object = None, eval_set: list | None = None, kind: str = "auto",
                   **fit_kwargs: Any) -> object:  # fit_kwargs: passed on to DaskLGBMRanker.fit as they are
    """Train ``lightgbm.DaskLGBMRanker`` with a customobj ``objective`` on query-aligned partitions.

    Data arguments as in :func:`train_xgboost`, plus per-row ``weight`` (customobj applies it:
    pointwise terms ``w_i``, pair terms ``(w_i + w_j) / 2``). ``params``: LightGBM parameters
    (``num_leaves``, ``learning_rate``, ``min_data_in_leaf``, ``metric``/``eval_at`` for
    ``eval_set``...), passed to the estimator; ``objective`` must not be among them.
    ``eval_set``: ``[(X, y, qid_or_group), ...]``. Other keyword arguments go to ``fit``.
    Returns the fitted ``DaskLGBMRanker`` (``.to_local()`` for a plain ``LGBMRanker``).
    An objective that estimates from all rows every round (``Unbiased`` without ``propensity=``, alone or
    inside: ``Objective.pools_rows``) is refused with a ``NotImplementedError`` naming :func:`train_xgboost`. A
    ``MultiObjective`` trains with every method (without label columns, the data's label is made its columns:
    the same objective, whose rows then carry their partitions): the round's costs and Gram matrix are
    summed over the workers through Dask ``Variable``s (``adapters._dask_collective``; each read waits at most
    ``COLLECTIVE_TIMEOUT_S``, then ``TimeoutError``), so the workers choose the one-machine weights; what they
    learned comes back as ``model.fitted_attributes_`` (``label_weights_``, ``label_costs_``, ...; ``{}`` for
    other objectives) and an unmet bound is said with a ``UserWarning`` here. The columns are split and
    checked as in :func:`train_xgboost`, and since
    ``lightgbm.dask`` hands the objective nothing but ``(y_true, y_pred, weight, group)``, the Dataset's
    weights carry each row's partition index (LightGBM reads them nowhere else with a custom objective;
    ``weight`` travels with the label columns and is applied by the objective as always).
    Early stopping (a ``lightgbm.early_stopping`` callback, ``early_stopping_round`` and its
    aliases) is refused with a ValueError before training: it hangs lightgbm.dask (module
    docstring); use :func:`lightgbm_history` to choose the round.
    """
    from lightgbm import DaskLGBMRanker

    objective = require_objective(objective, "train_lightgbm")
    _check_single_output(objective, "LightGBM")
    _check_no_positions(objective)
    labelled = has_label_columns(objective)
    # A MultiObjective sums its costs / Gram matrix through Dask Variables, its rows carrying their partitions
    # (_dask_collective); without label columns it is given some (below); anything else that pools rows
    # (Unbiased estimating) is refused.
    summed = isinstance(objective, MultiObjective) and not any(o.pools_rows for o in objective.objectives)
    if objective.pools_rows and not summed:
        raise NotImplementedError(lightgbm_refusal(objective))
    pooled_unlabelled = isinstance(objective, MultiObjective) and summed and objective.pools_rows and not labelled
    if isinstance(objective, MultiObjective) and pooled_unlabelled and converts_labels(objective):
        raise NotImplementedError(lightgbm_refusal(objective))
    params = dict(params or {})
    if "objective" in params:
        raise TypeError("train_lightgbm takes the customobj objective as objective=, not in params")
    if any(params.get(k) not in (None, 0) and not (isinstance(params.get(k), int) and params[k] < 0)
           for k in _LGB_EARLY_STOPPING) or _has_early_stopping(fit_kwargs.get("callbacks")):
        raise ValueError(_LGB_NO_EARLY_STOPPING)
    params.setdefault("verbose", -1)
    parts = _aligned(client, X, y, qid_or_group, npartitions, weight, kind)
    if pooled_unlabelled:
        assert isinstance(objective, MultiObjective)
        objective, labelled = data_label_columns(objective, parts), True
    fit: dict[str, Any] = dict(fit_kwargs)
    if eval_set:
        sets, groups = [], []
        for item in eval_set:
            if len(item) != 3:
                raise ValueError("eval_set entries must be (X, y, qid_or_group)")
            Xe, ye, ge = item
            pe = _aligned(client, Xe, ye, ge, npartitions, None, kind)
            sets.append((pe.X, pe.y))
            groups.append(pe.group)
        fit.update(eval_set=sets, eval_group=groups)
    f, weights, plan = lightgbm_sklearn_objective(objective), parts.weight, None
    if labelled and isinstance(objective, MultiObjective):  # label columns: the rows' partitions ride in the weights
        plan = split_labels(client, objective, parts)
        run = f"customobj-sum-{uuid.uuid4().hex}" if objective.pools_rows else None
        f = LabelledLightGBMObjective(plan.template, label_blocks=plan.blocks, collective_run=run)
        weights = plan.lower + PARTITION_WEIGHT_BASE
    model = DaskLGBMRanker(client=client, objective=f, n_estimators=num_boost_round, **params)
    try:
        model.fit(parts.X, parts.y, group=parts.group, sample_weight=weights, **fit)
    finally:
        released(client, plan)
        if plan is not None:
            release_collective(client, model.objective, f, len(plan.blocks.keys))
    back = model.objective  # lightgbm.dask sets the trained worker's callable on the model
    model.fitted_attributes_ = dict(getattr(back, "fitted", {}))
    if isinstance(objective, MultiObjective) and "label_costs_" in model.fitted_attributes_:
        # an unmet bound: said here, as on one machine (the workers' warnings stay in their logs)
        warn_unmet_bounds(objective._settings, model.fitted_attributes_["label_costs_"], stacklevel=2)
    return model


def lightgbm_history(model: lightgbm.Booster | lightgbm.LGBMModel, eval_set: list, *metrics: str) -> dict:
    """Validation curve of a LightGBM model after every round, on whole validation data.

    ``lightgbm.dask`` records each worker's own part of the validation data (and cannot stop
    early, see the module docstring); this scores the finished model round by round on the
    client: tree ``i``'s raw output is added to the running score, then every metric is taken
    over all queries. Cost: one pass over the validation rows per round.

    Parameters
    ----------
    model : a fitted ``DaskLGBMRanker`` / ``LGBMRanker`` / ``lightgbm.Booster``.
    eval_set : ``[(X, y, qid_or_group), ...]`` (numpy or Dask; brought to the client).
    *metrics : customobj metric names (default ``"ndcg@10"``).

    Returns
    -------
    dict
        ``{"valid_0": {"co_ndcg@10": [...], ...}, ...}`` (the shape of ``evals_result_``), one
        value per round; the best round of a higher-is-better curve ``c`` is ``argmax(c) + 1``.
    """
    from customobj.groups import Groups

    from ._dask_partition import _to_numpy_1d
    from .metrics import PREFIX, resolve_metrics

    found = resolve_metrics(metrics or ("ndcg@10",))
    from lightgbm import LGBMModel  # the model is LightGBM's: lightgbm is there

    booster = model.booster_ if isinstance(model, LGBMModel) else model  # estimators (Dask or not) hold a Booster
    rounds = booster.current_iteration()
    k = booster.num_model_per_iteration()
    if k != 1:
        raise ValueError(f"lightgbm_history ranks one score per row; the model has {k} outputs per row")
    out = {}
    for idx, item in enumerate(eval_set):
        if len(item) != 3:
            raise ValueError("eval_set entries must be (X, y, qid_or_group)")
        X, y, layout = item
        X = np.asarray(X.compute() if _is_dask(X) else X)
        y = np.asarray(_to_numpy_1d(y, "y"), dtype=np.float64)
        groups = Groups.from_ptr(query_ptr(layout, y.shape[0])[0], y.shape[0])
        scores = np.zeros(y.shape[0], dtype=np.float64)
        curves: dict[str, list[float]] = {PREFIX + m.name: [] for m in found}
        for i in range(rounds):
            scores += booster.predict(X, start_iteration=i, num_iteration=1, raw_score=True)
            for m in found:
                curves[PREFIX + m.name].append(float(m.func(scores, y, groups)))
        out[f"valid_{idx}"] = curves
    return out
