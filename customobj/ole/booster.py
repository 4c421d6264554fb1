"""``TreeBooster``: gradient-boosted regression trees with SE, WSE or exact pairwise OLE splits.

LightGBM's and XGBoost's split gain ``G^2 / (H + lambda)`` sums per-row hessians, exact only for
pointwise losses. For pair terms the second derivative of a child's common output is
``sum h_i - 2 sum_{pairs inside the child} h_ij`` (Xia, Zhai, Wang, "Analysis of regression tree
fitting algorithms in learning to rank", section 3.1). ``criterion="ole"`` uses that exact
node hessian, computed from pair histograms, for split search and leaf values, on ordinary
leaf-wise (or breadth-first) trees, for any customobj objective.

The class is a scikit-learn estimator (docs/sklearn.md): hyperparameters in :mod:`.params`, input
checks in :mod:`.inputs`, eval sets / early stopping / ``score`` in :mod:`.evaluation`.
"""
from __future__ import annotations

import copy
import numbers
import os
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional, Sequence, Union

import numba
import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

if TYPE_CHECKING:  # the return type of to_lightgbm; imported there, on use
    import lightgbm

from .._validation import as_weight, check_int
from ..groups import Groups
from .binning import BinMapper
from .criterion import OLE_FAST_EPSILON, OLE_FAST_FEATURES
from .evaluation import SCORE_METRIC, EarlyStopping, prepare_evals, ranking_score, score_queries
from .inputs import (
    as_fit_labels,
    as_matrix,
    check_feature_names,
    check_fit_rows,
    checked_callbacks,
    resolve_groups,
    training_targets,
)
from .params import check_n_jobs, check_params, default_objective
from .predictor import PackedTrees, predict_raw, staged_raw
from .training import Threads, boost, check_gpu, feature_infos, grow_params
from .tree import Tree, feature_importances

__all__ = ["TreeBooster"]

ArrayLike = Any  # numpy arrays, pandas objects, nested lists


