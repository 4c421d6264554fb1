"""Why ``Affine`` barely beats ``Unbiased`` in issue 33's click study: the study's units (benchmarks/click_study.py:
trust clicks, the same logs, seeds and trainer), with ``Affine`` also trained on the simulation's *true*
``alpha`` / ``beta`` and without ``query_norm``, and the full-information ceiling.

Per (data set, fold, log) unit it trains, with compare's trainer (early stopping on the validation
part's true NDCG@10) and scores test NDCG@10 on the queries with a relevant row, as the study does:

- ``Unbiased``           ``lgb:Unbiased(objective=LambdaRank)``;
- ``Affine``             ``lgb:Affine(objective=LambdaRank)``, parameters estimated by compare's ``TrustEM``;
- ``Affine true``        the same with the simulation's true ``alpha``, ``beta`` (``compare.clicks.true_curves``);
- ``Affine true, no norm``  the true parameters, ``query_norm=False`` (the exactly unbiased estimator);
- ``labels ceiling``     ``lgb:LambdaRank`` on the *true graded labels* of the rows the log shows, each query's
  shown rows once: what a perfectly debiased learner could at best extract from them.

and records how far ``TrustEM``'s estimate is from the truth (largest absolute error over the positions).
Each variant is compared with ``Unbiased`` by the paired t-test over the units
(customobj.compare.stats.paired_difference).

    python benchmarks/affine_diagnosis.py [--data ../shared/data] [--datasets mq2008,ohsumed] [--folds 1,2,3,4,5]
        [--logs 3] [--sessions 12] [--rounds 200] [--out affine_diagnosis.json]
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from dataclasses import replace

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import numpy as np  # noqa: E402

from customobj import adapters  # noqa: E402,F401  (before lightgbm: OpenMP wait policy)
from customobj.clicks import Affine  # noqa: E402
from customobj.compare import report, trainers  # noqa: E402
from customobj.compare.clicks import click_folds, parse_clicks, true_curves  # noqa: E402
from customobj.compare.folds import load_folds, parse_folds  # noqa: E402
from customobj.compare.methods import parse_method  # noqa: E402
from customobj.compare.stats import paired_difference  # noqa: E402
from customobj._io import atomic_write_text  # noqa: E402

LOG_STRIDE = 1000  # click_study's: log l of a fold is seeded seed + 1000 l (+ the fold, in click_folds)
VARIANTS = ("Unbiased", "Affine", "Affine true", "Affine true, no norm", "labels ceiling")
_METHOD = {"Unbiased": "lgb:Unbiased(objective=LambdaRank)", "labels ceiling": "lgb:LambdaRank"}
_AFFINE = "lgb:Affine(objective=LambdaRank)"


@contextlib.contextmanager
def _affine_parameters(alpha=None, beta=None, query_norm=True, seen=None):
    """Within the block, compare's trainer builds every ``Affine`` with ``alpha`` / ``beta`` instead of
    estimating them (``trainers.estimate_affine`` is the one place the trainer asks for them); with
    ``alpha=None`` it estimates them as usual and appends the ``Affine`` it trains to ``seen``."""
    saved = trainers.estimate_affine

    def given(obj, X, y, position, seed):
        if alpha is None:
            out = saved(obj, X, y, position, seed)
            seen.append(out)
            return out
        return Affine(obj.objective, alpha=alpha, beta=beta, query_norm=query_norm)

    trainers.estimate_affine = given
    try:
        yield
    finally:
        trainers.estimate_affine = saved


def _true_labels(log_split, labelled):
    """The graded labels of the log's rows, found by their feature rows in the labelled training part (the
    log copies rows; a feature row shared by several documents takes the largest label)."""
    lab: dict = {}
    for row in range(labelled.y.size):
        key = labelled.X[row].tobytes()
        lab[key] = max(lab.get(key, labelled.y[row]), labelled.y[row])
    return np.array([lab[x.tobytes()] for x in log_split.X])


def _one_session_per_query(split):
    """The log with every repeated session (the same rows in the same order: the sessions of one query under
    one fixed production ranker) kept once: what a learner given the true labels of the shown rows sees."""
    seen, keep = set(), []
    ptr = split.ptr
    for q in range(split.sizes.size):
        key = split.X[ptr[q]:ptr[q + 1]].tobytes()
        if key not in seen:
            seen.add(key)
            keep.append(q)
    rows = np.concatenate([np.arange(ptr[q], ptr[q + 1]) for q in keep])
    return replace(split, X=split.X[rows], y=split.y[rows], sizes=split.sizes[keep],
                   position=None if split.position is None else split.position[rows])


def _score(res, test):
    has = np.maximum.reduceat(test.y, test.ptr[:-1]) > 0
    return float(np.mean(report.evaluate(res.test_scores, test)[1][has]))


def run_unit(log_split, labelled, valid, test, settings, truth):
    """The variants' test NDCG@10 on one unit, and TrustEM's largest errors ``(alpha, beta)``."""
    alpha, beta = truth
    out = {}
    out["Unbiased"] = _score(trainers.train(parse_method(_METHOD["Unbiased"]), settings, log_split, valid, test), test)
    seen: list = []
    with _affine_parameters(seen=seen):
        out["Affine"] = _score(trainers.train(parse_method(_AFFINE), settings, log_split, valid, test), test)
    errors = (float(np.max(np.abs(seen[0].alpha - alpha))), float(np.max(np.abs(seen[0].beta - beta))))
    for name, norm in (("Affine true", True), ("Affine true, no norm", False)):
        with _affine_parameters(alpha, beta, norm):
            out[name] = _score(trainers.train(parse_method(_AFFINE), settings, log_split, valid, test), test)
    shown = _one_session_per_query(log_split)
    ceiling = replace(shown, y=_true_labels(shown, labelled), position=None)
    out["labels ceiling"] = _score(trainers.train(parse_method(_METHOD["labels ceiling"]), settings, ceiling, valid,
                                                  test), test)
    return out, errors


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.path.join(_HERE, "..", "..", "shared", "data"))
    ap.add_argument("--datasets", default="mq2008,ohsumed")
    ap.add_argument("--folds", default="1,2,3,4,5")
    ap.add_argument("--logs", type=int, default=3)
    ap.add_argument("--sessions", type=int, default=12)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="affine_diagnosis.json")
    args = ap.parse_args(argv)
    args.folds = parse_folds(args.folds)
    args.datasets = [d for d in args.datasets.split(",") if d]
    if args.logs < 1 or args.sessions < 1 or args.rounds < 1:
        ap.error("--logs, --sessions and --rounds must be positive")
    return args


def main(argv=None):
    args = parse_args(argv)
    spec = parse_clicks(f"trust:eta=1.0,sessions={args.sessions},shown=10")
    curves = true_curves(spec)
    truth = (np.array(curves["alpha"]), np.array(curves["beta"]))
    settings = trainers.Settings(rounds=args.rounds, num_leaves=31, learning_rate=0.1, seed=args.seed, jobs=2,
                                 early_stopping=20)
    units, summary = [], []
    for name in args.datasets:
        ns = argparse.Namespace(train=None, valid=None, test=None, letor=os.path.join(args.data, name),
                                folds=args.folds, synthetic_queries=None, synthetic_docs=None, seed=args.seed)
        folds, _ = load_folds(ns)
        labelled = {f[0]: f[1] for f in folds}
        for log in range(args.logs):
            for fold, log_split, valid, test in click_folds(folds, spec, args.seed + LOG_STRIDE * log, 2):
                scores, errors = run_unit(log_split, labelled[fold], valid, test, settings, truth)
                units.append({"dataset": name, "fold": fold, "log": log + 1, **scores,
                              "trustem_alpha_max_error": errors[0], "trustem_beta_max_error": errors[1]})
                print(json.dumps(units[-1]), file=sys.stderr, flush=True)
        mine = [u for u in units if u["dataset"] == name]
        print(f"\n{name}, trust clicks, {len(mine)} units ({args.sessions} sessions x 10 shown): test NDCG@10, "
              "and the paired difference to Unbiased")
        base = np.array([u["Unbiased"] for u in mine])
        for v in VARIANTS:
            x = np.array([u[v] for u in mine])
            row = {"dataset": name, "variant": v, "mean": float(x.mean())}
            text = f"  {v:22s} {x.mean():.4f}"
            if v != "Unbiased":
                d = paired_difference(x - base)
                row.update(minus_unbiased=d)
                text += f"   {d['mean']:+.4f} [{d['ci_low']:+.4f}, {d['ci_high']:+.4f}]  p {d['p']:.3g}"
            summary.append(row)
            print(text)
        ea = [u["trustem_alpha_max_error"] for u in mine]
        eb = [u["trustem_beta_max_error"] for u in mine]
        print(f"  TrustEM's largest error over the positions: alpha {np.mean(ea):.3f}, beta {np.mean(eb):.3f} "
              "(mean over the units)")
    doc = {"options": {k: v for k, v in vars(args).items()}, "units": units, "summary": summary}
    atomic_write_text(args.out, json.dumps(report._json_clean(doc), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
