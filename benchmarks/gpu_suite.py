"""Everything a GPU tells us, in one process within a time budget (issue 32, item 6).

    python benchmarks/gpu_suite.py --budget 480 [--out gpu_suite.json]
    python benchmarks/gpu_suite.py --dry-run          # the plan, nothing run

Parts, in order (each skipped, and said so, when what it needs is missing or when the budget left is
less than its estimate; the JSON is rewritten atomically after each part, so a run cut short keeps
what it measured):

1. ``objectives``: each objective's ``grad_hess`` (benchmarks/gpu.py's table: CPU threads vs GPU,
   host float32 margins copied included) at ``--objective-rows`` (2.4M) rows with one
   ``--big-query``-row query (1,251: WEB30K's largest) appended;
2. ``xgboost`` (when importable): an XGBoost ``device="cuda"`` round (31 leaves, 255 bins) with
   native ``rank:ndcg`` and with customobj's GPU ``LambdaRank.like_xgboost()``;
3. ``lightgbm`` (when importable): a LightGBM ``lambdarank`` round on every CPU thread (the
   reference of issue 32's "OLE per tree <= 0.5x a LightGBM round");
4. ``ole``: ``TreeBooster(device="cuda")`` per tree for each ``--criteria`` at each ``--sizes``
   (240k and 2.4M rows), with ``device_stats_`` (launches, reads, allocations per split) and the
   peak GPU memory (held by the fit; the card's use, every process, sampled per tree);
5. ``phases``: the same fits at the sizes again with every GPU backend step timed, each step waiting
   for its kernels (``cuda.synchronize``: the synchronisation changes the total, so these are
   shares, not the per-tree time of part 4), and the histogram updates of each timed tree counted
   on the host (benchmarks/gpu_model.py's ``UpdateCounter``: nothing read, nothing synchronised);
6. ``instructions``: benchmarks/sass.py's instructions per histogram update for the card's arch.

Then ``model``: docs/gpu-model.md's three least certain parameters derived from what this run
measured (benchmarks/gpu_model.py's ``derive``: histogram updates per second and ``eta``, host cost
per launch and per split, the couplings kernels with the longest query), printed beside the values
the page assumes. ``objectives`` times each objective with and without the ``--big-query`` for it.

Also recorded: the card's name, the versions, the missing packages, and how many customobj kernels
loaded from the disk cache (a second run loads them all: issue 32, item 5). It refuses to run
without a real CUDA GPU; ``--simulator`` lets numba's simulator stand in (a functional check of the
suite: tests/test_benchmark_gpu_suite.py; no number it writes is a timing).
"""
from __future__ import annotations

import argparse
import collections
import datetime
import importlib.util
import json
import os
import sys
import time

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
import gpu_model  # noqa: E402  (benchmarks/ is not a package)

sys.path.remove(_HERE)
CRITERIA = ("ole", "ole_fast", "wse")
PARTS = ("objectives", "xgboost", "lightgbm", "ole", "phases", "instructions")
#: The OLE fits' settings (benchmarks/scale.py's): 31 leaves, 255 bins, LambdaRank(truncation=30).
OLE_PARAMS = dict(num_leaves=31, max_bin=255, min_data_in_leaf=20, learning_rate=0.1)
XGB_PARAMS = dict(tree_method="hist", max_leaves=31, grow_policy="lossguide", max_depth=0, eta=0.1, max_bin=255,
                  base_score=0.0, disable_default_eval_metric=1, device="cuda", verbosity=0)
