"""``customobj compare --clicks``: train every method on simulated clicks, score on the true labels.

``--clicks pbm[:eta=1,sessions=12,shown=10]`` (or ``cascade[:...]``) replaces each fold's training
part by a click log (:func:`customobj.data.simulate_clicks`): a weak production ranker (LightGBM
``lambdarank``, ``WEAK_ROUNDS`` trees on ``WEAK_SHARE`` of the training queries, seeded) orders the
queries, the top rows are shown, simulated users click; each session is one group, rows in
displayed order, with their display positions (LightGBM's ``position`` field; row order for the
others). Validation (early stopping) and test keep their graded labels.

Methods: every method name works on clicks (naive); ``lgb:lambdarank`` with the position field is
LightGBM's position debiasing; ``xgb:rank:ndcg(lambdarank_unbiased=true)`` XGBoost's Unbiased
LambdaMART; ``lgb:Unbiased(objective=LambdaRank,bias_norm=0)`` customobj's (any backend, any
pairwise objective by name); ``lgb:Affine(objective=LambdaRank)`` the affine correction of trust bias,
its parameters estimated on each fold's click log by :class:`customobj.clicks.TrustEM` before training
(:func:`estimate_affine`); ``lgb:RegressionEM(n_iter=10)`` (or ``xgb:``) regression EM, ``--rounds``
trees in all, ``n_iter`` EM iterations.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np

from .._cli_errors import UsageError
from ..clicks.loggers import LOGGERS
from ..clicks.simulation import CLICK_MODELS

__all__ = ["ClickSpec", "parse_clicks", "model_options", "true_curves", "click_folds", "build_unbiased", "build_affine",
           "estimate_affine", "build_regression_em", "CLICK_TARGETS", "CLICK_BUILDERS", "AFFINE_EM",
           "CLICK_TRAINERS", "EM_BACKENDS", "WEAK_SHARE", "WEAK_ROUNDS", "ESTIMATOR_NOTE"]

#: What compare says under its tables when position_bias.csv has estimated curves: which to trust and
#: why, as measured by benchmarks/position_bias.py (docs/clicks.md, "Which position-bias estimate to trust").
ESTIMATOR_NOTE = ("position_bias.csv: every estimator overestimated examination below the top on simulated "
                  "PBM logs (benchmarks/position_bias.py), so read its curves as upper bounds; of the pairwise "
                  "ones, Unbiased(LambdaRank()) (--click-log's IPS propensities) came closest, norm=True and "
                  "XGBoost's lambdarank_unbiased were no closer (docs/clicks.md, 'Which position-bias estimate "
                  "to trust')")

#: Share of the training queries, and trees, of the weak production ranker that orders the queries.
WEAK_SHARE = 0.05
WEAK_ROUNDS = 10
#: Settings of the :class:`customobj.clicks.TrustEM` that estimates ``Affine``'s parameters on a fold's
#: click log (TrustEM's defaults, measured in docs/trust-bias.md); its seed is the run's.
AFFINE_EM: dict[str, Any] = {"n_iter": 10, "n_estimators": 10, "learning_rate": 0.05}
#: Method targets that are trainers of their own, not objectives: ``lgb:RegressionEM`` /
#: ``xgb:RegressionEM`` (:class:`customobj.RegressionEM` on that library).
CLICK_TRAINERS = ("RegressionEM",)
#: Backend prefix -> RegressionEM's ``library``.
EM_BACKENDS = {"lgb": "lightgbm", "xgb": "xgboost"}
#: RegressionEM options a method name may set; the number of trees comes from ``--rounds``.
_EM_OPTIONS = ("n_iter", "min_child_samples")
_OPTIONS = {"eta": float, "sessions": int, "shown": int, "logger": str, "explore": float, "temperature": float}
#: Options of one click model (``simulate_clicks``' keywords): a number, or one per position from the top
#: joined by ``/`` (``epsilon_plus=0.98/0.97/0.96``). simulate_clicks refuses one of another model.
_MODEL_OPTIONS = ("epsilon_plus", "epsilon_minus", "continue_prob")


class ClickSpec(NamedTuple):
    """A parsed ``--clicks`` value; ``options`` holds the model's own options (``_MODEL_OPTIONS``) as
    ``(name, values)`` pairs, each a tuple of one number or one per position."""

    model: str
    eta: float = 1.0
    sessions: int = 12
    shown: int = 10
    options: tuple = ()
    logger: str = "deterministic"  # simulate_clicks' logging policy (issue 43), its share and temperature
    explore: float = 1.0
    temperature: float = 1.0

    @property
    def label(self) -> str:
        extra = "".join(f",{k}={'/'.join(f'{v:g}' for v in vals)}" for k, vals in self.options)
        if self.logger != "deterministic":  # the default logger keeps the labels logs have always had
            extra += f",logger={self.logger},explore={self.explore:g},temperature={self.temperature:g}"
        return f"{self.model}:eta={self.eta:g},sessions={self.sessions},shown={self.shown}{extra}"

    def simulation_options(self) -> dict:
        """The model's options as ``simulate_clicks`` keywords (a number, or a list per position), and
        the logger's unless it is the default one."""
        out = {k: (vals[0] if len(vals) == 1 else list(vals)) for k, vals in self.options}
        if self.logger != "deterministic":
            out.update(logger=self.logger, explore=self.explore, temperature=self.temperature)
        return out


