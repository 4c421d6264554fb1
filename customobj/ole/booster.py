"""``TreeBooster``: gradient-boosted regression trees with SE, WSE or exact pairwise OLE splits.

LightGBM's and XGBoost's split gain ``G^2 / (H + lambda)`` sums per-row hessians, exact only for
pointwise losses. For pair terms the second derivative of a child's common output is
``sum h_i - 2 sum_{pairs inside the child} h_ij`` (Xia, Zhai, Wang, "Analysis of regression tree
fitting algorithms in learning to rank"; SPEC.md section 5). ``criterion="ole"`` uses that exact
node hessian, computed from pair histograms, for split search and leaf values, on ordinary
leaf-wise (or breadth-first) trees, for any customobj objective.
"""
from __future__ import annotations

import numbers

import numba
import numpy as np

from .._validation import check_choice, check_int, check_nonnegative, check_positive
from .binning import BinMapper
from .grower import GrowParams, _Ctx, add_leaf_values, grow_tree
from .predictor import PackedTrees, add_tree_bins, predict_raw
from .splitting import CRITERIA, PAIR_CRITERIA

__all__ = ["TreeBooster"]


def _as_matrix(X, name="X", n_features=None, keep_float32=False):
    if hasattr(X, "tocsr") and hasattr(X, "nnz"):
        raise TypeError(f"{name} must be a dense 2-D array, got a scipy.sparse matrix; use .toarray()")
    if hasattr(X, "to_numpy") and not isinstance(X, np.ndarray):
        X = X.to_numpy()
    arr = np.asarray(X)
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D (rows x features), got shape {arr.shape}")
    if n_features is not None and arr.shape[1] != n_features:
        raise ValueError(f"{name} has {arr.shape[1]} features but the model was trained on {n_features}")
    if keep_float32 and arr.dtype == np.float32:
        return np.ascontiguousarray(arr)  # binning converts exactly per value; no float64 copy of X
    return np.ascontiguousarray(arr, dtype=np.float64)


def _feature_infos(value_range):
    """LightGBM's ``feature_infos`` entries: ``[min:max]`` of the training values, ``none`` if all NaN."""
    return ["none" if np.isnan(lo) else f"[{lo!r}:{hi!r}]" for lo, hi in value_range]


class _Threads:
    """Run numba kernels with ``n_jobs`` threads, restoring the caller's setting afterwards."""

    def __init__(self, n_jobs):
        self.n_jobs = n_jobs

    def __enter__(self):
        self.saved = numba.get_num_threads()
        if self.n_jobs is not None:
            numba.set_num_threads(max(1, min(int(self.n_jobs), numba.config.NUMBA_NUM_THREADS)))

    def __exit__(self, *exc):
        numba.set_num_threads(self.saved)


