"""Train one method on one fold and return its scores and validation curve.

Every trainer gets the same :class:`Settings` (rounds, leaves, learning rate, seed, threads, early
stopping patience on the validation fold) and records validation NDCG@10 per round with the
library's own recorder: LightGBM ``record_evaluation``, XGBoost ``evals_result``, CatBoost
``get_evals_result``, ``TreeBooster.evals_result_``. LightGBM and XGBoost use their native
``ndcg@10`` (exponential gain ``2**y - 1``, queries without relevant rows count 1.0 -- the
convention of :mod:`customobj.metrics`); multi-output objectives (McRank) use the adapters' metric.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import numpy as np

from ..objectives.pointwise import McRank
from .clicks import CLICK_TRAINERS, estimate_affine
from .harvested import wants_harvest, with_harvest
from .methods import BACKENDS, MethodSpec, build_objective, seeded

__all__ = ["Settings", "Split", "TrainResult", "train", "warm_up", "catboost_available", "valid_metric",
           "validation_score", "warm_up_sample", "SAMPLE_ROWS"]

CURVE_METRIC = "ndcg@10"
#: The validation metric on a click log (Settings.valid_propensity): customobj.metrics.click_metric's name.
CLICK_CURVE_METRIC = "ips_ndcg@10"


@dataclass(frozen=True)
class Settings:
    rounds: int = 100
    num_leaves: int = 31
    learning_rate: float = 0.1
    seed: int = 0
    jobs: int = 2
    early_stopping: int = 20  # patience in rounds; 0 disables early stopping
    #: Where XGBoost methods train: "cpu", or "cuda" / "cuda:N" (XGBoost's device and customobj's GPU
    #: objectives, ``xgboost_objective(obj, device=...)``, which parse it). Other backends train on the CPU.
    device: str = "cpu"
    #: Further model parameters in the backend's own names (``(name, value), ...``), applied after the
    #: defaults above: LightGBM / XGBoost / CatBoost parameters, TreeBooster keyword arguments.
    #: ``--tune`` fills it (customobj.compare.tuning); empty means the fixed settings.
    params: tuple = ()
    #: Propensity per display position (0 first) of the IPS click NDCG@10 that validates (early stopping,
    #: the validation column, --tune) on a validation part of clicks (compare --click-log); empty means
    #: NDCG@10 on graded validation labels.
    valid_propensity: tuple = ()


@dataclass
class Split:
    """Dense features, graded labels and query sizes of one part of a fold."""

    X: np.ndarray
    y: np.ndarray
    sizes: np.ndarray
    position: np.ndarray | None = None  # display positions of a click log (compare --clicks)
    #: Examination propensities harvested from several rankers' logs of this training part, for the methods
    #: ``Unbiased(..., propensity=harvest)`` (customobj.compare.harvested); None when no method asks.
    propensity: np.ndarray | None = None

    @classmethod
    def from_data(cls, data) -> Split:
        X, y, group = (data.X, data.y, data.group) if hasattr(data, "X") else data
        if group is None:
            raise ValueError("the data has no query information (qid: tokens or a LightGBM .query file)")
        sizes = np.asarray(group.sizes if hasattr(group, "sizes") else group, dtype=np.int64)
        X = np.ascontiguousarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float64)
        return cls(X, np.ascontiguousarray(y, dtype=np.float64), sizes)

    @property
    def ptr(self):
        return np.concatenate([[0], np.cumsum(self.sizes)]).astype(np.int64)

    @property
    def qid(self):
        return np.repeat(np.arange(self.sizes.size, dtype=np.int64), self.sizes)


@dataclass
class TrainResult:
    test_scores: np.ndarray
    valid_scores: np.ndarray
    curve: np.ndarray  # validation NDCG@10 after each trained round
    best_round: int  # number of rounds kept (1-based)
    rounds_trained: int
    train_time: float  # seconds, data set construction + training, prediction excluded
    #: The estimated examination per display position (position 1 first) of a click method that
    #: estimates one (customobj's ``Unbiased``, ``Affine`` and ``RegressionEM``: their ``position_bias_``).
    position_bias: np.ndarray | None = None
    #: Further per-position estimates of a click method, by quantity (position 1 first): what a
    #: method estimates beside the examination, e.g. an affine correction's ``{"alpha": ..., "beta": ...}``;
    #: reported in position_bias.csv / .png as rows of that quantity (customobj.compare.report).
    click_curves: dict | None = None


def _position_bias(fitted, data=None) -> np.ndarray | None:
    """The estimated ``position_bias_`` a trainer reports, as a copy, or None: a library objective's
    callable reports it per training set (``f.fitted_attributes(data)``: ``Unbiased`` holds no fitted
    state), a fitted ``TreeBooster`` or ``RegressionEM`` holds it."""
    if data is not None:
        bias = fitted.fitted_attributes(data).get("position_bias_")
    else:
        bias = getattr(fitted, "position_bias_", None)
    return None if bias is None else np.array(bias, dtype=np.float64)


#: Fitted attribute -> the quantity of position_bias.csv it is reported as (the names of
#: customobj.compare.clicks.true_curves): what a click method estimates beside the examination.
CLICK_CURVE_ATTRIBUTES = {"affine_alpha_": "alpha", "affine_beta_": "beta"}


def _click_curves(fitted, data=None) -> dict | None:
    """An ``Affine``'s ``alpha`` and ``beta`` per position (copies), read as :func:`_position_bias`
    reads the examination; None for a method that estimates neither."""
    got = fitted.fitted_attributes(data) if data is not None else {
        a: getattr(fitted, a, None) for a in CLICK_CURVE_ATTRIBUTES}
    curves = {q: np.array(got[a], dtype=np.float64) for a, q in CLICK_CURVE_ATTRIBUTES.items()
              if got.get(a) is not None}
    return curves or None


def _xgboost_position_bias(booster, params: dict, train_: Split) -> np.ndarray | None:
    """XGBoost's own estimate with ``lambdarank_unbiased``: ``ti+`` of its objective's saved config
    (position 1 first, relative to it), cut to the longest training query (it tracks 32 slots)."""
    import json

    if str(params.get("lambdarank_unbiased", "")).lower() not in ("true", "1"):
        return None
    ti = json.loads(booster.save_config())["learner"]["objective"].get("ti+")
    return None if not ti else np.asarray(ti[:int(train_.sizes.max())], dtype=np.float64)


def valid_metric(st: Settings):
    """The validation metric of ``st``: the IPS click NDCG@10 with ``st.valid_propensity`` (a validation
    part of clicks, rows in display order), or None: the libraries' own NDCG@10 on graded labels."""
    from ..metrics import click_metric

    return click_metric(CLICK_CURVE_METRIC, propensity=st.valid_propensity) if st.valid_propensity else None


