"""Issue 43's study: learning to rank from trust-biased clicks under three logging policies, with the
parameters estimated and true, the doubly robust estimator and the true-label ceiling (the logger
axis of benchmarks/click_study.py; that file keeps issue 33's click-model axis).

Per (fold, logger, log) unit of MQ2008 (or OHSUMED), the fold's training part becomes a trust click log
(``simulate_clicks``' defaults: ``click_model="trust"``, ``eta=1``, 10 shown) of ``--sessions`` sessions
per query, ordered by compare's weak production ranker (customobj.compare.clicks._weak_ranker, seeded
as click_folds seeds it) through one logger:

- ``deterministic``: the production order;
- ``randomised``: every session's shown rows shuffled (``explore=--explore``);
- ``stochastic``: Plackett-Luce over the production scores, temperature ``--temperature`` times
  their standard deviation (``plackett_luce_marginals`` for the logging probabilities).

Methods, each trained by compare's trainer (``--rounds`` at most, early stopping on the validation
part's true NDCG@10), scored by test NDCG@10 on the queries with a relevant row (click_study's score):
``Unbiased`` (``lgb:Unbiased(objective=LambdaRank)``), ``XGBoost unbiased``
(``xgb:rank:ndcg(lambdarank_unbiased=true)``), ``Affine`` (``Affine.from_log``: TrustEM, compare's
defaults), ``Affine interventions`` (randomised logger: ``estimate_trust`` on the log), ``Affine true``
(the simulation's alpha / beta), ``DR true`` (``DoublyRobust`` on ``dr_data`` with the true alpha /
beta, the logger's position probabilities, ``fit_direct_method`` and ``dr_data``'s default clipping),
``DR`` (the same with TrustEM's alpha / beta, as ``Affine`` estimates them: what a user has), and ``labels ceiling``
(``lgb:LambdaRank`` on the true labels of every query-document the log shows, once each).

Per logger every pair of methods is a paired t-test over the ``folds x logs`` units, Holm-adjusted
over the pairs of that logger (click_study.analyse); the issue's target has its own family of two
(``Affine`` over ``Unbiased`` and over ``XGBoost unbiased``, Holm over those two) and the share of the
gap from ``Unbiased`` to ``labels ceiling`` that ``Affine`` takes (``target`` in the JSON).

Each finished unit is appended as one JSON line to ``--units`` (default: ``--out`` with ``.units.jsonl``);
a run started again with the same file skips the units it holds (same dataset, logger, fold and log),
so a run cut short is resumed and a partial run is reported (``--report`` analyses the file alone).

    python benchmarks/trust_study.py [--data ../shared/data] [--dataset mq2008] [--folds 1,2,3,4,5] [--logs 8]
        [--sessions 48] [--loggers deterministic,randomised,stochastic] [--rounds 200] [--out trust_study.json]
        [--units trust_study.units.jsonl] [--methods Affine,...] [--report [--units A.jsonl:Affine=Old+B.jsonl]]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import replace

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import numpy as np  # noqa: E402

from customobj import adapters  # noqa: E402,F401  (before lightgbm: OpenMP wait policy)
from customobj import LambdaRank  # noqa: E402
from customobj.clicks import Affine, DoublyRobust, estimate_trust  # noqa: E402
from customobj.clicks.doubly_robust import dr_data, fit_direct_method  # noqa: E402
from customobj.clicks.loggers import plackett_luce_marginals  # noqa: E402
from customobj.compare import trainers  # noqa: E402
from customobj.compare.clicks import AFFINE_EM, _weak_ranker, estimate_affine, parse_clicks, true_curves  # noqa: E402
from customobj.compare.folds import load_folds, parse_folds  # noqa: E402
from customobj.compare.methods import parse_method  # noqa: E402
from customobj._io import atomic_write_text  # noqa: E402
from customobj.compare import report  # noqa: E402
from customobj.compare.stats import holm, paired_difference  # noqa: E402



def _sibling(name):
    """A benchmark module of this folder, by path (each strips this folder from sys.path on import)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"_bench_{name}", os.path.join(_HERE, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_score = _sibling("affine_diagnosis")._score
analyse, format_tables = _sibling("click_study").analyse, _sibling("click_study").format_tables

LOGGERS = ("deterministic", "randomised", "stochastic")
LOG_STRIDE = 1000  # click_study's: log l of a fold is seeded seed + 1000 l + fold
_METHODS = {"Unbiased": "lgb:Unbiased(objective=LambdaRank)", "XGBoost unbiased": "xgb:rank:ndcg(lambdarank_unbiased=true)",
            "labels ceiling": "lgb:LambdaRank"}
_AFFINE = "lgb:Affine(objective=LambdaRank)"
METHODS = ("Unbiased", "XGBoost unbiased", "Affine", "Affine interventions", "Affine true", "DR true", "DR",
           "labels ceiling")


def _with_objective(build, split, valid, test, settings):
    """Train compare's Affine method with the objective ``build(obj)`` returns (compare's trainer asks
    ``trainers.estimate_affine`` for the one Affine it trains: the one hook)."""
    saved = trainers.estimate_affine
    trainers.estimate_affine = lambda obj, X, y, position, seed: build(obj, X, y, position, seed, saved)
    try:
        return _score(trainers.train(parse_method(_AFFINE), settings, split, valid, test), test)
    finally:
        trainers.estimate_affine = saved


def _train_dr(obj, split, valid, test, st):
    """compare's LightGBM trainer's settings for an objective on real labels: LightGBM's own ``ndcg`` metric
    refuses them on the training set, so the validation NDCG@10 is customobj's (``lightgbm_metric``, the
    same LightGBM convention); early stopping as compare's."""
    import lightgbm as lgb

    from customobj.adapters import lightgbm_metric, lightgbm_objective

    params = {"num_leaves": st.num_leaves, "learning_rate": st.learning_rate, "seed": st.seed, "deterministic": True,
              "force_row_wise": True, "num_threads": st.jobs, "verbosity": -1, "metric": "None",
              "objective": lightgbm_objective(obj)}
    dtrain = lgb.Dataset(split.X, split.y, group=split.sizes, free_raw_data=False)
    dvalid = lgb.Dataset(valid.X, valid.y, group=valid.sizes, reference=dtrain)
    callbacks = [lgb.early_stopping(st.early_stopping, first_metric_only=True, verbose=False)] \
        if st.early_stopping > 0 else []
    booster = lgb.train(params, dtrain, num_boost_round=st.rounds, valid_sets=[dvalid], valid_names=["valid"],
                        feval=lightgbm_metric("ndcg@10"), callbacks=callbacks)
    best = booster.best_iteration if booster.best_iteration > 0 else booster.current_iteration()
    has = np.maximum.reduceat(test.y, test.ptr[:-1]) > 0
    per_query = report.evaluate(booster.predict(test.X, num_iteration=best, raw_score=True), test)[1]
    return float(np.mean(per_query[has]))


def _position_prob(logger, production, train, shown, explore, temperature, seed):
    """``pi(k | d)`` of every training row under the logger (exact; Monte Carlo for Plackett-Luce)."""
    n = train.y.size
    if logger == "stochastic":
        return plackett_luce_marginals(production, train.sizes, temperature=temperature, shown=shown, seed=seed)
    P = np.zeros((n, shown))
    start = 0
    for size in train.sizes:
        order = start + np.lexsort((np.arange(size), -production[start:start + size]))[:shown]
        m = order.size
        P[order, np.arange(m)] = 1.0
        if logger == "randomised":
            P[order, :m] = (1.0 - explore) * P[order, :m] + explore / m
        start += size
    return P


def run_unit(args, logger, train, valid, test, seed, truth, settings):
    """Every method's test NDCG@10 on one unit; and the estimated parameters' largest errors."""
    production = _weak_ranker(train, seed, args.jobs)
    temperature = args.temperature * float(np.std(production)) or 1.0
    log = __import__("customobj").data.simulate_clicks(
        (train.X, train.y, train.sizes), ranker=production, click_model="trust", shown=10, sessions=args.sessions,
        seed=seed, logger=logger, explore=args.explore, temperature=temperature)
    split = replace(train, X=log.X, y=log.y, sizes=log.group, position=log.position)
    alpha, beta = truth
    out, errors = {}, {}
    want = set(args.methods)
    for name in ("Unbiased", "XGBoost unbiased"):
        if name in want:
            out[name] = _score(trainers.train(parse_method(_METHODS[name]), settings, split, valid, test), test)
    seen = []

    def estimated(obj, X, y, position, s, saved):
        if args.affine_iterations is None:
            seen.append(saved(obj, X, y, position, s))
        else:
            from customobj.clicks import TrustEM

            em = TrustEM(seed=s, **dict(AFFINE_EM, n_iter=args.affine_iterations))
            seen.append(Affine.fit_log(obj.objective, X, y, position=position, em=em,
                                       query_norm=obj.query_norm).objective)
        return seen[-1]
    if "Affine" in want:
        out["Affine"] = _with_objective(estimated, split, valid, test, settings)
        errors["TrustEM"] = (float(np.abs(seen[0].alpha - alpha).max()), float(np.abs(seen[0].beta - beta).max()))
    if logger == "randomised" and "Affine interventions" in want:
        est = estimate_trust(log)
        errors["interventions"] = (float(np.abs(est.alpha - alpha).max()), float(np.abs(est.beta - beta).max()))
        out["Affine interventions"] = _with_objective(
            lambda obj, *a: Affine(obj.objective, alpha=est.alpha, beta=est.beta), split, valid, test, settings)
    if "Affine true" in want:
        out["Affine true"] = _with_objective(lambda obj, *a: Affine(obj.objective, alpha=alpha, beta=beta),
                                             split, valid, test, settings)
    P = _position_prob(logger, production, train, 10, args.explore, temperature, seed) \
        if want & {"DR true", "DR"} else None

    def doubly_robust(a, b):
        direct = fit_direct_method(log, alpha=a, beta=b, seed=seed).predict(train.X)
        dr = dr_data(log, (train.X, train.y, train.sizes), alpha=a, beta=b, position_prob=P, direct=direct)
        dr_split = replace(train, X=dr.X, y=dr.y, sizes=dr.group, position=None)
        return _train_dr(DoublyRobust.for_data(LambdaRank(), dr), dr_split, valid, test, settings)
    if "DR true" in want:
        out["DR true"] = doubly_robust(alpha, beta)
    if "DR" in want:  # as a user would: TrustEM's parameters (Affine's, when it was trained: the same fit)
        em = seen[0] if seen else estimate_affine(Affine(LambdaRank()), split.X, split.y, split.position, settings.seed)
        errors.setdefault("TrustEM", (float(np.abs(em.alpha - alpha).max()), float(np.abs(em.beta - beta).max())))
        out["DR"] = doubly_robust(em.alpha, em.beta)
    if "labels ceiling" in want:
        rows = np.unique(log.row)  # sorted: grouped by query as the training part is
        qid = np.repeat(np.arange(train.sizes.size), train.sizes)[rows]
        ceiling = replace(train, X=train.X[rows], y=train.y[rows], sizes=np.bincount(qid)[np.unique(qid)],
                          position=None)
        out["labels ceiling"] = _score(trainers.train(parse_method(_METHODS["labels ceiling"]), settings, ceiling,
                                                      valid, test), test)
    return out, errors


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.path.join(_HERE, "..", "..", "shared", "data"))
    ap.add_argument("--dataset", default="mq2008", choices=("mq2008", "ohsumed"))
    ap.add_argument("--folds", default="1,2,3,4,5")
    ap.add_argument("--logs", type=int, default=8)
    ap.add_argument("--sessions", type=int, default=48)
    ap.add_argument("--loggers", default=",".join(LOGGERS))
    ap.add_argument("--explore", type=float, default=1.0, help="randomised logger: share of sessions shuffled")
    ap.add_argument("--temperature", type=float, default=1.0, help="stochastic logger: times the scores' sd")
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="trust_study.json")
    ap.add_argument("--units", default=None, help="JSON lines, one per finished unit (default: --out's stem "
                    "+ .units.jsonl); units already there are skipped")
    ap.add_argument("--report", action="store_true", help="analyse the units in --units only; train nothing")
    ap.add_argument("--affine-iterations", type=int, default=None, help="Affine's TrustEM with this n_iter instead "
                    "of its default (a variant of the default, labelled in a joined report)")
    ap.add_argument("--methods", default=",".join(METHODS), help="the methods to train (a run of some of them can "
                    "be joined to another's units in a report)")
    args = ap.parse_args(argv)
    if args.units is None:
        args.units = os.path.splitext(args.out)[0] + ".units.jsonl"
    args.folds = parse_folds(args.folds)
    args.loggers = [x for x in args.loggers.split(",") if x]
    args.methods = [x for x in args.methods.split(",") if x]
    if not args.methods or any(x not in METHODS for x in args.methods):
        ap.error(f"--methods: a comma-separated list of {', '.join(METHODS)}")
    if not args.loggers or any(x not in LOGGERS for x in args.loggers):
        ap.error(f"--loggers: a comma-separated list of {', '.join(LOGGERS)}")
    if args.logs < 1 or args.sessions < 1 or args.rounds < 1 or not 0 <= args.explore <= 1 or args.temperature <= 0:
        ap.error("--logs, --sessions, --rounds and --temperature must be positive, --explore in [0, 1]")
    return args