class TreeBooster:
    """Histogram gradient-boosted trees for any customobj objective, with an exact pairwise split criterion.

    Split gain ``G_l^2/(D_l + lambda) + G_r^2/(D_r + lambda) - G^2/(D + lambda)`` with ``D = n``
    (``criterion="se"``, Friedman), ``D = sum h`` (``"wse"``, LightGBM/XGBoost) or
    ``D = sum h - 2 sum_{pairs inside} h_ij`` (``"ole"``, Xia, Zhai, Wang; SPEC.md section 5).
    Leaf values: ``-G / (D + lambda)`` per leaf (``leaf_solver="diagonal"``; ``D = sum h`` for SE)
    or one Newton step for all leaves of the tree at once with the leaf-by-leaf coupling matrix
    (``"joint"``; minimum-norm solution, singular only along a constant shift for a pure pairwise
    loss). Leaf values are multiplied by ``learning_rate``.

    Binning follows LightGBM (``max_bin`` quantile bins per feature, NaN in its own bin whose side
    each split chooses), so ``to_lightgbm()`` exports an equivalent LightGBM model.
    ``growth="best_first"`` is LightGBM's leaf-wise growth, ``"breadth_first"`` the paper's.
    ``bagging_fraction`` subsamples rows every round (pairs with a row out of the bag are left out);
    ``feature_fraction`` subsamples features per tree. Results do not depend on ``n_jobs``.
    ``criterion="ole"`` accumulates pair histograms in float32 within chunks (flushed to float64;
    node hessians and leaf values are float64 sums); ``"ole_float64"`` is the float64 reference;
    ``"ole_fast"`` searches OLE splits only over the ``ole_fast_features`` features of largest WSE
    gain at each node (exact node hessians; see ``customobj.ole.grower``).
    ``line_search=True`` (SPEC.md section 6): after each tree ``t`` the step ``rho`` minimising the
    exact loss ``L(s + rho t(x))`` (1-D Newton with the exact second derivative ``t' H t``, pair
    couplings included, and backtracking) rescales the tree; ``learning_rate`` multiplies the result.
    """

    def __init__(self, objective, *, criterion="ole", num_leaves=31, learning_rate=0.1, n_estimators=100,
                 max_bin=255, min_data_in_leaf=20, min_sum_hessian_in_leaf=1e-3, lambda_l2=0.0, max_depth=-1,
                 growth="best_first", feature_fraction=1.0, bagging_fraction=1.0, random_state=0, n_jobs=None,
                 leaf_solver="diagonal", line_search=False, importance_type="split", verbose=True,
                 ole_fast_features=8):
        from ..objectives.base import Objective
        if objective is not None and not isinstance(objective, Objective):
            raise TypeError(f"objective must be a customobj Objective, got {type(objective).__name__}")
        self.objective = objective
        self.criterion = check_choice(criterion, "criterion", set(CRITERIA))
        self.num_leaves = check_int(num_leaves, "num_leaves", minimum=1)
        self.learning_rate = check_positive(learning_rate, "learning_rate")
        self.n_estimators = check_int(n_estimators, "n_estimators", minimum=0)
        self.max_bin = check_int(max_bin, "max_bin", minimum=2)
        if self.max_bin > 65534:
            raise ValueError(f"max_bin must be <= 65534, got {max_bin}")
        self.min_data_in_leaf = check_int(min_data_in_leaf, "min_data_in_leaf", minimum=1)
        self.min_sum_hessian_in_leaf = check_nonnegative(min_sum_hessian_in_leaf, "min_sum_hessian_in_leaf")
        self.lambda_l2 = check_nonnegative(lambda_l2, "lambda_l2")
        self.max_depth = check_int(max_depth, "max_depth")
        self.growth = check_choice(growth, "growth", {"best_first", "breadth_first"})
        self.feature_fraction = check_positive(feature_fraction, "feature_fraction")
        self.bagging_fraction = check_positive(bagging_fraction, "bagging_fraction")
        if self.feature_fraction > 1 or self.bagging_fraction > 1:
            raise ValueError("feature_fraction and bagging_fraction must be in (0, 1]")
        self.random_state = check_int(random_state, "random_state")
        self.n_jobs = check_int(n_jobs, "n_jobs", minimum=1, allow_none=True)
        self.leaf_solver = check_choice(leaf_solver, "leaf_solver", {"diagonal", "joint"})
        if not isinstance(line_search, (bool, np.bool_)):
            raise TypeError(f"line_search must be True or False, got {type(line_search).__name__}")
        self.line_search = bool(line_search)
        self.importance_type = check_choice(importance_type, "importance_type", {"split", "gain"})
        self.verbose = bool(verbose)
        self.ole_fast_features = check_int(ole_fast_features, "ole_fast_features", minimum=1)
        self.trees_ = []
        self.tree_class_ = []
        self.n_features_ = None
        self.n_outputs_ = 1 if objective is None else objective.n_outputs
        self.evals_result_ = {}
        self.best_iteration_ = None
        self.bin_mapper_ = None

    # ------------------------------------------------------------------------------------------
    def _grow_params(self):
        return GrowParams(criterion=CRITERIA[self.criterion], num_leaves=self.num_leaves,
                          min_data_in_leaf=self.min_data_in_leaf,
                          min_sum_hessian_in_leaf=self.min_sum_hessian_in_leaf, lambda_l2=self.lambda_l2,
                          max_depth=self.max_depth, growth=self.growth, leaf_solver=self.leaf_solver,
                          learning_rate=self.learning_rate, ole_fast_features=self.ole_fast_features)

    def fit(self, X, y, group=None, init_score=None, eval_set=None, eval_group=None, eval_metric="ndcg@10",
            early_stopping_rounds=None, callbacks=None, sample_weight=None):
        """Boost ``n_estimators`` rounds (``n_outputs`` trees per round, e.g. McRank: one per grade).

        ``eval_set``: list of ``(X, y)``; ``eval_group``: their query sizes; ``eval_metric``: a metric
        name of ``customobj.metrics.get_metric``, a list of names, or a callable
        ``f(scores, labels, group) -> float`` (higher is better). History in ``evals_result_``
        (``{"valid_0": {"ndcg@10": [...]}}``); with ``early_stopping_rounds`` training stops when the
        first metric of the first eval set has not improved for that many rounds and
        ``best_iteration_`` (1-based) is what ``predict`` uses by default. ``callbacks``: callables
        ``cb(booster, iteration, evals_result)``; returning True stops training.
        """
        if self.objective is None:
            raise ValueError("this TreeBooster has no objective (loaded from a file?): cannot fit")
        obj = self.objective
        X = _as_matrix(X, keep_float32=True)
        n, F = X.shape
        prep = obj.prepare(y, group, sample_weight)
        K = obj.n_outputs
        shape = (n,) if K == 1 else (n, K)
        scores = np.zeros(shape, dtype=np.float64)
        if init_score is not None:
            from .._validation import as_scores
            scores += as_scores(init_score, n, allow_2d=K > 1, name="init_score").reshape(shape)
        early_stopping_rounds = check_int(early_stopping_rounds, "early_stopping_rounds", minimum=1,
                                          allow_none=True)
        evals = self._prepare_evals(eval_set, eval_group, eval_metric, F)
        if early_stopping_rounds is not None and not evals:
            raise ValueError("early_stopping_rounds needs an eval_set")
        callbacks = list(callbacks or [])
        for cb in callbacks:
            if not callable(cb):
                raise TypeError(f"callbacks must be callables, got {type(cb).__name__}")

        self.trees_, self.tree_class_ = [], []
        self.n_features_, self.n_outputs_ = F, K
        self.evals_result_ = {name: {m.name: [] for m in metrics} for name, _, _, _, metrics, _ in evals}
        self.best_iteration_ = None
        self._packed = None
        with _Threads(self.n_jobs):
            mapper = BinMapper.fit(X, self.max_bin, n_jobs=numba.get_num_threads())
            bins_fm = mapper.bins_feature_major(X)
            self.bin_mapper_ = mapper
            self.feature_infos_ = _feature_infos(mapper.value_range)
            del X  # only the bins are needed from here on (the caller's array may still be alive)
            bins = bins_fm.T  # (rows, features) view for tree traversal on bins
            ctx = _Ctx(bins_fm, mapper)
            params = self._grow_params()
            rng = np.random.default_rng(self.random_state)
            need_pairs = obj.pairwise and (self.criterion in PAIR_CRITERIA or self.leaf_solver == "joint")
            all_rows = np.arange(n, dtype=np.int64)
            best_score, best_iter, since_best = None, None, 0
            from tqdm.auto import tqdm
            for it in tqdm(range(self.n_estimators), disable=not self.verbose, desc="TreeBooster"):
                rows, in_bag = all_rows, None
                if self.bagging_fraction < 1.0:
                    m = max(1, int(round(self.bagging_fraction * n)))
                    rows = np.sort(rng.choice(n, size=m, replace=False)).astype(np.int64)
                    in_bag = np.zeros(n, dtype=bool)
                    in_bag[rows] = True
                mask = np.ones(F, dtype=np.bool_)
                if self.feature_fraction < 1.0:
                    m = max(1, int(round(self.feature_fraction * F)))
                    mask[:] = False
                    mask[rng.choice(F, size=m, replace=False)] = True
                pairs = p = None  # drop the previous round's pair arrays before new ones exist
                if need_pairs:
                    if not obj.writes_pair_buffer:
                        # large pair buffers go first: the objective's own (int64, int64, float64)
                        # couplings plus the compacted int32 pairs would be the peak
                        ctx.release_pair_buffers()
                    # one per-query pass for gradients, hessians and couplings where the objective fuses them
                    grad, hess, couplings = obj.grad_hess_couplings_prepared(scores, prep, pair_buffer=ctx.pair_buffer)
                    pairs = ctx.load_pairs(couplings, in_bag)
                    del couplings
                else:
                    grad, hess = obj.grad_hess_prepared(scores, prep)
                new_trees = []
                for k in range(K):
                    g = grad if K == 1 else np.ascontiguousarray(grad[:, k])
                    h = hess if K == 1 else np.ascontiguousarray(hess[:, k])
                    # grow_tree reorders the pair arrays in place; later classes need the original set
                    p = pairs if (pairs is None or K == 1) else tuple(a.copy() for a in pairs)
                    tree, order, ranges = grow_tree(ctx, g, h, rows, p, mask, params)
                    self.trees_.append(tree)
                    self.tree_class_.append(k)
                    new_trees.append((k, tree, order, ranges))
                for k, tree, order, ranges in new_trees:
                    if self.line_search:
                        self._line_search(obj, prep, scores, k, tree, bins, mapper.n_bins)
                    out = scores if K == 1 else scores[:, k]
                    if in_bag is None:  # every row sits in a leaf's range: no traversal needed
                        starts = np.array([r[0] for r in ranges], dtype=np.int64)
                        ends = np.array([r[1] for r in ranges], dtype=np.int64)
                        add_leaf_values(order, starts, ends, np.asarray(tree["leaf_value"], np.float64), out)
                    else:
                        add_tree_bins(bins, mapper.n_bins, tree, out)
                new_trees = [(k, tree) for k, tree, _, _ in new_trees]
                self._packed = None
                stop = self._evaluate(evals, new_trees, it)
                if evals:
                    name, metrics = evals[0][0], evals[0][4]
                    value = self.evals_result_[name][metrics[0].name][-1]
                    better = best_score is None or (value > best_score if metrics[0].higher_is_better
                                                    else value < best_score)
                    if better:
                        best_score, best_iter, since_best = value, it + 1, 0
                    else:
                        since_best += 1
                    if early_stopping_rounds is not None and since_best >= early_stopping_rounds:
                        stop = True
                for cb in callbacks:
                    if cb(self, it, self.evals_result_):
                        stop = True
                if stop:
                    break
            if early_stopping_rounds is not None:
                self.best_iteration_ = best_iter
        return self

    def _line_search(self, obj, prep, scores, k, tree, bins, n_bins, max_newton=5, max_halvings=20):
        """Rescale ``tree`` by the ``rho`` minimising ``L(s + rho t)`` (t = the unshrunk tree); in place."""
        lr = self.learning_rate
        t = np.zeros(bins.shape[0])
        add_tree_bins(bins, n_bins, tree, t)
        t /= lr
        if not np.any(t):
            return

        def shifted(rho):
            out = scores.copy()
            if out.ndim == 1:
                out += rho * t
            else:
                out[:, k] += rho * t
            return out

        rho, cur = 0.0, obj.loss_prepared(scores, prep)
        for _ in range(max_newton):
            s = shifted(rho)
            g, h = obj.grad_hess_prepared(s, prep)
            if g.ndim > 1:
                g, h = g[:, k], h[:, k]
            d1 = float(g @ t)
            d2 = float(h @ (t * t))
            if obj.pairwise:
                pi, pj, pc = obj.pair_couplings_prepared(s, prep)
                d2 -= 2.0 * float(np.sum(pc * t[pi] * t[pj]))
            if not d2 > 0:
                break
            step = -d1 / d2
            for _ in range(max_halvings):
                new = obj.loss_prepared(shifted(rho + step), prep)
                if new <= cur:
                    break
                step /= 2
            else:
                break
            rho, cur = rho + step, new
            if abs(step) <= 1e-8 * max(1.0, abs(rho)):
                break
        tree["leaf_value"] = [v * rho for v in tree["leaf_value"]]
        tree["internal_value"] = [v * rho for v in tree["internal_value"]]

    def _prepare_evals(self, eval_set, eval_group, eval_metric, F):
        if eval_set is None:
            return []
        if isinstance(eval_set, tuple) and len(eval_set) == 2:
            eval_set = [eval_set]
        if eval_group is None:
            eval_group = [None] * len(eval_set)
        elif not isinstance(eval_group, (list, tuple)) or len(eval_group) != len(eval_set):
            raise ValueError("eval_group must be a list with one group array per eval_set entry")
        metrics = self._metrics(eval_metric)
        from ..groups import Groups, as_groups
        out = []
        for k, ((Xe, ye), ge) in enumerate(zip(eval_set, eval_group)):
            Xe = _as_matrix(Xe, f"eval_set[{k}] X", F)
            ye = np.asarray(ye, dtype=np.float64)
            if ye.shape[0] != Xe.shape[0]:
                raise ValueError(f"eval_set[{k}]: X has {Xe.shape[0]} rows but y has {ye.shape[0]}")
            g = as_groups(ge, Xe.shape[0]) if ge is not None else Groups.from_sizes([Xe.shape[0]])
            raw = np.zeros((Xe.shape[0], self.objective.n_outputs))
            out.append((f"valid_{k}", Xe, ye, g, metrics, raw))
        return out

    @staticmethod
    def _metrics(eval_metric):
        from ..metrics import Metric, get_metric
        items = eval_metric if isinstance(eval_metric, (list, tuple)) else [eval_metric]
        out = []
        for m in items:
            if isinstance(m, str):
                out.append(get_metric(m))
            elif callable(m):
                out.append(Metric(getattr(m, "__name__", "custom"), m, True))
            else:
                raise TypeError(f"eval_metric entries must be metric names or callables, got {type(m).__name__}")
        return out

    def _evaluate(self, evals, new_trees, it):
        for name, Xe, ye, g, metrics, raw in evals:
            packed = PackedTrees([t for _, t in new_trees])
            cols = np.array([k for k, _ in new_trees], dtype=np.int64)
            raw += predict_raw(Xe, packed, cols, raw.shape[1], 0, len(new_trees))
            s = self._ranking_score(raw)
            for m in metrics:
                self.evals_result_[name][m.name].append(float(m.func(s, ye, g)))
        return False

    def _ranking_score(self, raw):
        """Ranking score from raw outputs: the score itself, or McRank's expected grade ``sum_k k p_k``."""
        if raw.ndim == 1 or raw.shape[1] == 1:
            return raw.reshape(-1)
        z = raw - raw.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        return p @ np.arange(raw.shape[1], dtype=np.float64)

    # ------------------------------------------------------------------------------------------
    def _check_fitted(self):
        if self.n_features_ is None:
            raise ValueError("this TreeBooster is not fitted yet: call fit() or TreeBooster.load()")

    def _packed_trees(self):
        if getattr(self, "_packed", None) is None:
            self._packed = PackedTrees(self.trees_)
        return self._packed

    @property
    def n_iterations_(self):
        return len(self.trees_) // max(1, self.n_outputs_)

    def _n_trees(self, num_iteration):
        if num_iteration is None:
            num_iteration = self.best_iteration_ if self.best_iteration_ is not None else self.n_iterations_
        if isinstance(num_iteration, bool) or not isinstance(num_iteration, numbers.Integral):
            raise TypeError(f"num_iteration must be an integer or None, got {type(num_iteration).__name__}")
        if num_iteration <= 0:
            num_iteration = self.n_iterations_
        return min(int(num_iteration), self.n_iterations_) * self.n_outputs_

    def predict(self, X, num_iteration=None, raw_score=True):
        """Raw scores (``(n,)``, or ``(n, K)`` for McRank) of the first ``num_iteration`` rounds.

        ``num_iteration=None`` uses ``best_iteration_`` when early stopping set it, else all rounds.
        ``raw_score=False`` turns McRank's class scores into its ranking score, the expected grade.
        """
        self._check_fitted()
        X = _as_matrix(X, n_features=self.n_features_)
        t1 = self._n_trees(num_iteration)
        cols = np.asarray(self.tree_class_, dtype=np.int64)
        with _Threads(self.n_jobs):
            out = predict_raw(X, self._packed_trees(), cols, self.n_outputs_, 0, t1)
        if self.n_outputs_ == 1:
            return out[:, 0]
        return out if raw_score else self._ranking_score(out)

    def staged_predict(self, X, raw_score=True):
        """Yield the predictions after each boosting round (learning curves)."""
        self._check_fitted()
        X = _as_matrix(X, n_features=self.n_features_)
        K = self.n_outputs_
        cols = np.asarray(self.tree_class_, dtype=np.int64)
        packed = self._packed_trees()
        acc = np.zeros((X.shape[0], K))
        for it in range(self.n_iterations_):
            with _Threads(self.n_jobs):
                acc += predict_raw(X, packed, cols, K, it * K, (it + 1) * K)
            if K == 1:
                yield acc[:, 0].copy()
            else:
                yield acc.copy() if raw_score else self._ranking_score(acc)

    @property
    def feature_importances_(self):
        """Per feature: number of splits (``importance_type="split"``) or total split gain (``"gain"``)."""
        self._check_fitted()
        imp = np.zeros(self.n_features_)
        for t in self.trees_:
            f = np.asarray(t["split_feature"], dtype=np.int64)
            w = np.ones(f.size) if self.importance_type == "split" else np.asarray(t["split_gain"], float)
            np.add.at(imp, f, w)
        return imp.astype(np.int64) if self.importance_type == "split" else imp

    # ------------------------------------------------------------------------------------------
    def save(self, path):
        """Write the model as versioned JSON (exact: floats round-trip)."""
        from .export import save_json
        save_json(self, path)

    @classmethod
    def load(cls, path):
        from .export import load_json
        return load_json(cls, path)

    def to_json(self):
        from .export import to_json_string
        return to_json_string(self)

    def to_lightgbm_string(self):
        from .export import lightgbm_model_string
        return lightgbm_model_string(self)

    def to_lightgbm(self):
        """The model as a ``lightgbm.Booster`` predicting the same raw scores."""
        import lightgbm
        return lightgbm.Booster(model_str=self.to_lightgbm_string())
