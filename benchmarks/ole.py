"""Benchmark: customobj.ole.TreeBooster (WSE, OLE, ole_fast) against LightGBM lambdarank, time per tree and memory.

Synthetic MSLR-shaped data (``customobj.data.synthetic(2000, 120, 136, seed=0)``: 2,000 queries of
~120 rows, 136 features, grades 0-4), 2 threads (``--threads``), 31 leaves, 255 bins, LambdaRank NDCG with
truncation 30. Each learner runs in its own subprocess so peak-RSS deltas (ru_maxrss after
training minus RSS before, data already in memory) are comparable. Per tree: wall time and
process CPU time (all threads; steadier than wall time on a shared machine) of rounds 2..N,
taken by a per-round callback, so binning and other one-off costs are left out.

    python benchmarks/ole.py                 # lightgbm, wse, ole, ole_fast (TreeBooster's defaults); every ratio
    python benchmarks/ole.py --float64       # also the float64 reference criterion="ole_float64"
    python benchmarks/ole.py --ole-fast-features 8 --ole-fast-epsilon 0.2   # ole_fast's tolerances
    python benchmarks/ole.py --threads 1 --queries 500 --repeat 2 --modes wse,ole,ole_fast   # a loaded machine
    python benchmarks/ole.py --rounds 5 --queries 500
    python benchmarks/ole.py --rounds 5 --repeat 3   # learners interleaved 3 times, best of each
    python benchmarks/ole.py --rounds 5 --threads 1  # single-threaded work per tree
    python benchmarks/ole.py --mode ole      # one learner, JSON on stdout (used internally)
    python benchmarks/ole.py --device cuda --queries 20000 --rounds 5   # TreeBooster on the GPU, beside
                                             # LightGBM on the CPU threads and XGBoost device="cuda" rank:ndcg

``--device cuda`` grows customobj's trees with ``TreeBooster(device="cuda")`` (LightGBM stays on the
CPU, ``--threads`` threads) and adds XGBoost's ``device="cuda"`` ``rank:ndcg`` (lossguide, 31
leaves, 255 bins); it refuses to run without a real CUDA GPU (numba's simulator does not count).

On a shared machine use ``--repeat``: the learners run interleaved (lightgbm, wse, ole, lightgbm,
...) so load changes hit all of them, and each reports its best wall and best CPU time per tree.
The load average (``os.getloadavg()``) is printed before and after: figures taken on a loaded
machine are only indicative.
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

from customobj.ole.criterion import OLE_FAST_EPSILON, OLE_FAST_FEATURES


def make_data(n_queries, q_size, n_features, seed=0):
    """``customobj.data.synthetic``: LETOR-like queries (mean size ``q_size``), grades 0-4."""
    from customobj.data import synthetic
    d = synthetic(n_queries, q_size, n_features, seed=seed)
    return np.ascontiguousarray(d.X, dtype=np.float64), np.asarray(d.y, dtype=np.float64), np.asarray(d.group)


def rss_mb():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class RoundClock:
    """Wall and process-CPU time of every boosting round after the first (callback for both learners).

    The first round also pays one-off costs (binning, buffers), so it is left out.
    """

    def __init__(self):
        self.marks = []

    def tick(self, *_):
        self.marks.append((time.perf_counter(), time.process_time()))

    def per_round(self):
        if len(self.marks) < 2:
            return float("nan"), float("nan")
        (w0, c0), (w1, c1) = self.marks[0], self.marks[-1]
        k = len(self.marks) - 1
        return (w1 - w0) / k, (c1 - c0) / k


def xgb_clock(clock):
    """XGBoost's per-round callback around a :class:`RoundClock` (made on use: xgboost is imported late)."""
    import xgboost as xgb

    class _Tick(xgb.callback.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            clock.tick()
            return False
    return _Tick()


def run_one(mode, args):
    X, y, group = make_data(args.queries, args.query_size, args.features)
    res = {"mode": mode, "rows": int(X.shape[0])}
    clock = RoundClock()
    if mode == "lightgbm":
        import lightgbm as lgb
        params = dict(objective="lambdarank", num_leaves=31, max_bin=255, learning_rate=0.1, num_threads=args.threads,
                      lambdarank_truncation_level=args.truncation, min_data_in_leaf=20, verbose=-1, lambdarank_norm=False)
        before = rss_mb()
        ds = lgb.Dataset(X, y, group=group, params={"max_bin": 255, "verbose": -1}).construct()
        lgb.train(params, ds, num_boost_round=args.rounds, callbacks=[clock.tick])
    elif mode == "xgboost":
        import xgboost as xgb
        params = dict(objective="rank:ndcg", tree_method="hist", device=args.device, grow_policy="lossguide",
                      max_leaves=31, max_depth=0, max_bin=255, eta=0.1, min_child_weight=1e-3,
                      lambdarank_pair_method="topk", lambdarank_num_pair_per_sample=args.truncation,
                      nthread=args.threads)
        before = rss_mb()
        dtrain = xgb.DMatrix(X, y, group=group)
        xgb.train(params, dtrain, num_boost_round=args.rounds, callbacks=[xgb_clock(clock)])
    else:
        from customobj.objectives import LambdaRank
        from customobj.ole import TreeBooster
        obj = LambdaRank(metric="ndcg", truncation=args.truncation)
        kw = dict(criterion=mode, num_leaves=31, max_bin=255, learning_rate=0.1, n_jobs=args.threads, verbose=False,
                  device=args.device, ole_fast_features=args.ole_fast_features, ole_fast_epsilon=args.ole_fast_epsilon)
        # warm-up on a slice: loads / compiles the numba kernels outside the measured run
        m = int(np.sum(group[:20]))
        TreeBooster(obj, n_estimators=2, **kw).fit(X[:m], y[:m], group[:20])
        before = rss_mb()
        model = TreeBooster(obj, n_estimators=args.rounds, **kw).fit(X, y, group, callbacks=[clock.tick])
        if model.device_memory_peak_ is not None:  # device="cuda": what the fit held on the GPU at its peak
            res.update(gpu_peak_mb=model.device_memory_peak_ / 2**20, gradients=model.device_gradients_)
    wall, cpu = clock.per_round()
    res.update(per_tree_s=wall, cpu_per_tree_s=cpu)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    res.update(rss_before_mb=before, peak_rss_mb=peak, peak_delta_mb=peak - before)
    if mode not in ("lightgbm", "xgboost"):
        # what OLE's extra work scales with: pairs per row of round 1 (after the peak was read)
        _, _, pc = obj.pair_couplings(np.zeros(X.shape[0]), y, group)
        res["pairs_per_row"] = float(np.count_nonzero(pc)) / X.shape[0]
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=["lightgbm", "xgboost", "wse", "ole", "ole_fast", "ole_float64"])
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                    help="where customobj's trees grow (cuda: also XGBoost device='cuda'; needs a real GPU)")
    ap.add_argument("--float64", action="store_true", help="also run the float64 reference criterion='ole_float64'")
    ap.add_argument("--ole-fast-features", type=int, default=OLE_FAST_FEATURES, help="k of criterion='ole_fast'")
    ap.add_argument("--ole-fast-epsilon", type=float, default=OLE_FAST_EPSILON,
                    help="epsilon of criterion='ole_fast' (fraction of each query's coupling mass dropped)")
    ap.add_argument("--modes", default=None,
                    help="comma-separated learners to run (default: lightgbm,wse,ole,ole_fast[,ole_float64])")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--query-size", type=int, default=120)
    ap.add_argument("--features", type=int, default=136)
    ap.add_argument("--truncation", type=int, default=30,
                    help="LambdaRank truncation level (pairs need a row in the top T): sets the pairs per row")
    ap.add_argument("--threads", type=int, default=2,
                    help="threads for every learner (1: CPU times free of OpenMP spin-waiting on a busy machine)")
    ap.add_argument("--repeat", type=int, default=1, help="interleaved runs per learner; best of each is reported")
    args = ap.parse_args()
    if args.device == "cuda":
        from gpu import require_real_gpu  # the sibling benchmark (this script's directory is on sys.path)

        gpu = require_real_gpu("benchmarks/ole.py --device cuda")
        if not args.mode:
            print(gpu, flush=True)
    if args.mode:
        print(json.dumps(run_one(args.mode, args)))
        return
    out = {}
    modes = ("lightgbm",) + (("xgboost",) if args.device == "cuda" else ()) + ("wse", "ole", "ole_fast") + \
        (("ole_float64",) if args.float64 else ())
    if args.modes:
        modes = tuple(args.modes.split(","))
    print("load average (1, 5, 15 min): %.2f %.2f %.2f" % os.getloadavg(), flush=True)
    for rep in range(max(1, args.repeat)):
        for mode in modes:
            cmd = [sys.executable, __file__, "--mode", mode, "--rounds", str(args.rounds), "--queries",
                   str(args.queries), "--query-size", str(args.query_size), "--features", str(args.features),
                   "--threads", str(args.threads), "--truncation", str(args.truncation), "--device", args.device,
                   "--ole-fast-features", str(args.ole_fast_features),
                   "--ole-fast-epsilon", repr(args.ole_fast_epsilon)]
            proc = subprocess.run(cmd, check=True, capture_output=True, text=True)
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            density = f"  {r['pairs_per_row']:.1f} pairs/row" if "pairs_per_row" in r else ""
            if "gpu_peak_mb" in r:
                density += f"  peak GPU memory {r['gpu_peak_mb']:.0f} MB (gradients on the {r['gradients']})"
            print(f"{mode:11s} per tree {r['per_tree_s']:.3f} s wall, {r['cpu_per_tree_s']:.3f} s CPU  "
                  f"peak RSS delta {r['peak_delta_mb']:.0f} MB{density}", flush=True)
            if mode in out:  # best of the repeats
                for key in ("per_tree_s", "cpu_per_tree_s", "peak_delta_mb"):
                    r[key] = min(r[key], out[mode][key])
            out[mode] = r
    if args.repeat > 1:
        for mode, r in out.items():
            print(f"best {mode:11s} per tree {r['per_tree_s']:.3f} s wall, {r['cpu_per_tree_s']:.3f} s CPU")
    eps = f"ole_fast (k={args.ole_fast_features}, epsilon={args.ole_fast_epsilon:g})"
    ratios = (("wse", "lightgbm", "WSE / LightGBM", "1.5"), ("ole", "wse", "OLE / WSE", "2.5"),
              ("ole_fast", "wse", f"{eps} / WSE", "1.3"), ("ole_float64", "wse", "ole_float64 / WSE", None),
              ("ole", "lightgbm", "OLE / LightGBM", None), ("ole", "xgboost", "OLE / XGBoost GPU", "5"),
              ("ole_fast", "xgboost", "ole_fast / XGBoost GPU", "2"))
    for key, what in (("per_tree_s", "wall"), ("cpu_per_tree_s", "CPU ")):
        for a, b, label, target in ratios:
            if a in out and b in out:
                goal = f"  (target <= {target})" if target else ""
                print(f"{label:18s} {what} per tree : {out[a][key] / out[b][key]:.2f}{goal}")
    if "lightgbm" in out:
        for mode in modes:
            if mode not in ("lightgbm", "xgboost"):  # host memory; the GPU's is not measured here
                print(f"{mode + ' / LightGBM':22s} peak memory : "
                      f"{out[mode]['peak_delta_mb'] / out['lightgbm']['peak_delta_mb']:.2f}  (target <= 2)")
    print("load average (1, 5, 15 min): %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
