"""Learning to rank from simulated clicks (issue 22's protocol): naive vs debiased vs peers vs true labels.

A weak production ranker (LightGBM lambdarank, ``--weak-rounds`` trees on ``--weak-share`` of the
training queries) orders every training query; the top 10 rows are shown to ``--sessions`` users
per query who click by a position-based model, examination ``(1/r)^eta``, click probability 0.1 /
0.5 / 1.0 for grades 0 / 1 / 2 (customobj.data.simulate_clicks). Every method trains on the
clicks (each session one group, rows in displayed order) with the same trees, and is scored by
NDCG@10 on the test fold's TRUE labels, over the queries with a relevant row, mean over ``--seeds``
click logs. ``true labels`` trains LambdaRank on the training fold's graded labels.

    python benchmarks/clicks.py [--data ../shared/data/mq2008/Fold1] [--rounds 100] [--seeds 3]
                                [--learning-rate 0.05]
"""
from __future__ import annotations

import argparse
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import numpy as np  # noqa: E402

import customobj  # noqa: E402
from customobj import adapters  # noqa: E402  (before lightgbm / xgboost: OpenMP wait policy)
from customobj.data import load_letor, simulate_clicks  # noqa: E402

import lightgbm as lgb  # noqa: E402
import xgboost as xgb  # noqa: E402

LGB = dict(learning_rate=0.05, num_leaves=31, min_data_in_leaf=20, deterministic=True, num_threads=2, verbose=-1)
XGB = dict(tree_method="hist", eta=0.05, max_leaves=31, grow_policy="lossguide", max_depth=0, nthread=2,
           base_score=0.0)


def weak_ranker(train, share, rounds, seed):
    rng = np.random.default_rng(seed)
    nq = len(train.group)
    keep = np.zeros(nq, bool)
    keep[rng.choice(nq, max(2, int(share * nq)), replace=False)] = True
    rows = np.repeat(keep, train.group)
    ds = lgb.Dataset(train.X[rows], train.y[rows], group=train.group[keep])
    return lgb.train(dict(LGB, objective="lambdarank"), ds, rounds)


def lgb_custom(obj, log, rounds):
    ds = lgb.Dataset(log.X, log.y, group=log.group)
    return lgb.train(dict(LGB, objective=adapters.lightgbm_objective(obj)), ds, rounds).predict


def xgb_native(log, rounds, **extra):
    d = xgb.DMatrix(log.X, log.y, group=log.group)
    b = xgb.train(dict(XGB, objective="rank:ndcg", **extra), d, rounds)
    return lambda X: b.predict(xgb.DMatrix(X), output_margin=True)


def lgb_native_position(log, rounds):
    ds = lgb.Dataset(log.X, log.y, group=log.group, position=log.position)
    return lgb.train(dict(LGB, objective="lambdarank"), ds, rounds).predict


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.path.join(_HERE, "..", "..", "shared", "data", "mq2008", "Fold1"))
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--learning-rate", type=float, default=LGB["learning_rate"], help="LightGBM's and XGBoost's")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--sessions", type=int, default=12)
    ap.add_argument("--eta", type=float, default=1.0)
    ap.add_argument("--weak-share", type=float, default=0.05)
    ap.add_argument("--weak-rounds", type=int, default=10)
    args = ap.parse_args(argv)
    LGB["learning_rate"] = XGB["eta"] = args.learning_rate
    train = load_letor(os.path.join(args.data, "train.txt.gz"))
    test = load_letor(os.path.join(args.data, "test.txt.gz"))
    r = args.rounds

    def score(predict):
        return customobj.metrics.ndcg(predict(test.X), test.y, test.group, 10, empty="exclude")

    results = {}
    biases = {}
    truth = lgb_custom(customobj.LambdaRank(), train, r)  # deterministic: the same for every click log
    for seed in range(args.seeds):
        weak = weak_ranker(train, args.weak_share, args.weak_rounds, seed)
        log = simulate_clicks(train, ranker=weak.predict(train.X), eta=args.eta, sessions=args.sessions, seed=seed)
        runs = {"production ranker": weak.predict,
                "true labels: LambdaRank": truth}
        LR, U = customobj.LambdaRank, customobj.Unbiased
        variants = {
            "naive LambdaRank()": LR(),
            "Unbiased(LambdaRank())": U(LR()),
            "Unbiased(LambdaRank(), cost='loss')": U(LR(), cost="loss"),
            "Unbiased(LambdaRank(), bias_norm=0)": U(LR(), bias_norm=0.0),
            "naive LambdaRank(norm=True)": LR(norm=True),
            "Unbiased(LambdaRank(norm=True))": U(LR(norm=True)),
            "naive LambdaRank.like_xgboost()": LR.like_xgboost(),
            "Unbiased(LambdaRank.like_xgboost())": U(LR.like_xgboost()),
            "Unbiased(RankNet())": U(customobj.RankNet()),
        }
        for name, obj in variants.items():
            runs[name] = lgb_custom(obj, log, r)
            if isinstance(obj, U):
                biases.setdefault(name, []).append(obj.position_bias_[:10])
        ips = customobj.Unbiased(customobj.LambdaRank(), propensity=(1.0 / np.arange(1, 11)) ** args.eta)
        runs["IPS LambdaRank (true propensities)"] = lgb_custom(ips, log, r)
        runs["XGBoost rank:ndcg naive"] = xgb_native(log, r)
        runs["XGBoost lambdarank_unbiased"] = xgb_native(log, r, lambdarank_unbiased=True)
        runs["LightGBM lambdarank + position"] = lgb_native_position(log, r)
        em = customobj.RegressionEM(n_iter=10, n_estimators=max(1, r // 10), learning_rate=args.learning_rate,
                                    seed=seed).fit(log.X, log.y, position=log.position)
        runs["RegressionEM (LightGBM)"] = em.predict
        biases.setdefault("RegressionEM", []).append(em.position_bias_[:10])
        for name, predict in runs.items():
            results.setdefault(name, []).append(score(predict))
        print(f"seed {seed}: click rate {log.y.mean():.3f}, {len(log.group)} sessions", flush=True)
    width = max(map(len, results))
    print(f"\nTest NDCG@10 on true labels (queries with a relevant row), mean over {args.seeds} click logs:")
    for name, vals in results.items():
        print(f"  {name:<{width}}  {np.mean(vals):.4f}  (" + ", ".join(f"{v:.4f}" for v in vals) + ")")
    print("\nEstimated propensity per position (mean over logs), true (1/r)^eta:",
          np.round((1.0 / np.arange(1, 11)) ** args.eta, 3).tolist())
    for name, vals in biases.items():
        print(f"  {name:<36}", np.round(np.mean(vals, axis=0), 3).tolist())


if __name__ == "__main__":
    main()
