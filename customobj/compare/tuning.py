"""``customobj compare --tune N``: the same hyperparameter search budget for every method.

Each method gets ``N`` trials per fold of Optuna's TPE sampler (Bergstra et al. 2011), seeded, on the
validation part of the fold: a trial trains on the training part with early stopping on the
validation part and scores validation NDCG@10 (the test part is never looked at). Trial 0 is the
untuned setting (the command's ``--num-leaves``/``--learning-rate`` and the libraries' defaults),
so the chosen parameters are never worse on validation than no tuning. The search spaces
(:data:`SPACES` for the model, :data:`OBJECTIVE_SPACE` for the objective's own options) are
documented in docs/compare.md; an option written in the method name (``lgb:LambdaRank(sigma=2)``)
is the user's choice and is not searched.
"""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Optional

from .methods import MethodSpec
from .trainers import Settings, Split, TrainResult, validation_score

__all__ = ["Param", "SPACES", "OBJECTIVE_SPACE", "NATIVE_SPACE", "Tuned", "search_space", "apply", "tune",
           "startup_trials"]

_NO_DEFAULT = object()


@dataclass(frozen=True)
class Param:
    """One searched parameter: a range (``integer``/``log`` as in Optuna's ``suggest_*``) or
    ``choices``; ``default`` is its value in the untuned run (trial 0), ``None`` allowed as a choice."""

    name: str
    low: float = 0.0
    high: float = 0.0
    log: bool = False
    integer: bool = False
    choices: tuple = ()
    default: object = field(default=_NO_DEFAULT, compare=False)

    def suggest(self, trial: Any, key: str) -> Any:
        """Ask the Optuna ``trial`` for a value under ``key``."""
        if self.choices:
            return trial.suggest_categorical(key, list(self.choices))
        if self.integer:
            return trial.suggest_int(key, int(self.low), int(self.high), log=self.log)
        return trial.suggest_float(key, float(self.low), float(self.high), log=self.log)

    def holds(self, value: Any) -> bool:
        """Whether ``value`` lies in the space (an enqueued trial must)."""
        if self.choices:
            return value in self.choices
        return isinstance(value, (int, float)) and self.low <= value <= self.high


_LEAVES = Param("num_leaves", 4, 255, log=True, integer=True)  # default: --num-leaves
_RATE = Param("learning_rate", 0.01, 0.3, log=True)  # default: --learning-rate


def _fraction(name: str) -> Param:
    """A sampled fraction (of features), untuned 1."""
    return Param(name, 0.5, 1.0, default=1.0)


def _l2(name: str, default: float) -> Param:
    """L2 is searched on a log scale; its untuned value 0 is represented by the range's low end."""
    return Param(name, 1e-3, 10.0, log=True, default=default)


#: Model parameters searched per backend, in each library's own names. ``num_leaves`` and
#: ``learning_rate`` go to :class:`~.trainers.Settings` (each trainer maps them: XGBoost's
#: ``max_leaves``/``eta``); the rest go to the library (or TreeBooster) as they are.
SPACES = {
    "lgb": (_LEAVES, _RATE, Param("min_data_in_leaf", 1, 100, log=True, integer=True, default=20),
            _l2("lambda_l2", 1e-3), _fraction("feature_fraction")),
    # XGBoost has no row count per leaf: min_child_weight bounds the hessian sum of a leaf instead.
    "xgb": (_LEAVES, _RATE, Param("min_child_weight", 1e-3, 10.0, log=True, default=1.0),
            _l2("lambda", 1.0), _fraction("colsample_bytree")),
    # CatBoost grows symmetric trees (no min_data_in_leaf there): depth d has 2**d leaves.
    "cb": (Param("depth", 2, 10, integer=True), _RATE, Param("l2_leaf_reg", 0.1, 30.0, log=True, default=3.0),
           _fraction("rsm")),
    "ole": (_LEAVES, _RATE, Param("min_data_in_leaf", 1, 100, log=True, integer=True, default=20),
            _l2("lambda_l2", 1e-3), _fraction("feature_fraction")),
}

#: Options of customobj objectives searched when the objective's constructor has them.
OBJECTIVE_SPACE = (
    Param("sigma", 0.5, 4.0, log=True, default=1.0),  # RankNet/LambdaRank/Logistic sigmoid slope
    Param("truncation", choices=(None, 5, 10, 20, 40), default=None),  # LambdaRank: pairs with the top-T only
    Param("lam", 0.1, 10.0, log=True, default=1.0),  # MPBoost's lambda (Zhu et al. 2009)
)

#: Options of native objectives searched, per (backend, objective), in the library's names.
NATIVE_SPACE = {
    ("lgb", "lambdarank"): (Param("sigmoid", 0.5, 4.0, log=True, default=1.0),
                            Param("lambdarank_truncation_level", 5, 50, log=True, integer=True, default=30)),
}

#: Prefix of the objective's options among a trial's parameters (the model's have none).
OBJ = "objective."


#: CatBoost's pairwise-scoring modes cost steeply more per depth level (leaf pairs): on MQ2008 fold
#: 1, 20 iterations of YetiRankPairwise took 5.1 s at depth 6 and 203 s at depth 8 (2 threads,
#: loaded machine), so one trial at depth 10 would spend a whole tuning budget. They search depth
#: 2 .. CB_PAIRWISE_MAX_DEPTH (CatBoost's default depth).
CB_PAIRWISE_TARGETS = ("YetiRankPairwise", "PairLogitPairwise")
CB_PAIRWISE_MAX_DEPTH = 6


