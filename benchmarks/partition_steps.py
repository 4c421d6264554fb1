"""The OLE GPU learner's row and pair partitions counted per launch under numba's CUDA simulator (issue 42,
item 4: are they bound by one thread's serial loop, whatever the node's size?).

    NUMBA_ENABLE_CUDASIM=1 python benchmarks/partition_steps.py [--rows 4000 --rows 100] [--pairs 1.0]
        [--lanes 32] [--out steps.json]

Each simulated thread's steps (the Python lines of customobj's code it runs) are counted by
``objective_steps.counted``, and each launch gets that module's **critical path** (the largest issue
count of any warp: the launch's time when the card has a slot for every warp) and **work** (the issue
counts summed over the warps). ``--lanes`` is the most threads of a block the partitions' launch shapes
may take (``_launch.SIMULATOR_THREADS``, 8 by default under the simulator; 32 is a card's warp and what a
card's launches take at these sizes), so the count is the card's shape.

A node of ``--rows`` rows (random bins 0-15 of one feature, bin 15 NaN: about half go left) and
``--pairs`` pairs a row (random pairs of its rows) is partitioned twice, through the public
``DevicePartitions``:

- **split**: ``rows`` then ``pairs`` (a best-first split: ``mark_rows_blocks``,
  ``place_rows_count_sides``, ``place_sides_blocks``);
- **level**: ``level`` with that node as a level's one split, then ``placed`` (a breadth-first level:
  ``mark_rows_level``, ``place_rows_count_sides_level``, ``place_sides_blocks``).

>>> p = measure(300, 1.0, lanes=8)  # under the simulator
>>> [s.kernel for s in p["split"]]
['mark_rows_blocks', 'place_rows_count_sides', 'place_sides_blocks']
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


def _data(n: int, per_row: float, seed: int) -> tuple:
    """A node's feature bins (uint8, 15: NaN) and ``per_row * n`` random pairs of its rows (int32)."""
    rng = np.random.default_rng(seed)
    col = rng.integers(0, 16, n).astype(np.uint8)
    m = max(1, int(round(per_row * n)))
    pi, pj = rng.integers(0, n, m).astype(np.int32), rng.integers(0, n, m).astype(np.int32)
    return col, pi, pj, rng.uniform(0.5, 2.0, m)


def measure(n: int, per_row: float = 1.0, lanes: int = 0, seed: int = 0) -> Dict[str, List[Any]]:
    """``{"split": [LaunchSteps], "level": [LaunchSteps]}``: a node of ``n`` rows partitioned as a split
    and as a level's one split (see the module docstring); ``lanes`` > 0: at most that many threads a block."""
    from customobj.ole.cuda import _launch

    with _launch.simulator_threads(lanes):
        return _measure(n, per_row, seed)


def _measure(n: int, per_row: float, seed: int) -> Dict[str, List[Any]]:
    from customobj.ole.cuda import _histograms_kernels, _partitions_kernels, _reduce_kernels
    from customobj.ole.cuda.memory import DeviceMemory
    from customobj.ole.cuda.partitions import DevicePartitions, LevelSplit

    col, pi, pj, pc = _data(n, per_row, seed)
    tbin, nan_bin = 7, 15
    n_left = int(((col <= tbin) & (col != nan_bin)).sum())
    mem = DeviceMemory()
    parts = DevicePartitions(mem, _partitions_kernels, _reduce_kernels, _histograms_kernels.zero, n_rows=n, splits=1)
    d_col = mem.upload(col)
    bins = mem.upload(col.reshape(1, n))
    src = (mem.upload(pi), mem.upload(pj), mem.upload(pc))

    def fresh() -> tuple:
        order = mem.upload(np.arange(n, dtype=np.int64))
        return order, tuple(mem.array((pi.size,), t) for t in (np.int32, np.int32, np.float64))

    def split() -> None:
        parts.rows(d_col, order, 0, n, tbin, nan_bin, False, n_left)
        parts.pairs(src, 0, pi.size, dst)

    def level() -> None:
        s = LevelSplit(feature=0, start=0, n=n, tbin=tbin, nan_bin=nan_bin, nan_left=False, n_left=n_left,
                       pairs=(0, 0, pi.size))
        parts.reserve(1)
        parts.level(bins, order, [s], (src, src))
        parts.placed(0, dst)

    out: Dict[str, List[Any]] = {}
    for name, run in (("split", split), ("level", level)):
        order, dst = fresh()
        _, steps = counted(run)
        # the result is the CPU's stable partition (a check, not a count)
        go = (col <= tbin) & (col != nan_bin)
        rows = np.arange(n)
        assert np.array_equal(mem.read(order), np.r_[rows[go], rows[~go]]), name
        both_l, both_r = go[pi] & go[pj], ~go[pi] & ~go[pj]
        want = np.r_[np.flatnonzero(both_l), np.flatnonzero(both_r), np.flatnonzero(~both_l & ~both_r)]
        assert np.array_equal(mem.read(dst[0]), pi[want]) and np.array_equal(mem.read(dst[1]), pj[want]), name
        out[name] = steps
    return out


def main(argv: Any = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, action="append", default=None,
                    help="rows of a node (repeatable; default 4000 and 100)")
    ap.add_argument("--pairs", type=float, default=1.0, help="pairs a row (default 1.0)")
    ap.add_argument("--lanes", type=int, default=32, choices=(8, 16, 32),
                    help="most threads of a block (default 32, a card's warp; 8: the simulator's own)")
    ap.add_argument("--out", type=Path, default=None, help="write the counts as JSON here")
    args = ap.parse_args(argv)
    sizes = args.rows or [4000, 100]
    if min(sizes) < 2 or not 0 < args.pairs <= 64:
        ap.error(f"need --rows >= 2 and 0 < --pairs <= 64, got {sizes} and {args.pairs}")
    results = []
    for n in sizes:
        got = measure(n, args.pairs, args.lanes)
        results.append({"rows": n, "pairs_per_row": args.pairs, "lanes": args.lanes,
                        **{k: [s._asdict() for s in v] for k, v in got.items()}})
        for name, steps in got.items():
            print(f"{n} rows, {name}: critical path {sum(s.critical_path for s in steps)} steps, "
                  f"work {sum(s.work for s in steps)}, {len(steps)} launches")
            for s in steps:
                print(f"    {s.kernel:30s} grid {s.grid:6d} x {s.block:4d}  path {s.critical_path:7d}  "
                      f"work {s.work:8d}  barriers {s.barriers}")
    if args.out is not None:
        tmp = args.out.with_name(args.out.name + ".tmp")
        tmp.write_text(json.dumps(results, indent=1))
        os.replace(tmp, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
