"""Time every objective in ``customobj.objectives.__all__`` on MSLR-WEB10K-shaped data.

Per objective: ``grad_hess_prepared`` (median of ``--repeat`` calls on a prepared data set, the
per-round cost inside a booster), full ``grad_hess`` (validation + label-only state + kernel),
for pairwise objectives gradients plus couplings as two calls and as one fused
``grad_hess_couplings_prepared`` (the OLE booster's per-tree call),
and the first call in a fresh Python process (import + loading the cached numba compile + one
full ``grad_hess``). Every objective runs once in this process first, so its numba cache exists.

Data: ``customobj.data.synthetic(n_queries, docs_per_query, n_features=136)`` (query sizes vary
around ``--docs``), or random labels 0-4 skewed to 0 at exactly ``--docs`` rows per query when
that generator is missing. Scores are N(0, 1); McRank gets ``(n, 5)`` scores.

    python benchmarks/objectives.py [--queries 2000] [--docs 120] [--repeat 7] [--only LambdaRank]
"""
from __future__ import annotations

import argparse
import inspect
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import customobj.objectives as objectives
from customobj.objectives import Objective

ABSTRACT = {"Objective", "Prepared", "Sum", "Scaled"}

# name -> constructor expressions evaluated with the objective classes and ``pairs`` in scope.
VARIANTS = {
    "LambdaRank": ["LambdaRank(truncation=30)", "LambdaRank()", "LambdaRank(truncation=30, norm=True)",
                   "LambdaRank(k=10)", "LambdaRank(metric='err', truncation=30)", "LambdaRank(metric='map')",
                   "LambdaRank(metric='mrr')"],
    "StructuredDCG": ["StructuredDCG(k=10)"],
    "McRank": ["McRank(n_classes=5)"],
    "QBRank": ["QBRank()", "QBRank(hessian='upper_bound')", "QBRank(pairs=pairs)"],
    "PreferencePairs": ["PreferencePairs(pairs)"],
    "MPBoost": ["MPBoost()", "MPBoost(ddf='logitdd')"],
}
BINARY = {"Logistic", "SquaredHinge"}  # trained on relevance y > 0


def make_data(n_queries, docs, seed=0):
    try:
        from customobj.data import synthetic
    except ImportError:
        synthetic = None
    if synthetic is not None:
        d = synthetic(n_queries=n_queries, docs_per_query=docs, n_features=136, seed=seed)
        y, sizes, source = np.asarray(d.y, dtype=np.float64), np.asarray(d.group, dtype=np.int64), "synthetic"
    else:
        rng = np.random.default_rng(seed)
        sizes = np.full(n_queries, docs, dtype=np.int64)
        y = rng.choice(5, size=n_queries * docs, p=[0.5, 0.25, 0.13, 0.08, 0.04]).astype(np.float64)
        source = "random labels 0-4"
    rng = np.random.default_rng(seed + 1)
    n = y.size
    scores = rng.normal(size=n)
    # Explicit preferences: 100 random within-query pairs per query, better grade first.
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    q = np.repeat(np.arange(sizes.size), 100)
    q = q[sizes[q] > 1]
    a = ptr[q] + (rng.random(q.size) * sizes[q]).astype(np.int64)
    b = ptr[q] + (rng.random(q.size) * sizes[q]).astype(np.int64)
    keep = y[a] != y[b]
    a, b = a[keep], b[keep]
    better = y[a] > y[b]
    pairs = np.stack([np.where(better, a, b), np.where(better, b, a)], axis=1)
    return y, sizes, scores, pairs, source


def variants(only=None):
    out = []
    for name in objectives.__all__:
        cls = getattr(objectives, name)
        if name in ABSTRACT or not (inspect.isclass(cls) and issubclass(cls, Objective)):
            continue
        if only and name not in only:
            continue
        out.extend((name, expr) for expr in VARIANTS.get(name, [f"{name}()"]))
    return out


def build(expr, pairs):
    namespace = {n: getattr(objectives, n) for n in objectives.__all__}
    namespace["pairs"] = pairs
    return eval(expr, namespace)  # noqa: S307 - expressions come from VARIANTS above


def inputs(name, obj, y, scores):
    labels = (y > 0).astype(np.float64) if name in BINARY else y
    k = obj.n_outputs or 1
    s = np.tile(scores[:, None], (1, k)) * np.linspace(0.5, 1.5, k) if k > 1 else scores
    return labels, s