class TreeBooster(BaseEstimator):
    """Histogram gradient-boosted trees for any customobj objective, with an exact pairwise split criterion.

    Split gain (Xia, Zhai, Wang, sections 2.1, 2.2.1 and 3.1):

    .. math::

        \\frac{G_l^2}{D_l + \\lambda} + \\frac{G_r^2}{D_r + \\lambda} - \\frac{G^2}{D + \\lambda}

    with ``D = n`` (``criterion="se"``, Friedman), ``D = sum h`` (``"wse"``, LightGBM/XGBoost) or
    ``D = sum h - 2 sum_{pairs inside} h_ij`` (``"ole"``). Leaf values: ``-G / (D + lambda)`` per
    leaf (``leaf_solver="diagonal"``; ``D = sum h`` for SE) or one Newton step for all leaves of
    the tree at once with the leaf-by-leaf coupling matrix (``"joint"``; minimum-norm solution,
    singular only along a constant shift for a pure pairwise loss), times ``learning_rate``.

    Binning follows LightGBM (``max_bin`` quantile bins per feature, NaN in its own bin whose side
    each split chooses), so ``to_lightgbm()`` exports an equivalent LightGBM model.
    ``growth="best_first"`` is LightGBM's leaf-wise growth, ``"breadth_first"`` the paper's.
    ``bagging_fraction`` subsamples rows every round (pairs with a row out of the bag are left out);
    ``feature_fraction`` subsamples features per tree. Results do not depend on ``n_jobs``.
    ``line_search=True`` (Zheng et al. 2007, section 3): after each tree ``t`` the step ``rho`` minimising the
    exact loss ``L(s + rho t(x))`` (1-D Newton with the exact second derivative ``t' H t``, pair
    couplings included, and backtracking) rescales the tree; ``learning_rate`` multiplies the result.

    A scikit-learn estimator (``get_params``/``set_params``, ``clone``, ``GridSearchCV``, pickle;
    see docs/sklearn.md). Arguments are stored as given and validated both here (invalid values
    fail where they are written) and in ``fit`` (so ``set_params`` is checked too).

    Parameters
    ----------
    objective : customobj Objective or None
        The loss; ``None`` means ``customobj.LambdaRank()``. Ranking objectives need ``group=`` or
        ``qid=`` in ``fit``; pointwise ones treat all rows as one list without them.
    criterion : {"ole", "wse", "se", "ole_fast", "ole_float64"}
        ``"ole"``: the exact OLE node hessian, pair histograms from each tree's couplings
        pre-rounded to a power-of-two grid (``customobj.ole.fixed_point``: every sum exact, the same
        on the CPU and the GPU); ``"ole_float64"`` is the same (its old float64 reference role,
        kept for scripts that name it); ``"ole_fast"`` searches OLE splits only over the ``ole_fast_features`` features
        of largest WSE gain at each node (node hessians stay exact).
    num_leaves : int in [2, 131072]
    learning_rate : float > 0
    n_estimators : int >= 0, boosting rounds (McRank grows one tree per grade per round).
    max_bin : int in [2, 65534]
    min_data_in_leaf : int >= 1
    min_sum_hessian_in_leaf, lambda_l2 : float >= 0
    max_depth : int, <= 0 for no limit.
    growth : {"best_first", "breadth_first"}
    feature_fraction, bagging_fraction : float in (0, 1]
    random_state : int >= 0, the seed of bagging and feature sampling.
    n_jobs : int >= 1 or None (numba's thread count).
    leaf_solver : {"diagonal", "joint"}
    line_search : bool
    importance_type : {"split", "gain"}
    verbose : bool or int, progress bar over the rounds when true (int: > 0).
    ole_fast_features : int >= 1, features per node whose pair histograms ``"ole_fast"`` builds.
    ole_fast_epsilon : float in [0, 1), fraction of each query's coupling mass ``"ole_fast"`` may drop
        (its smallest pairs) when searching splits; leaf values use every pair
        (:mod:`customobj.ole.pair_pruning`, docs/ole-fast.md).
    device : {"cpu", "cuda", "cuda:N"}
        Where the trees grow. ``"cuda"`` grows them on the GPU (``"cuda:N"``: CUDA device ``N``;
        histograms, split search, partitions; the gradients too when the objective allows:
        :mod:`customobj.ole.cuda.backend` says what runs where) and grows the CPU's trees; ``fit``
        raises ``GPUUnavailableError`` naming what is missing (package, driver, device), before any
        preparation, or, with the numbers, when the data do not fit the card's free memory.
        Never a silent CPU fallback. Not saved in model files: a model predicts on any machine.

    Attributes
    ----------
    n_features_in_ : int
    feature_names_in_ : ndarray of str (dtype object)
        Only when ``X`` in ``fit`` had string column names (a pandas DataFrame).
    best_iteration_ : int or None
        1-based best round when ``early_stopping_rounds`` was given (``predict`` uses it), else None.
    evals_result_ : dict
        ``{"valid_0": {"ndcg@10": [...]}}``, one value per round.
    objective_ : Objective
        The objective trained with: a copy of ``objective`` (``LambdaRank()`` for None), so ``fit``
        never changes its parameters.
    position_bias_, position_bias_unclicked_ : ndarray
        Only with an ``Unbiased`` objective: the examination propensities it estimated on the training
        data (``objective_.fitted_attributes``; the objective itself holds no fitted state).
    trees_ : list of customobj.ole.tree.Tree
        The fitted trees: node and leaf record arrays (``tree.nodes``, ``tree.leaves``), also read
        by field name (``tree["threshold"]``, the model file's names).
    tree_class_, n_outputs_, bin_mapper_, feature_infos_
        The output column of each tree, outputs per row, the binning, LightGBM's feature ranges.
    device_memory_peak_, device_gradients_ : int or None, str or None
        ``device="cuda"``: the peak bytes the fit held on the GPU, and ``"device"`` or ``"host: <why>"``
        for where the gradients were computed; None on the CPU.
    device_stats_ : customobj.ole.cuda.stats.DeviceStats or None
        ``device="cuda"``: the kernel launches, blocking device-to-host reads, device allocations and
        bytes copied each way, per tree (``device_stats_.trees``) and per split
        (``device_stats_.per_split()``); None on the CPU.

    Examples
    --------
    >>> import customobj as co
    >>> from customobj.data import synthetic
    >>> X, y, group = synthetic(30, 10, 5, seed=0)
    >>> model = co.ole.TreeBooster(n_estimators=5, num_leaves=4, verbose=False).fit(X, y, group)
    >>> model
    TreeBooster(n_estimators=5, num_leaves=4, verbose=False)
    >>> 0.0 <= model.score(X, y, group) <= 1.0
    True
    """

    def __init__(self, objective: Optional[Any] = None, *, criterion: str = "ole", num_leaves: int = 31,
                 learning_rate: float = 0.1, n_estimators: int = 100, max_bin: int = 255,
                 min_data_in_leaf: int = 20, min_sum_hessian_in_leaf: float = 1e-3, lambda_l2: float = 0.0,
                 max_depth: int = -1, growth: str = "best_first", feature_fraction: float = 1.0,
                 bagging_fraction: float = 1.0, random_state: int = 0, n_jobs: Optional[int] = None,
                 leaf_solver: str = "diagonal", line_search: bool = False, importance_type: str = "split",
                 verbose: Union[bool, int] = True, ole_fast_features: int = OLE_FAST_FEATURES,
                 ole_fast_epsilon: float = OLE_FAST_EPSILON, device: str = "cpu") -> None:
        self.objective = objective
        self.criterion = criterion
        self.num_leaves = num_leaves
        self.learning_rate = learning_rate
        self.n_estimators = n_estimators
        self.max_bin = max_bin
        self.min_data_in_leaf = min_data_in_leaf
        self.min_sum_hessian_in_leaf = min_sum_hessian_in_leaf
        self.lambda_l2 = lambda_l2
        self.max_depth = max_depth
        self.growth = growth
        self.feature_fraction = feature_fraction
        self.bagging_fraction = bagging_fraction
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.leaf_solver = leaf_solver
        self.line_search = line_search
        self.importance_type = importance_type
        self.verbose = verbose
        self.ole_fast_features = ole_fast_features
        self.ole_fast_epsilon = ole_fast_epsilon
        self.device = device
        # fail where the value is written (issue 13); fit checks again after any set_params
        check_params(self.get_params(deep=False))

    # --- scikit-learn protocol -------------------------------------------------------------------
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # NaN is a missing value with a learnt side
        tags.target_tags.required = True
        tags.target_tags.positive_only = True  # labels are non-negative relevance grades
        return tags

    def _more_tags(self):  # scikit-learn < 1.6
        return {"allow_nan": True, "requires_y": True, "requires_positive_y": True}

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "trees_") and hasattr(self, "n_features_in_")

    def _validated_params(self) -> dict:
        """The hyperparameters, validated, as plain Python values (``objective`` resolved)."""
        return check_params(self.get_params(deep=False))

    def _grow_params(self):
        """The grower's options for the current hyperparameters (validated)."""
        return grow_params(self._validated_params())

    def _resolved_objective(self):
        fitted = getattr(self, "objective_", None)
        if fitted is not None:
            return fitted
        return self.objective if self.objective is not None else default_objective()

    # --- training --------------------------------------------------------------------------------
    def fit(self, X: ArrayLike, y: ArrayLike, group: Optional[ArrayLike] = None, *, qid: Optional[ArrayLike] = None,
            sample_weight: Optional[ArrayLike] = None, init_score: Optional[ArrayLike] = None,
            eval_set: Optional[Sequence] = None, eval_group: Optional[Sequence] = None,
            eval_qid: Optional[Sequence] = None, eval_metric: Union[str, Callable, Sequence] = "ndcg@10",
            early_stopping_rounds: Optional[int] = None, callbacks: Optional[Sequence[Callable]] = None,
            ) -> "TreeBooster":
        """Boost ``n_estimators`` rounds (``n_outputs`` trees per round, e.g. McRank: one per grade).

        Parameters
        ----------
        X : array-like (n_rows, n_features)
            Numeric features; NaN is a missing value. A DataFrame's column names become
            ``feature_names_in_``.
        y : array-like (n_rows,)
            Relevance labels.
        group : array-like of query sizes or Groups, optional
            LightGBM's convention (rows of a query contiguous). Mutually exclusive with ``qid``.
        qid : array-like (n_rows,), optional
            One query id per row (XGBoost's convention), rows of a query contiguous. Per-row ids
            survive cross-validation splits: route them with ``set_fit_request(qid=True)``.
        sample_weight : array-like (n_rows,), optional
        init_score : array-like, optional
            Raw scores to boost from.
        eval_set : list of (X, y), optional
            Validation sets; their queries in ``eval_group`` (sizes) or ``eval_qid`` (ids).
        eval_metric : str, callable or list
            Names of :func:`customobj.metrics.get_metric` or ``f(scores, labels, group) -> float``
            (higher is better). History in ``evals_result_``.
        early_stopping_rounds : int, optional
            Stop when the first metric of the first eval set has not improved for that many rounds;
            ``best_iteration_`` (1-based) is then what ``predict`` uses by default.
        callbacks : list of callables ``cb(booster, iteration, evals_result)``; True stops training.

        Returns
        -------
        self
        """
        p = self._validated_params()
        gpu = check_gpu(p["device"])  # no GPU: said now, not after the data are prepared and the kernels compiled
        # a copy: fit must not change its parameters (McRank infers its class count on first use)
        obj = copy.deepcopy(p["objective"])
        X_in = X
        X = as_matrix(X, keep_float32=True, for_fit=True)
        prep, scores = training_targets(obj, X.shape[0], y, group, qid, sample_weight, init_score)
        early_stopping_rounds = check_int(early_stopping_rounds, "early_stopping_rounds", minimum=1,
                                          allow_none=True)
        evals = prepare_evals(eval_set, eval_group, eval_qid, eval_metric, X.shape[1], obj.n_outputs)
        if early_stopping_rounds is not None and not evals:
            raise ValueError("early_stopping_rounds needs an eval_set")
        callbacks = checked_callbacks(callbacks)

        # everything is checked: from here on the estimator's fitted state is replaced
        self._reset_fitted_state(X_in, obj, evals)
        tracker = EarlyStopping(evals, early_stopping_rounds)
        with Threads(p["n_jobs"]), gpu:
            bins_fm = self._bin(X, p["max_bin"])
            del X, X_in  # only the bins are needed from here on (the caller's array may still be alive)
            boost(self, p, obj, prep, scores, bins_fm, self.bin_mapper_, evals, tracker, callbacks)
        # what the objective learned on the training data (Unbiased: position_bias_), kept as fitted state
        self._objective_fitted: tuple = tuple(obj.fitted_attributes(prep).items())
        for name, value in self._objective_fitted:
            setattr(self, name, value)
        if early_stopping_rounds is not None:
            self.best_iteration_ = tracker.best_iteration
        return self

    def _reset_fitted_state(self, X_in, obj, evals) -> None:
        """Start the fitted attributes afresh (after every input check passed)."""
        check_feature_names(self, X_in, reset=True)
        for name, _ in getattr(self, "_objective_fitted", ()):  # a previous objective's fitted values go
            delattr(self, name)
        self._objective_fitted = ()
        self.objective_ = obj
        self.trees_: list[Tree] = []
        self.tree_class_: list[int] = []
        self.n_outputs_ = obj.n_outputs
        self.evals_result_: dict[str, dict[str, list[float]]] = {
            ev.name: {m.name: [] for m in ev.metrics} for ev in evals}
        self.best_iteration_ = None

    def _bin(self, X: np.ndarray, max_bin: int) -> np.ndarray:
        """Fit ``bin_mapper_`` / ``feature_infos_`` on ``X``; its bins, feature-major."""
        mapper = BinMapper.fit(X, max_bin, n_jobs=numba.get_num_threads())
        bins_fm = mapper.bins_feature_major(X)
        self.bin_mapper_ = mapper
        self.feature_infos_ = feature_infos(mapper.value_range)
        return bins_fm

    # --- prediction ------------------------------------------------------------------------------
    def _check_fitted(self) -> None:
        if not self.__sklearn_is_fitted__():
            raise NotFittedError("this TreeBooster is not fitted yet: call fit() or TreeBooster.load()")

    @property
    def n_features_(self) -> int:
        """Alias of ``n_features_in_`` (the name before the scikit-learn API)."""
        return self.n_features_in_

    @n_features_.setter
    def n_features_(self, value: int) -> None:
        self.n_features_in_ = value

    def _packed_trees(self):
        # Packed (and checked) on every call, never cached: ``trees_`` is public and may be edited
        # or replaced after fit, and a stale cache would predict with trees the model no longer has
        # (packing 300 trees of 31 leaves costs ~15-50 ms, far less than predicting a real batch).
        return PackedTrees(self.trees_)

    def _features(self, X):
        """``X`` checked against the fitted width and (DataFrame) column names."""
        self._check_fitted()
        arr = as_matrix(X)
        check_feature_names(self, X, reset=False)
        return arr

    @property
    def n_iterations_(self) -> int:
        """Boosting rounds in the model."""
        return len(self.trees_) // max(1, self.n_outputs_)

    def _n_trees(self, num_iteration):
        if num_iteration is None:
            num_iteration = self.best_iteration_ if self.best_iteration_ is not None else self.n_iterations_
        if isinstance(num_iteration, bool) or not isinstance(num_iteration, numbers.Integral):
            raise TypeError(f"num_iteration must be an integer or None, got {type(num_iteration).__name__}")
        if num_iteration <= 0:
            num_iteration = self.n_iterations_
        return min(int(num_iteration), self.n_iterations_) * self.n_outputs_

    def _raw(self, X, num_iteration):
        t1 = self._n_trees(num_iteration)
        cols = np.asarray(self.tree_class_, dtype=np.int64)
        with Threads(check_n_jobs(self.n_jobs)):
            return predict_raw(X, self._packed_trees(), cols, self.n_outputs_, 0, t1)

    def predict(self, X: ArrayLike, num_iteration: Optional[int] = None, raw_score: bool = True) -> np.ndarray:
        """Raw scores (``(n,)``, or ``(n, K)`` for McRank) of the first ``num_iteration`` rounds.

        ``num_iteration=None`` uses ``best_iteration_`` when early stopping set it, else all rounds.
        ``raw_score=False`` turns McRank's class scores into its ranking score, the expected grade.
        """
        out = self._raw(self._features(X), num_iteration)
        if self.n_outputs_ == 1:
            return out[:, 0]
        return out if raw_score else ranking_score(out)

    def score(self, X: ArrayLike, y: ArrayLike, group: Optional[ArrayLike] = None, *,
              qid: Optional[ArrayLike] = None, metric: Union[str, Callable] = SCORE_METRIC,
              sample_weight: Optional[ArrayLike] = None) -> float:
        """Mean ``metric`` (default NDCG@10) over the queries of ``(X, y)``: higher is better.

        ``group`` (query sizes) or ``qid`` (one id per row) give the queries; without them all rows
        are one query, which only pointwise objectives accept (as in ``fit``). In ``GridSearchCV`` /
        ``cross_val_score`` route ``qid`` with ``set_score_request(qid=True)`` (docs/sklearn.md).
        ``sample_weight`` (one per row, >= 0) weighs each query by its rows' mean weight (LightGBM's
        query weights); scikit-learn's ``Pipeline.score`` passes it (None) under metadata routing.
        """
        X = self._features(X)
        y = as_fit_labels(y)
        check_fit_rows(X.shape[0], y, sample_weight)
        weight = as_weight(sample_weight, X.shape[0], name="sample_weight")
        groups = resolve_groups(group, qid, X.shape[0])
        if groups is None:
            obj = self._resolved_objective()
            if obj.needs_group:
                raise ValueError(
                    f"score needs group= or qid=: NDCG is computed per query and {type(obj).__name__} is a "
                    "ranking objective. In GridSearchCV / cross_val_score enable metadata routing "
                    "(sklearn.set_config(enable_metadata_routing=True)) and call set_score_request(qid=True)")
            groups = Groups.from_sizes([X.shape[0]])
        return score_queries(ranking_score(self._raw(X, None)), y, groups, metric, weight)

    def staged_predict(self, X: ArrayLike, raw_score: bool = True) -> Iterator[np.ndarray]:
        """Yield the predictions after each boosting round (learning curves)."""
        X = self._features(X)
        cols = np.asarray(self.tree_class_, dtype=np.int64)
        n_jobs = check_n_jobs(self.n_jobs)
        for acc in staged_raw(X, self._packed_trees(), cols, self.n_outputs_, self.n_iterations_, Threads(n_jobs)):
            if self.n_outputs_ == 1:
                yield acc[:, 0].copy()
            else:
                yield acc.copy() if raw_score else ranking_score(acc)

    @property
    def feature_importances_(self) -> np.ndarray:
        """Per feature: number of splits (``importance_type="split"``) or total split gain (``"gain"``)."""
        self._check_fitted()
        return feature_importances(self.trees_, self.n_features_in_, self.importance_type)

    # ------------------------------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Write the model as a versioned JSON file (docs/model-files.md); floats round-trip exactly.

        The model is serialised and validated first and the file is replaced atomically: a failed
        save (unfitted model, full disk, ...) leaves the previous file intact.
        """
        from .model_file import save
        save(self, path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "TreeBooster":
        """Read a model file written by :meth:`save` (format versions 1 and 2).

        Every field is checked before use; a damaged or hostile file raises ``ValueError`` naming
        the file and the field (e.g. ``trees[3].left_child[5]``).
        """
        from .model_file import load
        return load(cls, path)

    def to_json(self) -> str:
        """The text :meth:`save` writes."""
        from .model_file import dumps
        return dumps(self)

    def to_lightgbm_string(self, num_iteration: int | None = None) -> str:
        """LightGBM text model of the trees ``predict(num_iteration=num_iteration)`` uses (raw scores)."""
        from .export import lightgbm_model_string
        return lightgbm_model_string(self, num_iteration)

    def to_lightgbm(self, num_iteration: int | None = None) -> "lightgbm.Booster":
        """The model as a ``lightgbm.Booster`` whose raw scores equal ``predict(X, num_iteration)`` on any X.

        Exports the first ``best_iteration_`` rounds after early stopping (``num_iteration=`` to
        choose), with the feature names the model was fitted with.
        """
        import lightgbm
        return lightgbm.Booster(model_str=self.to_lightgbm_string(num_iteration))