def parse_clicks(text: str) -> ClickSpec:
    """``"pbm"``, ``"pbm:eta=2"``, ``"cascade:sessions=5,shown=8"``, ``"trust:epsilon_minus=0.1"``,
    ``"dcm:continue_prob=0.7"`` -> :class:`ClickSpec`.

    Examples
    --------
    >>> parse_clicks("pbm:eta=2").label
    'pbm:eta=2,sessions=12,shown=10'
    >>> parse_clicks("trust:shown=3,epsilon_plus=1/0.9/0.8").simulation_options()["epsilon_plus"]
    [1.0, 0.9, 0.8]
    >>> parse_clicks("trust:logger=stochastic,temperature=0.5").label
    'trust:eta=1,sessions=12,shown=10,logger=stochastic,explore=1,temperature=0.5'
    """
    if not text.strip():  # `--clicks ''` (an unset shell variable) must not quietly train on the true labels
        raise UsageError(f"--clicks is empty: name a click model ({' or '.join(CLICK_MODELS)}, e.g. --clicks pbm:eta=2), "
                         "or leave --clicks out to train on the true labels")
    model, _, rest = text.strip().partition(":")
    model = model.strip()
    if model not in CLICK_MODELS:
        raise UsageError(f"--clicks: the click model must be one of {', '.join(CLICK_MODELS)}, got {model!r}")
    values: dict[str, Any] = {}
    options = []
    for item in filter(None, (t.strip() for t in rest.split(","))):
        key, eq, value = (t.strip() for t in item.partition("="))
        if eq and key in _MODEL_OPTIONS:
            options.append((key, _numbers(key, value)))
            continue
        if not eq or key not in _OPTIONS:
            raise UsageError(f"--clicks: options are {', '.join(k + '=...' for k in (*_OPTIONS, *_MODEL_OPTIONS))}, "
                             f"got {item!r}")
        try:
            values[key] = _OPTIONS[key](value)
        except ValueError:
            raise UsageError(f"--clicks: {key} must be a{'n integer' if _OPTIONS[key] is int else ' number'}, "
                             f"got {value!r}") from None
    if len({k for k, _ in options}) != len(options):
        raise UsageError(f"--clicks: an option is given twice in {text!r}")
    spec = ClickSpec(model, **values, options=tuple(options))
    if not (np.isfinite(spec.eta) and spec.eta >= 0):
        raise UsageError(f"--clicks: eta must be a finite number >= 0, got {spec.eta}")
    if not 1 <= spec.sessions <= 1000 or not 1 <= spec.shown <= 1000:
        raise UsageError("--clicks: sessions and shown must be integers in 1..1000")
    if spec.logger not in LOGGERS or not 0.0 <= spec.explore <= 1.0 or not (0.0 < spec.temperature < np.inf):
        raise UsageError(f"--clicks: logger must be one of {', '.join(LOGGERS)}, explore in [0, 1] and temperature "
                         f"> 0 (finite), got {spec.logger!r}, {spec.explore}, {spec.temperature}")
    try:  # simulate_clicks' own checks of the model's options (its model, [0, 1], one per position shown)
        model_options(spec)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"--clicks {text.strip()}: {exc}") from None
    return spec