def median_time(fn, repeat):
    """Median wall and CPU (all threads of this process) seconds per call.

    On a shared machine CPU time is the steadier number: wall time on an idle machine is about
    CPU time / threads for the parallel kernels.
    """
    wall, cpu = [], []
    for _ in range(repeat):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return float(np.median(wall)), float(np.median(cpu))


FIRST_CALL = """
import importlib.util, time
t0 = time.perf_counter()
import numpy as np
spec = importlib.util.spec_from_file_location("bench_objectives", {script!r})
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)
d = np.load({path!r})
obj = bench.build({expr!r}, d["pairs"])
labels, s = bench.inputs({name!r}, obj, d["y"], d["scores"])
sizes = d["sizes"]
t1 = time.perf_counter()
obj.grad_hess(s, labels, sizes)
t2 = time.perf_counter()
print(t2 - t1, t1 - t0)
"""


def first_call(name, expr, path):
    """Seconds of the first full ``grad_hess`` in a new process (cached compile), and a note."""
    code = FIRST_CALL.format(script=os.path.abspath(__file__), path=path, expr=expr, name=name)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if res.returncode != 0:
        return float("nan"), (res.stderr.strip().splitlines() or ["failed"])[-1]
    call, imp = (float(v) for v in res.stdout.split())
    return call, f"import+data {imp:.2f} s"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--docs", type=int, default=120)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--only", nargs="*", help="class names to time (default: all)")
    ap.add_argument("--no-first-call", action="store_true", help="skip the fresh-process measurement")
    args = ap.parse_args(argv)

    y, sizes, scores, pairs, source = make_data(args.queries, args.docs)
    print(f"data: {source}, {sizes.size} queries, {y.size} rows (max query {sizes.max()}), "
          f"{pairs.shape[0]} explicit pairs; numba threads: {os.environ.get('NUMBA_NUM_THREADS', 'default')}, "
          f"cpus: {os.cpu_count()}, load avg: {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "data.npz")
        np.savez(path, y=y, sizes=sizes, scores=scores, pairs=pairs)
        rows = []
        for name, expr in variants(args.only):
            obj = build(expr, pairs)
            labels, s = inputs(name, obj, y, scores)
            t0 = time.perf_counter()
            obj.grad_hess(s, labels, sizes)  # compiles (or loads the cache) and builds the state
            compile_s = time.perf_counter() - t0
            prep = obj.prepare(labels, sizes)
            out_g = np.zeros(s.shape)
            out_h = np.zeros(s.shape)
            obj.grad_hess_prepared(s, prep, out_g, out_h)
            t_prep, c_prep = median_time(lambda: obj.grad_hess_prepared(s, prep, out_g, out_h), args.repeat)
            t_full, _ = median_time(lambda: obj.grad_hess(s, labels, sizes), max(3, args.repeat // 2))
            t_sep = t_fused = float("nan")
            if obj.pairwise:  # what the OLE booster needs every tree: gradients and couplings
                def separate():
                    obj.grad_hess_prepared(s, prep, out_g, out_h)
                    obj.pair_couplings_prepared(s, prep)
                separate()
                t_sep, _ = median_time(separate, max(3, args.repeat // 2))
                t_fused, _ = median_time(lambda: obj.grad_hess_couplings_prepared(s, prep, out_g, out_h),
                                         max(3, args.repeat // 2))
            fc, note = (float("nan"), "skipped") if args.no_first_call else first_call(name, expr, path)
            rows.append((expr, t_prep * 1e3, c_prep * 1e3, t_full * 1e3, t_sep * 1e3, t_fused * 1e3, fc, compile_s,
                         note))
            print(f"  {expr:<45} {t_prep * 1e3:9.1f} ms", flush=True)
    print()
    print(f"{'objective':<42} {'prepared ms':>11} {'(cpu ms)':>9} {'full ms':>8} {'g+c sep ms':>10} "
          f"{'fused ms':>8} {'first call s':>12}  [first call in this run s] (fresh process notes)")
    for expr, tp, cp, tf, ts, tu, fc, cs, note in rows:
        print(f"{expr:<42} {tp:11.1f} {cp:9.1f} {tf:8.1f} {ts:10.1f} {tu:8.1f} {fc:12.2f}  [{cs:.2f}] ({note})")
    print("g+c sep: grad_hess_prepared + pair_couplings_prepared; fused: grad_hess_couplings_prepared")
    print(f"median of {args.repeat} calls (full grad_hess: of {max(3, args.repeat // 2)}); load avg now "
          f"{os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
