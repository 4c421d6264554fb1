"""What the GPU OLE learner's host marshals per tree: every kernel launch's arguments counted, device
arrays and scalars, under numba's CUDA simulator (issue 42, item 3: "kernel arguments packed so a
launch passes a handful of records, not 50-70 arrays").

    NUMBA_ENABLE_CUDASIM=1 python benchmarks/launch_args.py [--criterion ole_fast --growth breadth_first]
        [--rows 350] [--max-bin 8] [--top 8] [--out args.json]

numba-cuda's dispatch converts every argument of a launch: a device array's pointer, shape and
strides (a ``NamedTuple`` record's arrays each in turn: a record groups them for the reader, not for
the dispatch), a scalar's value. So the host's cost per launch (``c_launch`` of docs/gpu-model.md)
grows with the arrays it carries, and this count, not the issue's estimate, is what the host term's
launches carry. Counted at the backend's one launch seam (``stats.CountedKernels``, the launches of
``TreeBooster.device_stats_``), on the fit of docs/gpu-design.md's launch table (the second tree of
``TreeBooster(device="cuda", num_leaves=31, n_estimators=2, max_bin=8, ...)`` on ``make_rank_data(11,
n_queries=14)`` of ``tests/_ole_cases.py``: 350 rows; ``--rows 1000``: 40 queries, ``max_bin=16``).
Counts, not times: the same under the simulator as on a card.

>>> r = measure("wse", "best_first", n_queries=3, num_leaves=4)  # under the simulator
>>> r["launches"] == sum(k["launches"] for k in r["kernels"].values()) == r["device_stats_launches"]
True
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, Dict, Tuple

import numpy as np

if __name__ == "__main__":  # the simulator is chosen when numba.cuda is first imported
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

ROOT = Path(__file__).resolve().parent.parent
CRITERIA = ("wse", "ole", "ole_fast")
GROWTHS = ("best_first", "breadth_first")


def _is_array(x: Any) -> bool:
    """A device array (a card's or the simulator's) or a host array handed to a launch."""
    return hasattr(x, "__cuda_array_interface__") or isinstance(x, np.ndarray) or type(x).__name__ == "FakeCUDAArray"


def flatten(args: tuple) -> Tuple[int, int]:
    """``(arrays, scalars)`` among a launch's arguments, records (tuples) opened recursively.

    >>> flatten((np.zeros(3), 2, (np.zeros(1), 1.5, (np.zeros(2),))))
    (3, 2)
    """
    arrays = scalars = 0
    for a in args:
        if isinstance(a, tuple):
            da, ds = flatten(a)
            arrays, scalars = arrays + da, scalars + ds
        elif _is_array(a):
            arrays += 1
        else:
            scalars += 1
    return arrays, scalars


def _kernel_name(kernel: Any) -> str:
    for attr in ("__name__", "py_func", "fn"):
        v = getattr(kernel, attr, None)
        if isinstance(v, str):
            return v
        if v is not None and hasattr(v, "__name__"):
            return v.__name__
    return type(kernel).__name__


def measure(criterion: str, growth: str, n_queries: int = 14, num_leaves: int = 31, tree: int = 1,
            max_bin: int = 8) -> Dict[str, Any]:
    """Tree ``tree``'s launches of one fit, each kernel's launches, arrays and scalars (see the module)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from _ole_cases import QUIET, make_rank_data

    from customobj.ole import TreeBooster
    from customobj.ole.cuda import stats

    per_kernel: Dict[str, Dict[str, int]] = defaultdict(lambda: {"launches": 0, "arrays": 0, "scalars": 0})
    original = stats._CountedKernel.__getitem__

    def counted(self: Any, config: Any) -> Any:
        launch = original(self, config)
        counter = self._counter
        in_tree = counter._now is not counter._outside and len(counter._trees) == tree + 1

        def run(*args: Any) -> Any:
            if in_tree:
                a, s = flatten(args)
                k = per_kernel[_kernel_name(self._kernel)]
                k["launches"], k["arrays"], k["scalars"] = k["launches"] + 1, k["arrays"] + a, k["scalars"] + s
            return launch(*args)
        return run

    X, y, group = make_rank_data(11, n_queries=n_queries)
    stats._CountedKernel.__getitem__ = counted
    try:
        m = TreeBooster(device="cuda", criterion=criterion, num_leaves=num_leaves, n_estimators=tree + 1,
                        min_data_in_leaf=3, max_bin=max_bin, growth=growth, ole_fast_features=2, ole_fast_epsilon=0.1,
                        **QUIET).fit(X, y, group)
    finally:
        stats._CountedKernel.__getitem__ = original
    st = m.device_stats_.trees[tree]
    kernels = dict(sorted(per_kernel.items(), key=lambda kv: -kv[1]["arrays"]))
    launches = sum(k["launches"] for k in kernels.values())
    arrays = sum(k["arrays"] for k in kernels.values())
    scalars = sum(k["scalars"] for k in kernels.values())
    return {"criterion": criterion, "growth": growth, "rows": int(X.shape[0]), "splits": int(st.splits),
            "launches": launches, "device_stats_launches": int(st.launches), "arrays": arrays, "scalars": scalars,
            "arrays_per_launch": arrays / max(launches, 1), "arrays_per_split": arrays / max(st.splits, 1),
            "kernels": kernels}