def _numbers(key: str, value: str) -> tuple:
    try:
        out = tuple(float(v) for v in value.split("/"))
    except ValueError:
        raise UsageError(f"--clicks: {key} must be a number or numbers joined by / (one per position), "
                         f"got {value!r}") from None
    return out


def model_options(spec: ClickSpec) -> tuple:
    """``(epsilon_plus, epsilon_minus, continue_prob)`` per 1-based position ``1..shown`` as the simulation
    uses them (defaults filled in; for the model's true curves in the report)."""
    from ..clicks.simulation import _model_options

    opts = spec.simulation_options()
    return _model_options(CLICK_MODELS[spec.model], spec.shown, opts.get("epsilon_plus"), opts.get("epsilon_minus"),
                          opts.get("continue_prob"))


def true_curves(spec: ClickSpec) -> dict | None:
    """The simulated users' own per-position curves (position 1 first), by the quantity the click methods
    estimate: ``examination`` ``(1/r)^eta`` for pbm and trust (relative to position 1, as ``position_bias_``),
    and trust's click rates ``epsilon_plus`` / ``epsilon_minus`` and their affine form (Vardasbi et al.
    2020: ``P(click) = alpha_r gamma + beta_r``) ``alpha`` = ``theta_r (epsilon_plus - epsilon_minus)``,
    ``beta`` = ``theta_r epsilon_minus``. Cascade, DCM and UBM users have no examination per position
    alone (it depends on the clicks above): ``None``.

    Examples
    --------
    >>> {k: [round(v, 2) for v in c] for k, c in true_curves(parse_clicks("trust:shown=2")).items()}
    {'examination': [1.0, 0.5], 'epsilon_plus': [0.98, 0.97], 'epsilon_minus': [0.65, 0.33],
     'alpha': [0.33, 0.32], 'beta': [0.65, 0.16]}
    """
    from ..clicks.simulation import PBM, TRUST

    code = CLICK_MODELS[spec.model]
    if code not in (PBM, TRUST):
        return None
    theta = (1.0 / np.arange(1, spec.shown + 1)) ** spec.eta
    out = {"examination": theta.tolist()}
    if code == TRUST:
        plus, minus, _ = model_options(spec)
        out.update(epsilon_plus=plus.tolist(), epsilon_minus=minus.tolist(), alpha=(theta * (plus - minus)).tolist(),
                   beta=(theta * minus).tolist())
    return out


def _weak_ranker(train, seed, jobs):
    import lightgbm as lgb

    rng = np.random.default_rng(seed)
    nq = train.sizes.size
    keep = np.zeros(nq, dtype=bool)
    keep[rng.choice(nq, max(2, int(round(WEAK_SHARE * nq))), replace=False)] = True
    rows = np.repeat(keep, train.sizes)
    params = {"objective": "lambdarank", "seed": seed, "deterministic": True, "num_threads": jobs,
              "verbosity": -1, "min_data_in_leaf": 5}
    booster = lgb.train(params, lgb.Dataset(train.X[rows], train.y[rows], group=train.sizes[keep]), WEAK_ROUNDS)
    return booster.predict(train.X)


def click_folds(folds: list, spec: ClickSpec, seed: int, jobs: int) -> list:
    """Each fold's training Split replaced by its simulated click log (seeded by ``seed`` and fold)."""
    from ..data import simulate_clicks

    out = []
    for fold, train, valid, test in folds:
        s = seed + fold
        log = simulate_clicks((train.X, train.y, train.sizes), ranker=_weak_ranker(train, s, jobs),
                              click_model=spec.model, eta=spec.eta, shown=spec.shown, sessions=spec.sessions, seed=s,
                              **spec.simulation_options())
        # the training Split (trainers.Split) with the log's rows: replace() builds it without importing trainers,
        # which imports methods, which imports this module
        out.append((fold, replace(train, X=log.X, y=log.y, sizes=log.group, position=log.position), valid, test))
    return out


