"""LightGBM callback :class:`ExactLeaves`: OLE's exact joint Newton leaf values on LightGBM's trees.

LightGBM sets each leaf to ``-G_a / (H_a + lambda_l2)``, its own rows' gradients over their
*diagonal* hessians. A pairwise loss couples rows (Xia, Zhai, Wang, "Analysis of regression tree
fitting algorithms in learning to rank", section 3.1): moving leaf ``a`` changes the curvature seen by leaf ``b``. This
callback keeps LightGBM's tree structure and re-solves all leaf values of each new tree at once
with the matrix of :class:`customobj.ole.TreeBooster` ``(leaf_solver="joint")``
(:mod:`customobj.ole.joint_leaves`).
"""
from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import numpy as np
from numba import njit, prange

from customobj._validation import check_nonnegative, check_positive
from customobj.ole.joint_leaves import LeafSystem, rows_leaf_system

from ._data import require_objective
from ._lightgbm_scores import LightGBMScores
from ._score_offsets import record_of
from ._tracking import ScoreTracking, valid_X_list

__all__ = ["ExactLeaves"]

#: LightGBM's names of the learning rate, main name first (its own precedence).
_LEARNING_RATE_ALIASES = ("learning_rate", "shrinkage_rate", "eta")
_DEFAULT_LEARNING_RATE = 0.1  # LightGBM's default


# LightGBM's tree encoding (include/LightGBM/tree.h): decision_type bits, the "zero" band of
# missing_type=zero (kZeroThreshold, a float32 1e-35), the missing types.
_CATEGORICAL_BIT, _DEFAULT_LEFT_BIT = 1, 2
_MISSING_ZERO, _MISSING_NAN = 1, 2
_ZERO_THRESHOLD = float(np.float32(1e-35))


class _Tree(NamedTuple):
    """One LightGBM tree as arrays (from ``Booster.model_to_string``)."""

    num_leaves: int
    split_feature: np.ndarray  # int64, one per internal node
    threshold: np.ndarray  # float64
    decision_type: np.ndarray  # int64
    left_child: np.ndarray  # int64: >= 0 an internal node, ~leaf otherwise
    right_child: np.ndarray
    leaf_value: np.ndarray  # float64, as LightGBM stores it (already shrunk)
    numerical: bool  # no categorical split: the traversal below applies


def _parse_trees(text: str) -> list[_Tree]:
    """The trees of a ``model_to_string`` text, in order (values are printed with 17 digits: exact)."""
    body = text.split("end of trees", 1)[0]
    trees = []
    for block in body.split("\nTree=")[1:]:
        kv = dict(line.split("=", 1) for line in block.splitlines()[1:] if "=" in line)
        if kv.get("is_linear", "0") != "0":
            raise ValueError("ExactLeaves does not support linear_tree: its leaves are linear models, not values")

        def arr(key, dtype):
            return np.array(kv[key].split(), dtype=dtype) if kv.get(key, "").strip() else np.zeros(0, dtype)

        decision = arr("decision_type", np.int64)
        trees.append(_Tree(int(kv["num_leaves"]), arr("split_feature", np.int64), arr("threshold", np.float64),
                           decision, arr("left_child", np.int64), arr("right_child", np.int64),
                           arr("leaf_value", np.float64),
                           int(kv.get("num_cat", "0")) == 0 and not np.any(decision & _CATEGORICAL_BIT)))
    return trees


@njit(cache=True, parallel=True)
def _tree_leaves(X, feature, threshold, decision, left, right, out):
    """``out[r]`` = the leaf row ``r`` of ``X`` falls in: LightGBM's ``Tree::NumericalDecision``
    (rows are independent: the same result for any thread count)."""
    for r in prange(X.shape[0]):
        node = 0 if left.shape[0] > 0 else -1
        while node >= 0:
            v = np.float64(X[r, feature[node]])
            if -_ZERO_THRESHOLD <= v <= _ZERO_THRESHOLD:
                v = 0.0  # LightGBM's predict drops such entries from a dense row: they read as 0
            dt = decision[node]
            missing = (dt >> 2) & 3
            if np.isnan(v) and missing != _MISSING_NAN:
                v = 0.0
            if (missing == _MISSING_ZERO and v == 0.0) or (missing == _MISSING_NAN and np.isnan(v)):
                go_left = (dt & _DEFAULT_LEFT_BIT) != 0
            else:
                go_left = v <= threshold[node]
            node = left[node] if go_left else right[node]
        out[r] = ~node