def _joined_units(spec):
    """The units of ``--units`` in a report: one file, or several joined by ``+``, each optionally
    ``FILE:old=new;...`` to rename its methods; units of the same (dataset, logger, fold, log) are merged
    (a later file's methods added to an earlier's: runs of some methods joined to another's)."""
    merged: dict = {}
    for part in spec.split("+"):
        path, _, renames = part.partition(":")
        names = dict(r.split("=", 1) for r in renames.split(";") if "=" in r)
        for u in _load_units(path):
            key = (u.get("dataset"), u["logger"], u["fold"], u["log"])
            unit = merged.setdefault(key, {})
            errors = dict(unit.get("max_errors", {}))
            errors.update({names.get(k, k): v for k, v in u.get("max_errors", {}).items()})
            unit.update({names.get(k, k): v for k, v in u.items()})
            unit["max_errors"] = errors
    return list(merged.values())


def _load_units(path):
    """The units already in the JSON-lines file (none when it does not exist); a torn last line (a run
    killed while writing) is dropped."""
    if not os.path.exists(path):
        return []
    if not os.path.isfile(path):
        raise ValueError(f"--units {path!r} is not a regular file")
    units = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                units.append(json.loads(line))
            except json.JSONDecodeError:
                break
    return units


def _append_unit(path, unit):
    """One finished unit, one line, flushed and synced (a run cut short keeps every unit it finished)."""
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(report._json_clean(unit)) + "\n")
        f.flush()
        os.fsync(f.fileno())


