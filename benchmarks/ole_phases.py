"""Where an OLE tree's time goes: wall seconds per tree in each step of ``customobj.ole.TreeBooster``.

Same data and settings as ``benchmarks/ole.py`` (``customobj.data.synthetic(queries, 120, 136)``,
``LambdaRank(metric="ndcg", truncation=30)``, 31 leaves, 255 bins, 2 threads). The grower's steps
are wrapped with timers for one fit (rounds 2..N; round 1 also bins the data), and the table lists
the seconds per tree spent in each, largest first; steps that run on one thread whatever the
thread count are marked ``serial`` and summed on a last line. Steps nest (``_HostTree._search`` contains
``pair_hist`` under ``ole_fast``; ``round_gradients`` contains the objective's kernels), so the
column does not add up to the total; the timers themselves cost ~1 microsecond per call.

    python benchmarks/ole_phases.py                       # criteria wse, ole, ole_fast
    python benchmarks/ole_phases.py --criteria ole --queries 31500 --rounds 3   # WEB30K size (~4 min)

Run it on a quiet machine: it reports one fit per criterion, not interleaved repeats; for ratios
use ``benchmarks/ole.py``.
"""
from __future__ import annotations

import argparse
import collections
import importlib
import subprocess
import sys
import time

import numpy as np

#: (module, attribute, class or None): the steps timed, by the name they have in the code.
_STEPS = [
    ("customobj.ole.training", "round_gradients", None),
    ("customobj.ole.training", "grow_round", None),
    ("customobj.ole.training", "update_scores", None),
    ("customobj.ole.training", "add_leaf_values", None),
    ("customobj.ole.backend", "prune_for_tree", None),
    ("customobj.ole.backend", "dropped_leaf_couplings", None),
    ("customobj.ole.backend", "partition_pairs", None),
    ("customobj.ole.backend", "partition_rows", None),
    ("customobj.ole.backend", "feature_gains", None),
    ("customobj.ole.backend", "sum_couplings", None),
    ("customobj.ole.backend", "row_sums", "CPUBackend"),
    ("customobj.ole.backend", "_search", "_HostTree"),
    ("customobj.ole.backend", "row_hist", "CPUBackend"),
    ("customobj.ole.histogram", "gather_gh", None),
    ("customobj.ole.backend", "pair_hist", "CPUBackend"),
    ("customobj.ole.context", "compact_pairs", None),
    ("customobj.objectives.base", "_check_scores", "Objective"),
    ("customobj.objectives._lambdarank_kernels", "lambdarank_pair_offsets", None),
    ("customobj.objectives._lambdarank_kernels", "lambdarank_pair_fill", None),
    ("customobj.objectives._lambdarank_kernels", "lambdarank_grad_hess", None),
]
#: Steps that run on one thread whatever the thread count (one in-order pass; a float sum in pair
#: order keeps its bits only serially): what bounds the speedup of a tree (Amdahl).
SERIAL_STEPS = frozenset({"sum_couplings", "row_sums", "gather_gh", "add_leaf_values", "_check_scores"})


def _timed(fn, name, totals, sync=None):
    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            if sync is not None:  # a GPU step's kernels finish inside its own time
                sync()
            totals[name] += time.perf_counter() - t0
    return wrapper


def install_timers(totals: collections.Counter, steps: list | None = None, sync=None) -> None:
    """Wrap every step of ``steps`` (default ``_STEPS``) where the caller looks it up (module globals,
    class methods); with ``sync`` (``numba.cuda.synchronize``) each step waits for its kernels
    (benchmarks/gpu_suite.py: the GPU backend's steps)."""
    for module, attr, cls in _STEPS if steps is None else steps:
        owner = importlib.import_module(module)
        if cls is not None:
            owner = getattr(owner, cls)
        setattr(owner, attr, _timed(getattr(owner, attr), attr, totals, sync))


def profile(criterion: str, args) -> tuple[float, dict]:
    """Seconds per tree of one fit and of each step (rounds 2..N)."""
    from customobj.data import synthetic
    from customobj.objectives import LambdaRank
    from customobj.ole import TreeBooster
    d = synthetic(args.queries, 120, 136, seed=0)
    X, y, group = np.ascontiguousarray(d.X, dtype=np.float64), np.asarray(d.y, dtype=np.float64), np.asarray(d.group)
    obj = LambdaRank(metric="ndcg", truncation=30)
    kw = dict(criterion=criterion, num_leaves=31, max_bin=255, learning_rate=0.1, n_jobs=args.threads,
              verbose=False)
    m = int(np.sum(group[:20]))
    TreeBooster(obj, n_estimators=2, **kw).fit(X[:m], y[:m], group[:20])  # compile / load the kernels
    totals = collections.Counter()
    install_timers(totals)
    marks = []

    def tick(*_):
        marks.append(time.perf_counter())
        if len(marks) == 1:
            totals.clear()  # round 1 (binning, buffers) is left out

    TreeBooster(obj, n_estimators=args.rounds, **kw).fit(X, y, group, callbacks=[tick])
    n = len(marks) - 1
    return (marks[-1] - marks[0]) / n, {k: v / n for k, v in totals.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--criteria", nargs="+", default=["wse", "ole", "ole_fast"],
                    choices=["se", "wse", "ole", "ole_fast", "ole_float64"])
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    if args.rounds < 2 or args.queries < 21 or args.threads < 1:
        ap.error("--rounds must be >= 2, --queries >= 21, --threads >= 1")
    if len(args.criteria) > 1:  # one process per criterion: the timers wrap module state
        for c in args.criteria:
            rc = subprocess.call([sys.executable, __file__, "--criteria", c, "--queries", str(args.queries),
                                  "--rounds", str(args.rounds), "--threads", str(args.threads)])
            if rc:
                return rc
        return 0
    per_tree, steps = profile(args.criteria[0], args)
    print(f"{args.criteria[0]}: {per_tree:.4f} s per tree ({args.queries} queries, rounds 2..{args.rounds}, "
          f"{args.threads} threads)")
    for name, sec in sorted(steps.items(), key=lambda kv: -kv[1]):
        tag = "  serial" if name in SERIAL_STEPS else ""
        print(f"  {name:26s} {sec:8.4f} s  {100 * sec / per_tree:5.1f}%{tag}")
    serial = sum(sec for name, sec in steps.items() if name in SERIAL_STEPS)
    print(f"  {'serial steps, together':26s} {serial:8.4f} s  {100 * serial / per_tree:5.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
