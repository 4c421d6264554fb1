"""Scale benchmark: time per round, the custom objective's share of it, and peak memory, at
MSLR-WEB30K size (31,500 queries x ~120 rows x 136 features = ~3.8M rows) or a small size.

Every method runs in its own subprocess, so its peak RSS (``VmHWM``: data generation, Dataset
construction and training together) is its own. Methods:

- ``lgb-native``: LightGBM ``lambdarank`` (truncation 30, lambdarank_norm);
- ``lgb-custom``: LightGBM + ``LambdaRank(truncation=30, norm=True)`` via ``customobj.adapters.lightgbm_objective``;
- ``xgb-native``: XGBoost ``rank:ndcg`` (top-32 pairs per row, both normalisations);
- ``xgb-custom``: XGBoost + ``LambdaRank(truncation=32, norm=True)`` via ``customobj.adapters.xgboost_objective``;
- ``ole``: ``customobj.ole.TreeBooster(LambdaRank(truncation=30), criterion="ole")`` (its OLE tree
  builder in place of the library's; time per tree);
- ``ole_fast``: the same with ``criterion="ole_fast"`` (OLE splits searched over the features of
  largest WSE gain per node);
- ``xgb-gpu``: XGBoost ``device="cuda"`` ``rank:ndcg`` (as ``xgb-native``, on the GPU).

``--device cuda`` (issue 23, "OLE at scale") grows ``ole`` / ``ole_fast`` with
``TreeBooster(device="cuda")`` and runs, in the same invocation, LightGBM ``lambdarank`` on all the
machine's CPU threads (``--threads`` defaults to ``os.cpu_count()``) and ``xgb-gpu``. It prints the
card's name, per-tree seconds, the ratios against issue 23's targets (OLE per tree <= 0.5x a LightGBM
round and <= 5x an XGBoost GPU round; ``ole_fast`` <= 2x an XGBoost GPU round) and peak GPU memory:
for ``ole`` / ``ole_fast`` the peak of what the fit held (``TreeBooster.device_memory_peak_``), and
for every GPU method the card's used memory sampled at each round's end (all processes on the card,
CUDA context included). It refuses to run without a real GPU (numba's simulator does not count);
``--dry-run`` prints the plan (methods, threads, worker commands) and runs nothing.

Same 31 leaves, 255 bins, learning rate 0.1 and ``--threads`` for all. "obj s/round" is the time
spent inside the custom objective callable (wrapped and timed) per round; "share" divides it by
the round time. Round 1 (which also prepares the per-dataset objective state) is reported apart.
The raw features are freed once the library has binned them (``free_raw_data``, ``del X``).

    python benchmarks/scale.py --size small --rounds 20
    python benchmarks/scale.py --size web30k --rounds 3 --methods lgb-native lgb-custom
    python benchmarks/scale.py --size web30k --rounds 5 --methods lgb-native ole ole_fast
    python benchmarks/scale.py --size web30k --rounds 5 --device cuda   # lgb-native, xgb-gpu, ole, ole_fast

For ``ole`` / ``ole_fast`` beside ``lgb-native`` it also prints time per tree and peak memory as
ratios to LightGBM's against issue 14's targets (at most 3x a LightGBM round, at most 2x its peak).
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]  # nothing here shadows an installed module

SIZES = {"small": 2_000, "web30k": 31_500}  # queries; ~120 rows each, 136 features
METHODS = ("lgb-native", "lgb-custom", "xgb-native", "xgb-custom", "ole", "ole_fast", "xgb-gpu")
OLE_METHODS = ("ole", "ole_fast")  # method name = TreeBooster criterion
#: What ``--device cuda`` runs by default: LightGBM on every CPU thread, XGBoost's GPU learner, OLE on the GPU.
GPU_METHODS = ("lgb-native", "xgb-gpu", "ole", "ole_fast")
CPU_METHODS = METHODS[:-1]
BASELINE = {"lgb-custom": "lgb-native", "xgb-custom": "xgb-native", "ole": "lgb-native", "ole_fast": "lgb-native",
            "xgb-gpu": "lgb-native"}
#: Issue 14, item 4: OLE per tree at most 3x a LightGBM round, peak memory at most 2x LightGBM's.
TARGET_TIME_RATIO, TARGET_PEAK_RATIO = 3.0, 2.0
#: Issue 23 on a GPU: (method, baseline, most per-tree seconds as a multiple of the baseline's round).
GPU_TARGETS = (("ole", "lgb-native", 0.5), ("ole", "xgb-gpu", 5.0), ("ole_fast", "xgb-gpu", 2.0))


def status_mb(field):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


class Timed:
    """Wraps an adapter callable, recording the seconds of each call."""

    def __init__(self, fn):
        self.fn, self.calls = fn, []

    def __deepcopy__(self, memo):  # lightgbm.train deep-copies params
        return self

    def __call__(self, *args):
        t = time.perf_counter()
        out = self.fn(*args)
        self.calls.append(time.perf_counter() - t)
        return out


def _gpu_benchmark():
    """benchmarks/gpu.py, loaded by path: this script keeps its own directory off ``sys.path``."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_gpu_benchmark", os.path.join(_HERE, "gpu.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class CardMemory:
    """The card's used memory (total - free, every process on it), sampled at each round's end."""

    def __init__(self):
        from customobj._cuda_runtime import cuda_module
        self.context = cuda_module().current_context()
        self.peak = 0

    def sample(self, *_):
        free, total = self.context.get_memory_info()
        self.peak = max(self.peak, int(total) - int(free))


def _warm_up(method, threads, device="cpu"):
    """Compile the numba kernels on tiny data so compilation is not timed as round 1."""
    from customobj import adapters
    import customobj
    from customobj.data import synthetic

    X, y, g = synthetic(20, 20, 5, seed=1)
    if method == "lgb-custom":
        import lightgbm as lgb
        obj = adapters.lightgbm_objective(customobj.LambdaRank(truncation=30, norm=True))
        lgb.train(dict(objective=obj, verbose=-1, num_threads=threads), lgb.Dataset(X, y, group=g), 1)
    elif method == "xgb-custom":
        import xgboost as xgb
        lr = customobj.LambdaRank(truncation=32, norm=True)
        xgb.train(adapters.xgboost_params(lr, {"nthread": threads}), xgb.DMatrix(X, y, group=g), 1,
                  obj=adapters.xgboost_objective(lr))
    elif method in OLE_METHODS:
        from customobj.ole import TreeBooster
        TreeBooster(customobj.LambdaRank(truncation=30), criterion=method, n_estimators=1, num_leaves=4,
                    min_data_in_leaf=2, device=device, n_jobs=threads, verbose=False).fit(X, y, g)


def run_method(method, args):
    from customobj import adapters  # noqa: F401  before lightgbm / xgboost: OMP_WAIT_POLICY=passive
    import customobj
    from customobj.data import synthetic

    _warm_up(method, args.threads, args.device)
    card = CardMemory() if args.device == "cuda" and method != "lgb-native" else None
    t0 = time.perf_counter()
    data = synthetic(SIZES[args.size], 120, args.features, seed=0)
    X, y, group = data
    del data
    n_rows = int(X.shape[0])
    res = {"method": method, "rows": n_rows, "queries": int(len(group)), "gen_s": time.perf_counter() - t0,
           "rss_data_mb": status_mb("VmRSS")}
    stamps = []
    timed = None
    t0 = time.perf_counter()
    if method.startswith("lgb"):
        import lightgbm as lgb
        params = dict(num_leaves=31, max_bin=255, learning_rate=0.1, num_threads=args.threads, verbose=-1,
                      min_data_in_leaf=20, metric="None")
        ds = lgb.Dataset(X, y, group=group, free_raw_data=True, params={"max_bin": 255, "verbose": -1}).construct()
        del X
        gc.collect()
        res["construct_s"] = time.perf_counter() - t0
        if method == "lgb-native":
            params.update(objective="lambdarank", lambdarank_truncation_level=30, lambdarank_norm=True)
        else:
            timed = Timed(adapters.lightgbm_objective(customobj.LambdaRank(truncation=30, norm=True)))
            params.update(objective=timed)
        stamps.append(time.perf_counter())
        lgb.train(params, ds, args.rounds, callbacks=[lambda env: stamps.append(time.perf_counter())])
    elif method.startswith("xgb"):
        import xgboost as xgb
        params = dict(tree_method="hist", max_leaves=31, grow_policy="lossguide", max_depth=0, eta=0.1,
                      max_bin=255, nthread=args.threads, base_score=0.0, disable_default_eval_metric=1)
        if method == "xgb-gpu":
            params["device"] = "cuda"
        dtrain = xgb.QuantileDMatrix(X, y, group=group, max_bin=255)
        del X
        gc.collect()
        res["construct_s"] = time.perf_counter() - t0

        class Stamp(xgb.callback.TrainingCallback):
            def after_iteration(self, model, epoch, evals_log):
                stamps.append(time.perf_counter())
                if card is not None:
                    card.sample()
                return False

        obj = None
        if method in ("xgb-native", "xgb-gpu"):
            params.update(objective="rank:ndcg")
        else:
            lr = customobj.LambdaRank(truncation=32, norm=True)
            params = adapters.xgboost_params(lr, params)
            obj = timed = Timed(adapters.xgboost_objective(lr))
        stamps.append(time.perf_counter())
        xgb.train(params, dtrain, args.rounds, obj=obj, callbacks=[Stamp()])
    elif method in OLE_METHODS:
        from customobj.ole import TreeBooster
        res["construct_s"] = 0.0  # binning happens inside fit (in round 1 below)
        booster = TreeBooster(customobj.LambdaRank(truncation=30), criterion=method, n_estimators=args.rounds,
                              num_leaves=31, max_bin=255, min_data_in_leaf=20, learning_rate=0.1,
                              n_jobs=args.threads, device=args.device, verbose=False)

        def tick(b, it, ev):
            stamps.append(time.perf_counter())
            if card is not None:
                card.sample()
            return False

        stamps.append(time.perf_counter())
        booster.fit(X, y, group, eval_metric=None, callbacks=[tick])
        if booster.device_memory_peak_ is not None:
            res["gpu_peak_mb"] = booster.device_memory_peak_ / 2**20
            res["gradients"] = booster.device_gradients_
            stats = booster.device_stats_  # launches, blocking reads, allocations (issue 32)
            res["device_per_split"] = stats.per_split(first=1 if stats.n_trees > 1 else 0)
    else:
        raise ValueError(f"unknown method {method!r}")
    rounds = list(_diffs(stamps))
    res["rounds"] = len(rounds)
    res["round1_s"] = rounds[0] if rounds else float("nan")
    later = rounds[1:] if len(rounds) > 1 else rounds
    res["round_s"] = sum(later) / len(later) if later else float("nan")
    if timed is not None and timed.calls:
        calls = timed.calls[1:] if len(timed.calls) > 1 else timed.calls
        res["obj_round1_s"] = timed.calls[0]
        res["obj_s"] = sum(calls) / len(calls)
        res["obj_share"] = res["obj_s"] / res["round_s"]
    res["peak_mb"] = status_mb("VmHWM")
    if card is not None:
        res["card_peak_mb"] = card.peak / 2**20
    return res


def report_gpu(results):
    """Per-tree ratios against issue 23's GPU targets, and peak GPU memory."""
    for m, base, target in GPU_TARGETS:
        r, b = results.get(m), results.get(base)
        if r is None or b is None:
            continue
        x = r["round_s"] / b["round_s"]
        r[f"x_time_{base}"] = x
        print(f"{m}: {r['round_s']:.3f} s per tree = {x:.2f}x a {base} round (target <= {target:g}x: "
              f"{'met' if x <= target else 'NOT met'})")
    for m, r in results.items():
        held = f"held by the fit {r['gpu_peak_mb'] / 1024:.2f} GB, " if "gpu_peak_mb" in r else ""
        card = f"card used {r['card_peak_mb'] / 1024:.2f} GB (sampled per round)" if "card_peak_mb" in r else ""
        if held or card:
            print(f"{m}: peak GPU memory: {held}{card}" + (f"; gradients on the {r['gradients']}"
                                                              if "gradients" in r else ""))
        if "device_per_split" in r:
            print(f"{m}: per split (trees 2..): " + ", ".join(f"{k} {v:.2f}" for k, v in r["device_per_split"].items()))


def _diffs(stamps):
    for a, b in zip(stamps[:-1], stamps[1:]):
        yield b - a


def _fmt(v, spec):
    return "-" if v is None else format(v, spec)


def parse_args(argv=None):
    """The options, with the defaults ``--device`` implies: ``cuda`` runs :data:`GPU_METHODS` with every
    CPU thread, ``cpu`` the CPU methods with 2 threads."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", choices=sorted(SIZES), default="small")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--methods", nargs="+", choices=METHODS, default=None,
                    help="default: every CPU method, or with --device cuda: " + " ".join(GPU_METHODS))
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                    help="where ole / ole_fast grow their trees (cuda: TreeBooster(device='cuda'); needs a real GPU)")
    ap.add_argument("--threads", type=int, default=None,
                    help="CPU threads of every learner (default 2; with --device cuda all of them)")
    ap.add_argument("--features", type=int, default=136)
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per method")
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--dry-run", action="store_true", help="print the plan (methods, threads, commands), run nothing")
    ap.add_argument("--worker", choices=METHODS, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error(f"--rounds must be at least 1, got {args.rounds}")
    if args.threads is None:
        args.threads = (os.cpu_count() or 1) if args.device == "cuda" else 2
    if args.threads < 1:
        ap.error(f"--threads must be at least 1, got {args.threads}")
    if args.methods is None:
        args.methods = list(GPU_METHODS if args.device == "cuda" else CPU_METHODS)
    return args


def worker_command(method, args):
    """The subprocess that times ``method`` alone (its peak memory is its own)."""
    return [sys.executable, os.path.abspath(__file__), "--worker", method, "--size", args.size, "--rounds",
            str(args.rounds), "--threads", str(args.threads), "--features", str(args.features),
            "--device", args.device]


def main():
    args = parse_args()
    if args.worker:
        print(json.dumps(run_method(args.worker, args)), flush=True)
        return
    needs_gpu = args.device == "cuda" or "xgb-gpu" in args.methods
    if args.dry_run:
        print(f"device={args.device} threads={args.threads} size={args.size} rounds={args.rounds}"
              f"{' (needs a real CUDA GPU)' if needs_gpu else ''}")
        for m in args.methods:
            print(m + ": " + " ".join(worker_command(m, args)))
        return
    who = "benchmarks/scale.py " + ("--device cuda" if args.device == "cuda" else "xgb-gpu")
    card_name = _gpu_benchmark().require_real_gpu(who) if needs_gpu else None
    if card_name:
        print(card_name, flush=True)

    results = {}
    for m in args.methods:
        cmd = worker_command(m, args)
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            print(f"{m}: timed out after {args.timeout:.0f} s", file=sys.stderr)
            continue
        if out.returncode != 0:
            print(f"{m}: failed (exit {out.returncode})\n{out.stderr[-3000:]}", file=sys.stderr)
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        # ru_maxrss of the children (KiB) agrees with VmHWM unless an earlier child was larger.
        after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        r["children_maxrss_mb"] = after / 1024 if after > before else None
        results[m] = r
        print(f"done {m}: {r['round_s']:.3f} s/round, peak {r['peak_mb'] / 1024:.2f} GB", file=sys.stderr, flush=True)

    any_r = next(iter(results.values()), None)
    if any_r is None:
        sys.exit("no method finished")
    print(f"\nsize={args.size}: {any_r['rows']:,} rows x {args.features} features, {any_r['queries']:,} queries; "
          f"{args.rounds} rounds, {args.threads} threads, 31 leaves, 255 bins; device={args.device}"
          + (f"\nGPU: {card_name}" if card_name else ""))
    head = (f"{'method':<11} {'construct s':>11} {'round1 s':>9} {'s/round':>8} {'obj s/round':>11} {'share':>6} "
            f"{'peak GB':>8} {'x time':>7} {'x peak':>7}")
    print(head)
    print("-" * len(head))
    for m, r in results.items():
        base = results.get(BASELINE.get(m))
        xt = r["round_s"] / base["round_s"] if base else None
        xp = r["peak_mb"] / base["peak_mb"] if base else None
        print(f"{m:<11} {r['construct_s']:>11.2f} {r['round1_s']:>9.3f} {r['round_s']:>8.3f} "
              f"{_fmt(r.get('obj_s'), '11.3f'):>11} {_fmt(r.get('obj_share'), '6.1%'):>6} "
              f"{r['peak_mb'] / 1024:>8.2f} {_fmt(xt, '7.2f'):>7} {_fmt(xp, '7.2f'):>7}")
    print("x time / x peak: against lgb-native (lgb-custom, ole, ole_fast) or xgb-native (xgb-custom). "
          "ole's round 1 includes binning.")
    base = results.get("lgb-native")
    for m in OLE_METHODS:
        r = results.get(m)
        if r is None or base is None:
            continue
        xt, xp = r["round_s"] / base["round_s"], r["peak_mb"] / base["peak_mb"]
        r["x_time_lgb"], r["x_peak_lgb"] = xt, xp
        print(f"{m}: {r['round_s']:.3f} s per tree = {xt:.2f}x a LightGBM round (target <= {TARGET_TIME_RATIO:g}x: "
              f"{'met' if xt <= TARGET_TIME_RATIO else 'NOT met'}); peak {r['peak_mb'] / 1024:.2f} GB = {xp:.2f}x "
              f"LightGBM's (target <= {TARGET_PEAK_RATIO:g}x: {'met' if xp <= TARGET_PEAK_RATIO else 'NOT met'})")
    if needs_gpu:
        report_gpu(results)
    if args.json:
        from customobj._io import atomic_write_text
        atomic_write_text(args.json, json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
