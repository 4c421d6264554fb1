"""Benchmark: customobj.ole.TreeBooster (WSE and OLE) against LightGBM lambdarank, time per tree and memory.

Synthetic MSLR-shaped data (2,000 queries x 120 rows x 136 features, grades 0-4), 2 threads, 31 leaves,
255 bins, LambdaRank NDCG with truncation 30. Each learner runs in its own subprocess so peak-RSS
deltas (ru_maxrss after training minus RSS before, data already in memory) are comparable.

    python benchmarks/ole.py                 # all three, prints every ratio
    python benchmarks/ole.py --rounds 5 --queries 500
    python benchmarks/ole.py --mode ole      # one learner, JSON on stdout (used internally)
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np


def make_data(n_queries, q_size, n_features, seed=0):
    try:  # the project's generator when present
        from customobj.data import synthetic  # noqa: F401
        X, y, group = synthetic(n_queries=n_queries, query_size=q_size, n_features=n_features, seed=seed)
        return np.ascontiguousarray(X, dtype=np.float64), np.asarray(y, float), np.asarray(group)
    except Exception:
        pass
    rng = np.random.default_rng(seed)
    n = n_queries * q_size
    X = np.empty((n, n_features))
    # a mix of continuous, heavy-tailed and low-cardinality features, like MSLR-WEB10K
    X[:, : n_features // 2] = rng.normal(size=(n, n_features // 2))
    X[:, n_features // 2: 3 * n_features // 4] = rng.lognormal(size=(n, 3 * n_features // 4 - n_features // 2))
    X[:, 3 * n_features // 4:] = rng.integers(0, 20, size=(n, n_features - 3 * n_features // 4))
    w = rng.normal(size=n_features) / np.sqrt(n_features)
    latent = X[:, : n_features // 2] @ w[: n_features // 2] + rng.normal(scale=0.7, size=n)
    latent += np.repeat(rng.normal(scale=0.5, size=n_queries), q_size)
    y = np.digitize(latent, np.quantile(latent, [0.5, 0.8, 0.95, 0.99])).astype(float)  # 50/30/15/4/1 %
    return X, y, np.full(n_queries, q_size)


def rss_mb():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def run_one(mode, args):
    X, y, group = make_data(args.queries, args.query_size, args.features)
    res = {"mode": mode, "rows": int(X.shape[0])}
    if mode == "lightgbm":
        import lightgbm as lgb
        params = dict(objective="lambdarank", num_leaves=31, max_bin=255, learning_rate=0.1, num_threads=2,
                      lambdarank_truncation_level=30, min_data_in_leaf=20, verbose=-1, lambdarank_norm=False)
        before = rss_mb()
        t0 = time.perf_counter()
        ds = lgb.Dataset(X, y, group=group, params={"max_bin": 255, "verbose": -1}).construct()
        t1 = time.perf_counter()
        lgb.train(params, ds, num_boost_round=args.rounds)
        t2 = time.perf_counter()
        res.update(setup_s=t1 - t0, per_tree_s=(t2 - t1) / args.rounds)
    else:
        from customobj.objectives import LambdaRank
        from customobj.ole import TreeBooster
        from customobj.ole.binning import BinMapper
        obj = LambdaRank(metric="ndcg", truncation=30)
        kw = dict(criterion=mode, num_leaves=31, max_bin=255, learning_rate=0.1, n_jobs=2, verbose=False)
        # warm-up on a slice: loads / compiles the numba kernels outside the timed run
        m = args.query_size * 20
        TreeBooster(obj, n_estimators=2, **kw).fit(X[:m], y[:m], group[:20])
        before = rss_mb()
        t0 = time.perf_counter()
        BinMapper.fit(X, 255).bins(X)
        t1 = time.perf_counter()
        model = TreeBooster(obj, n_estimators=args.rounds, **kw).fit(X, y, group)
        t2 = time.perf_counter()
        setup = t1 - t0
        res.update(setup_s=setup, per_tree_s=(t2 - t1 - setup) / model.n_iterations_)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    res.update(rss_before_mb=before, peak_rss_mb=peak, peak_delta_mb=peak - before)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=["lightgbm", "wse", "ole"])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--query-size", type=int, default=120)
    ap.add_argument("--features", type=int, default=136)
    args = ap.parse_args()
    if args.mode:
        print(json.dumps(run_one(args.mode, args)))
        return
    out = {}
    for mode in ("lightgbm", "wse", "ole"):
        cmd = [sys.executable, __file__, "--mode", mode, "--rounds", str(args.rounds), "--queries",
               str(args.queries), "--query-size", str(args.query_size), "--features", str(args.features)]
        r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1])
        out[mode] = r
        print(f"{mode:9s} per tree {r['per_tree_s']:.3f} s  (setup {r['setup_s']:.2f} s)  "
              f"peak RSS delta {r['peak_delta_mb']:.0f} MB")
    lg, wse, ole = out["lightgbm"], out["wse"], out["ole"]
    print(f"WSE / LightGBM time per tree : {wse['per_tree_s'] / lg['per_tree_s']:.2f}  (target <= 1.5)")
    print(f"OLE / WSE time per tree      : {ole['per_tree_s'] / wse['per_tree_s']:.2f}  (target <= 1.3)")
    print(f"OLE / LightGBM time per tree : {ole['per_tree_s'] / lg['per_tree_s']:.2f}")
    print(f"WSE / LightGBM peak memory   : {wse['peak_delta_mb'] / lg['peak_delta_mb']:.2f}  (target <= 2)")
    print(f"OLE / LightGBM peak memory   : {ole['peak_delta_mb'] / lg['peak_delta_mb']:.2f}  (target <= 2)")


if __name__ == "__main__":
    main()
