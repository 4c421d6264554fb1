"""End-to-end training time: customobj objectives through the adapters vs the native objectives.

Same data, rounds, leaves and threads, all measured in this one process (best of ``--repeat``):
synthetic MSLR-shaped data (2,000 queries x ~120 rows x 136 features), 50 rounds, 31 leaves,
2 threads. Prints every ratio, plus where the custom objective's time goes (kernel vs adapter
overhead: score copy, zeroing, float32 conversion) and, with ``--threads-demo``, the same XGBoost
run in a child process whose OpenMP threads spin (``OMP_WAIT_POLICY=active``).

    python benchmarks/adapters.py [--queries 2000] [--rounds 50] [--repeat 2] [--threads-demo]

Targets (issue 4): LightGBM lambdarank <= 1.05x, XGBoost rank:ndcg <= 1.2x. The loss settings
mirror each library's defaults so both sides do the same work: LightGBM lambdarank (truncation
30, lambdarank_norm) vs LambdaRank(truncation=30, norm=True); XGBoost rank:ndcg (top-32 pairs,
both normalisations) vs LambdaRank(truncation=32, norm=True). The gradients are not identical
(XGBoost's pair construction and score normalisation differ in detail): this is a speed
comparison; tests/test_adapters_quality.py holds the quality comparisons.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

# Scripts put their own folder first on sys.path; drop it so nothing here shadows an installed module.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

from customobj import adapters  # noqa: E402  first: sets OMP_WAIT_POLICY=passive before lightgbm / xgboost load

import lightgbm as lgb  # noqa: E402
import numpy as np  # noqa: E402
import xgboost as xgb  # noqa: E402

from customobj.data import synthetic  # noqa: E402
from customobj.metrics import ndcg  # noqa: E402


def lambdarank(**kw):
    try:
        from customobj import LambdaRank
    except ImportError:
        from customobj.objectives.listwise import LambdaRank
    return LambdaRank(**kw)


class Timed:
    """Wraps an adapter callable and accumulates the time spent inside it (and in the kernel)."""

    def __init__(self, fn):
        self.fn, self.total, self.kernel, self.calls = fn, 0.0, 0.0, 0
        obj = fn.objective
        real = obj.grad_hess_prepared

        def kernel(*a, **k):
            t = time.perf_counter()
            out = real(*a, **k)
            self.kernel += time.perf_counter() - t
            return out

        obj.grad_hess_prepared = kernel  # instance attribute: this object only

    def __deepcopy__(self, memo):  # lightgbm.train deep-copies params
        return self

    def __call__(self, preds, data):
        t = time.perf_counter()
        out = self.fn(preds, data)
        self.total += time.perf_counter() - t
        self.calls += 1
        return out


def best_of(repeat, run):
    """Best wall seconds of ``repeat`` runs, the process CPU seconds of that run, and its result.

    CPU seconds (all threads) are the steadier number on a shared machine: a descheduled OpenMP
    worker stalls its whole team, which inflates wall time but not CPU time.
    """
    best, extra = None, None
    for _ in range(repeat):
        c, t = time.process_time(), time.perf_counter()
        extra = run()
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        if best is None or wall < best[0]:
            best = (wall, cpu)
    return best[0], best[1], extra


def bench_lightgbm(data, args):
    X, y, group = data
    base = dict(num_leaves=31, learning_rate=0.1, num_threads=args.threads, verbose=-1, metric="None",
                min_data_in_leaf=20, force_row_wise=True)
    dtrain = lgb.Dataset(X, y, group=group, free_raw_data=False).construct()  # binning not timed
    native = dict(base, objective="lambdarank", lambdarank_truncation_level=30, lambdarank_norm=True)

    def run_native():
        return lgb.train(native, dtrain, args.rounds)

    timed = []

    def run_custom():
        f = Timed(adapters.lightgbm_objective(lambdarank(truncation=30, norm=True)))
        timed.append(f)
        return lgb.train(dict(base, objective=f), dtrain, args.rounds)

    run_custom()  # compile numba kernels, prepare once: not what we measure
    timed.clear()
    t_nat, c_nat, m_nat = best_of(args.repeat, run_native)
    t_cus, c_cus, m_cus = best_of(args.repeat, run_custom)
    f = timed[-1]
    return dict(library="lightgbm", native="lambdarank", t_native=t_nat, t_custom=t_cus, ratio=t_cus / t_nat,
                cpu_native=c_nat, cpu_custom=c_cus,
                objective_s=f.total, kernel_s=f.kernel, overhead_s=f.total - f.kernel, calls=f.calls,
                ndcg10_native=ndcg(m_nat.predict(X), y, group, 10), ndcg10_custom=ndcg(m_cus.predict(X), y, group, 10))


def bench_xgboost(data, args):
    X, y, group = data
    base = dict(tree_method="hist", max_leaves=31, grow_policy="lossguide", max_depth=0, eta=0.1,
                nthread=args.threads, base_score=0.0, disable_default_eval_metric=1)
    dtrain = xgb.QuantileDMatrix(X, y, group=group)
    native = dict(base, objective="rank:ndcg")  # topk, 32 pairs per sample, both normalisations

    def run_native():
        return xgb.train(native, dtrain, args.rounds)

    timed = []

    def run_custom():
        obj = lambdarank(truncation=32, norm=True)
        f = Timed(adapters.xgboost_objective(obj))
        timed.append(f)
        return xgb.train(adapters.xgboost_params(obj, base), dtrain, args.rounds, obj=f)

    run_custom()
    timed.clear()
    t_nat, c_nat, m_nat = best_of(args.repeat, run_native)
    t_cus, c_cus, m_cus = best_of(args.repeat, run_custom)
    f = timed[-1]
    dx = xgb.DMatrix(X)
    return dict(library="xgboost", native="rank:ndcg", t_native=t_nat, t_custom=t_cus, ratio=t_cus / t_nat,
                cpu_native=c_nat, cpu_custom=c_cus,
                objective_s=f.total, kernel_s=f.kernel, overhead_s=f.total - f.kernel, calls=f.calls,
                ndcg10_native=ndcg(m_nat.predict(dx, output_margin=True), y, group, 10),
                ndcg10_custom=ndcg(m_cus.predict(dx, output_margin=True), y, group, 10))


def report(r, label=""):
    print(f"{r['library']:8s} {label}custom LambdaRank {r['t_custom']:7.2f} s | native {r['native']:10s} "
          f"{r['t_native']:7.2f} s | ratio {r['ratio']:.3f}x | CPU s custom {r['cpu_custom']:.2f} "
          f"native {r['cpu_native']:.2f} ratio {r['cpu_custom'] / r['cpu_native']:.3f}x")
    print(f"         objective {r['objective_s']:.2f} s over {r['calls']} rounds: kernel {r['kernel_s']:.2f} s, "
          f"adapter overhead {r['overhead_s'] * 1e3:.1f} ms ({1e3 * r['overhead_s'] / max(r['calls'], 1):.2f} ms/round)"
          f" | train NDCG@10 native {r['ndcg10_native']:.4f}, custom {r['ndcg10_custom']:.4f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--docs", type=int, default=120)
    ap.add_argument("--features", type=int, default=136)
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--only", choices=["lightgbm", "xgboost"])
    ap.add_argument("--threads-demo", action="store_true",
                    help="also run XGBoost in a child process with OMP_WAIT_POLICY=active")
    ap.add_argument("--numba-threads", type=int, default=None,
                    help="numba threads for the custom objective (default: numba's default)")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.numba_threads is not None:
        __import__("numba").set_num_threads(args.numba_threads)

    data = synthetic(args.queries, args.docs, args.features, seed=0)
    results = []
    if not args.json:
        print(f"data: {data.X.shape[0]} rows, {len(data.group)} queries, {data.X.shape[1]} features; "
              f"{args.rounds} rounds, 31 leaves, {args.threads} threads; "
              f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}, numba threads "
              f"{__import__('numba').get_num_threads()}, load avg {os.getloadavg()[0]:.1f}")
    if args.only in (None, "lightgbm"):
        results.append(bench_lightgbm(data, args))
    if args.only in (None, "xgboost"):
        results.append(bench_xgboost(data, args))
    if args.json:
        print(json.dumps(results))
        return
    for r in results:
        report(r)
    if args.threads_demo:
        env = dict(os.environ, OMP_WAIT_POLICY="active", CUSTOMOBJ_KEEP_OMP_ENV="1")
        env.pop("KMP_BLOCKTIME", None)
        cmd = [sys.executable, __file__, "--json", "--only", "xgboost", "--queries", str(args.queries),
               "--docs", str(args.docs), "--features", str(args.features), "--rounds", str(args.rounds),
               "--threads", str(args.threads), "--repeat", str(args.repeat)]
        if args.numba_threads is not None:
            cmd += ["--numba-threads", str(args.numba_threads)]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
        for r in json.loads(out.stdout.strip().splitlines()[-1]):
            report(r, label="[OMP_WAIT_POLICY=active] ")


if __name__ == "__main__":
    main()