#: The GPU backend's steps timed by ``phases`` (benchmarks/ole_phases.py's timers, synchronised).
PHASES = [("customobj.ole.cuda.tree", name, "DeviceTree") for name in (
    "start", "_row_hist", "_child_histograms", "_search", "end")] + [
    ("customobj.ole.cuda.partitions", "rows", "DevicePartitions"),
    ("customobj.ole.cuda.partitions", "pairs", "DevicePartitions")] + [
    ("customobj.ole.cuda.inputs", name, "TreeInputs") for name in ("pair_buffers", "prune_pairs", "dropped_couplings")] + [
    ("customobj.ole.cuda.histograms", name, "DeviceHistograms") for name in gpu_model.PAIR_STEPS] + [
    ("customobj.ole.cuda.scores", "gradients", "DeviceScores"), ("customobj.ole.cuda.scores", "add_trees",
                                                                  "DeviceScores")]
#: Rough seconds per million rows of each part's work on an H100/H200 (the plan's estimates: a part
#: starts only when the budget left covers its estimate), and seconds of kernel compilation per part.
COST_PER_MROW = {"objectives": 8.0, "xgboost": 4.0, "lightgbm": 6.0, "tree": 1.0}
COMPILE_S = 20.0
#: Seconds to compile the histogram kernels for one arch and count their SASS (benchmarks/sass.py).
SASS_S = 30.0


def _load(name):
    """A sibling benchmark module by path (benchmarks/ is not a package)."""
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", os.path.join(_HERE, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _importable(name):
    return importlib.util.find_spec(name) is not None


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--budget", type=float, default=480.0, help="seconds for the whole suite (default 480)")
    p.add_argument("--out", default="gpu_suite.json", help="the JSON written (atomically)")
    p.add_argument("--sizes", type=int, nargs="+", default=[240_000, 2_400_000], help="rows of the OLE fits")
    p.add_argument("--objective-rows", type=int, default=2_400_000)
    p.add_argument("--big-query", type=int, default=1251, help="rows of the query appended to every data set")
    p.add_argument("--docs", type=int, default=120, help="mean rows per query")
    p.add_argument("--features", type=int, default=136)
    p.add_argument("--criteria", nargs="+", default=list(CRITERIA), choices=CRITERIA)
    p.add_argument("--trees", type=int, default=6, help="trees per OLE fit (the first is not timed)")
    p.add_argument("--rounds", type=int, default=10, help="timed XGBoost / LightGBM rounds")
    p.add_argument("--repeat", type=int, default=3, help="calls per objective")
    p.add_argument("--objectives", nargs="+", default=None, metavar="EXPR", help="default: benchmarks/gpu.py's")
    p.add_argument("--num-leaves", type=int, default=OLE_PARAMS["num_leaves"])
    p.add_argument("--skip", nargs="+", default=[], choices=PARTS, help="parts left out")
    p.add_argument("--dry-run", action="store_true", help="print the plan and run nothing")
    p.add_argument("--simulator", action="store_true", help="accept numba's CUDA simulator (no timing)")
    args = p.parse_args(argv)
    if args.budget <= 0 or args.trees < 2 or args.rounds < 1 or args.repeat < 1 or min(args.sizes) < 2:
        p.error("--budget must be > 0, --trees >= 2, --rounds and --repeat >= 1, --sizes >= 2")
    return args