def _wrapped(target: str, kwargs: dict):
    """The objective named by the ``objective`` option (default LambdaRank), with its default options."""
    from .. import objectives

    name = kwargs.pop("objective", "LambdaRank")
    cls = getattr(objectives, name, None) if isinstance(name, str) else None
    if not isinstance(cls, type) or not issubclass(cls, objectives.Objective):
        raise ValueError(f"{target}: objective must name a customobj objective such as LambdaRank, got {name!r}")
    return cls()


def build_unbiased(kwargs: dict):
    """``Unbiased`` of the objective named by the ``objective`` option (its default options)."""
    from ..clicks import Unbiased

    return Unbiased(_wrapped("Unbiased", kwargs), **kwargs)


def build_affine(kwargs: dict):
    """``Affine`` of the objective named by the ``objective`` option, without its parameters: the
    trainer estimates them on the training click log (:func:`estimate_affine`) unless ``alpha`` and
    ``beta`` are given."""
    from ..clicks import Affine

    return Affine(_wrapped("Affine", kwargs), **kwargs)


def estimate_affine(obj: Any, X: Any, y: np.ndarray, position: Any, seed: int):
    """``obj`` itself, or, for an ``Affine`` without parameters, ``Affine.from_log`` on the training
    click log (``TrustEM(**AFFINE_EM)``, seeded by the run) with ``obj``'s options (``position``: the
    log's, which the trainers pass with the data)."""
    from ..clicks import Affine, TrustEM

    if not isinstance(obj, Affine) or obj.alpha is not None:
        return obj
    if position is None:
        raise ValueError("Affine learns from clicks: run compare with --clicks (its parameters are estimated on the "
                         "click log)")
    em = TrustEM(seed=seed, **AFFINE_EM)
    return Affine.fit_log(obj.objective, X, y, position=position, em=em, query_norm=obj.query_norm).objective


#: Method targets that are not objective classes but wrap one named by their ``objective`` option,
#: and how each is built from the method's options.
CLICK_BUILDERS = {"Unbiased": build_unbiased, "Affine": build_affine}
CLICK_TARGETS = tuple(CLICK_BUILDERS)


def build_regression_em(backend: str, kwargs: dict, *, rounds: int, num_leaves: int, learning_rate: float,
                        seed: int, params: tuple = ()):
    """The :class:`customobj.RegressionEM` of a method ``<backend>:RegressionEM(n_iter=...)``.

    ``n_iter`` EM iterations (default 10; ``rounds`` when there are fewer rounds) of ``ceil(rounds / n_iter)`` trees
    each; the model kept has at most ``rounds`` trees (the trainer picks them on validation).
    ``params`` (``--tune``'s ``(name, value)`` pairs, in the library's names) go to the library.

    Examples
    --------
    >>> em, per_iter = build_regression_em("lgb", {"n_iter": 4}, rounds=10, num_leaves=7, learning_rate=0.1, seed=0)
    >>> em.library, em.n_iter, per_iter
    ('lightgbm', 4, 3)
    """
    from .._validation import check_int
    from ..clicks.regression_em import MAX_ITER, RegressionEM

    if backend not in EM_BACKENDS:
        raise ValueError(f"RegressionEM trains with {' or '.join(b + ':' for b in EM_BACKENDS)}, not {backend}:")
    unknown = sorted(set(kwargs) - set(_EM_OPTIONS))
    if unknown:
        raise ValueError(f"RegressionEM has no option {unknown[0]!r} here; its options: {', '.join(_EM_OPTIONS)} "
                         "(the number of trees is --rounds)")
    options: dict[str, Any] = dict(learning_rate=learning_rate, num_leaves=num_leaves, seed=seed)
    options.update(kwargs)
    n_iter = min(check_int(options.pop("n_iter", 10), "n_iter", minimum=1, maximum=MAX_ITER),
                 rounds)  # at least one tree per iteration
    per_iter = -(-rounds // n_iter)
    em = RegressionEM(library=EM_BACKENDS[backend], n_iter=n_iter, n_estimators=per_iter, params=dict(params),
                      **options)
    em._checked()  # bad values name their option now, not after the data is loaded
    return em, per_iter
