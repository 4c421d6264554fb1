"""customobj's GPU objectives against XGBoost's native ``rank:ndcg`` on the GPU (issue "customobj on
the GPU"). Refuses to run without a real CUDA GPU (the simulator does not count).

Data: ``customobj.data.synthetic(--queries, --docs, --features, seed=0)`` (default 20000 x 120 x 136,
about 2.4M rows). Prints the device, the versions, then two tables:

1. seconds per boosting round of ``xgboost.train(device="cuda", tree_method="hist", max_depth=6)``:
   native ``rank:ndcg`` (the 1.00x reference), ``LambdaRank.like_xgboost()`` as a host objective
   (numba on the CPU threads, ``xgboost_objective(obj)``), the same on the GPU
   (``xgboost_objective(obj, device="cuda")``), and every other objective on the GPU; each as the
   mean of ``--rounds`` rounds after ``--warmup`` rounds (compilation, uploads), ratio to native.
2. every objective alone: one ``grad_hess`` on the CPU (numba, all threads; float64 scores on the
   host) vs on the GPU (host float32 margins copied to the device included, synchronised), the
   median of ``--repeat`` calls, and the GPU result's largest difference from the CPU's.

    python benchmarks/gpu.py [--queries 20000] [--docs 120] [--features 136] [--rounds 20] [--quick]

``--quick``: 2000 queries, 5 rounds, 3 repeats (a smoke run).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from importlib import metadata

import numpy as np

# Objectives timed, as constructor expressions (evaluated with customobj's names and ``pairs`` in scope).
OBJECTIVES = [
    "LambdaRank.like_xgboost()", "LambdaRank.like_lightgbm()", "LambdaRank()", "LambdaRank(truncation=30, norm=True)",
    "LambdaRank(metric='err', truncation=30)", "LambdaRank(metric='map')", "LambdaRank(metric='mrr')",
    "RankNet()", "RankSVM()", "MPBoost()", "MPBoost(ddf='logitdd')", "QBRank()", "QBRank(pairs=pairs)",
    "PreferencePairs(pairs)", "SquaredError()", "McRank(n_classes=5)", "StructuredDCG(k=10)",
    "RankNet() + 0.5 * SquaredError()",
]
REFERENCE = "LambdaRank.like_xgboost()"


def _versions():
    names = ["customobj", "numpy", "numba", "numba-cuda", "xgboost"]
    out = []
    for name in names:
        try:
            out.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            out.append(f"{name} (not installed)")
    return ", ".join(out)


def require_real_gpu(who: str) -> str:
    """The GPU's description line; exits saying that ``who`` needs a CUDA GPU and what is missing when
    there is no real one (numba's simulator does not count). benchmarks/ole.py imports it too."""
    from customobj._cuda_runtime import gpu_status
    from customobj._environment import gpu_line

    status = gpu_status()
    if not status.available or status.simulator:
        why = status.reason or "numba's CUDA simulator is on (NUMBA_ENABLE_CUDASIM); the timings need a real GPU"
        sys.exit(f"{who} needs a CUDA GPU: {why}")
    return gpu_line(status._asdict())


def _objectives(n_rows, seed=0):
    import customobj

    rng = np.random.default_rng(seed)
    m = min(10 * n_rows, 5_000_000)
    pairs = rng.integers(0, n_rows, size=(m, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    scope = {name: getattr(customobj, name) for name in customobj.objectives.__all__}
    return [(expr, eval(expr, scope, {"pairs": pairs})) for expr in OBJECTIVES]  # noqa: S307 - our own table


def _round_seconds(params, dtrain, rounds, warmup, obj=None):
    import xgboost as xgb

    booster = xgb.train(params, dtrain, warmup, obj=obj)  # compiles, uploads, builds the caches
    start = time.perf_counter()
    xgb.train(params, dtrain, rounds, obj=obj, xgb_model=booster)
    return (time.perf_counter() - start) / rounds


def _training_table(d, objectives, args):
    import xgboost as xgb

    from customobj.adapters import xgboost_objective, xgboost_params

    base = {"tree_method": "hist", "max_depth": 6, "eta": 0.1, "device": "cuda", "verbosity": 0}
    dtrain = xgb.DMatrix(d.X, d.y, group=d.group)
    rows = []
    native = _round_seconds(dict(base, objective="rank:ndcg"), dtrain, args.rounds, args.warmup)
    rows.append(("XGBoost native rank:ndcg", native))
    ref = dict(objectives)[REFERENCE]
    host = _round_seconds(xgboost_params(ref, base), dtrain, args.rounds, args.warmup, xgboost_objective(ref))
    rows.append((f"{REFERENCE}, host objective (CPU threads)", host))
    for expr, obj in objectives:
        if expr in args.skip_training:
            continue
        try:  # McRank: num_class=K from xgboost_params, K trees per round
            sec = _round_seconds(xgboost_params(obj, base, device="cuda"), dtrain, args.rounds, args.warmup,
                                 xgboost_objective(obj, device="cuda"))
        except NotImplementedError as exc:
            print(f"  {expr}: skipped ({exc})")
            continue
        rows.append((f"{expr}, GPU objective", sec))
    print("\nseconds per boosting round (device='cuda', hist, depth 6)")
    print(f"  {'configuration':<62} {'s/round':>9} {'vs native':>10}")
    for name, sec in rows:
        print(f"  {name:<62} {sec:9.4f} {sec / native:9.2f}x")


def _median_seconds(fn, repeat, sync):
    fn()  # warm: compilation and uploads
    sync()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def objective_seconds(obj, d, repeat, rng, cpu=True):
    """One ``grad_hess`` of ``obj`` on ``d``: ``{"cpu_s", "gpu_s", "max_rel_diff"}`` (medians of
    ``repeat``; GPU: host float32 margins copied to the device included, synchronised; ``cpu`` False:
    ``{"gpu_s"}`` alone), or None when the objective has no GPU kernel. benchmarks/gpu_suite.py reuses it."""
    from numba import cuda

    from customobj.adapters._cuda import device_round

    prep = obj.prepare(d.y, d.group)
    k = obj.n_outputs
    shape = (prep.n_rows,) if k == 1 else (prep.n_rows, k)
    margins = rng.normal(size=shape).astype(np.float32)
    s64 = margins.astype(np.float64)
    try:
        out = {}
        gpu = _median_seconds(lambda: out.__setitem__("g", device_round(obj, prep, margins, shape, "XGBoost")),
                              repeat, cuda.synchronize)
    except NotImplementedError:
        return None
    if not cpu:
        return {"gpu_s": gpu}
    cpu_out = {}
    cpu = _median_seconds(lambda: cpu_out.__setitem__("g", obj.grad_hess_prepared(s64, prep)), repeat, lambda: None)
    g_cpu = cpu_out["g"][0]
    g_gpu = out["g"][0].copy_to_host().astype(np.float64)
    err = float(np.abs(g_gpu - g_cpu).max() / max(np.abs(g_cpu).max(), 1e-300))
    return {"cpu_s": cpu, "gpu_s": gpu, "max_rel_diff": err}


def _objective_table(d, objectives, args):
    print(f"\none grad_hess, median of {args.repeat} (GPU: host float32 margins copied to the device included)")
    print(f"  {'objective':<46} {'CPU s':>9} {'GPU s':>9} {'CPU/GPU':>8} {'max |GPU-CPU|/max|CPU|':>24}")
    rng = np.random.default_rng(1)
    for expr, obj in objectives:
        row = objective_seconds(obj, d, args.repeat, rng)
        if row is None:
            print(f"  {expr:<46} (no GPU kernel)")
            continue
        cpu, gpu = row["cpu_s"], row["gpu_s"]
        print(f"  {expr:<46} {cpu:9.4f} {gpu:9.4f} {cpu / gpu:7.1f}x {row['max_rel_diff']:24.2e}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--queries", type=int, default=20000)
    p.add_argument("--docs", type=float, default=120)
    p.add_argument("--features", type=int, default=136)
    p.add_argument("--rounds", type=int, default=20, help="timed rounds per configuration")
    p.add_argument("--warmup", type=int, default=3, help="untimed rounds first")
    p.add_argument("--repeat", type=int, default=7, help="calls per objective in the second table")
    p.add_argument("--skip-training", nargs="*", default=[], metavar="EXPR",
                   help="objectives (as in the table) left out of the training table")
    p.add_argument("--no-training", action="store_true", help="only the objectives-alone table")
    p.add_argument("--quick", action="store_true", help="2000 queries, 5 rounds, 3 repeats")
    args = p.parse_args(argv)
    if args.quick:
        args.queries, args.rounds, args.repeat = 2000, 5, 3
    device = require_real_gpu("benchmarks/gpu.py")
    import customobj

    print(f"device: {device}")
    print(f"versions: {_versions()}; python {sys.version.split()[0]}; {os.cpu_count()} CPUs")
    d = customobj.data.synthetic(args.queries, args.docs, args.features, seed=0)
    print(f"data: synthetic({args.queries}, {args.docs:g}, {args.features}, seed=0): {d.X.shape[0]:,} rows, "
          f"{len(d.group):,} queries")
    objectives = _objectives(d.X.shape[0])
    if not args.no_training:
        _training_table(d, objectives, args)
    _objective_table(d, objectives, args)


if __name__ == "__main__":
    main()
