"""Benchmark: how customobj's CPU kernels scale with threads (issue 23, "Many cores").

Same data and learners as ``benchmarks/ole.py`` (``customobj.data.synthetic(queries, 120, 136,
seed=0)``; the issue's size is ``--queries 20000``, 2.4M rows). For each thread count (1, 2, 4, 8,
16 up to the CPUs this process may use, or ``--threads``), set with ``numba.set_num_threads``:

- ``LambdaRank.like_lightgbm().grad_hess(scores, y, group)``: the public call, which validates and
  converts the labels every call, ``grad_hess_prepared`` into fresh outputs, and into outputs
  reused from call to call (what the adapters and TreeBooster do every round: no fresh pages to
  fault in); scores ``N(0, 1)``, best of three calls;
- ``TreeBooster`` seconds per tree (rounds 2..N, binning left out), ``criterion="wse"`` and
  ``"ole"``, ``n_jobs`` = the thread count, ``LambdaRank(truncation=30)``, 31 leaves, 255 bins.

Thread counts run interleaved (1, 2, 4, ..., then again) ``--repeat`` times; the best of each is
kept. Printed: seconds, speedup over 1 thread, OLE / WSE per thread count, and per series an
Amdahl fit ``T(n) = s + p / n`` (least squares over the thread counts) with its serial fraction
``s / (s + p)``: the share of the 1-thread time that more threads did not shrink (the issue's goal,
6x on 16 threads, needs it below about 11%, and no cost that grows with the threads).

    python benchmarks/threads.py --queries 20000 --repeat 2     # the issue's size, every core count
    python benchmarks/threads.py --threads 1 2 --queries 2000   # a small machine
    python benchmarks/threads.py --only objective               # the objective alone, no trees
    python benchmarks/threads.py --stages --queries 20000       # where the time goes, per thread count
    python benchmarks/threads.py --stages --only objective --threads 1 --queries 4000 --repeat 3

``--stages``: LambdaRank ``grad_hess``'s call path step by step at each thread count (each step
called alone, as the call makes it, best of ``--repeat`` x 3; ``serial`` marks the steps that run
on one thread); the root's OLE pair histogram at one thread cut into 1, 2, 4 feature groups (what
the extra work items for idle threads cost); then ``benchmarks/ole_phases.py`` for a WSE and an
OLE tree at each thread count (its own subprocesses; serial steps marked there too).

The machine is described first (CPUs usable, physical cores, numba's threading layer, load
average): hyper-threads share a core, so a count above the physical cores cannot give its speedup.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numba
import numpy as np

from ole import RoundClock, make_data  # the sibling benchmark (this script's directory is on sys.path)

HERE = Path(__file__).resolve().parent
DEFAULT_THREADS = (1, 2, 4, 8, 16)
CRITERIA = ("wse", "ole")


# --- the machine --------------------------------------------------------------------------------------
def usable_cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def physical_cores() -> int | None:
    """Distinct (package, core) pairs of the usable CPUs (Linux sysfs), or None when unknown."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    cores = set()
    for cpu in os.sched_getaffinity(0):
        base = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology")
        files = [base / "physical_package_id", base / "core_id"]
        if not all(f.is_file() for f in files):
            return None
        cores.add(tuple(f.read_text().strip() for f in files))
    return len(cores)


def thread_counts(requested: list[int] | None) -> list[int]:
    """The thread counts to run: ``requested``, or 1, 2, 4, 8, 16 up to the usable CPUs and numba's pool."""
    pool = numba.config.NUMBA_NUM_THREADS
    if requested:
        bad = [t for t in requested if not 1 <= t <= pool]
        if bad:
            raise SystemExit(f"--threads {bad}: numba's pool has {pool} threads (NUMBA_NUM_THREADS)")
        return sorted(set(requested))
    top = min(usable_cpus(), pool)
    return [t for t in DEFAULT_THREADS if t <= top] + ([top] if top > DEFAULT_THREADS[-1] else [])


