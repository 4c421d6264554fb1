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
- :func:`train_lightgbm` -> a fitted ``lightgbm.DaskLGBMRanker`` (``.to_local()`` gives an ``LGBMRanker``).

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

from . import configure_threads
from ._dask_partition import (
    QueryPartitions,
    _is_dask,
    place_partitions,
    query_partitions,
    query_ptr,
    repartition_by_query,
    scatter_by_query,
)
from ._data import require_objective
from .lightgbm import lightgbm_sklearn_objective
from .xgboost import xgboost_objective, xgboost_params

__all__ = [
    "repartition_by_query",
    "query_partitions",
    "query_ptr",
    "place_partitions",
    "scatter_by_query",
    "QueryPartitions",
    "train_xgboost",
    "train_lightgbm",
]

configure_threads()


def _n_workers(client):
    return max(1, len(client.scheduler_info(n_workers=-1)["workers"]))


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


def _check_single_output(objective, library):
    if objective.n_outputs != 1:
        raise ValueError(
            f"{type(objective).__name__} has {objective.n_outputs} outputs per row; the Dask ranking "
            f"path of {library} trains one score per row"
        )


def train_xgboost(client, params, X, y, qid_or_group, objective, *, num_boost_round=10,
                  npartitions=None, evals=None, kind="auto", **train_kwargs):
    """Train ``xgboost.dask`` with a customobj ``objective`` on query-aligned partitions.

    ``X``, ``y``: numpy or Dask (array / DataFrame); ``qid_or_group``: per-row query ids
    (contiguous) or query sizes. With Dask ``X`` and ``npartitions=None`` the existing
    partitions are kept and checked (ValueError if a query straddles two); otherwise the data is
    cut into ``npartitions`` (default: number of workers) partitions of whole queries.
    ``evals``: ``[(X, y, qid_or_group, name), ...]`` aligned the same way; evaluate with a native
    metric, e.g. ``params["eval_metric"] = "ndcg@10"`` (XGBoost reduces it over workers).
    ``params`` are completed by :func:`customobj.adapters.xgboost_params` (``base_score=0``, no default metric).
    Other keyword arguments go to ``xgboost.dask.train``. Returns its ``{"booster", "history"}``.
    """
    import xgboost.dask as xgb_dask

    require_objective(objective, "train_xgboost")
    _check_single_output(objective, "XGBoost")
    if "obj" in train_kwargs:
        raise TypeError("train_xgboost builds obj= from objective; do not pass obj")
    parts = _aligned(client, X, y, qid_or_group, npartitions, None, kind)
    dtrain = xgb_dask.DaskDMatrix(client, parts.X, parts.y, qid=parts.qid)
    dev = []
    for item in evals or ():
        if len(item) != 4:
            raise ValueError("evals entries must be (X, y, qid_or_group, name)")
        Xe, ye, ge, name = item
        pe = _aligned(client, Xe, ye, ge, npartitions, None, kind)
        dev.append((xgb_dask.DaskDMatrix(client, pe.X, pe.y, qid=pe.qid), name))
    return xgb_dask.train(
        client, xgboost_params(objective, params), dtrain, num_boost_round,
        evals=dev or None, obj=xgboost_objective(objective), **train_kwargs,
    )


def train_lightgbm(client, params, X, y, qid_or_group, objective, *, num_boost_round=100,
                   npartitions=None, weight=None, eval_set=None, kind="auto", **fit_kwargs):
    """Train ``lightgbm.DaskLGBMRanker`` with a customobj ``objective`` on query-aligned partitions.

    Data arguments as in :func:`train_xgboost`, plus per-row ``weight`` (customobj applies it:
    pointwise terms ``w_i``, pair terms ``(w_i + w_j) / 2``). ``params``: LightGBM parameters
    (``num_leaves``, ``learning_rate``, ``min_data_in_leaf``, ``metric``/``eval_at`` for
    ``eval_set``...), passed to the estimator; ``objective`` must not be among them.
    ``eval_set``: ``[(X, y, qid_or_group), ...]``. Other keyword arguments go to ``fit``.
    Returns the fitted ``DaskLGBMRanker`` (``.to_local()`` for a plain ``LGBMRanker``).
    """
    from lightgbm import DaskLGBMRanker

    require_objective(objective, "train_lightgbm")
    _check_single_output(objective, "LightGBM")
    params = dict(params or {})
    if "objective" in params:
        raise TypeError("train_lightgbm takes the customobj objective as objective=, not in params")
    params.setdefault("verbose", -1)
    parts = _aligned(client, X, y, qid_or_group, npartitions, weight, kind)
    fit = dict(fit_kwargs)
    if eval_set:
        sets, groups = [], []
        for item in eval_set:
            if len(item) != 3:
                raise ValueError("eval_set entries must be (X, y, qid_or_group)")
            pe = _aligned(client, *item, npartitions, None, kind)
            sets.append((pe.X, pe.y))
            groups.append(pe.group)
        fit.update(eval_set=sets, eval_group=groups)
    model = DaskLGBMRanker(client=client, objective=lightgbm_sklearn_objective(objective),
                           n_estimators=num_boost_round, **params)
    return model.fit(parts.X, parts.y, group=parts.group, sample_weight=parts.weight, **fit)
