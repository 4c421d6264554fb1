"""LightGBM callbacks: :class:`LineSearch`, the step-size rule of QBRank (Zheng et al. 2007, section 3:
the step ``s_m`` of each tree is found by line search on the objective).

Learning curves need no callback of ours: ``lightgbm.record_evaluation`` records what
``customobj.adapters.lightgbm_metric`` computes.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from customobj.groups import GroupLike
from customobj.objectives.base import Objective

from ._data import require_objective
from ._score_offsets import record_of
from ._tracking import ScoreTracking, claim_datasets, require_customobj_training, valid_X_list
from .exact_leaves import ExactLeaves

if TYPE_CHECKING:  # the libraries' types, for the checker only
    from lightgbm.callback import CallbackEnv

__all__ = ["LineSearch", "ExactLeaves", "require_customobj_training", "claim_datasets"]


class LineSearch(ScoreTracking):
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
    - does the same for each validation set, from its raw features: ``valid_X``, in the order
      of ``valid_sets`` without the training set, or the Dataset's own ``data`` when built with
      ``free_raw_data=False`` (a validation set with neither is refused: its metrics would not be
      the model's);
    - runs before the recorders (``order = 5``) and rewrites this round's evaluation results in
      place for every metric name ``customobj.metrics.get_metric`` knows (LightGBM's native
      ``ndcg@k`` / ``map@k`` names included), so ``record_evaluation``, ``log_evaluation`` and
      ``early_stopping`` see the rescaled model. Other native metrics (``l2``, ...) cannot be
      recomputed and are refused; use ``"metric": "None"`` plus ``feval=lightgbm_metric(...)``.

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
        Raw features of the validation sets, in the order of ``valid_sets`` without the training
        set; needed for every validation set not built with ``free_raw_data=False``.
    max_iter, tol : int, float
        Newton iterations and relative tolerance on ``rho``.

    Attributes
    ----------
    rhos, loss, loss_unscaled : list of float
        One entry per round: the step, the loss at it, and the loss of the tree as built.

    Notes
    -----
    Refused at the first call, before any tree changes (TypeError): a native objective
    (``"objective": "lambdarank"``: the trees would be rescaled by a loss the booster never
    sees), a custom objective that is not ``lightgbm_objective``, or training through the
    scikit-learn estimators (see :func:`require_customobj_training`). ValueError: an objective
    other than the one being trained, labels / weights / groups other than the Dataset's, DART
    boosting, ``valid_X`` that does not match the validation sets, a metric it cannot
    recompute, ``ExactLeaves`` in the same training (see :mod:`customobj.adapters._tracking`).

    Not supported: ``lightgbm.cv``; training continued from ``init_model`` works (earlier trees
    are taken as they are).

    Examples
    --------
    >>> import numpy as np, customobj
    >>> from customobj import adapters  # before lightgbm: sets the OpenMP wait policy
    >>> import lightgbm as lgb
    >>> d = customobj.data.synthetic(60, 15, 5, seed=1, task_seed=0)   # training queries
    >>> v = customobj.data.synthetic(30, 15, 5, seed=2, task_seed=0)   # held-out queries of the same task
    >>> obj, curves = customobj.QBRank(), {}
    >>> ls = adapters.LineSearch(obj, d.X, d.y, d.group, shrinkage=0.3, valid_X=[v.X])
    >>> booster = lgb.train({"objective": adapters.lightgbm_objective(obj), "learning_rate": 1.0, "verbose": -1,
    ...                      "min_data_in_leaf": 5}, lgb.Dataset(d.X, d.y, group=d.group), 3,
    ...                     valid_sets=[lgb.Dataset(v.X, v.y, group=v.group)],
    ...                     feval=adapters.lightgbm_metric("ndcg@10"), callbacks=[ls, lgb.record_evaluation(curves)])
    >>> len(ls.rhos), len(curves["valid_0"]["co_ndcg@10"])
    (3, 3)
    >>> random = customobj.metrics.ndcg(np.random.default_rng(0).random(v.y.size), v.y, v.group)
    >>> print(f"valid NDCG@10 {curves['valid_0']['co_ndcg@10'][-1]:.2f} (random ranking {random:.2f})")
    valid NDCG@10 0.80 (random ranking 0.50)
    """

    order = 5
    before_iteration = False

    def __init__(self, objective: Objective, X: object, y: npt.ArrayLike, group: "GroupLike | None" = None, *,
                 weight: "npt.ArrayLike | None" = None, shrinkage: float = 1.0, valid_X: "list | None" = None,
                 max_iter: int = 20, tol: float = 1e-6) -> None:
        self.objective = require_objective(objective, "LineSearch")
        self._set_training_data(X, y, group, weight)
        if not (np.isfinite(shrinkage) and shrinkage > 0):
            raise ValueError(f"shrinkage must be > 0, got {shrinkage}")
        self.shrinkage = float(shrinkage)
        self.valid_X = valid_X_list(valid_X)
        self.max_iter, self.tol = int(max_iter), float(tol)
        self.rhos: list[float] = []
        self.loss: list[float] = []
        self.loss_unscaled: list[float] = []
        self._train = None
        self._valid = None

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
    def __call__(self, env: CallbackEnv) -> None:
        import lightgbm  # a LightGBM callback: lightgbm is there whenever it is called

        booster = env.model
        if not isinstance(booster, lightgbm.Booster):  # lightgbm.cv's CVBooster holds several
            raise TypeError(f"LineSearch works with lightgbm.train, got a {type(booster).__name__} (lightgbm.cv?)")
        k = booster.num_model_per_iteration()
        it = booster.current_iteration() - 1
        if self._train is None:
            self._begin(env, k)  # every check before any tree is changed
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
        record_of(booster.train_set, create=True).add_offset((scale - 1.0) * t)
        for tr in self._valid:
            vleaves = self._tree_output(booster, tr.X, it, k)
            tv = np.stack([values[c][vleaves[:, c]] for c in range(k)], axis=1)
            if k == 1:
                tv = tv[:, 0]
            tr.scores += scale * tv
            record_of(tr.dataset, create=True).add_offset((scale - 1.0) * tv)
        if env.evaluation_result_list:
            self._rewrite_evaluation(booster, env.evaluation_result_list)