def amdahl(threads: list[int], seconds: list[float]) -> tuple[float, float, float] | None:
    """``(s, p, s / (s + p))`` of the least-squares fit ``T(n) = s + p / n``; None below two counts."""
    if len(set(threads)) < 2:
        return None
    x = 1.0 / np.asarray(threads, dtype=np.float64)
    (s, p), *_ = np.linalg.lstsq(np.stack([np.ones_like(x), x], axis=1), np.asarray(seconds), rcond=None)
    return float(s), float(p), float(s / (s + p)) if s + p > 0 else float("nan")


def _best_of(fn, calls=3) -> float:
    best = float("inf")
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


# --- the measurements ---------------------------------------------------------------------------------
def objective_times(obj, s, y, group, prep) -> dict[str, float]:
    """The public ``grad_hess``, ``grad_hess_prepared`` (fresh outputs) and ``grad_hess_prepared``
    into outputs reused from call to call (as the adapters and TreeBooster call it) at the current
    thread count (best of 3)."""
    g, h = obj.grad_hess_prepared(s, prep)  # a first call at a new thread count starts its threads
    return {"grad_hess": _best_of(lambda: obj.grad_hess(s, y, group)),
            "grad_hess_prepared": _best_of(lambda: obj.grad_hess_prepared(s, prep)),
            "reused": _best_of(lambda: obj.grad_hess_prepared(s, prep, g, h))}


def tree_time(criterion: str, threads: int, X, y, group, rounds: int) -> float:
    """Seconds per tree of a TreeBooster fit (rounds 2..N) with ``n_jobs=threads``."""
    from customobj.objectives import LambdaRank
    from customobj.ole import TreeBooster
    clock = RoundClock()
    TreeBooster(LambdaRank(metric="ndcg", truncation=30), criterion=criterion, n_estimators=rounds, num_leaves=31,
                max_bin=255, learning_rate=0.1, n_jobs=threads, verbose=False).fit(X, y, group, callbacks=[clock.tick])
    return clock.per_round()[0]


def run_scaling(args, threads: list[int]) -> dict[str, dict[int, float]]:
    """Best seconds per series and thread count, thread counts interleaved ``args.repeat`` times."""
    from customobj import LambdaRank
    X, y, group = make_data(args.queries, 120, args.features)
    print(f"data: {X.shape[0]:,} rows x {X.shape[1]} features, {len(group):,} queries", flush=True)
    obj = LambdaRank.like_lightgbm()
    s = np.random.default_rng(0).normal(size=y.size)
    prep = obj.prepare(y, group)
    trees = args.only != "objective"
    if trees:  # compile / load the tree kernels outside the measured fits
        m = int(np.sum(group[:20]))
        for c in CRITERIA:
            tree_time(c, 1, X[:m], y[:m], group[:20], 2)
    best: dict[str, dict[int, float]] = {}
    for rep in range(args.repeat):
        for t in threads:
            numba.set_num_threads(t)
            got = objective_times(obj, s, y, group, prep)
            if trees:
                got.update({c: tree_time(c, t, X, y, group, args.rounds) for c in CRITERIA})
            for key, sec in got.items():
                best.setdefault(key, {})[t] = min(sec, best.get(key, {}).get(t, float("inf")))
            print(f"  repeat {rep + 1}, {t:3d} threads: " + ", ".join(f"{k} {v:.4f} s" for k, v in got.items()),
                  flush=True)
    return best


def report_scaling(best: dict[str, dict[int, float]], threads: list[int]) -> None:
    labels = {"grad_hess": "LambdaRank grad_hess", "grad_hess_prepared": "grad_hess_prepared",
              "reused": "prepared, reused out", "wse": "WSE s/tree", "ole": "OLE s/tree"}
    print("\nbest seconds (speedup over 1 thread):")
    print(f"{'threads':>8s}" + "".join(f"{labels[k]:>28s}" for k in best) + ("   OLE / WSE" if "ole" in best else ""))
    for t in threads:
        row = f"{t:8d}"
        for series in best.values():
            ref = series.get(1)
            up = f" ({ref / series[t]:5.2f}x)" if ref else ""
            row += f"{series[t]:20.4f}{up:>8s}"
        if "ole" in best:
            row += f"{best['ole'][t] / best['wse'][t]:12.2f}"
        print(row)
    print("\nAmdahl fit T(n) = s + p/n over these thread counts:")
    for key, series in best.items():
        fit = amdahl(list(series), list(series.values()))
        if fit is None:
            print(f"  {labels[key]:22s} needs two thread counts")
            continue
        s, p, frac = fit
        if p <= 0 or s < 0:
            print(f"  {labels[key]:22s} s = {s:.4f} s, p = {p:.4f} s: not Amdahl-shaped (no serial fraction)")
            continue
        print(f"  {labels[key]:22s} s = {s:.4f} s, p = {p:.4f} s, serial fraction {100 * frac:.1f}%, "
              f"limit {1 / frac if frac > 0 else float('inf'):.1f}x")


