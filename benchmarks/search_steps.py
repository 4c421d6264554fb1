"""The OLE GPU split search counted under numba's CUDA simulator (issue 42, item 4).

    NUMBA_ENABLE_CUDASIM=1 python benchmarks/search_steps.py [--features 4] [--bins 255] [--rows 2000]
        [--lanes 1 --lanes 8 --lanes 32] [--out search_steps.json]

One split's search as the grower launches it: :meth:`customobj.ole.cuda.search.DeviceSearch.splits` on
two children (``search_nodes``: a one-warp block per feature and node, ``_split_kernels.node_bests``,
then the last block's pick), OLE with pairs, the children's row and pair histograms built by the CPU from
random rows (``--features`` features of up to ``--bins`` bins, 5% NaN) with gradients, hessians and
couplings on the fixed-point grid, as a tree's are. Each simulated thread's steps (the lines of
customobj's code it runs) are counted per barrier phase by ``benchmarks/objective_steps.py``'s counter:
the launch's **critical path** (its slowest warp's issue count) and **work** (all warps' issue counts).
``--lanes`` sets the block's threads (``_launch.SIMULATOR_THREADS``, the simulator's stand-in for the
card's warp of 32): 1 lane is a thread per feature walking all its thresholds, as the search ran before
issue 42's item 4. Every run's two splits are checked against the CPU's ``splitting.find_best_split``:
the same records, bit for bit.

>>> r = measure(features=2, bins=16, rows=300, lanes=8)  # under the simulator
>>> r["kernel"], r["grid"], r["block"], r["equal_cpu"]
('search_nodes', 4, 8, True)
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
try:
    from objective_steps import counted
finally:
    sys.path.pop(0)


def _on_grid(x: np.ndarray) -> np.ndarray:
    """``x`` rounded onto its own fixed-point grid (a tree's values before its histograms)."""
    from customobj.ole.fixed_point import grid_step_of, round_range

    x = np.array(x, dtype=np.float64)
    round_range(x, 0, x.size, grid_step_of(x, 0, x.size))
    return x


def _child(rng: Any, mapper: Any, fm: np.ndarray, rows: np.ndarray, query: int) -> tuple:
    """One child's ``(row hist, pair hist, sums)`` over ``rows``: every pair inside queries of ``query``
    rows, couplings over several octaves."""
    from customobj.ole.histogram import build_row_hist_fm
    from customobj.ole.pairhist import build_pair_hist

    n = fm.shape[1]
    grad, hess = _on_grid(rng.normal(size=n)), _on_grid(rng.uniform(0.2, 1.0, n))
    hist = build_row_hist_fm(fm, rows, 0, rows.size, grad, hess, mapper.offsets, mapper.n_slots)
    pi, pj = [], []
    for q0 in range(0, rows.size - 1, query):
        a, b = np.triu_indices(min(query, rows.size - q0), 1)
        pi.append(rows[q0 + a])
        pj.append(rows[q0 + b])
    pi, pj = np.concatenate(pi).astype(np.int32), np.concatenate(pj).astype(np.int32)
    pc = _on_grid(rng.lognormal(0.0, 1.0, pi.size) * 0.02)
    ph = build_pair_hist(np.ascontiguousarray(fm.T), pi, pj, pc, 0, pi.size, mapper.offsets, mapper.n_bins,
                         mapper.n_slots)
    sums = (float(grad[rows].sum()), float(hess[rows].sum()), float(rows.size), float(pc.sum()))
    return hist, ph, sums


def measure(features: int = 4, bins: int = 255, rows: int = 2000, lanes: int = 8, seed: int = 0) -> Dict[str, Any]:
    """One split's two children searched (``search_nodes``) with ``lanes`` threads a block, counted."""
    from customobj.ole import splitting
    from customobj.ole.binning import BinMapper
    from customobj.ole.common import SPLIT_SIZE, ChildSums
    from customobj.ole.criterion import OLE
    from customobj.ole.cuda import _launch, _search_kernels, _split_kernels
    from customobj.ole.cuda.memory import DeviceMemory
    from customobj.ole.cuda.pool import DevicePool
    from customobj.ole.cuda.search import DeviceSearch

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(rows, features))
    X[rng.random(X.shape) < 0.05] = np.nan
    mapper = BinMapper.fit(X, bins)
    fm = mapper.bins_feature_major(X)
    order = rng.permutation(rows).astype(np.int64)
    children = [_child(rng, mapper, fm, np.sort(part), 20) for part in (order[:rows // 3], order[rows // 3:])]
    rules = splitting.SplitRules(OLE, 0.0, 1.0, 0.0)
    mask = np.ones(features, np.bool_)
    mem = DeviceMemory()
    fb = splitting.FeatureBins(mem.upload(mapper.n_bins.astype(np.int64)), mem.upload(mapper.offsets))
    search = DeviceSearch(mem, _split_kernels, _search_kernels,
                          DevicePool(mem, n_rows=rows, n_features=features, n_slots=mapper.n_slots, n_hists=1),
                          fb, n_features=features, has_nan=True)
    searches = [(mem.upload(h), mem.upload(p), mask, ChildSums(*s)) for h, p, s in children]
    with _launch.simulator_threads(lanes):
        got, steps = counted(lambda: search.splits(searches, rules, mem.upload(np.zeros(4)), False))
    want = np.zeros((2, SPLIT_SIZE))
    for k, (h, p, s) in enumerate(children):
        splitting.find_best_split(h, p, True, splitting.FeatureBins(mapper.n_bins, mapper.offsets), mask,
                                  ChildSums(*s), rules, want[k])
    (launch,) = steps
    return {"kernel": launch.kernel, "grid": launch.grid, "block": launch.block, "lanes": int(lanes),
            "features": int(features), "bins": int(mapper.n_bins.max()), "rows": int(rows),
            "critical_path": launch.critical_path, "work": launch.work, "barriers": launch.barriers,
            "equal_cpu": bool(np.array_equal(got[:, :SPLIT_SIZE], want))}


def main(argv: Any = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--features", type=int, default=4)
    ap.add_argument("--bins", type=int, default=255, help="most bins of a feature (BinMapper's max_bin)")
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--lanes", type=int, action="append", choices=(1, 2, 4, 8, 16, 32), default=None,
                    help="threads of a block (repeatable; default 1, 8 and 32)")
    ap.add_argument("--out", type=Path, default=None, help="write the counts as JSON here (a list, one per lanes)")
    args = ap.parse_args(argv)
    if args.features < 1 or not 2 <= args.bins <= 255 or args.rows < 20:
        ap.error("need --features >= 1, 2 <= --bins <= 255, --rows >= 20")
    results: List[Dict[str, Any]] = []
    for lanes in args.lanes or [1, 8, 32]:
        r = measure(args.features, args.bins, args.rows, lanes)
        results.append(r)
        print(f"{r['kernel']} lanes {lanes:2d}: grid {r['grid']} x {r['block']}, {r['features']} features of up to "
              f"{r['bins']} bins: critical path {r['critical_path']} steps, work {r['work']}, barriers "
              f"{r['barriers']}; splits equal the CPU's: {r['equal_cpu']}")
    if args.out is not None:
        tmp = args.out.with_name(args.out.name + ".tmp")
        tmp.write_text(json.dumps(results, indent=1))
        os.replace(tmp, args.out)
    return 0 if all(r["equal_cpu"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