def _dense(X):
    """``X`` itself when the leaf traversal can read it (a 2-D float32/float64 numpy array), else None
    (LightGBM's ``predict(pred_leaf=True)`` is used: pandas, scipy.sparse, other dtypes)."""
    if isinstance(X, np.ndarray) and X.ndim == 2 and X.dtype in (np.float32, np.float64):
        return X
    return None


class _CouplingsRequest:
    """What ExactLeaves asks :func:`~customobj.adapters.lightgbm_objective` for (through the training
    Dataset's record, :mod:`~customobj.adapters._score_offsets`): the round's pair couplings from the
    objective's own pass, with its float64 gradients, so they are computed once, at exactly the
    scores LightGBM's tree was grown on."""

    __slots__ = ("pairs", "grad", "hess", "couplings", "row_dtype")

    def __init__(self, n_rows):
        # Nothing here refers to the callback or a Dataset: the Dataset holds this, and a reference
        # back would make a cycle that outlives the training until the garbage collector runs.
        self.pairs = self.grad = self.hess = self.couplings = None
        # int32 rows when they fit (LightGBM's own row index is int32): 16 bytes a pair instead of
        # 24, written by the objective and read back by the leaf-coupling pass every round.
        self.row_dtype = np.int32 if n_rows <= np.iinfo(np.int32).max else np.int64

    def pair_buffer(self, m):
        """``m`` pairs' worth of arrays, reused across rounds (objectives that write their pairs into them)."""
        buf = self.pairs
        if buf is None or buf[0].shape[0] < m:
            c = m + m // 4 + 1024  # headroom: the pair count drifts from round to round
            buf = self.pairs = (np.empty(c, self.row_dtype), np.empty(c, self.row_dtype), np.empty(c, np.float64))
        return tuple(a[:m] for a in buf)

    def take(self):
        """``(grad, hess, couplings)`` once, then None until the objective's next call."""
        if self.couplings is None:
            return None
        out, self.couplings = (self.grad, self.hess, self.couplings), None
        return out


def _learning_rate(params: dict | None) -> float:
    for key in _LEARNING_RATE_ALIASES:
        if params and key in params:
            return check_positive(params[key], f"LightGBM params[{key!r}]")
    return _DEFAULT_LEARNING_RATE