# --- --stages -----------------------------------------------------------------------------------------
def objective_stages(obj, s, y, group, calls: int) -> list[tuple[str, bool, float]]:
    """``(step, serial, best seconds)`` of ``grad_hess(s, y, group)``'s call path, each step called
    alone as the call makes it (Objective.grad_hess = prepare + grad_hess_prepared)."""
    from customobj._validation import as_1d_float
    from customobj.objectives import _lambdarank_kernels as LK
    from customobj.objectives.prepared import Prepared
    prep = obj.prepare(y, group)
    inp = obj.pass_inputs(s, prep)
    row_gain = obj._row_gain(prep.labels)
    n_max = int(prep.groups.sizes.max())
    disc = LK.discount_table(n_max, obj.k if obj.k is not None else n_max)
    g, h = np.zeros(s.shape), np.zeros(s.shape)

    def kernel_fresh():
        LK.lambdarank_grad_hess(inp, np.zeros(s.shape), np.zeros(s.shape))

    steps = [
        ("whole call: grad_hess(scores, labels, group)", None, lambda: obj.grad_hess(s, y, group)),
        ("prepare: labels and groups (Prepared.build)", True,
         lambda: Prepared.build(obj._convert_labels(as_1d_float(y, "labels")), group, None,
                                integer_labels=obj.integer_labels)),
        ("prepare: label checks (check_prepared)", True, lambda: obj.check_prepared(prep)),
        ("prepare: label state (_state), all", None, lambda: obj._state(prep)),
        ("  of which ideal DCG (ideal_dcg)", False, lambda: LK.ideal_dcg(row_gain, prep.ptr, disc)),
        ("score checks (_check_scores)", True, lambda: obj._check_scores(s, prep)),
        ("zeroed outputs (np.zeros; pages fault later)", True, lambda: obj._zeroed_outputs(s.shape, None, None)),
        ("block loop (_run_blocks), written outputs", False, lambda: LK.lambdarank_grad_hess(inp, g, h)),
        ("block loop into fresh zeroed outputs", False, kernel_fresh),
    ]
    return [(name, serial, _best_of(fn, calls)) for name, serial, fn in steps]


def group_costs(queries: int, features: int, groups=(1, 2, 4), calls: int = 5) -> list[tuple[int, float]]:
    """``(g, best seconds)`` of the root's OLE pair histogram at one thread with ``g`` feature groups
    per block of pairs: what cutting a block for idle threads costs (each group repeats the per-pair
    bookkeeping; on ``g`` free threads the pass takes about ``seconds(g) / g``)."""
    from customobj.objectives import LambdaRank
    from customobj.ole.binning import BinMapper
    from customobj.ole.pairhist import PairScratch, build_pair_hist
    X, y, group = make_data(queries, 120, features)
    pi, pj, pc = LambdaRank(metric="ndcg", truncation=30).pair_couplings(np.zeros(y.size), y, group)
    pi, pj = pi.astype(np.int32), pj.astype(np.int32)
    mapper = BinMapper.fit(X, 255)
    bins = np.ascontiguousarray(mapper.bins(X))
    scratch = PairScratch(bins.shape[0], bins.shape[1], bool(mapper.has_nan.any()), dtype=np.float32)
    saved = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        out = []
        for g in groups:
            def one(g=g):
                build_pair_hist(bins, pi, pj, pc, 0, pi.size, mapper.offsets, mapper.n_bins, mapper.n_slots,
                                scratch, groups=g)
            one()
            out.append((g, _best_of(one, calls)))
        print(f"\nOLE root pair histogram at 1 thread, {pi.size:,} pairs, by feature groups per block:")
        for g, sec in out:
            print(f"  {g} groups: {1e3 * sec:9.2f} ms = {sec / out[0][1]:.2f}x one group's work")
        return out
    finally:
        numba.set_num_threads(saved)


