"""Which position-bias estimate to trust (issue 39): the examination curves that ``customobj compare``
reports, measured against the truth on simulated click logs.

Estimators (each trained as ``compare --click-log`` trains it: LightGBM or XGBoost, ``--rounds``
rounds, 31 leaves, learning rate 0.1):

- ``Unbiased(LambdaRank())`` through ``lightgbm_objective``: ``position_bias_``;
- ``Unbiased(LambdaRank(norm=True))``, the same with LambdaRank's own normalisation (``query_norm``
  then applies once);
- XGBoost's ``rank:ndcg`` with ``lambdarank_unbiased=true`` (``ti+`` of its saved configuration);
- ``RegressionEM()`` (regression EM, Wang et al. WSDM 2018), when ``--em`` is given (slower).

Logs:

- ``mq2008 eta E``: every training query of ``--data`` (MQ2008 Fold1) ordered by a weak ranker
  (LETOR feature 1), top 10 shown to ``--sessions`` users per query clicking by the position-based
  model, examination ``(1/r)^eta`` (``simulate_clicks``, grades 0 / 1 / 2 clicked with 0.1 / 0.5 / 1);
- ``own``: the log of docs/clicks.md's "Your own click log" (1000 sessions of 8 rows, 5 normal
  features, a row relevant when feature 0 > 0.5, examined with probability ``1/r``), which orders
  rows at random: no ranker.

Printed per log and estimator: the curve at positions 2..10 (the top is 1 by definition), the largest
and the mean relative error ``|estimate / truth - 1|`` over them.

    python benchmarks/position_bias.py [--data ../shared/data/mq2008/Fold1] [--etas 0.5,1,2]
                                       [--sessions 12] [--rounds 200] [--seeds 1] [--em] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import numpy as np  # noqa: E402

import customobj  # noqa: E402
from customobj import adapters  # noqa: E402  (before lightgbm: OpenMP wait policy)
from customobj._io import atomic_write_text  # noqa: E402
from customobj.data import load_letor, simulate_clicks  # noqa: E402

import lightgbm as lgb  # noqa: E402

#: compare's defaults (customobj.compare.command): leaves and learning rate.
LEAVES, LEARNING_RATE = 31, 0.1


def own_log(seed):
    """docs/clicks.md's "Your own click log": (X, clicks, group, position), truth 1/r."""
    rng = np.random.default_rng(seed)
    n_sessions, shown = 1000, 8
    X = rng.normal(size=(n_sessions * shown, 5))
    position = np.tile(np.arange(shown), n_sessions)
    clicked = (rng.random(X.shape[0]) < 1.0 / (position + 1)) & (X[:, 0] > 0.5)
    return X, clicked.astype(np.float64), np.full(n_sessions, shown), position


def mq2008_log(data, eta, sessions, seed):
    log = simulate_clicks(data, ranker=np.asarray(data.X[:, 0], dtype=np.float64), eta=eta, sessions=sessions,
                          seed=seed)
    return np.asarray(log.X), log.y, log.group, log.position


def lgb_unbiased(norm):
    def fit(X, y, group, position, rounds, seed):
        f = adapters.lightgbm_objective(customobj.Unbiased(customobj.LambdaRank(norm=norm)))
        ds = lgb.Dataset(X, y, group=group, position=position)
        lgb.train({"objective": f, "num_leaves": LEAVES, "learning_rate": LEARNING_RATE, "seed": seed,
                   "deterministic": True, "force_row_wise": True, "num_threads": 2, "verbosity": -1}, ds, rounds)
        return np.asarray(f.fitted_attributes(ds)["position_bias_"], dtype=np.float64)
    return fit


def xgb_unbiased(X, y, group, position, rounds, seed):
    """XGBoost reads positions as the row order: the log's rows are in display order."""
    import xgboost as xgb

    d = xgb.DMatrix(X, label=y, group=group)
    booster = xgb.train({"objective": "rank:ndcg", "lambdarank_unbiased": True, "eta": LEARNING_RATE,
                         "max_leaves": LEAVES, "grow_policy": "lossguide", "max_depth": 0, "tree_method": "hist",
                         "seed": seed, "nthread": 2, "verbosity": 0}, d, rounds)
    return np.asarray(json.loads(booster.save_config())["learner"]["objective"]["ti+"], dtype=np.float64)