def validation_score(st: Settings, scores: np.ndarray, valid: Split) -> float:
    """The validation value of ``scores`` as early stopping measured it (:func:`valid_metric`)."""
    from ..metrics import ndcg

    metric = valid_metric(st)
    if metric is None:
        return float(ndcg(scores, valid.y, valid.sizes, k=10))
    return float(metric.func(scores, valid.y, valid.sizes))


def catboost_available() -> bool:
    try:
        import catboost  # noqa: F401
    except ImportError:
        return False
    return True


def _ranking_score(obj, raw):
    """Scores to rank by: the raw margin, or the objective's own mapping for multi-output losses."""
    raw = np.asarray(raw, dtype=np.float64)
    if raw.ndim == 2 and raw.shape[1] > 1:
        for name in ("predict_relevance", "ranking_scores"):
            fn = getattr(obj, name, None)
            if callable(fn):
                return np.asarray(fn(raw), dtype=np.float64)
        return McRank.expected_grade(raw)
    return raw.reshape(-1)


def _objective(spec, train_, seed):
    """The customobj objective of ``spec``, its number of outputs settled on the training labels (an
    ``Affine``'s parameters estimated on the training click log; harvested propensities put in)."""
    if wants_harvest(spec):
        if train_.propensity is None:
            raise ValueError(f"{spec.label} needs the propensities harvested from several rankers' logs: "
                             "compare --clicks simulates them")
        spec = with_harvest(spec, train_.propensity)
    obj = estimate_affine(build_objective(seeded(spec, seed)), train_.X, train_.y, train_.position, seed)
    if obj.n_outputs is None:  # McRank without n_classes infers K from the first data it sees
        obj.prepare(train_.y, train_.sizes)
    return obj


