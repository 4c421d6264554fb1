"""The objectives' GPU kernels counted per query under numba's CUDA simulator (issue 42, items 2 and 5).

    NUMBA_ENABLE_CUDASIM=1 python benchmarks/objective_steps.py [--long 1251] [--short 100] [--out steps.json]

Does a long query set the time of LambdaRank's GPU pass? Without a card, the kernels are run by numba's
simulator, which runs every CUDA thread as a Python thread; each thread's **steps** (the Python lines of
customobj's own code it executes, kernel and device functions alike: a proxy for its instructions) are
counted, split at its block's barriers (``cuda.syncthreads``). From them, per launch:

- a warp's **issue count**: the sum over its block's barrier phases of the most steps any of its lanes
  took in that phase (lanes run in lockstep, so a warp issues for its slowest lane). A warp is 32
  consecutive threads of a block, or the whole block when smaller (the simulator's block-per-segment
  kernels run 8 threads, ``_launch.query_threads``);
- its **critical path**: the largest issue count of any of its warps (the launch's time when the card
  has a slot for every warp: the time a long query sets);
- its **work**: the issue counts summed over its warps (the launch's time when the card is full).

A call of ``grad_hess_couplings_prepared`` (the gradients, then the pair couplings ``TreeBooster``'s
OLE criteria read; the gradients alone for an objective without coupling kernels, ``StructuredDCG``)
is measured on two data sets: one query of ``--long`` rows, and ``--long //
--short`` queries of ``--short`` rows (about as many rows), each with distinct random scores and
labels 0-4. The long query costs no more per row than the short ones when its critical path per row
is at most theirs; its work per pair (per ``|dZ| != 0`` pair the couplings keep) is reported beside,
and the launches of each call (``_launch.LaunchCount``), which do not depend on the data.

The default sizes are MQ2008 / OHSUMED's longest query (1,251 rows) against 100-row ones: about 3.6M
simulated pair evaluations: 1,210 s wall, 604 s CPU on shared cores (stop 50); the test
(tests/test_benchmark_objective_steps.py) runs small ones. ``--objective`` (repeatable) picks the
objectives of :data:`OBJECTIVES` (default ``lambdarank``): the query-level losses' per-query kernels
(a block per query), YetiRank's per-row sums and per-query couplings, StructuredDCG's per-query kernel,
``Affine(LambdaRank())``'s per-query pair kernel (on clicks: the grades 3 and 4 clicked), ``RankNet()``'s
listed couplings (``count_kept_pairs`` / ``fill_kept_pairs``, a block per chunk of its label pair list).

>>> p = measure(LambdaRank(), [3, 2])  # under the simulator
>>> p.launches == len(p.steps), p.rows, [s.kernel for s in p.steps][-3:]
(True, 5, ['count_pairs', 'scan_pairs', 'fill_pairs'])
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from pathlib import Path
from typing import Any, Dict, List, NamedTuple

import numpy as np

if __name__ == "__main__":  # the simulator is chosen when numba.cuda is first imported
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import customobj
from customobj import XENDCG, Affine, LambdaRank, ListNet, QueryRMSE, RankNet, StructuredDCG, YetiRank
from customobj.clicks._inputs import MAX_POSITION
from customobj.clicks.simulation import trust_defaults

#: Lanes of a warp.
WARP = 32


def _affine() -> Affine:
    """``Affine(LambdaRank())`` with the trust-bias defaults' parameters for every position a query can show
    (a row's position is its place in its query): its labels are clicks (:func:`measure`)."""
    plus, minus = trust_defaults(MAX_POSITION)
    theta = 1.0 / np.arange(1, MAX_POSITION + 1)
    return Affine(LambdaRank(), alpha=theta * (plus - minus), beta=theta * minus)


#: The objectives ``--objective`` names: LambdaRank's kernels and those of each family with per-query sums.
OBJECTIVES = {
    "lambdarank": LambdaRank(), "lambdarank-norm": LambdaRank(norm=True), "queryrmse": QueryRMSE(),
    "listnet": ListNet(), "xendcg": XENDCG(seed=1), "xendcg-lightgbm": XENDCG.like_lightgbm(seed=1),
    "yetirank": YetiRank(permutations=2, seed=1), "structured": StructuredDCG(), "affine": _affine(),
    "ranknet": RankNet(),
}
_PACKAGE = str(Path(customobj.__file__).resolve().parent)


class LaunchSteps(NamedTuple):
    """One kernel launch, counted: its name, blocks, threads per block, critical path, work, barriers."""

    kernel: str
    grid: int
    block: int
    critical_path: int
    work: int
    barriers: int


class Profile(NamedTuple):
    """One objective call, counted: its launches, rows and kept pairs."""

    steps: tuple  # of LaunchSteps, in launch order
    launches: int  # _launch.LaunchCount's, for the call
    rows: int
    pairs: int

    @property
    def critical_path(self) -> int:
        """The launches' critical paths summed: the call's time on a card wide enough for every warp."""
        return sum(s.critical_path for s in self.steps)

    @property
    def work(self) -> int:
        return sum(s.work for s in self.steps)


class _Launch:
    def __init__(self, name: str, grid: tuple, block: tuple) -> None:
        self.name, self.grid, self.block = name, grid, block
        self.threads: List[Any] = []


class _Recorder:
    """Counts each simulated thread's steps per barrier phase, grouped by launch.

    The tracing is most of the count's cost. One LambdaRank call on one 128-row query took 1.9 s of CPU
    simulated alone, 3.7 s with a global trace function that returns at once (Python 3.11 calls it for
    every frame the simulator opens), 5.2 s counted as first written (a thread look-up per line) and 4.6 s
    now: a thread's line counter is a closure over its own steps, found per frame through a
    ``threading.local``. The counts are the same (the 128- against 10-row run's JSON, equal)."""

    def __init__(self, roots: tuple) -> None:
        self.launches: List[_Launch] = []
        self.current: Any = None
        self.roots = roots
        self.local = threading.local()

    def trace(self, frame: Any, event: str, arg: Any) -> Any:
        # the global tracer of each new thread: trace the counted code's frames only (not the simulator's)
        if not frame.f_code.co_filename.startswith(self.roots):
            return None
        line = getattr(self.local, "line", None)
        if line is None:
            line = self.local.line = self._counter(threading.current_thread())
        return line

    def _counter(self, t: Any) -> Any:
        """The line tracer of thread ``t``: a launch's thread gets its steps (``t._steps``, a count per
        barrier phase, the last one counting) and is listed under the launch; any other counts nothing."""
        if getattr(t, "_steps", None) is not None or self.current is None:
            return None
        steps = t._steps = [0]
        self.current.threads.append(t)

        def line(frame: Any, event: str, arg: Any) -> Any:
            if event == "line":
                steps[-1] += 1
            return line
        return line


def _launch_steps(launch: _Launch) -> LaunchSteps:
    """A launch's critical path, work and barriers from its threads' per-phase steps."""
    blocks: Dict[tuple, Dict[int, list]] = {}
    for t in launch.threads:
        bx, by, bz = launch.block
        tid = t.threadIdx.x + bx * (t.threadIdx.y + by * t.threadIdx.z)
        blocks.setdefault(tuple(t.blockIdx), {})[tid] = t._steps
    n_threads = int(np.prod(launch.block))
    width = min(WARP, n_threads)
    path = work = barriers = 0
    for lanes in blocks.values():
        phases = max(len(s) for s in lanes.values())
        barriers = max(barriers, phases - 1)
        for w0 in range(0, n_threads, width):
            warp = [lanes.get(t, []) for t in range(w0, w0 + width)]
            issue = sum(max((s[k] if k < len(s) else 0) for s in warp) for k in range(phases))
            path = max(path, issue)
            work += issue
    return LaunchSteps(launch.name, int(np.prod(launch.grid)), n_threads, path, work, barriers)


def counted(run: Any, roots: tuple = (_PACKAGE,)) -> tuple:
    """``(run(), [LaunchSteps])``: ``run`` (a function of no arguments) under the simulator, its
    kernels' threads counted (the lines of files under ``roots``: customobj's by default)."""
    from numba.cuda.simulator import kernel as K

    if not getattr(customobj._cuda_runtime, "simulated")():
        raise RuntimeError("the steps are counted under numba's CUDA simulator: set NUMBA_ENABLE_CUDASIM=1 "
                           "before numba.cuda is imported")
    rec = _Recorder(tuple(str(r) for r in roots))
    call, sync = K.FakeCUDAKernel.__call__, K.BlockThread.syncthreads

    def counted_call(self: Any, *args: Any) -> Any:
        if self._device or K._kernel_context is not None:
            return call(self, *args)
        rec.current = _Launch(self.fn.__name__, self.grid_dim, self.block_dim)
        rec.launches.append(rec.current)
        try:
            return call(self, *args)
        finally:
            rec.current = None

    def counted_sync(self: Any) -> None:
        steps = getattr(self, "_steps", None)
        if steps is not None:
            steps.append(0)  # a new phase
        sync(self)

    K.FakeCUDAKernel.__call__, K.BlockThread.syncthreads = counted_call, counted_sync
    threading.settrace(rec.trace)
    try:
        result = run()
    finally:
        threading.settrace(None)  # type: ignore[arg-type]
        K.FakeCUDAKernel.__call__, K.BlockThread.syncthreads = call, sync
    return result, [_launch_steps(launch) for launch in rec.launches]


def data(sizes: List[int], seed: int = 0) -> tuple:
    """Distinct random scores and labels 0-4 for queries of ``sizes`` rows."""
    rng = np.random.default_rng(seed)
    n = int(sum(sizes))
    return rng.permutation(n).astype(np.float64) / n, rng.integers(0, 5, n).astype(np.float64)


def measure(obj: Any, sizes: List[int], seed: int = 0, lanes: int = 0) -> Profile:
    """``obj``'s gradients and pair couplings (its gradients alone when it has no coupling kernels: 0
    pairs) on the device for queries of ``sizes`` rows, counted; ``lanes`` > 0: the block-per-segment
    kernels get that many threads (a power of two; 32 is a card's warp) instead of the simulator's 8."""
    if lanes:
        from customobj.objectives import _launch

        saved = _launch.query_threads
        _launch.query_threads = lambda: lanes  # type: ignore[assignment]
        try:
            return measure(obj, sizes, seed)
        finally:
            _launch.query_threads = saved  # type: ignore[assignment]
    from numba import cuda

    from customobj.objectives import devices
    from customobj.objectives._couplings_route import couplings_reason, grad_hess_couplings_prepared
    from customobj.objectives._launch import LaunchCount

    s, y = data(sizes, seed)
    if obj.corrects_clicks:
        y = (y >= 3.0).astype(np.float64)  # clicks: 2 of the 5 grades, so some short queries have none
    prep = obj.prepare(y, sizes)
    d = cuda.to_device(s)
    if couplings_reason(obj) is None:
        def call() -> int:
            return int(grad_hess_couplings_prepared(obj, d, prep)[2][0].shape[0])
    else:
        def call() -> int:
            devices.grad_hess_prepared(obj, d, prep)
            return 0
    call()  # scratch allocated and uploads done before the count
    before = LaunchCount.launches
    pairs, steps = counted(call)
    return Profile(tuple(steps), LaunchCount.launches - before, int(sum(sizes)), pairs)


def compare(obj: Any, long: int, short: int, lanes: int = 0) -> Dict[str, Any]:
    """The long query against ``long // short`` short ones: per row and per pair, and the launches."""
    a = measure(obj, [long], lanes=lanes)
    b = measure(obj, [short] * max(1, long // short), lanes=lanes)
    out: Dict[str, Any] = {"objective": repr(obj), "long": long, "short": short, "lanes": lanes or 8}
    for name, p, n in (("long", a, long), ("short", b, short)):
        out[name] = {"rows": p.rows, "pairs": p.pairs, "launches": p.launches, "critical_path": p.critical_path,
                     "critical_path_per_row": p.critical_path / n, "work": p.work,
                     "work_per_pair": p.work / max(p.pairs, 1),
                     "kernels": [s._asdict() for s in p.steps]}
    return out


def main(argv: Any = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--long", type=int, default=1251, help="rows of the long query (default 1251)")
    ap.add_argument("--short", type=int, default=100, help="rows of each short query (default 100)")
    ap.add_argument("--objective", action="append", choices=sorted(OBJECTIVES), default=None,
                    help="an objective to count (repeatable; default lambdarank)")
    ap.add_argument("--lanes", type=int, default=8, choices=(8, 16, 32),
                    help="threads of a block-per-segment kernel (default 8, the simulator's; 32: a card's warp)")
    ap.add_argument("--out", type=Path, default=None, help="write the counts as JSON here (a list, one per objective)")
    args = ap.parse_args(argv)
    if not 2 <= args.short <= args.long:
        ap.error(f"need 2 <= --short <= --long, got --short {args.short} --long {args.long}")
    results = []
    for key in args.objective or ["lambdarank"]:
        res = compare(OBJECTIVES[key], args.long, args.short, args.lanes)
        results.append(res)
        print(res["objective"])
        for name in ("long", "short"):
            r = res[name]
            print(f"{name:5s} query of {res[name]['rows'] if name == 'long' else args.short} rows: "
                  f"critical path {r['critical_path']} steps = {r['critical_path_per_row']:.2f} per row; "
                  f"work {r['work']} = {r['work_per_pair']:.2f} per pair; {r['launches']} launches")
            for k in r["kernels"]:
                print(f"    {k['kernel']:24s} grid {k['grid']:6d} x {k['block']:4d}  path {k['critical_path']:8d}  "
                      f"work {k['work']:10d}  barriers {k['barriers']}")
    if args.out is not None:
        tmp = args.out.with_name(args.out.name + ".tmp")
        tmp.write_text(json.dumps(results, indent=1))
        os.replace(tmp, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
