"""Learning to rank from simulated clicks (issue 22's protocol): naive vs debiased vs peers vs true labels.

A weak production ranker (LightGBM lambdarank, ``--weak-rounds`` trees on ``--weak-share`` of the
training queries) orders every training query; the top 10 rows are shown to ``--sessions`` users
per query who click by a position-based model, examination ``(1/r)^eta``, click probability 0.1 /
0.5 / 1.0 for grades 0 / 1 / 2 (customobj.data.simulate_clicks). Every method trains on the
clicks (each session one group, rows in displayed order) with the same trees, and is scored by
NDCG@10 on the test fold's TRUE labels, over the queries with a relevant row, mean over ``--seeds``
click logs. ``true labels`` trains LambdaRank on the training fold's graded labels.

    python benchmarks/clicks.py [--data ../shared/data/mq2008/Fold1] [--rounds 100] [--seeds 3]
                                [--learning-rate 0.05] [--first-seed 0] [--only NAME,NAME,...]
                                [--plot docs/img/click_propensities.png]

Prints each method's test NDCG@10 per click log and their mean, the paired difference to the naive
``LambdaRank()`` (mean, standard error over the logs, t) and the estimated propensities.
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
from customobj._io import atomic_write_bytes  # noqa: E402
from customobj.compare.method_values import split_top  # noqa: E402
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


def shown_rows(train, log):
    """The training rows the click log shows (each once, in source order) with their true labels:
    what a click-trained ranker could at best learn from, the labels of the rows users saw."""
    from types import SimpleNamespace

    rows = np.unique(log.row)
    qid = np.repeat(np.arange(len(train.group)), train.group)[rows]
    return SimpleNamespace(X=train.X[rows], y=train.y[rows], group=np.bincount(qid)[np.unique(qid)])


def lgb_custom(obj, log, rounds):
    return _lgb_custom(obj, log, rounds)[0]


def _lgb_custom(obj, log, rounds):
    """``(predict, fitted attributes)``: what the objective learned on the log (``position_bias_``)."""
    ds = lgb.Dataset(log.X, log.y, group=log.group)
    f = adapters.lightgbm_objective(obj)
    return lgb.train(dict(LGB, objective=f), ds, rounds).predict, f.fitted_attributes(ds)


def xgb_native(log, rounds, **extra):
    d = xgb.DMatrix(log.X, log.y, group=log.group)
    b = xgb.train(dict(XGB, objective="rank:ndcg", **extra), d, rounds)
    return lambda X: b.predict(xgb.DMatrix(X), output_margin=True)


def lgb_native_position(log, rounds):
    ds = lgb.Dataset(log.X, log.y, group=log.group, position=log.position)
    return lgb.train(dict(LGB, objective="lambdarank"), ds, rounds).predict


def _trained(obj, log, rounds):
    """``(predict, position_bias_ or None)`` of a customobj objective trained on the log."""
    predict, fitted = _lgb_custom(obj, log, rounds)
    return predict, fitted.get("position_bias_")


def _methods(args, train, weak, log, r, seed):
    """Every method of the benchmark: name -> a function training it on ``log``."""
    LR, U = customobj.LambdaRank, customobj.Unbiased
    true_p = (1.0 / np.arange(1, 11)) ** args.eta
    objectives = {
        "naive LambdaRank()": lambda: LR(),
        "Unbiased(LambdaRank())": lambda: U(LR()),
        "Unbiased(LambdaRank(), query_norm=False)": lambda: U(LR(), query_norm=False),
        "Unbiased(LambdaRank(), cost='loss')": lambda: U(LR(), cost="loss"),
        "Unbiased(LambdaRank(), bias_norm=0)": lambda: U(LR(), bias_norm=0.0),
        "naive LambdaRank(norm=True)": lambda: LR(norm=True),
        "Unbiased(LambdaRank(norm=True))": lambda: U(LR(norm=True)),
        "naive LambdaRank.like_xgboost()": lambda: LR.like_xgboost(),
        "Unbiased(LambdaRank.like_xgboost())": lambda: U(LR.like_xgboost()),
        "Unbiased(RankNet())": lambda: U(customobj.RankNet()),
        "Unbiased(RankNet(), query_norm=False)": lambda: U(customobj.RankNet(), query_norm=False),
        "IPS LambdaRank (true propensities)": lambda: U(LR(), propensity=true_p),
        "IPS LambdaRank(norm=True) (true propensities)": lambda: U(LR(norm=True), propensity=true_p),
    }
    out = {"production ranker": lambda: (weak.predict, None),
           "true labels: LambdaRank": lambda: lgb_custom(LR(), train, r),
           "true labels of the shown rows: LambdaRank": lambda: (lgb_custom(LR(), shown_rows(train, log), r), None)}
    out.update({name: (lambda make=make: _trained(make(), log, r)) for name, make in objectives.items()})
    out["XGBoost rank:ndcg naive"] = lambda: (xgb_native(log, r), None)
    out["XGBoost lambdarank_unbiased"] = lambda: (xgb_native(log, r, lambdarank_unbiased=True), None)
    out["LightGBM lambdarank + position"] = lambda: (lgb_native_position(log, r), None)

    def em():
        model = customobj.RegressionEM(n_iter=10, n_estimators=max(1, r // 10), learning_rate=args.learning_rate,
                                       seed=seed).fit(log.X, log.y, position=log.position)
        return model.predict, model.position_bias_

    out["RegressionEM (LightGBM)"] = em
    return out


def render_propensities(biases, eta, title):
    """PNG bytes: each method's estimated propensity per shown position (mean over the click logs,
    bars one standard deviation) against the true examination curve ``(1/r)^eta``."""
    import io

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    r = np.arange(1, 11)
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    ax.plot(r, (1.0 / r) ** eta, "k-", lw=2.2, label=f"true examination (1/r)^{eta:g}")
    for (name, vals), mark in zip(biases.items(), "osD^v<>xP*" * 4):
        v = np.asarray(vals, dtype=float)
        ax.errorbar(r[:v.shape[1]], v.mean(axis=0), yerr=v.std(axis=0), fmt=mark + "--", ms=4, lw=1, capsize=2,
                    label=f"{name} ({v.shape[0]} logs)")
    ax.set(xlabel="display position r", ylabel="propensity relative to position 1", title=title, ylim=(0, 1.05))
    ax.set_xticks(r)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


def speed(train, args):
    """Seconds per ``grad_hess`` of each wrapped loss and of its ``Unbiased`` (estimating), the
    minimum over interleaved repeats (a drifting machine moves both alike), on one click log."""
    import time

    weak = weak_ranker(train, args.weak_share, args.weak_rounds, args.first_seed)
    log = simulate_clicks(train, ranker=weak.predict(train.X), eta=args.eta, sessions=args.sessions,
                          seed=args.first_seed)
    s = np.random.default_rng(0).normal(size=log.y.size)
    print(f"{log.y.size} rows, {len(log.group)} sessions; seconds per grad_hess (min of {args.speed}):")
    for base in (customobj.LambdaRank(), customobj.LambdaRank.like_xgboost(), customobj.RankNet()):
        objs = {"wrapped": base, "Unbiased": customobj.Unbiased(base)}
        preps = {k: o.prepare(log.y, log.group) for k, o in objs.items()}
        best = {k: np.inf for k in objs}
        for rep in range(args.speed + 1):  # the first pass compiles and is not counted
            for k, o in objs.items():
                t = time.perf_counter()
                o.grad_hess_prepared(s, preps[k])
                if rep:
                    best[k] = min(best[k], time.perf_counter() - t)
        print(f"  {base!r:<70} {best['wrapped']:.4f}  Unbiased {best['Unbiased']:.4f}  "
              f"ratio {best['Unbiased'] / best['wrapped']:.2f}")
    runs = {"LambdaRank()": customobj.LambdaRank, "Unbiased(LambdaRank())": lambda: customobj.Unbiased(customobj.LambdaRank())}
    best = {k: np.inf for k in runs}
    for _ in range(3):
        for k, make in runs.items():
            t = time.perf_counter()
            lgb_custom(make(), log, args.rounds)
            best[k] = min(best[k], time.perf_counter() - t)
    print(f"LightGBM training, {args.rounds} rounds (min of 3): " + ", ".join(f"{k} {v:.2f} s" for k, v in best.items())
          + f"; ratio {best['Unbiased(LambdaRank())'] / best['LambdaRank()']:.2f}")
    return 0


def _split_top(text):
    """Split ``--only`` at the commas outside parentheses: method names such as
    ``Unbiased(LambdaRank(), query_norm=False)`` hold commas of their own."""
    return split_top(text, ",", "--only")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.path.join(_HERE, "..", "..", "shared", "data", "mq2008", "Fold1"))
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--learning-rate", type=float, default=LGB["learning_rate"], help="LightGBM's and XGBoost's")
    ap.add_argument("--seeds", type=int, default=3, help="click logs (seeds --first-seed, --first-seed + 1, ...)")
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--only", default=None, help="comma-separated method names to run (default: all)")
    ap.add_argument("--plot", default=None, metavar="PNG",
                    help="write the estimated propensities against the true curve to this PNG (atomically)")
    ap.add_argument("--sessions", type=int, default=12)
    ap.add_argument("--eta", type=float, default=1.0)
    ap.add_argument("--weak-share", type=float, default=0.05)
    ap.add_argument("--weak-rounds", type=int, default=10)
    ap.add_argument("--speed", type=int, default=0, metavar="REPEATS",
                    help="instead: time one gradient call of each wrapped loss and of its Unbiased on the first "
                         "click log, interleaved, REPEATS times each, and print the ratios")
    args = ap.parse_args(argv)
    LGB["learning_rate"] = XGB["eta"] = args.learning_rate
    train = load_letor(os.path.join(args.data, "train.txt.gz"))
    test = load_letor(os.path.join(args.data, "test.txt.gz"))
    r = args.rounds
    if args.speed:
        return speed(train, args)

    def score(predict):
        return customobj.metrics.ndcg(predict(test.X), test.y, test.group, 10, empty="exclude")

    results = {}
    biases = {}
    only = None if args.only is None else [n.strip() for n in _split_top(args.only) if n.strip()]
    known = list(_methods(args, train, None, None, r, 0))  # names only: nothing trains here
    unknown = [n for n in only or () if n not in known]
    if unknown or only == []:
        raise SystemExit(f"--only: no method named {unknown or only}; methods: {', '.join(known)}")
    truth = None
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        weak = weak_ranker(train, args.weak_share, args.weak_rounds, seed)
        log = simulate_clicks(train, ranker=weak.predict(train.X), eta=args.eta, sessions=args.sessions, seed=seed)
        for name, make in _methods(args, train, weak, log, r, seed).items():
            if only is not None and name not in only:
                continue
            if name == "true labels: LambdaRank":  # deterministic: the same for every click log
                truth = truth or make()
                predict, bias = truth, None
            else:
                predict, bias = make()
            results.setdefault(name, []).append(score(predict))
            if bias is not None:
                biases.setdefault(name, []).append(bias[:10])
        print(f"seed {seed}: click rate {log.y.mean():.3f}, {len(log.group)} sessions", flush=True)
    width = max(map(len, results))
    print(f"\nTest NDCG@10 on true labels (queries with a relevant row), mean over {args.seeds} click logs:")
    for name, vals in results.items():
        print(f"  {name:<{width}}  {np.mean(vals):.4f}  (" + ", ".join(f"{v:.4f}" for v in vals) + ")")
    base = "naive LambdaRank()"
    if base in results and args.seeds > 1:  # paired by click log: the logs' spread cancels
        print(f"\nPaired difference to {base} (mean, standard error over the logs, t):")
        for name, vals in results.items():
            if name != base:
                d = np.asarray(vals) - np.asarray(results[base])
                se = d.std(ddof=1) / np.sqrt(d.size)
                print(f"  {name:<{width}}  {d.mean():+.4f}  se {se:.4f}  t {d.mean() / se if se > 0 else 0.0:+.2f}")
    print("\nEstimated propensity per position (mean over logs), true (1/r)^eta:",
          np.round((1.0 / np.arange(1, 11)) ** args.eta, 3).tolist())
    for name, vals in biases.items():
        print(f"  {name:<36}", np.round(np.mean(vals, axis=0), 3).tolist())
    if args.plot:
        estimated = {k: v for k, v in biases.items() if not k.startswith("IPS")}  # IPS estimates nothing
        title = (f"{os.path.basename(os.path.dirname(os.path.abspath(args.data)))} "
                 f"{os.path.basename(os.path.abspath(args.data))}: PBM eta={args.eta:g}, {args.sessions} sessions"
                 f"/query, {r} rounds")
        atomic_write_bytes(args.plot, render_propensities(estimated, args.eta, title))
        print(f"wrote {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