def target(units, logger, affine="Affine"):
    """The issue's learning-level target on one logger's units: ``Affine`` minus ``Unbiased`` and minus
    ``XGBoost unbiased`` (paired, Holm over those two), and the share of the gap ``labels ceiling -
    Unbiased`` (of the means) that ``Affine`` takes."""
    mine = sorted((u for u in units if u["logger"] == logger), key=lambda u: (u["fold"], u["log"]))
    need = (affine, "Unbiased", "XGBoost unbiased", "labels ceiling")
    mine = [u for u in mine if all(m in u for m in need)]
    if len(mine) < 2:
        return None
    score = {m: np.array([u[m] for u in mine]) for m in need}
    family = [dict(versus=v, **paired_difference(score[affine] - score[v])) for v in ("Unbiased", "XGBoost unbiased")]
    for c, p in zip(family, holm([c["p"] for c in family])):
        c["p_holm"] = float(p)
    gap = float(score["labels ceiling"].mean() - score["Unbiased"].mean())
    share = float((score[affine].mean() - score["Unbiased"].mean()) / gap) if gap > 0 else float("nan")
    met = all(c["mean"] > 0 and c["p_holm"] < 0.05 for c in family) and share >= 0.6
    return {"logger": logger, "affine": affine, "n": len(mine), "contrasts": family, "gap_share": share,
            "met": bool(met)}


