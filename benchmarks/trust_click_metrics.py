"""Issue 43's estimator-level check: do the click metrics rank a fixed set of rankers as their true DCG@10
does, on a trust-biased log (no training involved)?

Per fold of MQ2008, the training part's queries get a trust click log (``simulate_clicks`` defaults,
``--sessions`` per query, the deterministic production ranker of compare's click studies). Rankers: the
first ``--features`` single features and ``--mixes`` random mixes (Gaussian weights over the
standardised features, seeded). For each ranker, over the log's sessions:

- ``true``: the mean DCG@10 of its order of each session's rows with the true relevance
  (``click_prob[grade]``, 0.1 / 0.5 / 1.0) as gains (what the click metrics estimate);
- ``affine (TrustEM)`` / ``affine (true)``: ``customobj.clicks.metrics.affine_dcg`` with ``TrustEM``'s
  parameters (compare's ``AFFINE_EM``) and with the simulation's;
- ``IPS``: ``customobj.metrics.ips_dcg`` with TrustEM's ``position_bias_`` as the propensity;
- ``clicks``: ``ips_dcg`` with propensity 1 (raw clicks).

Reported per fold and metric: Kendall's tau with ``true`` over the rankers, and the mean relative error
``|estimate - true| / true`` (meaningful only for estimators on the true scale); for ``affine
(TrustEM)`` also that error after the one affine map ``a DCG + b`` fitted to the truth over the
rankers (``relative_error_scale_fitted``, ``scale_map``): the part of the error the relevance scale,
which clicks leave free, does not explain.

``--anchor-queries L1,L2,...``: the outside anchor users can give, ``L`` labelled queries
(``customobj.clicks.anchor_trust`` with their shown rows' true relevance, ``click_prob[grade]``, on their
sessions of the log), drawn ``--anchor-draws`` times per ``L`` at random; the anchored affine metric over
the whole log (``affine (anchored)``: one map of the scale; ``affine (anchored per position)``: one per
position, which also mends TrustEM's shape): per ``L`` the mean over the draws of the mean relative error, its
90th percentile and largest value, Kendall's tau, and the draws the anchor refused (all rows of one
relevance, or a scale <= 0). The truth is the same DCG@10 as above.

    python benchmarks/trust_click_metrics.py [--data ../shared/data] [--folds 1,2,3,4,5] [--sessions 48] [--iterations N]
        [--anchor-queries 1,2,5,10,20,50 --anchor-draws 20]
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
from customobj import adapters  # noqa: E402,F401  (before lightgbm: OpenMP wait policy)
from customobj.clicks import TrustEM, anchor_trust  # noqa: E402
from customobj.clicks.metrics import affine_dcg  # noqa: E402
from customobj.compare.clicks import AFFINE_EM, _weak_ranker, parse_clicks, true_curves  # noqa: E402
from customobj.metrics import ips_dcg  # noqa: E402
from customobj._io import atomic_write_text  # noqa: E402

CLICK_PROB = np.array([0.1, 0.5, 1.0])


def _kendall(a, b):
    from scipy.stats import kendalltau

    return float(kendalltau(a, b).statistic)


def run_fold(path, fold, args, truth):
    train = customobj.load_letor(os.path.join(path, f"Fold{fold}", "train.txt.gz"))
    split = argparse.Namespace(X=train.X, y=train.y, sizes=np.asarray(train.group))
    log = customobj.data.simulate_clicks((train.X, train.y.astype(int), train.group),
                                         ranker=_weak_ranker(split, fold, 2), click_model="trust",
                                         sessions=args.sessions, seed=fold)
    em = TrustEM(seed=fold, **dict(AFFINE_EM, n_iter=args.iterations or AFFINE_EM["n_iter"])).fit(
        log.X, log.y, position=log.position)
    rng = np.random.default_rng(fold)
    Z = (log.X - log.X.mean(0)) / np.maximum(log.X.std(0), 1e-12)
    rankers = [log.X[:, f] for f in range(args.features)] + [Z @ rng.normal(size=Z.shape[1]) for _ in range(args.mixes)]
    gains = CLICK_PROB[np.minimum(log.true_label.astype(int), 2)]
    est = {"true": [], "affine (TrustEM)": [], "affine (true)": [], "IPS": [], "clicks": []}
    for s in rankers:
        est["true"].append(_dcg(s, gains, log.group))
        est["affine (TrustEM)"].append(affine_dcg(s, log.y, log.group, 10, alpha=em.alpha_, beta=em.beta_))
        est["affine (true)"].append(affine_dcg(s, log.y, log.group, 10, alpha=truth[0], beta=truth[1]))
        est["IPS"].append(ips_dcg(s, log.y, log.group, 10, propensity=em.position_bias_))
        est["clicks"].append(ips_dcg(s, log.y, log.group, 10, propensity=np.ones(10)))
    t = np.array(est["true"])
    out = {m: {"kendall_tau": _kendall(t, v), "mean_relative_error": float(np.mean(np.abs(np.array(v) - t) / t))}
           for m, v in est.items() if m != "true"}
    # how much of TrustEM's error is the relevance scale clicks leave free: every affine estimate moves by
    # one map a DCG + b (a, b the same for all rankers; sessions of one length), so fit that map to the truth
    v = np.array(est["affine (TrustEM)"])
    a, b = np.polyfit(v, t, 1)
    out["affine (TrustEM)"]["relative_error_scale_fitted"] = float(np.mean(np.abs(a * v + b - t) / t))
    out["affine (TrustEM)"]["scale_map"] = [float(a), float(b)]
    if args.anchor_queries:
        for name, each in (("affine (anchored)", False), ("affine (anchored per position)", True)):
            out[name] = anchored(log, rankers, gains, t, em, args, fold, each)
    return out


def _discounts(scores, group, k=10):
    """Each row's DCG discount in its session under the ranker's order (``metrics._dcg``'s ranks, ties by
    row), 0 below the cut-off: an affine DCG is then ``mean_s sum_i d_i (c_i - beta_p) / alpha_p``."""
    g = customobj.as_groups(group, scores.size)
    n = scores.size
    query = np.repeat(np.arange(g.n_groups), g.sizes)
    order = np.lexsort((np.arange(n), -np.asarray(scores, dtype=np.float64), query))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n) - np.repeat(g.ptr[:-1], g.sizes)
    return np.where(rank < k, 1.0 / np.log2(2.0 + rank), 0.0)


def anchored(log, rankers, gains, t, em, args, fold, per_position):
    """The affine metric with TrustEM's parameters anchored by ``L`` labelled queries (one map, or one per
    position), per ``L`` over draws (the same draws for both)."""
    sizes = np.asarray(log.group)
    session_q = log.qid[np.concatenate(([0], np.cumsum(sizes)[:-1]))]
    queries = np.unique(session_q)
    D = np.array([_discounts(s, sizes) for s in rankers])  # rankers x rows
    rng = np.random.default_rng([fold, 43])  # the same draws for both anchors
    res = {}
    for L in args.anchor_queries:
        errs, taus, refused = [], [], 0
        for _ in range(args.anchor_draws):
            keep = np.isin(session_q, rng.choice(queries, size=min(L, queries.size), replace=False))
            rows = np.repeat(keep, sizes)
            try:
                fit = anchor_trust(em.alpha_, em.beta_, log.y[rows], sizes[keep], gains[rows],
                                   position=log.position[rows], per_position=per_position)
            except ValueError:
                refused += 1
                continue
            v = D @ ((log.y - fit.beta[log.position]) / fit.alpha[log.position]) / sizes.size
            errs.append(float(np.mean(np.abs(v - t) / t)))
            taus.append(_kendall(t, v))
        e = np.array(errs)
        res[str(L)] = {"mean_relative_error": float(e.mean()) if e.size else None,
                       "p90_relative_error": float(np.quantile(e, 0.9)) if e.size else None,
                       "max_relative_error": float(e.max()) if e.size else None,
                       "kendall_tau": float(np.mean(taus)) if taus else None, "refused": refused,
                       "draws": args.anchor_draws}
    return res


def _dcg(scores, gains, group):
    """Mean over the sessions of DCG@10 with real gains (``customobj.clicks.metrics._dcg``'s walk)."""
    from customobj.clicks.metrics import _dcg as walk

    return float(walk(np.asarray(scores, dtype=np.float64), gains, customobj.as_groups(group, gains.size), 10)[0].mean())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.path.join(_HERE, "..", "..", "shared", "data"))
    ap.add_argument("--folds", default="1,2,3,4,5")
    ap.add_argument("--sessions", type=int, default=48)
    ap.add_argument("--features", type=int, default=10)
    ap.add_argument("--mixes", type=int, default=10)
    ap.add_argument("--iterations", type=int, default=None, help="TrustEM's n_iter (default compare's AFFINE_EM)")
    ap.add_argument("--anchor-queries", default="", help="labelled queries per anchor, e.g. 1,2,5,10,20,50")
    ap.add_argument("--anchor-draws", type=int, default=20, help="random draws of the labelled queries per size")
    ap.add_argument("--out", default="trust_click_metrics.json")
    args = ap.parse_args(argv)
    try:
        args.anchor_queries = [int(v) for v in args.anchor_queries.split(",") if v.strip()]
    except ValueError:
        ap.error(f"--anchor-queries must be comma-separated integers, got {args.anchor_queries!r}")
    if any(v < 1 for v in args.anchor_queries) or args.anchor_draws < 1:
        ap.error("--anchor-queries must be >= 1 each and --anchor-draws >= 1")
    curves = true_curves(parse_clicks(f"trust:eta=1.0,sessions={args.sessions},shown=10"))
    truth = (np.array(curves["alpha"]), np.array(curves["beta"]))
    out = {}
    for fold in [int(f) for f in args.folds.split(",") if f]:
        out[fold] = run_fold(os.path.join(args.data, "mq2008"), fold, args, truth)
        print(f"fold {fold}: " + "; ".join(f"{m} tau {r['kendall_tau']:.3f} rel.err {r['mean_relative_error']:.3f}"
                                           for m, r in out[fold].items() if "anchored" not in m), flush=True)
        for name in ("affine (anchored)", "affine (anchored per position)"):
            for L, r in out[fold].get(name, {}).items():
                err = "none" if r["mean_relative_error"] is None else \
                    f"{r['mean_relative_error']:.3f} (p90 {r['p90_relative_error']:.3f}, max {r['max_relative_error']:.3f})"
                print(f"fold {fold}: {name} by {L} labelled queries: rel.err {err}, refused {r['refused']}/{r['draws']}",
                      flush=True)
    atomic_write_text(args.out, json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