def regression_em(X, y, group, position, rounds, seed):
    em = customobj.RegressionEM(seed=seed).fit(X, y, position=position)  # its defaults, as compare runs it
    return np.asarray(em.position_bias_, dtype=np.float64)


ESTIMATORS = {"Unbiased(LambdaRank())": lgb_unbiased(False), "Unbiased(LambdaRank(norm=True))": lgb_unbiased(True),
              "xgb lambdarank_unbiased": xgb_unbiased}


def errors(estimate, truth):
    """(max, mean) of |estimate / truth - 1| over positions 2.. (the top is 1 by definition)."""
    k = min(estimate.size, truth.size)
    rel = np.abs(estimate[1:k] / truth[1:k] - 1.0)
    return float(rel.max()), float(rel.mean())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.path.join(_HERE, "..", "..", "shared", "data", "mq2008", "Fold1"))
    ap.add_argument("--etas", default="0.5,1,2", help="PBM exponents of the MQ2008 logs ('' for none)")
    ap.add_argument("--sessions", type=int, default=12, help="sessions per query (compare --clicks' default)")
    ap.add_argument("--rounds", type=int, default=200, help="boosting rounds (compare's default --rounds)")
    ap.add_argument("--seeds", type=int, default=1, help="logs per setting (seeds 0..N-1); errors are averaged")
    ap.add_argument("--em", action="store_true", help="also RegressionEM (slower)")
    ap.add_argument("--no-own", action="store_true", help="leave out docs/clicks.md's own-log example")
    ap.add_argument("--json", help="write every curve and error here (atomically)")
    args = ap.parse_args(argv)
    try:
        etas = [float(e) for e in args.etas.split(",") if e.strip()]
    except ValueError:
        ap.error("--etas must be comma-separated numbers")
    if min(args.sessions, args.rounds, args.seeds) < 1:
        ap.error("--sessions, --rounds and --seeds must be positive")
    estimators = dict(ESTIMATORS, **({"RegressionEM()": regression_em} if args.em else {}))
    logs = [] if args.no_own else [("own (truth 1/r)", 1.0, own_log)]
    if etas:
        data = load_letor(os.path.join(args.data, "train.txt.gz"))
        logs += [(f"mq2008 eta {eta:g}", eta, lambda seed, eta=eta: mq2008_log(data, eta, args.sessions, seed))
                 for eta in etas]
    out = []
    print(f"relative error |estimate / truth - 1| over positions 2..10, {args.rounds} rounds, mean of "
          f"{args.seeds} log(s)")
    for name, eta, make in logs:
        results = {e: [] for e in estimators}
        for seed in range(args.seeds):
            X, y, group, position = make(seed)
            truth = (1.0 / np.arange(1, int(group.max()) + 1)) ** eta
            for est, fit in estimators.items():
                curve = fit(X, y, group, position, args.rounds, seed)[:truth.size]
                results[est].append((curve, *errors(curve, truth), truth[:curve.size]))
        print(f"{name}: truth {np.round(truth[1:10], 3).tolist()}")
        for est, runs in results.items():
            curve = np.mean([r[0] for r in runs], axis=0)
            worst, mean = float(np.mean([r[1] for r in runs])), float(np.mean([r[2] for r in runs]))
            print(f"  {est:<32} max {worst:.3f} mean {mean:.3f}  curve {np.round(curve[1:10], 3).tolist()}")
            out.append({"log": name, "estimator": est, "max_rel_error": worst, "mean_rel_error": mean,
                        "curve": curve.tolist(), "truth": runs[0][3].tolist()})
    if args.json:
        atomic_write_text(args.json, json.dumps({"arguments": vars(args), "results": out}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