def main(argv=None):
    args = parse_args(argv)
    curves = true_curves(parse_clicks(f"trust:eta=1.0,sessions={args.sessions},shown=10"))
    truth = (np.array(curves["alpha"]), np.array(curves["beta"]))
    settings = trainers.Settings(rounds=args.rounds, num_leaves=31, learning_rate=0.1, seed=args.seed, jobs=args.jobs,
                                 early_stopping=20)
    loaded = _joined_units(args.units) if args.report else _load_units(args.units)
    units = [u for u in loaded if u.get("dataset", args.dataset) == args.dataset]
    if not args.report:
        ns = argparse.Namespace(train=None, valid=None, test=None, letor=os.path.join(args.data, args.dataset),
                                folds=args.folds, synthetic_queries=None, synthetic_docs=None, seed=args.seed)
        folds, _ = load_folds(ns)
        done = {(u["logger"], u["fold"], u["log"]) for u in units}
        for log in range(args.logs):  # the loggers innermost: a run cut short has every logger's first units
            for fold, train, valid, test in folds:
                for logger in args.loggers:
                    if (logger, fold, log + 1) in done:
                        continue
                    seed = args.seed + LOG_STRIDE * log + fold
                    start = time.perf_counter()
                    scores, errors = run_unit(args, logger, train, valid, test, seed, truth, settings)
                    units.append({"dataset": args.dataset, "logger": logger, "fold": fold, "log": log + 1, **scores,
                                  "max_errors": errors, "seconds": round(time.perf_counter() - start, 1)})
                    _append_unit(args.units, units[-1])
                    print(json.dumps(units[-1]), file=sys.stderr, flush=True)
    units = [u for u in units if u["logger"] in args.loggers]
    scored = [m for u in units for m, v in u.items() if isinstance(v, float) and m != "seconds"]
    methods = list(dict.fromkeys(scored))
    complete = [u for u in units if all(m in u for m in methods)]  # the pairwise tables: units with every method
    if len(complete) < len(units):
        print(f"pairwise tables over the {len(complete)} of {len(units)} units that have every method", flush=True)
    rows = [{"dataset": args.dataset, "click_model": u["logger"], "fold": u["fold"], "log": u["log"], "method": m,
             "ndcg@10": u[m]} for u in complete for m in methods]
    means, contrasts, targets = [], [], []
    for logger in args.loggers:
        mine = [r for r in rows if r["click_model"] == logger]
        have = [m for m in methods if any(r["method"] == m for r in mine)]
        if not mine:
            continue
        m2, c2 = analyse(mine, have)
        means += m2
        contrasts += c2
    print(format_tables(means, contrasts).replace(" clicks:", " logger, trust clicks:"))
    for logger in args.loggers:
        for affine in [m for m in methods if m.startswith("Affine") and m not in ("Affine true", "Affine interventions")]:
            t = target(units, logger, affine)
            if t is None:
                continue
            targets.append(t)
            said = "; ".join(f"{affine} - {c['versus']} {c['mean']:+.4f} [{c['ci_low']:+.4f}, {c['ci_high']:+.4f}] "
                             f"Holm p {c['p_holm']:.3g}" for c in t["contrasts"])
            print(f"{logger} ({t['n']} units) target: {said}; share of the gap to the ceiling {t['gap_share']:.2f}: "
                  f"{'met' if t['met'] else 'NOT met'}")
        kinds = dict.fromkeys(k for u in units if u["logger"] == logger for k in u.get("max_errors", {}))
        for kind in kinds:  # TrustEM's, estimate_trust's ("interventions"), as renamed in a joined report
            e = [u["max_errors"][kind] for u in units if u["logger"] == logger and kind in u["max_errors"]]
            if e:
                print(f"{logger}: {kind} largest error over the positions, mean over {len(e)} units: alpha "
                      f"{np.mean([x[0] for x in e]):.3f}, beta {np.mean([x[1] for x in e]):.3f}")
    doc = {"options": {k: v for k, v in vars(args).items()}, "units": units, "means": means, "contrasts": contrasts,
           "target": targets}
    atomic_write_text(args.out, json.dumps(report._json_clean(doc), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
