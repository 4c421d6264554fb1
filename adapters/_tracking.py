"""What :class:`~customobj.adapters.callbacks.LineSearch` and
:class:`~customobj.adapters.exact_leaves.ExactLeaves` share: both change each new LightGBM tree's
leaves after LightGBM has scored it, so both track the training and validation scores the objective
and the metrics must see (customobj's :mod:`~customobj.adapters._score_offsets`), claim the data
sets, and rewrite the evaluation LightGBM recorded with the old leaves."""
from __future__ import annotations

import warnings

import numpy as np

from customobj.groups import Groups

from ._data import ranking_scores
from ._score_offsets import ScoreOffsets
from .lightgbm import trained_objective
from .metrics import lookup_metric

__all__ = ["ScoreTracking", "claim_datasets", "require_customobj_training"]


def require_customobj_training(env: object, callback: object) -> object:
    """The customobj objective a LightGBM training runs through :func:`customobj.adapters.lightgbm_objective`
    with ``lightgbm.train``, checked for a callback that changes trees by that objective's loss
    (``LineSearch``, ``ExactLeaves``). Call it at the callback's first call.

    Raises TypeError when the booster trains a native objective, a custom objective that is not
    a customobj adapter, or runs through the scikit-learn estimators (LightGBM does not hand their
    objective the Dataset, so score corrections cannot reach it); ValueError when the objective
    differs from ``callback.objective``.
    """
    who = type(callback).__name__
    trained = trained_objective(env, who)
    if trained.api != "train":
        raise TypeError(
            f"{who} works with lightgbm.train only: through LGBMRanker / LGBMRegressor LightGBM does not "
            f"hand the objective its Dataset, so the score corrections {who} makes cannot reach it; train "
            "with lightgbm.train(params={'objective': customobj.adapters.lightgbm_objective(...)}, ...)"
        )
    mine = getattr(callback, "objective", None)
    if mine is not None and trained.objective != mine:
        raise ValueError(
            f"{who} was given {mine!r} but the booster trains {trained.objective!r}: pass {who} the "
            "objective given to lightgbm_objective"
        )
    return trained.objective


def _raw_features(dataset):
    data = getattr(dataset, "data", None)
    if data is None or isinstance(data, (str, bytes)) or hasattr(data, "__fspath__"):
        return None
    return data


def _init_score(dataset, shape):
    init = dataset.get_init_score()
    if init is None or len(init) == 0:
        return np.zeros(shape, dtype=np.float64)
    init = np.asarray(init, dtype=np.float64)
    if len(shape) == 2 and init.ndim == 1:  # LightGBM's flat class-major layout
        init = init.reshape(shape, order="F")
    return init.reshape(shape).copy()


class _Tracked:
    """Scores (with every rescaled tree) of one data set whose raw features we can predict on."""

    __slots__ = ("dataset", "X", "scores", "labels_groups")

    def __init__(self, dataset, X):
        self.dataset, self.X, self.scores, self.labels_groups = dataset, X, None, None


def claim_datasets(booster: object, offsets: "ScoreOffsets", who: str) -> None:
    """At a callback's first round: refuse a training Dataset that still carries score corrections.

    LineSearch / ExactLeaves rescale or rewrite leaves after LightGBM has updated its scores, and
    record the difference as a per-Dataset offset the objective and metrics add. A Dataset reused
    from an earlier training with these callbacks still carries that training's offset, which this
    round's gradients already included: refuse it. Validation sets only get their offsets cleared.
    """
    if booster.train_set in offsets:
        raise ValueError(
            f"{who}: this training Dataset carries score corrections from an earlier training with "
            "ExactLeaves / LineSearch, and this round's gradients already included them: build a new "
            "lightgbm.Dataset for each training with these callbacks")
    for ds in booster.valid_sets:
        offsets.discard(ds)  # an earlier training's corrections: not this model's


class ScoreTracking:
    """Score tracking and evaluation rewriting of a callback that changes LightGBM's new trees
    (subclasses set ``X``, ``prep``, ``valid_X``, ``_warned`` and ``_uncorrected``)."""

    def _tree_output(self, booster, X, it, k):
        leaves = np.asarray(booster.predict(X, start_iteration=it, num_iteration=1, pred_leaf=True))
        return leaves.reshape(leaves.shape[0], k).astype(np.int64)

    def _start(self, booster, it, k):
        def scores_before(dataset, X):
            n = X.shape[0]
            shape = (n,) if k == 1 else (n, k)
            s = _init_score(dataset, shape)
            if it > 0:
                s += np.asarray(booster.predict(X, raw_score=True, num_iteration=it)).reshape(shape)
            return s

        self._train = _Tracked(booster.train_set, self.X)
        if self.X.shape[0] != self.prep.n_rows:
            raise ValueError(f"X has {self.X.shape[0]} rows but y has {self.prep.n_rows}")
        self._train.scores = scores_before(booster.train_set, self.X)
        self._valid = []
        for idx, ds in enumerate(booster.valid_sets):
            X = self.valid_X[idx] if idx < len(self.valid_X) else _raw_features(ds)
            tr = _Tracked(ds, X)
            if X is not None:
                tr.scores = scores_before(ds, X)
            self._valid.append(tr)

    def _rewrite_evaluation(self, booster, results):
        by_name = {getattr(booster, "_train_data_name", "training"): self._train}
        for name, tr in zip(booster.name_valid_sets, self._valid):
            by_name[name] = tr
        for pos, entry in enumerate(results):
            data_name, metric_name = tuple(entry)[:2]
            tr = by_name.get(data_name)
            try:
                metric = lookup_metric(metric_name)  # customobj's co_ names and LightGBM's ndcg@k / map@k
            except ValueError:
                metric = None
            if tr is None or tr.scores is None or metric is None:
                self._warn_once(data_name, metric_name)
                continue
            labels, groups = self._labels_groups(tr)
            value = float(metric.func(ranking_scores(tr.scores), labels, groups))
            if hasattr(entry, "metric_value"):  # lightgbm >= 4.7: EvalResult (its _replace is broken)
                results[pos] = type(entry)(entry.dataset_name, entry.metric_name, value, entry.maximize,
                                           entry.metric_std_dev)
            else:
                results[pos] = (data_name, metric_name, value, *tuple(entry)[3:])  # older: plain tuple

    @staticmethod
    def _labels_groups(tr):
        if tr.labels_groups is None:
            labels = np.asarray(tr.dataset.get_label(), dtype=np.float64)
            ptr = tr.dataset.get_field("group")
            groups = Groups.from_ptr(np.asarray(ptr, dtype=np.int64)) if ptr is not None else Groups.from_sizes([labels.size])
            tr.labels_groups = (labels, groups)
        return tr.labels_groups

    #: What the warning about an evaluation this callback cannot correct names: (what changed, what
    #: the uncorrected values ignore). ExactLeaves sets its own words.
    _uncorrected = ("the rescaled trees", "the line search")

    def _warn_once(self, data_name, metric_name):
        key = (data_name, metric_name)
        if key in self._warned:
            return
        self._warned.add(key)
        changed, ignored = self._uncorrected
        warnings.warn(
            f"{type(self).__name__} cannot correct {metric_name!r} on {data_name!r} for {changed} "
            "(unknown metric name, or no raw features for that data set: pass valid_X=); its values "
            f"ignore {ignored}",
            RuntimeWarning,
            stacklevel=2,
        )