# --- LightGBM -------------------------------------------------------------------------------------
def _library_params(params: dict, spec: MethodSpec, st: Settings, train_: Split):
    """Add the tuned/extra ``st.params`` to a library's ``params``, then the objective: a native one
    by name with its options (returns None), else the customobj objective, returned for the adapter."""
    params.update(st.params)
    if spec.native:
        params["objective"] = spec.target
        params.update(spec.kwargs)
        return None
    return _objective(spec, train_, st.seed)


def _train_lgb(spec, st, train_, valid, test):
    import lightgbm as lgb

    from ..adapters import lightgbm_metric, lightgbm_objective

    params = {
        "num_leaves": st.num_leaves, "learning_rate": st.learning_rate, "seed": st.seed,
        "deterministic": True, "force_row_wise": True, "num_threads": st.jobs, "verbosity": -1,
        "metric": "ndcg", "eval_at": [10],
    }
    feval = None
    obj = _library_params(params, spec, st, train_)
    if obj is not None:
        params["objective"] = lightgbm_objective(obj)
        if obj.n_outputs > 1:
            params["num_class"] = obj.n_outputs
            params["metric"] = "None"
            feval = lightgbm_metric(CURVE_METRIC)
    clicks = valid_metric(st)
    if clicks is not None:  # a validation part of clicks: the IPS click metric, the only one watched
        params["metric"] = "None"
        feval = lightgbm_metric(clicks)
    start = time.perf_counter()
    dtrain = lgb.Dataset(train_.X, train_.y, group=train_.sizes, position=train_.position, free_raw_data=False)
    dvalid = lgb.Dataset(valid.X, valid.y, group=valid.sizes, reference=dtrain)
    record = {}
    callbacks = [lgb.record_evaluation(record)]
    if spec.leaves == "exact_leaves":  # runs first (its order): the recorders see the new leaves
        from ..adapters import ExactLeaves

        callbacks.append(ExactLeaves(obj, train_.X, train_.y, train_.sizes, valid_X=[valid.X]))
    if st.early_stopping > 0:
        callbacks.append(lgb.early_stopping(st.early_stopping, first_metric_only=True, verbose=False))
    booster = lgb.train(params, dtrain, num_boost_round=st.rounds, valid_sets=[dvalid],
                        valid_names=["valid"], feval=feval, callbacks=callbacks)
    elapsed = time.perf_counter() - start
    curve = np.asarray(next(iter(record["valid"].values())), dtype=np.float64)
    # lgb.train keeps only the best rounds of an early-stopped model; the record has them all.
    best = booster.best_iteration if booster.best_iteration > 0 else booster.current_iteration()
    predict = lambda X: _ranking_score(obj, booster.predict(X, num_iteration=best, raw_score=True))  # noqa: E731
    bias, curves = (_position_bias(params["objective"], dtrain), _click_curves(params["objective"], dtrain)) \
        if obj is not None else (None, None)
    return TrainResult(predict(test.X), predict(valid.X), curve, int(best), int(curve.size), elapsed, bias, curves)


# --- XGBoost --------------------------------------------------------------------------------------
def _train_xgb(spec, st, train_, valid, test):
    import xgboost as xgb

    from ..adapters import xgboost_metric, xgboost_objective, xgboost_params

    params = {
        # Leaf-wise growth with a leaf budget, as LightGBM, so num_leaves means the same thing.
        "tree_method": "hist", "grow_policy": "lossguide", "max_leaves": st.num_leaves, "max_depth": 0,
        "eta": st.learning_rate, "seed": st.seed, "nthread": st.jobs, "verbosity": 0,
        "eval_metric": CURVE_METRIC, "disable_default_eval_metric": 1, "device": st.device,
    }
    kwargs = {}
    obj = _library_params(params, spec, st, train_)
    if obj is not None:
        kwargs["obj"] = xgboost_objective(obj, device=st.device)
        # base_score=0 (pointwise terms see the true margin, as with LightGBM), num_class for McRank.
        params = xgboost_params(obj, params, device=st.device)
        if obj.n_outputs > 1:
            params.pop("eval_metric")
            kwargs["custom_metric"] = xgboost_metric(CURVE_METRIC)
            kwargs["maximize"] = True
    clicks = valid_metric(st)
    if clicks is not None:  # a validation part of clicks: the IPS click metric
        params.pop("eval_metric", None)
        kwargs["custom_metric"] = xgboost_metric(clicks)
        kwargs["maximize"] = True
    start = time.perf_counter()
    dtrain = xgb.DMatrix(train_.X, label=train_.y, group=train_.sizes, nthread=st.jobs)
    dvalid = xgb.DMatrix(valid.X, label=valid.y, group=valid.sizes, nthread=st.jobs)
    record = {}
    booster = xgb.train(params, dtrain, num_boost_round=st.rounds, evals=[(dvalid, "valid")],
                        evals_result=record, verbose_eval=False,
                        early_stopping_rounds=st.early_stopping or None, **kwargs)
    elapsed = time.perf_counter() - start
    curve = np.asarray(next(iter(record["valid"].values())), dtype=np.float64)
    trained = booster.num_boosted_rounds()
    best = booster.best_iteration + 1 if st.early_stopping > 0 else trained

    def predict(X):
        raw = booster.predict(xgb.DMatrix(X, nthread=st.jobs), output_margin=True, iteration_range=(0, best))
        return _ranking_score(obj, raw)

    bias = _position_bias(kwargs["obj"], dtrain) if obj is not None else _xgboost_position_bias(booster, params, train_)
    curves = _click_curves(kwargs["obj"], dtrain) if obj is not None else None
    return TrainResult(predict(test.X), predict(valid.X), curve, int(best), int(trained), elapsed, bias, curves)


