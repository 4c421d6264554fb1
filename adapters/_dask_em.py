"""Regression EM on Dask (:func:`train_regression_em`): one examination estimate from all workers' rows.

Wang et al.'s EM (WSDM 2018, sec. 4; :class:`customobj.RegressionEM`) alternates an E-step, per row,
a position-wise M-step, ``theta_k`` = the sums of ``w P(E=1 | c)`` over the rows at position ``k``
divided by the sums of ``w`` (:func:`customobj.clicks.regression_em.m_step_theta`), and more trees of
the relevance model fitted to the posteriors. Here the rows stay in partitions on the workers: the
E-step runs block by block where the rows are, the per-position sums are added over all blocks
(a Dask reduction: a few numbers per position reach the client) and every block reads the same
``theta``; the trees grow with ``xgboost.dask`` (its histograms summed over the workers), and the
relevance ``gamma`` comes from ``xgboost.dask.predict``. So the estimate is the one of all rows, as
``RegressionEM.fit`` gives on one machine.

XGBoost only: LightGBM's distributed learner finds its histogram bins on each worker's data and
would need ``init_model`` continuation through ``lightgbm.dask`` every EM iteration.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from customobj.clicks.regression_em import (_LOGISTIC, XGBOOST, RegressionEM, checked_rows, e_step, m_step_theta,
                                            relevance, xgboost_em_params)

from ._dask_partition import _is_dask, _n_workers, _to_numpy_1d, scatter_by_query
from .xgboost import XGBoostObjective

__all__ = ["train_regression_em"]


def _posterior(clicks, pos, gamma, theta, which):
    """One block's E-step: ``P(E=1 | c)`` (``which`` 0) or ``P(R=1 | c)`` (1), Wang et al. eq. 4."""
    return e_step(clicks, theta[pos], gamma)[which]


def _stacked(block):
    """A row block twice: its rows as relevant, then as not relevant (the soft labels' two copies)."""
    return np.concatenate([block, block])


def _stacked_labels(clicks):
    return np.concatenate([np.ones(clicks.shape[0]), np.zeros(clicks.shape[0])])


def _stacked_weights(w, rel):
    """The two copies' weights: ``w P(R=1)`` and ``w (1 - P(R=1))``."""
    return np.concatenate([w * rel, w * (1.0 - rel)])


def _relevance_block(margin):
    return relevance(np.asarray(margin, dtype=np.float64))


def train_regression_em(client: Any, em: RegressionEM, X: Any, y: Any, position: Any, *, first_position: int = 0,
                        sample_weight: Any = None, npartitions: int | None = None) -> RegressionEM:
    """Fit ``em`` (a :class:`customobj.RegressionEM` with ``library="xgboost"``) on Dask workers; returns it,
    fitted as ``em.fit`` would on one machine: ``propensity_`` and ``position_bias_`` are estimated from
    all workers' rows, ``ranker_`` is an ``xgboost.Booster``.

    ``X``: numpy (sliced into ``npartitions`` blocks, default one per worker, scattered to the workers)
    or a Dask array / DataFrame (its row blocks kept). ``y`` (clicks), ``position`` and ``sample_weight``: one value per
    row, checked as ``fit`` checks them (they pass through the client once; the features never do).
    Rows need not be grouped by session: the model is pointwise. Each EM iteration runs one
    ``xgboost.dask.train`` (continuing the trees) and one ``xgboost.dask.predict``.
    """
    import dask.array as da
    import xgboost.dask as xgb_dask

    if not isinstance(em, RegressionEM):
        raise TypeError(f"em must be a customobj.RegressionEM, got {type(em).__name__}")
    lib, n_iter, n_est, lr, leaves, min_child, seed, extra = em._checked()
    if em.relevance_model is not None:
        raise NotImplementedError("train_regression_em grows the default relevance model (xgboost.dask); "
                                  f"relevance_model={type(em.relevance_model).__name__} trains on one machine: em.fit")
    if lib != XGBOOST:
        raise NotImplementedError(
            f"train_regression_em trains RegressionEM(library='xgboost') on Dask; got library={em.library!r}: "
            "set library='xgboost' (one estimate from all workers' rows), or fit on one machine with em.fit")
    y = _to_numpy_1d(y, "y") if _is_dask(y) else y
    position = _to_numpy_1d(position, "position") if _is_dask(position) else position
    weight = _to_numpy_1d(sample_weight, "sample_weight") if _is_dask(sample_weight) else sample_weight
    if hasattr(X, "to_dask_array"):  # a Dask DataFrame: its partitions' lengths, so the rows can be checked
        X = X.to_dask_array(lengths=True)
    clicks, pos, w = checked_rows(X, y, position, first_position, weight)
    if _is_dask(X):
        Xd, rows = X, X.chunks[0]
    else:
        # one row per "query" (the model is pointwise): the numpy rows sliced and scattered to the workers
        parts = scatter_by_query(client, X, clicks, np.ones(clicks.shape[0], dtype=np.int64),
                                 npartitions or _n_workers(client), weight=w, kind="group")
        Xd, rows = parts.X, parts.y.chunks[0]
    c_d, p_d, w_d = (da.from_array(a, chunks=(rows,)) for a in (clicks, pos, w))
    n_pos = int(pos.max(initial=-1)) + 1
    count = np.bincount(pos, weights=w, minlength=n_pos)
    theta = np.full(n_pos, 0.5)
    gamma = da.full(clicks.shape[0], 0.5, chunks=(rows,))
    # each row block stacked on itself where it is (relevant copy, then non-relevant): da.concatenate([Xd, Xd])
    # made blocks that alias another array's blocks, which the scheduler saw again each iteration with a
    # different task spec for the same key and warned of (dask/dask#9888, "Detected different run_spec")
    twice = tuple(2 * r for r in rows)
    X2 = Xd.map_blocks(_stacked, chunks=(twice,) + Xd.chunks[1:], dtype=Xd.dtype).persist()
    labels2 = c_d.map_blocks(_stacked_labels, chunks=(twice,), dtype=np.float64).persist()
    params = xgboost_em_params(lr, leaves, min_child, seed, extra)
    f = XGBoostObjective(_LOGISTIC)
    model = None
    for _ in range(n_iter):
        exam = da.map_blocks(_posterior, c_d, p_d, gamma, theta, 0, dtype=np.float64)
        rel = da.map_blocks(_posterior, c_d, p_d, gamma, theta, 1, dtype=np.float64)
        # the M-step's sums over all rows, then the same theta everywhere
        theta = m_step_theta(da.bincount(p_d, weights=w_d * exam, minlength=n_pos).compute(), count)
        weight2 = da.map_blocks(_stacked_weights, w_d, rel, chunks=(twice,), dtype=np.float64)
        dtrain = xgb_dask.DaskDMatrix(client, X2, labels2, weight=weight2)
        model = xgb_dask.train(client, params, dtrain, n_est, obj=f, xgb_model=model)["booster"]
        margin = xgb_dask.predict(client, model, Xd, output_margin=True)
        gamma = da.map_blocks(_relevance_block, margin, dtype=np.float64).persist()
    return em._fitted(lib, model, theta)
