"""What :class:`~customobj.adapters.callbacks.LineSearch` and
:class:`~customobj.adapters.exact_leaves.ExactLeaves` share: both change each new LightGBM tree's
leaves after LightGBM has scored it, so both track the training and validation scores the objective
and the metrics must see (the Datasets' score offsets, :mod:`~customobj.adapters._score_offsets`),
claim the data sets, and rewrite the evaluation LightGBM recorded with the old leaves.

What they refuse, at their first call and before any leaf changes (ValueError unless said): a
training whose recorded metrics or trained model would not be the one they describe. That is a
boosting type other than gbdt / goss (DART rescales earlier trees after each round: the tracked
scores and the step would not be the model's; LightGBM itself refuses a custom objective in rf
mode), training data other than the callback's (labels, weights or query groups), a validation set
whose raw features it lacks or that do not match (``valid_X``), an evaluation metric it cannot
recompute for the new leaves, a training Dataset an earlier training corrected, and two such
callbacks in one training. Continuing from ``init_model`` is supported: LightGBM puts the first
model's predictions in the Datasets' initial scores, where the tracking starts.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import weakref
from collections.abc import Sequence

import numpy as np

from customobj.groups import Groups

from ._data import ranking_scores
from ._score_offsets import record_of
from .lightgbm import trained_objective
from .metrics import lookup_metric

if TYPE_CHECKING:  # the libraries' types, for the checker only
    import lightgbm
    from lightgbm.callback import CallbackEnv

    from customobj.objectives.base import Objective
    from customobj.objectives.base import Prepared

__all__ = ["ScoreTracking", "claim_datasets", "require_customobj_training", "require_additive_boosting", "valid_X_list"]

#: LightGBM's names of the boosting type, and the types whose model is the plain sum of its trees
#: as each was built (the callbacks' premise: the new tree is added to the scores, nothing else moves).
_BOOSTING_ALIASES = ("boosting", "boosting_type", "boost")
_ADDITIVE_BOOSTING = ("gbdt", "gbrt", "goss")


def require_customobj_training(env: CallbackEnv, callback: object) -> Objective:
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
    mine = getattr(callback, "objective", None)
    if mine is not None and trained != mine:
        raise ValueError(
            f"{who} was given {mine!r} but the booster trains {trained!r}: pass {who} the "
            "objective given to lightgbm_objective"
        )
    return trained


def _boosting(params):
    for key in _BOOSTING_ALIASES:
        if params and key in params:
            return str(params[key]).strip().lower()
    return "gbdt"  # LightGBM's default


def require_additive_boosting(params: dict | None, who: str) -> None:
    """ValueError unless ``params`` boost additively (gbdt / goss): see the module docstring."""
    kind = _boosting(params)
    if kind not in _ADDITIVE_BOOSTING:
        raise ValueError(
            f"{who} supports boosting 'gbdt' and 'goss' only, got params boosting={kind!r}: DART rescales "
            "earlier trees after each round, so the scores it tracks, its leaf step and the metrics it "
            "records would not be the model's"
        )


def valid_X_list(valid_X) -> list:
    """``valid_X`` (``None`` or a sequence of feature matrices) as a list; TypeError otherwise."""
    if valid_X is None:
        return []
    if isinstance(valid_X, (str, bytes)) or not isinstance(valid_X, Sequence):
        raise TypeError(f"valid_X must be a list of feature matrices, got {type(valid_X).__name__}")
    return list(valid_X)


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
    """Scores (with every changed tree) of one data set, and its raw features."""

    __slots__ = ("dataset", "X", "scores", "labels_groups")

    def __init__(self, dataset, X):
        self.dataset, self.X, self.scores, self.labels_groups = dataset, X, None, None


def claim_datasets(booster: lightgbm.Booster, who: str) -> None:
    """At a callback's first round: claim the training Dataset's score corrections for ``booster``.

    LineSearch / ExactLeaves rescale or rewrite leaves after LightGBM has updated its scores, and
    record the difference as the Dataset's score offset, which the objective and metrics add. Refused
    (ValueError): a second such callback in the same training (each would correct LightGBM's scores
    for its own leaves only, and the second would take the first's offset for an earlier training's),
    and a Dataset reused from an earlier training with these callbacks (its offset would leak into this
    round's gradients, which already included it). Validation sets only get their offsets cleared.
    """
    record = record_of(booster.train_set, create=True)
    if record.claimed_by_booster(booster):
        raise ValueError(
            f"{who}: another callback of this training (LineSearch or ExactLeaves) already changes its trees; "
            "they cannot be combined in one training (each corrects LightGBM's scores for its own leaves "
            "only): use one of them")
    if record.offset is not None:
        raise ValueError(
            f"{who}: this training Dataset carries score corrections from an earlier training with "
            "ExactLeaves / LineSearch, and this round's gradients already included them: build a new "
            "lightgbm.Dataset for each training with these callbacks")
    record.claimed_by = weakref.ref(booster)
    for ds in booster.valid_sets:
        valid = record_of(ds)
        if valid is not None:
            valid.offset = None  # an earlier training's corrections: not this model's


class ScoreTracking:
    """Score tracking and evaluation rewriting of a callback that changes LightGBM's new trees.

    Subclasses set ``objective`` and ``valid_X`` and call :meth:`_set_training_data` in ``__init__``,
    call :meth:`_begin` at their first call, and set ``_uncorrected``.
    """

    #: What changed in the trees, for messages: ExactLeaves sets its own words.
    _uncorrected = "the rescaled trees"
    objective: Objective
    prep: Prepared

    def _set_training_data(self, X, y, group, weight) -> None:
        """``X`` and the prepared ``y``, ``group``, ``weight`` (validated by ``self.objective``), and the
        labels, weights and query boundaries as LightGBM stores them, to check at the first call
        that the training Dataset holds the same (no query groups is one query, as for the objective)."""
        shape = getattr(X, "shape", None)
        if shape is None or len(shape) != 2:
            raise TypeError(f"X must be a 2-D feature matrix (numpy, pandas or scipy), got {type(X).__name__}")
        self.prep = prep = self.objective.prepare(y, group, weight)  # validates y, group, weight
        if shape[0] != prep.n_rows:
            raise ValueError(f"X has {shape[0]} rows but y has {prep.n_rows}")
        self.X = X
        self._y32 = prep.labels.astype(np.float32)
        self._w32 = None if prep.weight is None else prep.weight.astype(np.float32)
        self._ptr = np.asarray(prep.ptr, dtype=np.int64)

    def _check_training_data(self, dataset) -> None:
        who = type(self).__name__
        label = dataset.get_label()
        if label is None or not np.array_equal(np.asarray(label, dtype=np.float32), self._y32):
            raise ValueError(f"{who} was given labels y other than the training Dataset's: pass the "
                             "training labels (the rows in the Dataset's order)")
        n = self._y32.shape[0]
        weight = dataset.get_weight()
        mine = np.ones(n, np.float32) if self._w32 is None else self._w32
        theirs = np.ones(n, np.float32) if weight is None or len(weight) == 0 else np.asarray(weight, np.float32)
        if not np.array_equal(mine, theirs):
            raise ValueError(f"{who} was given weight other than the training Dataset's: pass the Dataset's "
                             "row weights as weight= (or none to both), or it would search another loss")
        bounds = dataset.get_field("group")
        ptr = np.array([0, n], np.int64) if bounds is None or len(bounds) == 0 else np.asarray(bounds, np.int64)
        if not np.array_equal(ptr, self._ptr):
            raise ValueError(f"{who} was given query groups (group) other than the training Dataset's: pass "
                             "the Dataset's group sizes")

    def _features(self, booster):
        """``valid_X`` checked against the training's validation sets (and ``X`` against the model):
        one raw feature matrix per validation set, with its rows and the model's columns."""
        who = type(self).__name__
        width = booster.num_feature()
        if self.X.shape[1] != width:
            raise ValueError(f"{who}: X has {self.X.shape[1]} features (columns) but the training Dataset has {width}")
        names = list(booster.name_valid_sets)
        if len(self.valid_X) > len(names):
            raise ValueError(f"{who}: valid_X has {len(self.valid_X)} feature matrices but the training has "
                             f"{len(names)} validation set(s) (valid_sets without the training set)")
        out = []
        for idx, (ds, name) in enumerate(zip(booster.valid_sets, names)):
            given = idx < len(self.valid_X)
            X = self.valid_X[idx] if given else _raw_features(ds)
            what = f"valid_X[{idx}]" if given else f"the raw data of validation set {name!r}"
            if X is None:
                raise ValueError(
                    f"{who} needs the raw features of validation set {name!r} to record its metrics for "
                    f"{self._uncorrected}: pass valid_X=[...] (in the order of valid_sets, without the "
                    "training set) or build it with free_raw_data=False")
            shape = getattr(X, "shape", None)
            if shape is None or len(shape) != 2:
                raise TypeError(f"{who}: {what} must be a 2-D feature matrix, got {type(X).__name__}")
            if shape[0] != ds.num_data():
                raise ValueError(f"{who}: {what} has {shape[0]} rows but validation set {name!r} has {ds.num_data()}")
            if shape[1] != width:
                raise ValueError(f"{who}: {what} has {shape[1]} features (columns) but the model has {width}")
            out.append(X)
        return out

    def _check_metrics(self, booster, results) -> None:
        """Every metric LightGBM evaluates must be one this callback can recompute for the new leaves."""
        for entry in results or ():
            data_name, metric_name = tuple(entry)[:2]
            try:
                lookup_metric(metric_name)  # customobj's co_ names and LightGBM's ndcg@k / map@k
            except ValueError:
                raise ValueError(
                    f"{type(self).__name__} cannot recompute metric {metric_name!r} (on {data_name!r}) for "
                    f"{self._uncorrected}, so LightGBM would record values that are not the model's: set "
                    "params 'metric': 'None' and pass feval=customobj.adapters.lightgbm_metric(...)") from None

    def _begin(self, env, k):
        """First call, before any leaf changes: every check, then claim the Datasets and start tracking."""
        who = type(self).__name__
        booster = env.model
        require_customobj_training(env, self)
        require_additive_boosting(env.params, who)
        self._check_training_data(booster.train_set)
        valid_X = self._features(booster)
        self._check_metrics(booster, env.evaluation_result_list)
        claim_datasets(booster, who)
        self._track(booster, env.begin_iteration, booster.current_iteration() - 1, k, valid_X)

    def _tree_output(self, booster, X, it, k):
        leaves = np.asarray(booster.predict(X, start_iteration=it, num_iteration=1, pred_leaf=True))
        return leaves.reshape(leaves.shape[0], k).astype(np.int64)

    def _track(self, booster, begin, it, k, valid_X):
        """Start tracking the scores before round ``it``: the Dataset's initial scores (its
        ``init_score``, or with ``init_model`` that model's predictions, which LightGBM puts there)
        plus the trees this training grew before ``it`` (none when called at the first round)."""
        def scores_before(dataset, X):
            n = X.shape[0]
            shape = (n,) if k == 1 else (n, k)
            s = _init_score(dataset, shape)
            if it > begin:
                s += np.asarray(booster.predict(X, raw_score=True, start_iteration=begin,
                                                num_iteration=it - begin)).reshape(shape)
            return s

        self._train = _Tracked(booster.train_set, self.X)
        self._train.scores = scores_before(booster.train_set, self.X)
        self._valid = []
        for ds, X in zip(booster.valid_sets, valid_X):
            tr = _Tracked(ds, X)
            tr.scores = scores_before(ds, X)
            self._valid.append(tr)

    def _rewrite_evaluation(self, booster, results):
        by_name = {getattr(booster, "_train_data_name", "training"): self._train}
        for name, tr in zip(booster.name_valid_sets, self._valid):
            by_name[name] = tr
        for pos, entry in enumerate(results):
            data_name, metric_name = tuple(entry)[:2]
            tr = by_name[data_name]  # every data set is tracked and every metric known (_begin)
            labels, groups = self._labels_groups(tr)
            value = float(lookup_metric(metric_name).func(ranking_scores(tr.scores), labels, groups))
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