def make_plan(args):
    """``[(part, what, estimated seconds, why skipped or None)]`` in running order."""
    mrows = args.objective_rows / 1e6
    xgb = None if _importable("xgboost") else "xgboost is not installed"
    if xgb is None and args.simulator:
        xgb = "XGBoost's GPU learner needs a real card (the simulator is on)"
    lgb = None if _importable("lightgbm") else "lightgbm is not installed"
    n_obj = len(args.objectives) if args.objectives else len(_load("gpu").OBJECTIVES)
    plan = [("objectives", f"{n_obj} objectives' grad_hess at {args.objective_rows:,} rows, with and without "
                           "the big query",
             COMPILE_S + 1.2 * COST_PER_MROW["objectives"] * mrows * n_obj / 6, None),
            ("xgboost", f"XGBoost GPU round, native rank:ndcg and customobj's objective, {args.objective_rows:,} rows",
             COMPILE_S + COST_PER_MROW["xgboost"] * mrows * args.rounds / 5, xgb),
            ("lightgbm", f"LightGBM lambdarank round, {os.cpu_count()} threads, {max(args.sizes):,} rows",
             COST_PER_MROW["lightgbm"] * max(args.sizes) / 1e6 * args.rounds / 5, lgb)]
    for rows in args.sizes:
        for c in args.criteria:
            plan.append(("ole", f"TreeBooster(criterion={c!r}, device='cuda'), {args.trees} trees, {rows:,} rows",
                         COMPILE_S / 2 + COST_PER_MROW["tree"] * rows / 1e6 * args.trees, None))
    for rows in args.sizes:
        for c in args.criteria:
            plan.append(("phases", f"{c} steps timed (synchronised), 3 trees, {rows:,} rows",
                         COST_PER_MROW["tree"] * rows / 1e6 * 3 * 1.5, None))
    plan.append(("instructions", "instructions per histogram update (benchmarks/sass.py, the card's arch)", SASS_S,
                 "the simulator: no cubin compiled (docs/gpu-model.md's counts used)" if args.simulator else None))
    return [(part, what, est, "--skip" if part in args.skip else why) for part, what, est, why in plan]


