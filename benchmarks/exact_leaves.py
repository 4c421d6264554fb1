"""Time of a LightGBM round with ``customobj.adapters.ExactLeaves`` vs a native ``lambdarank`` round.

Same data (synthetic, MSLR-shaped: ``--queries`` x ~120 rows x 136 features), leaves (31), learning
rate (0.1) and threads; each Dataset is binned before its timing starts. Three trainings, run
interleaved ``--repeat`` times (this machine's speed drifts, so each repeat times all three back to
back) and the best of each kept, both in wall-clock time and in CPU time (``time.process_time``:
all threads of this process; on a shared machine it moves much less than wall time, since other
processes' load stretches the wall clock but not our own CPU seconds):

- ``native``: LightGBM's ``objective="lambdarank"``;
- ``custom``: ``lightgbm_objective(LambdaRank.like_lightgbm())``, the same loss through the adapter;
- ``exact``: ``custom`` plus ``ExactLeaves`` (the same loss, every tree's leaves re-solved jointly).

Prints milliseconds per round (wall and CPU), ``exact / native`` (target at most 1.25x, issue 14),
``exact / custom``, the callback's own time per round (wall and CPU, and its share of the exact
round), and the load average before and after (the machine may be shared).

    python benchmarks/exact_leaves.py [--queries 500] [--rounds 10] [--repeat 3] [--threads 2]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

# Scripts put their own folder first on sys.path; drop it so nothing here shadows an installed module.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

from customobj import adapters  # noqa: E402  first: sets OMP_WAIT_POLICY=passive before lightgbm loads

import lightgbm as lgb  # noqa: E402

import customobj  # noqa: E402
from customobj.data import synthetic  # noqa: E402
from customobj.metrics import ndcg  # noqa: E402

TARGET = 1.25  # issue 14: an ExactLeaves round at most 1.25x a native lambdarank round


class TimedExactLeaves(adapters.ExactLeaves):
    """ExactLeaves that records the wall and CPU seconds of each of its calls (the first round
    also computes the couplings itself: the objective is asked for them from round 2 on)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls = []  # (wall, cpu) seconds per round

    def __call__(self, env):
        t, c = time.perf_counter(), time.process_time()
        super().__call__(env)
        self.calls.append((time.perf_counter() - t, time.process_time() - c))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sizes = {"queries": 500, "docs": 120, "features": 136, "rounds": 10, "leaves": 31, "threads": 2, "repeat": 3}
    for name, default in sizes.items():
        ap.add_argument(f"--{name}", type=int, default=default)
    args = ap.parse_args(argv)
    for name in sizes:
        if getattr(args, name) < 1:
            ap.error(f"--{name} must be >= 1")

    d = synthetic(args.queries, args.docs, args.features, seed=0)
    X, y, group = d.X, d.y, d.group
    base = dict(num_leaves=args.leaves, learning_rate=0.1, num_threads=args.threads, verbose=-1, metric="None",
                min_data_in_leaf=20, force_row_wise=True, deterministic=True)
    loss = customobj.LambdaRank.like_lightgbm()  # LightGBM's lambdarank defaults: the same loss
    callbacks = []

    def native(dtrain):
        return lgb.train(dict(base, objective="lambdarank"), dtrain, args.rounds)

    def custom(dtrain):
        return lgb.train(dict(base, objective=adapters.lightgbm_objective(loss)), dtrain, args.rounds)

    def exact(dtrain):
        cb = TimedExactLeaves(loss, X, y, group)
        callbacks.append(cb)
        return lgb.train(dict(base, objective=adapters.lightgbm_objective(loss)), dtrain, args.rounds,
                         callbacks=[cb])

    def dataset():
        # a new Dataset per training (ExactLeaves refuses one an earlier training corrected), binned
        # here, outside the timings
        return lgb.Dataset(X, y, group=group, free_raw_data=False, params={"verbose": -1}).construct()

    runs = {"native": native, "custom": custom, "exact": exact}
    print(f"data: {X.shape[0]} rows, {len(group)} queries, {X.shape[1]} features; {args.rounds} rounds, "
          f"{args.leaves} leaves, {args.threads} threads; numba threads {__import__('numba').get_num_threads()}; "
          f"load average before {tuple(round(v, 2) for v in os.getloadavg())}")
    exact(dataset())  # compile numba kernels: not what we measure
    callbacks.clear()
    best, best_cpu, models = {k: float("inf") for k in runs}, {k: float("inf") for k in runs}, {}
    for _ in range(args.repeat):
        for name, run in runs.items():  # interleaved: all three per repeat
            dtrain = dataset()
            t, c = time.perf_counter(), time.process_time()
            models[name] = run(dtrain)
            best[name] = min(best[name], time.perf_counter() - t)
            best_cpu[name] = min(best_cpu[name], time.process_time() - c)
    in_callback = min(sum(w for w, _ in cb.calls) for cb in callbacks) / args.rounds
    in_callback_cpu = min(sum(c for _, c in cb.calls) for cb in callbacks) / args.rounds
    for name in runs:
        print(f"{name:7s} {1e3 * best[name] / args.rounds:8.1f} ms/round wall, {1e3 * best_cpu[name] / args.rounds:8.1f} "
              f"ms/round CPU (best of {args.repeat}), train NDCG@10 {ndcg(models[name].predict(X), y, group, 10):.4f}")
    for label, b in (("wall", best), ("CPU", best_cpu)):
        ratio = b["exact"] / b["native"]
        print(f"{label:4s}: exact / native = {ratio:.3f}x (target <= {TARGET}x: {'met' if ratio <= TARGET else 'NOT met'}); "
              f"exact / custom = {b['exact'] / b['custom']:.3f}x; custom / native = {b['custom'] / b['native']:.3f}x")
    print(f"in the callback: {1e3 * in_callback:.1f} ms/round wall ({in_callback / (best['exact'] / args.rounds):.1%} of "
          f"an exact round), {1e3 * in_callback_cpu:.1f} ms/round CPU "
          f"({in_callback_cpu / (best_cpu['exact'] / args.rounds):.1%})")
    if args.rounds > 1:
        first = min(cb.calls[0][1] for cb in callbacks)
        later = min(sum(c for _, c in cb.calls[1:]) for cb in callbacks) / (args.rounds - 1)
        print(f"callback CPU: round 1 {1e3 * first:.1f} ms (computes the couplings itself), later rounds "
              f"{1e3 * later:.1f} ms/round (the objective's pass provides them)")
    print(f"load average after {tuple(round(v, 2) for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