def run_stages(args, threads: list[int]) -> int:
    from customobj import LambdaRank
    from customobj.data import synthetic
    d = synthetic(args.queries, 120, 1, seed=0)  # the objective reads labels and groups only
    y, group = np.asarray(d.y, dtype=np.float64), np.asarray(d.group)
    s = np.random.default_rng(0).normal(size=y.size)
    obj = LambdaRank.like_lightgbm()
    obj.grad_hess(s, y, group)  # compile / load
    print(f"LambdaRank.like_lightgbm().grad_hess call path, {y.size:,} rows, {len(group):,} queries "
          f"(best of {3 * args.repeat} calls per step):")
    for t in threads:
        numba.set_num_threads(t)
        rows = objective_stages(obj, s, y, group, 3 * args.repeat)
        whole = rows[0][2]
        state = next(sec for name, _, sec in rows if name.startswith("prepare: label state"))
        ideal = next(sec for name, _, sec in rows if "ideal_dcg" in name)
        print(f"\n  {t} threads")
        for name, serial, sec in rows:
            tag = "  serial" if serial else ""
            print(f"    {name:46s} {1e3 * sec:9.2f} ms  {100 * sec / whole:5.1f}%{tag}")
        serial_sum = sum(sec for _, serial, sec in rows if serial) + max(0.0, state - ideal)
        print(f"    {'serial steps (and _state beyond ideal_dcg)':46s} {1e3 * serial_sum:9.2f} ms  "
              f"{100 * serial_sum / whole:5.1f}%")
    if args.only == "objective":
        return 0
    group_costs(args.queries, args.features)
    for t in threads:
        print(f"\nbenchmarks/ole_phases.py, {t} threads:", flush=True)
        rc = subprocess.call([sys.executable, str(HERE / "ole_phases.py"), "--criteria", *CRITERIA, "--queries",
                              str(args.queries), "--rounds", str(args.rounds), "--threads", str(t)])
        if rc:
            return rc
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--features", type=int, default=136)
    ap.add_argument("--rounds", type=int, default=4, help="boosting rounds per fit (rounds 2..N are timed)")
    ap.add_argument("--threads", type=int, nargs="+", default=None,
                    help="thread counts (default: 1 2 4 8 16 up to the usable CPUs)")
    ap.add_argument("--repeat", type=int, default=2, help="interleaved runs of every thread count; best kept")
    ap.add_argument("--only", choices=["objective", "all"], default="all",
                    help="objective: the LambdaRank objective only, no trees (also with --stages)")
    ap.add_argument("--stages", action="store_true", help="the step breakdown per thread count instead")
    args = ap.parse_args(argv)
    if args.queries < 21 or args.rounds < 2 or args.repeat < 1 or args.features < 1:
        ap.error("--queries must be >= 21, --rounds >= 2, --repeat >= 1, --features >= 1")
    threads = thread_counts(args.threads)
    layer = "not started"
    try:
        numba.set_num_threads(1)
        from customobj.objectives._lambdarank_kernels import ideal_dcg
        ideal_dcg(np.zeros(2), np.array([0, 2]), np.ones(2))  # a parallel kernel: starts the threading layer
        layer = numba.threading_layer()
    except ValueError:
        pass
    print(f"CPUs usable {usable_cpus()}, physical cores {physical_cores() or 'unknown'}, numba pool "
          f"{numba.config.NUMBA_NUM_THREADS}, threading layer {layer}; thread counts {threads}")
    print("load average (1, 5, 15 min): %.2f %.2f %.2f" % os.getloadavg(), flush=True)
    if args.stages:
        rc = run_stages(args, threads)
    else:
        report_scaling(run_scaling(args, threads), threads)
        rc = 0
    print("load average (1, 5, 15 min): %.2f %.2f %.2f" % os.getloadavg())
    return rc


if __name__ == "__main__":
    sys.exit(main())