# --- CatBoost -------------------------------------------------------------------------------------
def _train_cb(spec, st, train_, valid, test):
    try:
        import catboost
    except ImportError:
        raise RuntimeError(f"{spec.label} needs CatBoost, an optional extra: pip install '.[catboost]'") from None
    metric = "NDCG:top=10;type=Exp"
    params = {
        "loss_function": spec.target, "iterations": st.rounds, "learning_rate": st.learning_rate,
        # CatBoost grows symmetric trees: depth d has 2**d leaves, the closest to num_leaves.
        "depth": max(1, min(16, round(math.log2(max(st.num_leaves, 2))))),
        "random_seed": st.seed, "thread_count": st.jobs, "eval_metric": metric,
        "verbose": False, "allow_writing_files": False,
    }
    if st.early_stopping > 0:
        params.update(od_type="Iter", od_wait=st.early_stopping, use_best_model=True)
    else:
        params["use_best_model"] = False
    params.update(st.params)
    params.update(spec.kwargs)
    start = time.perf_counter()
    pool_train = catboost.Pool(train_.X, train_.y, group_id=train_.qid)
    pool_valid = catboost.Pool(valid.X, valid.y, group_id=valid.qid)
    model = catboost.CatBoost(params)
    model.fit(pool_train, eval_set=pool_valid)
    elapsed = time.perf_counter() - start
    results = model.get_evals_result()["validation"]
    key = next(k for k in results if k.startswith("NDCG"))
    curve = np.asarray(results[key], dtype=np.float64)
    best = model.tree_count_
    predict = lambda X: np.asarray(model.predict(X, prediction_type="RawFormulaVal"), dtype=np.float64)  # noqa: E731
    return TrainResult(predict(test.X), predict(valid.X), curve, int(best), int(curve.size), elapsed)


# --- customobj.ole.TreeBooster --------------------------------------------------------------------
def _ole_booster(spec, st, obj, rounds):
    from ..ole import TreeBooster

    return TreeBooster(obj, criterion=spec.criterion, num_leaves=st.num_leaves, learning_rate=st.learning_rate,
                       n_estimators=rounds, random_state=st.seed, n_jobs=st.jobs, verbose=False,
                       **dict(st.params))


def _train_ole(spec, st, train_, valid, test):
    obj = _objective(spec, train_, st.seed)
    model = _ole_booster(spec, st, obj, st.rounds)
    start = time.perf_counter()
    clicks = valid_metric(st)
    model.fit(train_.X, train_.y, train_.sizes, eval_set=[(valid.X, valid.y)], eval_group=[valid.sizes],
              eval_metric=CURVE_METRIC if clicks is None else clicks.func,
              early_stopping_rounds=st.early_stopping or None)
    elapsed = time.perf_counter() - start
    curve = _first_curve(model.evals_result_)
    best = getattr(model, "best_iteration_", None)
    trained = curve.size if curve.size else st.rounds
    best = int(best) if best else trained
    predict = lambda X: _ranking_score(obj, model.predict(X, num_iteration=best))  # noqa: E731
    return TrainResult(predict(test.X), predict(valid.X), curve, best, int(trained), elapsed,
                       _position_bias(model), _click_curves(model))