def make_data(rows, args, seed=0):
    """``synthetic`` data of about ``rows`` rows and one ``--big-query``-row query of its rows appended."""
    from customobj.data import synthetic

    d = synthetic(max(1, rows // args.docs), args.docs, args.features, seed=seed)
    rng = np.random.default_rng(seed + 1)
    take = rng.integers(0, d.X.shape[0], args.big_query)
    X = np.concatenate([d.X, d.X[take]])
    y = np.concatenate([d.y, d.y[take]])
    return type(d)(X, y, np.append(np.asarray(d.group), args.big_query))


def kernel_cache():
    """customobj's GPU kernels' disk cache this process: ``{"hits", "misses"}`` (None under the simulator)."""
    from customobj._cuda_runtime import simulated

    if simulated():
        return None
    hits = misses = 0
    for name, module in list(sys.modules.items()):
        if name.startswith("customobj.") and name.rsplit(".", 1)[-1].startswith("_cuda_"):
            for obj in vars(module).values():
                stats = getattr(obj, "stats", None)
                if hasattr(stats, "cache_hits"):
                    hits += sum(stats.cache_hits.values())
                    misses += sum(stats.cache_misses.values())
    return {"hits": hits, "misses": misses}


def _stamped_fit(booster, X, y, group, until, sample=None):
    """Fit, stamping each tree's end; stops early past ``until`` (perf_counter); per-tree seconds."""
    stamps = [time.perf_counter()]

    def tick(*_):
        stamps.append(time.perf_counter())
        if sample is not None:
            sample()
        return time.perf_counter() > until

    booster.fit(X, y, group, eval_metric=None, callbacks=[tick])
    return [b - a for a, b in zip(stamps[:-1], stamps[1:])]


class Suite:
    """The run: the budget, the record written after each part, the data sets."""

    def __init__(self, args, device):
        self.args, self.t0 = args, time.perf_counter()
        self.data = {}
        self.gpu, self.scale = _load("gpu"), _load("scale")
        self.record = {"suite": "benchmarks/gpu_suite.py", "started": datetime.datetime.now(datetime.timezone.utc)
                       .isoformat(timespec="seconds"), "budget_s": args.budget, "device": device,
                       "simulator": bool(args.simulator), "versions": self.gpu._versions(),
                       "cpus": os.cpu_count(), "skipped": [], "objectives": {}, "ole": [], "phases": []}

    def left(self):
        return self.args.budget - (time.perf_counter() - self.t0)

    def dataset(self, rows):
        if rows not in self.data:
            self.data = {rows: make_data(rows, self.args)}  # one size held at a time
        return self.data[rows]

    def save(self):
        from customobj._io import atomic_write_text

        self.record["elapsed_s"] = time.perf_counter() - self.t0
        self.record["kernel_cache"] = kernel_cache()
        atomic_write_text(self.args.out, json.dumps(self.record, indent=1, default=float) + "\n")

    # --- the parts -----------------------------------------------------------------------------------
    def objectives(self):
        d = self.dataset(self.args.objective_rows)
        n = d.X.shape[0] - self.args.big_query
        without = type(d)(d.X[:n], d.y[:n], np.asarray(d.group)[:-1])
        built = self.gpu._objectives(d.X.shape[0])
        if self.args.objectives:
            built = [(e, o) for e, o in built if e in self.args.objectives]
        rng = np.random.default_rng(1)
        for expr, obj in built:
            if self.left() <= 0:
                self.record["skipped"].append({"part": f"objective {expr}", "why": "budget"})
                continue
            row = self.gpu.objective_seconds(obj, d, self.args.repeat, rng)
            if row is not None:  # the same rows without the big query: its cost per row (gpu_model)
                row["without_big_query"] = self.gpu.objective_seconds(obj, without, self.args.repeat, rng, cpu=False)
            self.record["objectives"][expr] = row if row is not None else {"skipped": "no GPU kernel"}
        self.record["objective_rows"] = int(d.X.shape[0])
        self.record["objective_rows_without"] = int(without.X.shape[0])
        self.record["big_query"] = self.args.big_query

    def xgboost(self):
        import xgboost as xgb

        from customobj import LambdaRank
        from customobj.adapters import xgboost_objective, xgboost_params

        d = self.dataset(self.args.objective_rows)
        dtrain = xgb.DMatrix(d.X, d.y, group=d.group)
        a = self.args
        native = self.gpu._round_seconds(dict(XGB_PARAMS, objective="rank:ndcg"), dtrain, a.rounds, 2)
        obj = LambdaRank.like_xgboost()
        custom = self.gpu._round_seconds(xgboost_params(obj, XGB_PARAMS, device="cuda"), dtrain, a.rounds, 2,
                                         xgboost_objective(obj, device="cuda"))
        self.record["xgboost"] = {"rows": int(d.X.shape[0]), "native_round_s": native,
                                  "customobj_round_s": custom, "ratio": custom / native}

    def lightgbm(self):
        import lightgbm as lgb

        d = self.dataset(max(self.args.sizes))
        params = dict(objective="lambdarank", lambdarank_truncation_level=30, lambdarank_norm=True, num_leaves=31,
                      max_bin=255, learning_rate=0.1, num_threads=os.cpu_count(), verbose=-1, min_data_in_leaf=20,
                      metric="None")
        stamps = []
        ds = lgb.Dataset(d.X, d.y, group=d.group, params={"max_bin": 255, "verbose": -1}).construct()
        stamps.append(time.perf_counter())
        lgb.train(params, ds, self.args.rounds + 1, callbacks=[lambda env: stamps.append(time.perf_counter())])
        rounds = [b - a for a, b in zip(stamps[:-1], stamps[1:])][1:]
        self.record["lightgbm"] = {"rows": int(d.X.shape[0]), "threads": os.cpu_count(),
                                   "round_s": sum(rounds) / max(len(rounds), 1)}

    def _booster(self, criterion, trees):
        from customobj import LambdaRank
        from customobj.ole import TreeBooster

        params = dict(OLE_PARAMS, num_leaves=self.args.num_leaves)
        return TreeBooster(LambdaRank(truncation=30), criterion=criterion, n_estimators=trees, device="cuda",
                           n_jobs=os.cpu_count(), verbose=False, **params)

    def ole(self, rows, criterion):
        d = self.dataset(rows)
        card = None if self.args.simulator else self.scale.CardMemory()
        booster = self._booster(criterion, self.args.trees)
        until = time.perf_counter() + max(self.left(), 0.0)
        trees = _stamped_fit(booster, d.X, d.y, d.group, until, card.sample if card else None)
        later = trees[1:] or trees
        stats = booster.device_stats_
        self.record["ole"].append({
            "rows": int(d.X.shape[0]), "criterion": criterion, "trees": len(trees), "tree1_s": trees[0],
            "per_tree_s": sum(later) / len(later), "gradients": booster.device_gradients_,
            "device_memory_peak_mb": booster.device_memory_peak_ / 2**20,
            "card_peak_mb": card.peak / 2**20 if card else None,
            "per_split": stats.per_split(first=1 if stats.n_trees > 1 else 0), "device_stats": stats.as_dict()})

    def phases(self, rows, criterion):
        if not getattr(self, "_timers", None):
            from customobj._cuda_runtime import cuda_module

            self._timers = collections.Counter()
            _load("ole_phases").install_timers(self._timers, PHASES, sync=cuda_module().synchronize)
            self._updates = gpu_model.UpdateCounter()
            self._updates.install()  # after the timers: its counting is in no step's time
        d = self.dataset(rows)
        self._timers.clear()
        self._updates.clear()
        marks = []

        def tick(*_):  # tree 1 (compilation, uploads) is left out
            marks.append(time.perf_counter())
            if len(marks) == 1:
                self._timers.clear()
                self._updates.clear()
            return False

        self._booster(criterion, 3).fit(d.X, d.y, d.group, eval_metric=None, callbacks=[tick])
        n = max(len(marks) - 1, 1)
        steps = sorted(self._timers.items(), key=lambda kv: -kv[1])
        self.record["phases"].append({"rows": int(d.X.shape[0]), "criterion": criterion,
                                      "per_tree_s": (marks[-1] - marks[0]) / n if len(marks) > 1 else None,
                                      "steps_s": {k: v / n for k, v in steps},
                                      "updates": {k: v / n for k, v in self._updates.counts().items()}})

    def instructions(self):
        from customobj._cuda_runtime import cuda_module

        cc = cuda_module().get_current_device().compute_capability
        try:
            counted = gpu_model.instruction_counts(_load("sass").measure(ccs=(tuple(cc),), every_signature=False))
        except Exception as e:  # no ptxas / nvdisasm, an arch they do not know: the page's counts stand in, said
            self.record["skipped"].append({"part": "instructions", "why": str(e)[-300:]})
            return
        self.record["instructions"] = dict(counted, source=f"benchmarks/sass.py, sm_{cc[0]}{cc[1]}")


def card():
    """The card's SMs and clock as numba.cuda reads them (the schedulers per SM: 4 on every arch from sm_70)."""
    from customobj._cuda_runtime import cuda_module

    dev = cuda_module().get_current_device()
    try:
        dev.MULTIPROCESSOR_COUNT, dev.CLOCK_RATE
    except (AttributeError, RuntimeError) as e:  # a driver without the attribute: the page's values, said
        return {"sm": gpu_model.ASSUMED["SM"], "clock_hz": gpu_model.ASSUMED["F"], "schedulers": gpu_model.ASSUMED["S"],
                "source": f"docs/gpu-model.md (the card's attributes unread: {e})"}
    return {"sm": int(dev.MULTIPROCESSOR_COUNT), "clock_hz": float(dev.CLOCK_RATE) * 1e3,
            "schedulers": gpu_model.ASSUMED["S"], "cc": list(dev.compute_capability),
            "source": "numba.cuda's device attributes (MULTIPROCESSOR_COUNT, CLOCK_RATE)"}


def targets(record):
    """Issue 32's ratios (benchmarks/scale.py's GPU_TARGETS) from what was measured."""
    base = {"lgb-native": (record.get("lightgbm") or {}).get("round_s"),
            "xgb-gpu": (record.get("xgboost") or {}).get("native_round_s")}
    out = []
    for method, ref, most in _load("scale").GPU_TARGETS:
        for r in record["ole"]:
            if r["criterion"] == method and base[ref] and r["rows"] == max(x["rows"] for x in record["ole"]):
                x = r["per_tree_s"] / base[ref]
                out.append({"criterion": method, "vs": ref, "ratio": x, "target": most, "met": x <= most})
    return out


def print_table(record):
    print(f"device: {record['device']}; {record['cpus']} CPUs; {record['versions']}")
    if record["simulator"]:
        print("numba's CUDA simulator: a functional run, no number below is a timing")
    for expr, row in record["objectives"].items():
        if "gpu_s" in row:
            print(f"  objective {expr:<44} GPU {row['gpu_s']:8.4f} s  CPU {row['cpu_s']:8.4f} s  "
                  f"diff {row['max_rel_diff']:.1e}")
    for name in ("xgboost", "lightgbm"):
        if name in record:
            print(f"  {name}: " + ", ".join(f"{k} {v:.4g}" for k, v in record[name].items()))
    print(f"  {'OLE fit':<32} {'s/tree':>8} {'launch/split':>12} {'read/split':>10} {'alloc/split':>11} {'held MB':>8}")
    for r in record["ole"]:
        ps = r["per_split"]
        print(f"  {r['criterion'] + ' @ ' + format(r['rows'], ','):<32} {r['per_tree_s']:8.4f} "
              f"{ps['launches']:12.1f} {ps['reads']:10.2f} {ps['allocations']:11.2f} {r['device_memory_peak_mb']:8.1f}")
    for r in record["phases"]:
        top = ", ".join(f"{k} {v:.4f}" for k, v in list(r["steps_s"].items())[:6])
        print(f"  phases {r['criterion']} @ {r['rows']:,} (s/tree, synchronised): {top}")
    for t in record.get("targets", []):
        print(f"  {t['criterion']} per tree = {t['ratio']:.2f}x a {t['vs']} round (target <= {t['target']:g}x: "
              f"{'met' if t['met'] else 'NOT met'})")
    for s in record["skipped"]:
        print(f"  skipped {s['part']}: {s['why']}")


def main(argv=None):
    args = parse_args(argv)
    plan = make_plan(args)
    if args.dry_run:
        print(f"plan (budget {args.budget:g} s; estimates are rough):")
        for part, what, est, why in plan:
            print(f"  {part:<10} ~{est:6.0f} s  {what}" + (f"  [skipped: {why}]" if why else ""))
        return 0
    from customobj._cuda_runtime import gpu_status

    status = gpu_status()
    if args.simulator and status.simulator:
        device = status.name
        # the simulator's launching thread busy-polls its Python block threads: a 0.2 ms GIL switch
        # interval (not 5 ms) lets a woken thread run at once, halving a functional run (as tests/conftest.py)
        sys.setswitchinterval(2e-4)
    else:
        device = _load("gpu").require_real_gpu("benchmarks/gpu_suite.py")
    suite = Suite(args, device)
    suite.record["card"] = None if args.simulator else card()
    suite.record["plan"] = [{"part": p, "what": w, "estimate_s": e} for p, w, e, _ in plan]
    sized = {"ole": iter([(r, c) for r in args.sizes for c in args.criteria]),
             "phases": iter([(r, c) for r in args.sizes for c in args.criteria])}
    for part, what, est, why in plan:
        if why is None and suite.left() < est:
            why = f"budget: {suite.left():.0f} s left, ~{est:.0f} s needed"
        step = getattr(suite, part)
        params = next(sized[part]) if part in sized else ()
        if why is not None:
            suite.record["skipped"].append({"part": what, "why": why})
            continue
        print(f"[{time.perf_counter() - suite.t0:6.1f} s] {what}", flush=True)
        step(*params)
        suite.record["targets"] = targets(suite.record)
        suite.record["model"] = gpu_model.derive(suite.record)
        suite.save()
    suite.record["model"] = gpu_model.derive(suite.record)
    suite.save()
    print_table(suite.record)
    gpu_model.print_model(suite.record["model"])
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
