"""Choosing models without labels (issue 33 item 4): does the counterfactual click NDCG@10 order
models as the true-label NDCG@10 does, and better than the naive click NDCG@10?

Models of varied quality are trained on the training fold's TRUE labels (LightGBM lambdarank with
1 to 300 rounds, on all or a few queries; single features; the production ranker, noisy, reversed;
random scores). A click log is simulated on the validation fold as benchmarks/clicks.py does: a
weak production ranker orders each query, the top 10 are shown to ``--sessions`` users per query
who click by a position-based model, examination ``(1/r)^eta``. Each model is scored on that log by

- the naive click NDCG@10 (``ips_ndcg`` with propensity 1 everywhere),
- the IPS click NDCG@10 with the true propensities ``(1/r)^eta``,
- the IPS click NDCG@10 with propensities estimated by ``Unbiased(LambdaRank())`` on a click log of
  the training fold (its ``position_bias_``),
- as an ablation, the IPS click DCG@10 normalised per session (not what ``ips_ndcg`` does),

and on the validation fold's true labels (NDCG@10, queries with a relevant row). Printed: every
model's scores, and per click log the Spearman rank correlation of each click metric with the
true-label metric over the models.

    python benchmarks/click_metrics.py [--data ../shared/data/mq2008/Fold1] [--seeds 3] [--sessions 50]
                                       [--eta 1.0] [--clip 0.01] [--model-rounds 1,3,10,30,100,300]
                                       [--json results.json]

``--json`` writes (atomically) every model's scores per click log, the estimated propensities and
the Spearman correlations, as printed.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import numpy as np  # noqa: E402
from scipy.stats import spearmanr  # noqa: E402

import customobj  # noqa: E402
from customobj import adapters  # noqa: E402  (before lightgbm: OpenMP wait policy)
from customobj._io import atomic_write_text  # noqa: E402
from customobj.data import load_letor, simulate_clicks  # noqa: E402
from customobj.metrics import ips_dcg, ips_ndcg, ndcg  # noqa: E402

import lightgbm as lgb  # noqa: E402

# The production ranker and the LightGBM settings of the click benchmark (one protocol for both).
_spec = importlib.util.spec_from_file_location("_bench_clicks", os.path.join(_HERE, "clicks.py"))
_clicks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_clicks)

#: The click metrics compared (the last: the ablation of ``ips_ndcg``'s normalisation).
CLICK_METRICS = ("naive click NDCG@10", "IPS NDCG@10 (true propensities)", "IPS NDCG@10 (estimated propensities)",
                 "per-session ratio (true propensities)")


def per_session_ratio(scores, log, rho, clip):
    """The IPS click DCG@10 over the session's best, per session, averaged over sessions with a click:
    the normalisation ``ips_ndcg`` does not use (its docstring says why)."""
    value = ips_dcg(scores, log.y, log.group, 10, propensity=rho, clip=clip, per_query=True)
    weights = log.y / np.maximum(rho[log.position], clip)
    best = ips_dcg(weights, log.y, log.group, 10, propensity=rho, clip=clip, per_query=True)  # ranked by weight
    return float(np.mean(value[best > 0] / best[best > 0]))


#: Rounds of the true-label LambdaRank models (``--model-rounds``): from barely trained to well trained.
MODEL_ROUNDS = (1, 3, 10, 30, 100, 300)


def models(train, weak, seed, model_rounds=MODEL_ROUNDS):
    """name -> scoring function, of varied quality (all trained on the training fold's true labels)."""
    out = {}
    full = lgb.Dataset(train.X, train.y, group=train.group, free_raw_data=False)
    for rounds in model_rounds:
        b = lgb.train(dict(_clicks.LGB, objective="lambdarank"), full, rounds)
        out[f"lambdarank, {rounds} rounds"] = b.predict
    for share in (0.02, 0.2):
        out[f"lambdarank on {share:.0%} of the queries"] = _clicks.weak_ranker(train, share, 30, seed + 100).predict
    for j in (0, 4, 19, 39):  # single LETOR features (MQ2008: term frequencies, a length, a language model)
        out[f"feature {j + 1}"] = lambda X, j=j: np.asarray(X[:, j], dtype=np.float64)
    rng = np.random.default_rng(seed)
    out["production ranker"] = weak.predict
    out["production ranker + noise"] = lambda X: weak.predict(X) + rng.normal(0.0, weak.predict(X).std(), len(X))
    out["production ranker reversed"] = lambda X: -weak.predict(X)
    out["random scores"] = lambda X: rng.normal(size=len(X))
    return out


def estimated_propensities(train, weak, args, seed):
    """``Unbiased(LambdaRank())``'s estimated ``position_bias_`` after training on a click log of the training fold."""
    log = simulate_clicks(train, ranker=weak.predict(train.X), eta=args.eta, sessions=12, seed=seed + 1000)
    obj = customobj.Unbiased(customobj.LambdaRank())
    ds = lgb.Dataset(log.X, log.y, group=log.group)
    f = adapters.lightgbm_objective(obj)
    lgb.train(dict(_clicks.LGB, objective=f), ds, args.rounds)
    return f.fitted_attributes(ds)["position_bias_"][:10]


def _rounds_list(text):
    """``--model-rounds``: comma-separated positive integers, none twice (each names a model)."""
    try:
        rounds = [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--model-rounds must be comma-separated integers, got {text!r}") from None
    if not rounds or min(rounds) < 1 or len(set(rounds)) != len(rounds):
        raise argparse.ArgumentTypeError(f"--model-rounds must be distinct integers >= 1, got {text!r}")
    return tuple(rounds)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.path.join(_HERE, "..", "..", "shared", "data", "mq2008", "Fold1"))
    ap.add_argument("--seeds", type=int, default=3, help="click logs (production ranker and clicks per seed)")
    ap.add_argument("--sessions", type=int, default=50, help="sessions per validation query")
    ap.add_argument("--eta", type=float, default=1.0)
    ap.add_argument("--clip", type=float, default=customobj.metrics.IPS_CLIP)
    ap.add_argument("--rounds", type=int, default=50, help="rounds of Unbiased(LambdaRank()) estimating propensities")
    ap.add_argument("--model-rounds", type=_rounds_list, default=MODEL_ROUNDS,
                    help="rounds of the true-label LambdaRank models, comma-separated (default 1,3,10,30,100,300)")
    ap.add_argument("--json", default=None, metavar="PATH", help="also write the results as JSON (atomically)")
    args = ap.parse_args(argv)
    train = load_letor(os.path.join(args.data, "train.txt.gz"))
    vali = load_letor(os.path.join(args.data, "vali.txt.gz"))
    true_p = (1.0 / np.arange(1, 11)) ** args.eta
    rho = {}
    corr = {name: [] for name in CLICK_METRICS}
    logs = []
    for seed in range(args.seeds):
        weak = _clicks.weak_ranker(train, 0.05, 10, seed)
        log = simulate_clicks(vali, ranker=weak.predict(vali.X), eta=args.eta, sessions=args.sessions, seed=seed)
        rho = {CLICK_METRICS[0]: np.ones(10), CLICK_METRICS[1]: true_p,
               CLICK_METRICS[2]: estimated_propensities(train, weak, args, seed)}
        ips = CLICK_METRICS[:3]
        table = {}
        for name, predict in models(train, weak, seed, args.model_rounds).items():
            s_vali = predict(vali.X)
            s_log = s_vali[log.row]  # the same scores, on the logged rows
            table[name] = [ndcg(s_vali, vali.y, vali.group, 10, empty="exclude")] + [
                ips_ndcg(s_log, log.y, log.group, 10, propensity=rho[m], clip=args.clip) for m in ips] + [
                per_session_ratio(s_log, log, true_p, args.clip)]
        values = np.array(list(table.values()))
        print(f"\nseed {seed}: {len(log.group)} sessions, click rate {log.y.mean():.3f}; estimated propensities "
              f"{np.round(rho[CLICK_METRICS[2]], 3).tolist()}")
        width = max(map(len, table))
        print(f"  {'model':<{width}}  true NDCG@10  " + "  ".join(CLICK_METRICS))
        for name, row in table.items():
            print(f"  {name:<{width}}  {row[0]:11.4f}  " + "  ".join(
                f"{v:{len(m)}.4f}" for v, m in zip(row[1:], CLICK_METRICS)))
        for j, m in enumerate(CLICK_METRICS, 1):
            corr[m].append(spearmanr(values[:, 0], values[:, j]).statistic)
        print("  Spearman with true NDCG@10: " + ", ".join(f"{m} {corr[m][-1]:.3f}" for m in CLICK_METRICS))
        logs.append({"seed": seed, "sessions": int(len(log.group)), "click_rate": float(log.y.mean()),
                     "estimated_propensities": [float(v) for v in rho[CLICK_METRICS[2]]],
                     "scores": {name: dict(zip(("true NDCG@10", *CLICK_METRICS), map(float, row)))
                                for name, row in table.items()},
                     "spearman": {m: float(corr[m][-1]) for m in CLICK_METRICS}})
    print(f"\nSpearman with true NDCG@10 over {len(table)} models, mean over {args.seeds} click logs "
          f"(eta {args.eta:g}, {args.sessions} sessions/query, clip {args.clip:g}):")
    for m in CLICK_METRICS:
        print(f"  {m:<38} {np.mean(corr[m]):.3f}  (" + ", ".join(f"{v:.3f}" for v in corr[m]) + ")")
    if args.json:
        options = {k: getattr(args, k) for k in ("data", "seeds", "sessions", "eta", "clip", "rounds")}
        result = {"options": dict(options, model_rounds=list(args.model_rounds)), "logs": logs,
                  "mean_spearman": {m: float(np.mean(corr[m])) for m in CLICK_METRICS}}
        atomic_write_text(args.json, json.dumps(result, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