def search_space(spec: MethodSpec, settings: Settings) -> list[tuple[str, Param]]:
    """``[(trial key, Param)]`` searched for ``spec``, defaults filled from ``settings`` (trial 0)."""
    out = []
    for p in SPACES[spec.backend]:
        if p.name == "depth" and spec.target in CB_PAIRWISE_TARGETS:
            p = replace(p, high=CB_PAIRWISE_MAX_DEPTH)
        if p.default is _NO_DEFAULT:
            default = {"num_leaves": settings.num_leaves, "learning_rate": settings.learning_rate,
                       "depth": max(2, min(p.high, round(math.log2(max(settings.num_leaves, 2)))))}[p.name]
            p = replace(p, default=default)
        out.append((p.name, p))
    given = {k for k, _ in spec.options}
    from .clicks import CLICK_TARGETS, CLICK_TRAINERS

    if spec.native:
        own: tuple[Param, ...] = NATIVE_SPACE.get((spec.backend, spec.target), ())
    elif spec.target in CLICK_TARGETS + CLICK_TRAINERS:
        own = ()  # Unbiased(objective=...) and RegressionEM: the model's parameters only
    else:
        from .. import objectives

        accepted = inspect.signature(getattr(objectives, spec.target).__init__).parameters
        own = tuple(p for p in OBJECTIVE_SPACE if p.name in accepted)
    out.extend((OBJ + p.name, p) for p in own if p.name not in given)
    return out


def apply(spec: MethodSpec, settings: Settings, values: dict) -> tuple[MethodSpec, Settings]:
    """The method and settings of one point of the search space (``values``: trial key -> value)."""
    model = {k: v for k, v in values.items() if not k.startswith(OBJ)}
    own = tuple((k[len(OBJ):], v) for k, v in values.items() if k.startswith(OBJ))
    st = replace(settings, num_leaves=int(model.pop("num_leaves", settings.num_leaves)),
                 learning_rate=float(model.pop("learning_rate", settings.learning_rate)),
                 params=tuple(settings.params) + tuple(model.items()))
    return replace(spec, options=tuple(spec.options) + own), st


def startup_trials(n_trials: int) -> int:
    """Random (seeded) trials before TPE models the results: Optuna's 10, fewer for small budgets
    so that a budget of 8 still has TPE-guided trials."""
    return min(10, max(2, n_trials // 3))


@dataclass
class Tuned:
    """The outcome of tuning one method on one fold."""

    values: dict  # trial key -> chosen value
    best_valid: float  # validation NDCG@10 of the chosen trial
    best_trial: int
    trial_values: list  # validation NDCG@10 of every trial, in order
    result: TrainResult  # the chosen trial's model, scored (reused as the first seed's run)
    spec: MethodSpec  # the method with the chosen objective options
    settings: Settings  # the settings with the chosen model parameters

    def record(self, valid: str = "valid_ndcg@10") -> dict:
        """The JSON record of results.json: chosen model and objective parameters, the trials. Their
        values are named by ``valid``, the run's validation column (``compare --click-log`` validates
        on the IPS click NDCG@10, not on labels: ``best_valid_ips_ndcg@10``)."""
        return {
            "params": {k: v for k, v in self.values.items() if not k.startswith(OBJ)},
            "objective_params": {k[len(OBJ):]: v for k, v in self.values.items() if k.startswith(OBJ)},
            "best_trial": self.best_trial, f"best_{valid}": self.best_valid,
            f"trial_{valid}": self.trial_values,
        }


def tune(spec: MethodSpec, settings: Settings, n_trials: int, train_: Split, valid: Split, test: Split, *,
         seed: int, train_fn: Callable, on_trial: Optional[Callable[[int], None]] = None) -> Tuned:
    """Search ``n_trials`` points for ``spec`` with seeded TPE, maximising validation NDCG@10.

    ``train_fn`` is :func:`customobj.compare.trainers.train` (or a stand-in with its signature);
    ``on_trial(number)`` is called after each trial (the progress bar). Ties go to the earliest
    trial. The same ``seed`` and deterministic training give the same trials and choice.
    """
    from .._extras import require

    optuna = require("optuna", "customobj compare --tune")

    if not isinstance(n_trials, int) or isinstance(n_trials, bool) or n_trials < 1:
        raise ValueError(f"n_trials must be a positive integer, got {n_trials!r}")
    space = search_space(spec, settings)
    results: dict[int, TrainResult] = {}

    def objective(trial):
        values = {key: p.suggest(trial, key) for key, p in space}
        sp, st = apply(spec, settings, values)
        res = train_fn(sp, st, train_, valid, test)
        results[trial.number] = res
        value = validation_score(st, res.valid_scores, valid)  # the IPS click NDCG@10 on a click log
        if on_trial is not None:
            on_trial(trial.number)
        return value

    sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=startup_trials(n_trials))
    before = optuna.logging.get_verbosity()
    # one line per trial would bury the progress bar; a failed trial's exception reaches the caller,
    # which reports it in one line, so Optuna's own warning about it would say it twice
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    try:
        study = optuna.create_study(direction="maximize", sampler=sampler)
        study.enqueue_trial({key: p.default for key, p in space if p.holds(p.default)})
        study.optimize(objective, n_trials=n_trials, catch=())
    finally:
        optuna.logging.set_verbosity(before)
    trials = study.trials
    scores: list[float] = []
    for t in trials:  # catch=(): every trial finished with a value
        if t.value is None:
            raise RuntimeError(f"Optuna trial {t.number} finished without a value")
        scores.append(t.value)
    best = max(range(len(trials)), key=lambda i: (scores[i], -i))
    values = dict(trials[best].params)
    sp, st = apply(spec, settings, values)
    return Tuned(values, scores[best], best, scores, results[best], sp, st)