class ExactLeaves(ScoreTracking):
    """After each LightGBM tree, set its leaf values to the exact joint Newton step of the loss.

    With ``s`` the training scores before the tree, ``g``, ``h`` the objective's gradient and
    diagonal hessian at ``s`` and ``c_ij`` its pair couplings (the loss hessian is
    ``diag(h) - sum_pairs c_ij (e_i e_j' + e_j e_i')``), the leaf values ``v`` minimise the
    second-order model ``q(v) = G'v + v'Av / 2`` of the loss over LightGBM's partition:

    .. math::

        A_{aa} = \\sum_{i \\in a} h_i - 2 \\sum_{(i,j) \\subset a} c_{ij} + \\lambda_2, \\qquad
        A_{ab} = -\\sum_{(i,j) \\text{ across } a, b} c_{ij}, \\qquad A v = -G,

    minimum-norm where ``A`` is singular (a pairwise loss does not change when every leaf shifts by
    one constant); each leaf is then set to ``learning_rate * v_a`` (LightGBM's shrinkage, read from
    the training params every round, so ``lightgbm.reset_parameter`` schedules apply) with
    ``Booster.set_leaf_output``. For a pointwise loss ``A`` is diagonal and the leaves are
    LightGBM's own ``-G_a / (H_a + lambda_l2)``, computed in float64. This is the leaf solver of
    ``customobj.ole.TreeBooster(leaf_solver="joint")`` (Xia et al. 2009, sec. 3) on LightGBM's
    trees. Multi-output objectives (McRank) solve each class's tree on its own diagonal.

    Scores: as :class:`~customobj.adapters.callbacks.LineSearch` (the same score offsets,
    validation tracking and evaluation rewriting), so the objective, ``lightgbm_metric`` and this
    round's evaluation results (``record_evaluation``, ``early_stopping``) see the model with the
    new leaves. Every validation set needs its raw features (``valid_X`` or ``free_raw_data=False``),
    and every metric LightGBM evaluates must be one customobj can recompute (``lightgbm_metric``'s, or
    LightGBM's ``ndcg@k`` / ``map@k``), or the recorded values would not be the model's: refused.
    Training continued from ``init_model`` works. It cannot be combined with ``LineSearch`` in one
    training; build a new ``lightgbm.Dataset`` for each training with either (a reused one is
    refused: ValueError).

    Parameters
    ----------
    objective : the customobj objective being trained (the one given to ``lightgbm_objective``).
    X, y, group : the training features (as given to the Dataset), labels and query sizes.
    lambda_l2 : L2 penalty on the leaf values; pass LightGBM's ``lambda_l2`` to match its leaves.
    weight : optional row weights (as in the Dataset).
    valid_X : raw features of the validation sets, in the order of ``valid_sets`` without the
        training set (or build them with ``free_raw_data=False``); every validation set needs them.

    Notes
    -----
    The attributes ``quadratic_lightgbm`` / ``quadratic_exact`` hold, per round (summed over a
    round's trees), ``q`` at LightGBM's leaves and at the exact ones, both without shrinkage:
    ``quadratic_exact <= quadratic_lightgbm`` and ``quadratic_exact <= 0``.

    Cost per round: the objective's gradient pass also produces the pair couplings (one fused pass,
    from the second round on; :func:`~customobj.adapters.lightgbm_objective` does it for a Dataset
    this callback trains on), the leaf of every training (and validation) row, an ``O(pairs)``
    pass building ``A`` and a solve of ``num_leaves`` unknowns. Leaves are read off the change of
    LightGBM's own cached scores (:mod:`customobj.adapters._lightgbm_scores`: one copy of the
    scores, checked row by row to be exactly one leaf value up to rounding); where that does not
    name them (two leaves with one value, bagged rows) the new tree
    is traversed over the raw features when they are a float32/float64 numpy array, else
    LightGBM's ``predict(pred_leaf=True)`` runs. Categorical splits are supported;
    ``linear_tree`` is refused (ValueError).

    Refused at the first call, before any leaf changes (see :mod:`customobj.adapters._tracking`):
    a native objective, a custom objective that is not a ``lightgbm_objective``, the scikit-learn
    estimators (TypeError); an objective other than the one trained, labels, weights or query groups
    other than the Dataset's, DART boosting (earlier trees change after the round),
    ``valid_X`` whose rows or columns do not match the validation sets, a metric it cannot
    recompute, ``LineSearch`` in the same training (ValueError).

    Examples
    --------
    >>> import customobj
    >>> from customobj import adapters
    >>> import lightgbm as lgb
    >>> d = customobj.data.synthetic(30, 15, 5, seed=1)
    >>> obj = customobj.LambdaRank()
    >>> exact = adapters.ExactLeaves(obj, d.X, d.y, d.group)
    >>> params = {"objective": adapters.lightgbm_objective(obj), "num_leaves": 7, "verbose": -1}
    >>> booster = lgb.train(params, lgb.Dataset(d.X, d.y, group=d.group), 3, callbacks=[exact])
    >>> all(e <= l + 1e-12 for e, l in zip(exact.quadratic_exact, exact.quadratic_lightgbm))
    True
    """

    order = 5  # before the recorders and early stopping, as LineSearch
    before_iteration = False

    def __init__(self, objective: Any, X: Any, y: Any, group: Any = None, *, lambda_l2: float = 0.0,
                 weight: Any = None, valid_X: Sequence[Any] | None = None) -> None:
        self.objective = require_objective(objective, "ExactLeaves")
        self.lambda_l2 = check_nonnegative(lambda_l2, "lambda_l2")
        self._set_training_data(X, y, group, weight)
        self.valid_X = valid_X_list(valid_X)
        self.quadratic_lightgbm: list[float] = []
        self.quadratic_exact: list[float] = []
        self._train = self._valid = None
        self._g = self._h = None
        self._request = _CouplingsRequest(self.prep.n_rows)
        # data index -> LightGBMScores: LightGBM's cached scores, round to round
        self._lgb_scores: dict[int, LightGBMScores] = {}

    def __repr__(self) -> str:
        return f"ExactLeaves({self.objective!r}, lambda_l2={self.lambda_l2!r})"

    # ScoreTracking's checks, score tracking, offsets and evaluation rewriting, shared with LineSearch.
    _predicted_leaves = ScoreTracking._tree_output
    _uncorrected = "the new leaf values"

    def _row_leaves(self, booster, idx, X, values, trees, it, k):
        """(rows, k) int64 leaf of each row of data set ``idx`` (0: training) in this round's trees:
        from the change of LightGBM's cached scores where it names them, else by traversal."""
        scores = self._lgb_scores.get(idx)
        leaves = scores.leaves(booster, values) if scores is not None else None
        return leaves if leaves is not None else self._leaves(booster, X, trees, it, k)

    def _leaves(self, booster, X, trees, it, k):
        """(rows, k) int64 leaf of each row in this round's trees, by traversal of the raw features."""
        dense = _dense(X)
        if dense is None or not all(t.numerical for t in trees):
            return self._predicted_leaves(booster, X, it, k)
        out = np.empty((dense.shape[0], k), dtype=np.int64)
        for c, t in enumerate(trees):
            col = np.empty(dense.shape[0], dtype=np.int64)
            _tree_leaves(dense, t.split_feature, t.threshold, t.decision_type, t.left_child, t.right_child, col)
            out[:, c] = col
        return out

    def _derivatives(self, s):
        if self._g is None:
            self._g, self._h = np.empty_like(s), np.empty_like(s)
        if self.objective.pairwise and s.ndim == 1:
            return self.objective.grad_hess_couplings_prepared(s, self.prep, self._g, self._h,
                                                               pair_buffer=self._request.pair_buffer)
        return (*self.objective.grad_hess_prepared(s, self.prep, self._g, self._h), None)

    def _start(self, env, k):
        self._begin(env, k)  # every check before any leaf changes; the scores tracked from here
        booster = env.model
        first = booster.current_iteration() - 1 == env.begin_iteration
        for idx, tr in enumerate([self._train, *self._valid]):
            self._lgb_scores[idx] = scores = LightGBMScores(idx)
            if first:  # LightGBM's cache holds the initial scores (later: a predict's sum, not its bits)
                scores.set_before(tr.scores)
        if self.objective.pairwise and k == 1:  # from the next round on, one fused pass in the objective
            record_of(booster.train_set, create=True).couplings = self._request

    def __call__(self, env: Any) -> None:
        booster = env.model
        k = booster.num_model_per_iteration()
        it = booster.current_iteration() - 1
        if self._train is None:
            self._start(env, k)
        lr = _learning_rate(env.params)
        s = self._train.scores
        fused = self._request.take()
        grad, hess, pairs = fused if fused is not None else self._derivatives(s)
        trees = _parse_trees(booster.model_to_string(start_iteration=it, num_iteration=1))
        if len(trees) != k:
            raise RuntimeError(f"ExactLeaves expected {k} new tree(s) in round {it + 1}, LightGBM has {len(trees)}")
        values = [t.leaf_value for t in trees]
        leaves = self._row_leaves(booster, 0, self.X, values, trees, it, k)
        q_lgb = q_exact = 0.0
        deltas, news = [], []
        for c in range(k):
            tree, rows = it * k + c, leaves[:, c]
            old = trees[c].leaf_value
            n_leaves = old.shape[0]
            g = grad if k == 1 else np.ascontiguousarray(grad[:, c])
            h = hess if k == 1 else np.ascontiguousarray(hess[:, c])
            system: LeafSystem = rows_leaf_system(rows, g, h, pairs, self.lambda_l2, n_leaves)
            v = system.solve()
            q_lgb += system.model(old / lr)
            q_exact += system.model(v)
            new = lr * v
            for leaf in range(n_leaves):
                booster.set_leaf_output(tree, leaf, float(new[leaf]))
            news.append(new)
            deltas.append(new - old)
        self.quadratic_lightgbm.append(q_lgb)
        self.quadratic_exact.append(q_exact)
        self._advance(self._train, leaves, news, deltas)
        for idx, tr in enumerate(self._valid, start=1):
            self._advance(tr, self._row_leaves(booster, idx, tr.X, values, trees, it, k), news, deltas)
        if env.evaluation_result_list:
            self._rewrite_evaluation(booster, env.evaluation_result_list)

    @staticmethod
    def _advance(tr, leaves, news, deltas):
        """Add the new tree to ``tr``'s tracked scores and its change to LightGBM's as a score offset."""
        record = record_of(tr.dataset, create=True)
        if len(news) == 1:
            tr.scores += news[0][leaves[:, 0]]
            record.add_offset(deltas[0][leaves[:, 0]])
            return
        tr.scores += np.stack([n[leaves[:, c]] for c, n in enumerate(news)], axis=1)
        record.add_offset(np.stack([d[leaves[:, c]] for c, d in enumerate(deltas)], axis=1))