def report(r: Dict[str, Any], top: int) -> str:
    lines = [f"{r['criterion']}, {r['growth']} ({r['rows']} rows, {r['splits']} splits): {r['launches']} launches, "
             f"{r['arrays']} arrays ({r['arrays_per_launch']:.1f} a launch, {r['arrays_per_split']:.1f} a split), "
             f"{r['scalars']} scalars a tree"]
    for name, k in list(r["kernels"].items())[:top]:
        lines.append(f"    {name:32s} {k['launches']:4d} launches {k['arrays']:5d} arrays "
                     f"({k['arrays'] / k['launches']:.1f} each) {k['scalars']:4d} scalars")
    return "\n".join(lines)


def main(argv: Any = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--criterion", action="append", choices=CRITERIA, help="default: ole and ole_fast")
    ap.add_argument("--growth", action="append", choices=GROWTHS, help="default: both")
    ap.add_argument("--rows", type=int, default=350, help="350 (14 queries) or 1000 (40), as the launch table")
    ap.add_argument("--max-bin", type=int, help="default: 8, 16 from 1,000 rows (the launch table's fits)")
    ap.add_argument("--top", type=int, default=8, help="kernels listed per fit, most arrays first")
    ap.add_argument("--out", type=Path, help="the counts as JSON (written atomically)")
    a = ap.parse_args(argv)
    if a.rows <= 0 or a.rows % 25:
        ap.error(f"--rows must be a positive multiple of 25 (make_rank_data's queries), got {a.rows}")
    if a.max_bin is not None and not 2 <= a.max_bin <= 255:
        ap.error(f"--max-bin must be in [2, 255], got {a.max_bin}")
    max_bin = a.max_bin if a.max_bin is not None else (16 if a.rows >= 1000 else 8)
    if a.top < 0:
        ap.error(f"--top must be >= 0, got {a.top}")
    results = []
    for criterion in a.criterion or ("ole", "ole_fast"):
        for growth in a.growth or GROWTHS:
            r = measure(criterion, growth, n_queries=a.rows // 25, max_bin=max_bin)
            if r["launches"] != r["device_stats_launches"]:
                raise RuntimeError(f"{criterion}/{growth}: {r['launches']} launches seen, device_stats_ counted "
                                   f"{r['device_stats_launches']}: a launch bypassed the counted seam")
            print(report(r, a.top), flush=True)
            results.append(r)
    if a.out is not None:
        from customobj._io import atomic_write_text
        atomic_write_text(a.out, json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
