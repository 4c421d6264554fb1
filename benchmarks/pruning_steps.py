"""``ole_fast``'s pair pruning partition counted per launch under numba's CUDA simulator (issue 42, item 4:
is it bound by one thread's serial loop?).

    NUMBA_ENABLE_CUDASIM=1 python benchmarks/pruning_steps.py [--pairs 20000 --pairs 2000] [--eps 0.3]
        [--lanes 1 --lanes 32] [--out steps.json]

The pruning keeps each query's largest couplings and moves the rest behind them: per tree, a stable
two-launch partition of all the tree's pairs (``count_kept_blocks``, ``place_kept_blocks``), launched
as ``DevicePruning.prune`` launches them (``partition_segments(m)`` segments, a block of lanes each:
``segment_threads``, at most ``--lanes``). Each simulated thread's steps (the Python lines of customobj's
code it runs) are counted by ``objective_steps.counted``: a launch's **critical path** (the largest issue
count of any warp) and **work** (summed over warps). ``--lanes 1`` is one thread walking each segment
alone, the shape before the lanes (a thread per 128-pair block then, a thread per segment here);
``--lanes 32`` a card's warp. The kept pairs are checked against the CPU's ``prune_pairs`` order.

>>> r = measure(400, 0.3, lanes=8)  # under the simulator
>>> [s.kernel for s in r["steps"]], r["kept"] > 0
(['count_kept_blocks', 'place_kept_blocks'], True)
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, Dict, List

import numpy as np

if __name__ == "__main__":  # the simulator is chosen when numba.cuda is first imported
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from objective_steps import counted  # noqa: E402  (the same step counter)


def _pairs(m: int, seed: int) -> tuple:
    """About ``m`` pairs of queries of 20-40 rows (every pair of a query's rows, then cut to ``m``), their
    couplings positive, zero or negative, on their fixed-point grid (as the backend prunes them)."""
    from customobj.ole.fixed_point import grid_step_of, round_range
    rng = np.random.default_rng(seed)
    pi, pj, ptr = [], [], [0]
    while len(pi) < m:
        n = int(rng.integers(20, 41))
        a, b = np.triu_indices(n, 1)
        pi += (a + ptr[-1]).tolist()
        pj += (b + ptr[-1]).tolist()
        ptr.append(ptr[-1] + n)
    pi_a, pj_a = np.array(pi[:m], np.int32), np.array(pj[:m], np.int32)  # the last query cut short
    pc = rng.lognormal(0.0, 2.0, pi_a.size) * rng.choice([1.0, 1.0, 1.0, 0.0, -1.0], pi_a.size)
    round_range(pc, 0, pc.size, grid_step_of(pc, 0, pc.size))
    return pi_a, pj_a, pc, np.array(ptr, dtype=np.int64)


def measure(m: int, eps: float, lanes: int = 0, seed: int = 0) -> Dict[str, Any]:
    """The two partition launches of ``m`` pairs pruned at ``eps``, counted (``lanes`` > 0: at most that
    many threads a block), and the kept count; the kept pairs checked against the CPU's."""
    from customobj.ole.cuda import _launch

    with _launch.simulator_threads(lanes):
        return _measure(m, eps, seed)


def _measure(m: int, eps: float, seed: int) -> Dict[str, Any]:
    from numba import cuda
    from customobj.ole.cuda import _pruning_kernels as K
    from customobj.ole.cuda._launch import grid_launch
    from customobj.ole.cuda._reduce_kernels import QueryTops
    from customobj.ole.cuda.partitions import _segments, partition_segments
    from customobj.ole.pair_pruning import query_of_rows
    from customobj.ole.pair_pruning_kernels import N_BUCKETS, KeyedPairs, PairOutput, QueryTable, _prune

    pi, pj, pc, ptr = _pairs(m, seed)
    m = pc.size
    qor, nq = query_of_rows(ptr), ptr.size - 1
    d = [cuda.to_device(a) for a in (pi, pc, pc.view(np.int64), qor)]
    tables = K.QueryTables(*(cuda.to_device(np.zeros(s, t)) for s, t in ((nq, np.int64), (nq, np.float64),
                                                                          ((nq, N_BUCKETS), np.float64))), eps)
    record, kept_c = cuda.to_device(np.zeros(4, np.int64)), cuda.to_device(np.zeros(2))
    launch = grid_launch(m)
    K.query_tops[launch](QueryTops(d[0], d[2], d[3], tables.tops, tables.totals, True), d[1], m)
    K.query_masses[launch](*d, m, tables.tops, tables.mass, record, kept_c)
    src = K.PairArrays(d[0], cuda.to_device(pj), d[1])
    nb = partition_segments(m)
    counts = cuda.device_array((nb, 2), np.int64)
    out = K.PairArrays(*(cuda.device_array(m, a.dtype) for a in (pi, pj, pc)))

    def run() -> None:
        shape = _segments(m, nb)
        K.count_kept_blocks[shape](src, d[2], d[3], tables, m, nb, counts, record, kept_c)
        K.place_kept_blocks[shape](src, d[2], d[3], tables, m, nb, counts, record, out)

    _, steps = counted(run)
    kept = int(record.copy_to_host()[0])
    ref = tuple(np.empty(m, a.dtype) for a in (pi, pj, pc))
    want = _prune(KeyedPairs(pi, pj, pc, pc.view(np.int64)), QueryTable(qor, np.zeros(nq, np.int64),
                                                                         np.zeros(nq, np.int64)),
                  nq, eps, PairOutput(*ref), True)
    got = [a.copy_to_host() for a in out]
    if kept != want or any(not np.array_equal(a[:kept], b[:kept]) for a, b in zip(got, ref)):
        raise AssertionError(f"{m} pairs at eps {eps}: the kept pairs are not the CPU's")
    return {"pairs": m, "eps": eps, "segments": nb, "kept": kept, "steps": steps}


def main(argv: Any = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, action="append", default=None, help="pairs (repeatable; 20000, 2000)")
    ap.add_argument("--eps", type=float, default=0.3, help="ole_fast_epsilon (default 0.3)")
    ap.add_argument("--lanes", type=int, action="append", default=None, choices=(1, 8, 16, 32),
                    help="most threads of a block (repeatable; default 1 and 32)")
    ap.add_argument("--out", type=Path, default=None, help="write the counts as JSON here (atomically)")
    a = ap.parse_args(argv)
    sizes, lanes = a.pairs or [20000, 2000], a.lanes or [1, 32]
    if min(sizes) < 2 or not 0.0 <= a.eps < 1.0:
        ap.error(f"need --pairs >= 2 and 0 <= --eps < 1, got {sizes} and {a.eps}")
    results: List[Dict[str, Any]] = []
    for m in sizes:
        for n_lanes in lanes:
            r = measure(m, a.eps, n_lanes)
            results.append({**r, "lanes": n_lanes, "steps": [s._asdict() for s in r["steps"]]})
            path = sum(s.critical_path for s in r["steps"])
            print(f"{r['pairs']} pairs ({r['segments']} segments, {r['kept']} kept), lanes {n_lanes}: "
                  f"critical path {path} steps, work {sum(s.work for s in r['steps'])}", flush=True)
            for s in r["steps"]:
                print(f"    {s.kernel:20s} grid {s.grid:6d} x {s.block:4d}  path {s.critical_path:7d}  "
                      f"work {s.work:8d}  barriers {s.barriers}")
    if a.out is not None:
        from customobj._io import atomic_write_text
        atomic_write_text(a.out, json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
