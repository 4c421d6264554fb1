"""LightGBM callbacks: :class:`LineSearch`, the step-size rule of QBRank (Zheng et al. 2007, section 3:
the step ``s_m`` of each tree is found by line search on the objective).

Learning curves need no callback of ours: ``lightgbm.record_evaluation`` records what
``customobj.adapters.lightgbm_metric`` computes.
"""
from __future__ import annotations

import warnings

import numpy as np

from customobj.groups import Groups

from ._data import ranking_scores, require_objective
from ._score_offsets import SCORE_OFFSETS, ScoreOffsets
from .lightgbm import trained_objective
from .metrics import lookup_metric

__all__ = ["LineSearch", "ExactLeaves", "require_customobj_training"]


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


class LineSearch:
    """After each boosting round, rescale the new tree(s) by the step that minimises the exact loss.

    With ``t`` the tree as LightGBM built it (leaf values already times ``learning_rate``) and
    ``s`` the training scores before it, ``rho`` minimises ``phi(rho) = L(s + rho t)`` by 1-D
    Newton steps from ``rho = 1`` (``phi' = g . t``; ``phi'' = t' H t`` from the diagonal hessian
    and, for pairwise losses, the pair couplings ``h_ij``), each step halved until the loss
    decreases (Armijo backtracking), ``rho >= 0``. The leaves are then set to
    ``shrinkage * rho * value`` with ``Booster.set_leaf_output``. QBRank (Zheng et al. 2007):
    ``learning_rate=1`` in the LightGBM params and ``LineSearch(..., shrinkage=eta)``.
    With ``shrinkage=1`` the training loss after each round is never above the loss of the tree
    as LightGBM built it (``loss_unscaled``). Multiclass rounds (``K`` trees) share one ``rho``.

    Scores LightGBM cannot see: LightGBM's own training and validation scores keep the trees as
    built (``set_leaf_output`` changes the model, not those buffers). So this callback

    - keeps the corrected training scores and stores ``corrected - LightGBM's`` as a score offset
      that :func:`customobj.adapters.lightgbm_objective` adds to ``preds`` every round (the objective must
      be an ``customobj.adapters.lightgbm_objective``) and :func:`customobj.adapters.lightgbm_metric` adds too;
    - does the same for each validation set whose raw features it has (``valid_X``, in the order
      of ``valid_sets`` without the training set, or the Dataset's own ``data`` when built with
      ``free_raw_data=False``);
    - runs before the recorders (``order = 5``) and rewrites this round's evaluation results in
      place for every metric name ``customobj.metrics.get_metric`` knows (LightGBM's native
      ``ndcg@k`` / ``map@k`` names included), so ``record_evaluation``, ``log_evaluation`` and
      ``early_stopping`` see the rescaled model. Other native metrics (``l2``, ...) cannot be
      corrected: a warning says so; use ``"metric": "None"`` plus ``feval=lightgbm_metric(...)``.

    Parameters
    ----------
    objective : customobj objective
        The objective being trained (the loss to search on).
    X, y, group : array-like
        The training features (as given to the Dataset), labels and query sizes.
    weight : array-like, optional
        Row weights (as in the Dataset).
    shrinkage : float, default 1
        Factor applied to the optimal step (``eta``).
    valid_X : list of array-like, optional
        Raw features of the validation sets.
    max_iter, tol : int, float
        Newton iterations and relative tolerance on ``rho``.

    Attributes
    ----------
    rhos, loss, loss_unscaled : list of float
        One entry per round: the step, the loss at it, and the loss of the tree as built.

    Notes
    -----
    Refused at the first call (TypeError, before any tree changes): a native objective
    (``"objective": "lambdarank"``: the trees would be rescaled by a loss the booster never
    sees), a custom objective that is not ``lightgbm_objective``, or training through the
    scikit-learn estimators (see :func:`require_customobj_training`); an objective other than the
    one being trained is a ValueError.

    Not supported: ``lightgbm.cv``; training continued from ``init_model`` works (earlier trees
    are taken as they are).
    """

    order = 5
    before_iteration = False

    def __init__(self, objective, X, y, group=None, *, weight=None, shrinkage=1.0, valid_X=None,
                 max_iter=20, tol=1e-6):
        self.objective = require_objective(objective, "LineSearch")
        self.prep = objective.prepare(y, group, weight)
        self.X = X
        if not (np.isfinite(shrinkage) and shrinkage > 0):
            raise ValueError(f"shrinkage must be > 0, got {shrinkage}")
        self.shrinkage = float(shrinkage)
        self.valid_X = list(valid_X) if valid_X is not None else []
        self.max_iter, self.tol = int(max_iter), float(tol)
        self.rhos, self.loss, self.loss_unscaled = [], [], []
        self._train = None
        self._valid = None
        self._warned = set()

    # --- line search -------------------------------------------------------------------------
    def _phi(self, s, t, rho, buf):
        np.multiply(t, rho, out=buf)
        buf += s
        return self.objective.loss_prepared(buf, self.prep)

    def _derivatives(self, s, t, rho, buf):
        np.multiply(t, rho, out=buf)
        buf += s
        g, h = self.objective.grad_hess_prepared(buf, self.prep, self._g, self._h)
        d1 = float(np.dot(g.ravel(), t.ravel()))
        d2 = float(np.dot(h.ravel(), (t * t).ravel()))
        if self.objective.pairwise and t.ndim == 1:
            couplings = self.objective.pair_couplings_prepared(buf, self.prep)
            if couplings is not None and len(couplings[0]):
                i, j, c = couplings
                exact = d2 - 2.0 * float(np.dot(c, t[i] * t[j]))
                if exact > 0:
                    d2 = exact  # diag(h) alone over-counts pair curvature: slower, never wrong
        return d1, d2

    def search(self, s: np.ndarray, t: np.ndarray) -> tuple[float, float, float]:
        """``(rho, loss at rho, loss at rho = 1)`` for direction ``t`` from scores ``s``.

        Damped Newton from ``rho = 1`` (the step LightGBM took), ``rho`` kept ``>= 0``, Armijo
        acceptance. The OLE booster's ``customobj.ole.training.line_search`` starts from
        ``rho = 0`` and only asks for no increase; see there why the two are not one function.
        """
        buf = np.empty_like(s)
        self._g, self._h = np.empty_like(s), np.empty_like(s)
        rho = 1.0
        phi = phi1 = self._phi(s, t, rho, buf)
        for _ in range(self.max_iter):
            d1, d2 = self._derivatives(s, t, rho, buf)
            if d1 == 0.0 or not np.isfinite(d1):
                break
            delta = -d1 / d2 if d2 > 0 and np.isfinite(d2) else -np.sign(d1) * max(1.0, abs(rho))
            step, accepted = 1.0, False
            while step > 1e-10:
                cand = max(rho + step * delta, 0.0)
                phic = self._phi(s, t, cand, buf)
                if phic <= phi + 1e-4 * (cand - rho) * d1:
                    accepted = True
                    break
                step *= 0.5
            if not accepted or cand == rho:
                break
            converged = abs(cand - rho) <= self.tol * max(1.0, abs(rho))
            rho, phi = cand, phic
            if converged:
                break
        return rho, phi, phi1

    # --- LightGBM callback -------------------------------------------------------------------
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

    def __call__(self, env: object) -> None:
        booster = env.model
        k = booster.num_model_per_iteration()
        it = booster.current_iteration() - 1
        if self._train is None:
            require_customobj_training(env, self)  # before any tree is changed
            claim_datasets(booster, SCORE_OFFSETS, "LineSearch")
            self._start(booster, it, k)
        leaves = self._tree_output(booster, self.X, it, k)
        values = []
        for c in range(k):
            tree = it * k + c
            n_leaves = int(leaves[:, c].max()) + 1
            values.append(np.array([booster.get_leaf_output(tree, leaf) for leaf in range(n_leaves)]))
        t = np.stack([values[c][leaves[:, c]] for c in range(k)], axis=1)
        if k == 1:
            t = t[:, 0]
        s = self._train.scores
        rho, phi, phi1 = self.search(s, t)
        scale = self.shrinkage * rho
        if scale != rho:
            phi = self._phi(s, t, scale, np.empty_like(s))
        self.rhos.append(rho)
        self.loss.append(phi)
        self.loss_unscaled.append(phi1)
        for c in range(k):
            for leaf, v in enumerate(values[c]):
                booster.set_leaf_output(it * k + c, leaf, scale * v)
        s += scale * t
        SCORE_OFFSETS.add(booster.train_set, (scale - 1.0) * t)
        for tr in self._valid:
            if tr.scores is None:
                continue
            vleaves = self._tree_output(booster, tr.X, it, k)
            tv = np.stack([values[c][vleaves[:, c]] for c in range(k)], axis=1)
            if k == 1:
                tv = tv[:, 0]
            tr.scores += scale * tv
            SCORE_OFFSETS.add(tr.dataset, (scale - 1.0) * tv)
        if env.evaluation_result_list:
            self._rewrite_evaluation(booster, env.evaluation_result_list)

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
    #: the uncorrected values ignore). ExactLeaves borrows ``_warn_once`` with its own words.
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


from .exact_leaves import ExactLeaves  # noqa: E402  (its own module; it reuses LineSearch's tracking)