# --- RegressionEM: a trainer, not an objective (compare --clicks) ---------------------------------
def _train_em(spec, st, train_, valid, test):
    """Regression EM on the click log; the curve is the validation NDCG@10 after each tree, and the
    model kept stops where ``early_stopping`` rounds brought no gain (lgb.early_stopping's rule), so
    it is the booster early stopping would have kept: later EM iterations never change earlier trees."""
    from .clicks import build_regression_em

    if train_.position is None:
        raise ValueError("RegressionEM learns from clicks: run compare with --clicks or --click-log")
    em, _ = build_regression_em(spec.backend, spec.kwargs, rounds=st.rounds, num_leaves=st.num_leaves,
                                learning_rate=st.learning_rate, seed=st.seed, params=st.params)
    start = time.perf_counter()
    em.fit(train_.X, train_.y, position=train_.position)
    elapsed = time.perf_counter() - start
    trained = min(em.n_iter * em.n_estimators, st.rounds)
    curve = np.array([validation_score(st, em.predict(valid.X, num_trees=k), valid) for k in range(1, trained + 1)])
    best = _best_round(curve, st.early_stopping)
    return TrainResult(em.predict(test.X, num_trees=best), em.predict(valid.X, num_trees=best), curve, best,
                       trained, elapsed, _position_bias(em))


def _best_round(curve, patience):
    """1-based round early stopping keeps: the first best, scanning until ``patience`` rounds bring no
    gain (``patience`` 0: the last round)."""
    if patience <= 0:
        return int(curve.size)
    best = 0
    for r in range(1, curve.size):
        if curve[r] > curve[best]:
            best = r
        elif r - best >= patience:
            break
    return best + 1


def _first_curve(record):
    """The first metric list of an ``evals_result_``-style nested dict (or a plain list)."""
    node = record
    while isinstance(node, dict):
        if not node:
            return np.zeros(0)
        node = next(iter(node.values()))
    return np.asarray(node, dtype=np.float64)


_TRAINERS = {"lgb": _train_lgb, "xgb": _train_xgb, "cb": _train_cb, "ole": _train_ole}
assert set(_TRAINERS) == set(BACKENDS)


def train(spec: MethodSpec, settings: Settings, train_: Split, valid: Split, test: Split) -> TrainResult:
    """Train ``spec`` on ``train_`` with early stopping on ``valid``; score ``valid`` and ``test``."""
    if spec.target in CLICK_TRAINERS:
        return _train_em(spec, settings, train_, valid, test)
    res = _TRAINERS[spec.backend](spec, settings, train_, valid, test)
    if wants_harvest(spec) and train_.propensity is not None:  # fixed, not estimated: the harvested curve
        res.position_bias = train_.propensity / train_.propensity[0]
    return res


def warm_up(spec: MethodSpec, settings: Settings, sample: Split) -> None:
    """Train ``spec`` for two rounds on ``sample`` (a few queries of the real training data).

    This compiles the numba code of customobj methods, so the timings exclude the JIT, and runs
    every method's whole path (adapters, library parameters) once, so that options only the
    library can judge fail in seconds rather than after the other methods trained.
    """
    tiny = replace(settings, rounds=2, early_stopping=0)
    train(spec, tiny, sample, sample, sample)


#: Rows of the training data each method trains on for two rounds before the real runs. LightGBM
#: drops every feature of a smaller sample (a split needs min_data_in_leaf = 20 rows on each side)
#: and the custom-objective path then stops on an internal check.
SAMPLE_ROWS = 500


def warm_up_sample(split: Split) -> Split:
    """Whole queries from the start of a training split, up to about SAMPLE_ROWS rows, and on to the
    first row above the lowest label (a click log's first click may come later: a trial without one
    fails for click methods, not because of their options)."""
    ends = np.cumsum(split.sizes)
    above = np.flatnonzero(split.y > split.y.min())
    need = max(SAMPLE_ROWS, int(above[0]) + 1) if above.size else SAMPLE_ROWS
    k = min(int(np.searchsorted(ends, need)) + 1, split.sizes.size)
    n = int(ends[k - 1])
    return Split(split.X[:n], split.y[:n], split.sizes[:k], None if split.position is None else split.position[:n],
                 split.propensity)
