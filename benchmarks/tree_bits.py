"""Record, or compare bit for bit, TreeBooster's trees on MQ2008 Fold1 (train), on the CPU and the GPU.

For each criterion (``se``, ``wse``, ``ole``, ``ole_fast``, ``ole_float64``) and the options that take
another path through the grower and its backend (breadth-first growth, bagging with feature
sampling and weights, ``ole_fast``'s pair pruning, the joint leaf solve, depth limits, a tree that
stops early), it fits a small model on a subset of queries and stores its JSON trees and
predictions. ``--device cuda`` fits on the GPU (numba's CUDA simulator without one: keep
``--queries`` small). ``--compare`` refits and reports every case whose trees or predictions differ:
a refactoring of the grower or its backends must leave them all equal.

    python benchmarks/tree_bits.py --record /tmp/trees_before.npz               # at the old commit
    python benchmarks/tree_bits.py --compare /tmp/trees_before.npz              # after the change
    NUMBA_ENABLE_CUDASIM=1 python benchmarks/tree_bits.py --device cuda --record /tmp/gpu_before.npz
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

from customobj.data import load_letor
from customobj.ole import TreeBooster

_BASE = dict(num_leaves=7, n_estimators=2, min_data_in_leaf=5, max_bin=32, lambda_l2=0.5, verbose=False)

#: (name, TreeBooster options): every criterion plain, then the variants that change the path.
CASES = [(c, dict(criterion=c)) for c in ("se", "wse", "ole", "ole_fast", "ole_float64")] + [
    ("ole-breadth", dict(criterion="ole", growth="breadth_first")),
    ("ole-bagging", dict(criterion="ole", bagging_fraction=0.7, feature_fraction=0.75,
                         random_state=3)),
    ("wse-breadth-bagging", dict(criterion="wse", growth="breadth_first", bagging_fraction=0.6,
                                 random_state=5)),
    ("ole-joint", dict(criterion="ole", leaf_solver="joint")),
    ("ole-depth2", dict(criterion="ole", max_depth=2, num_leaves=8)),
    ("ole_fast-prune", dict(criterion="ole_fast", ole_fast_epsilon=0.3, ole_fast_features=3)),
    ("ole_fast-prune-breadth", dict(criterion="ole_fast", ole_fast_epsilon=0.2, growth="breadth_first")),
    ("ole_fast-prune-bagging", dict(criterion="ole_fast", ole_fast_epsilon=0.3, bagging_fraction=0.7,
                                    random_state=2)),
    ("ole_fast-exact", dict(criterion="ole_fast", ole_fast_epsilon=0.0, ole_fast_features=5)),
    ("ole_fast-prune-2leaves", dict(criterion="ole_fast", ole_fast_epsilon=0.3, num_leaves=2)),
    ("ole_fast-prune-many", dict(criterion="ole_fast", ole_fast_epsilon=0.3, num_leaves=40)),
    ("ole-stops-early", dict(criterion="ole", num_leaves=40, min_data_in_leaf=20)),
]


def _data(n_queries: int):
    root = Path(os.environ.get("CUSTOMOBJ_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    d = load_letor(root / "mq2008" / "Fold1" / "train.txt.gz")
    X, y, group = np.asarray(d.X, dtype=np.float64), np.asarray(d.y, dtype=np.float64), np.asarray(d.group)
    ptr = np.concatenate([[0], np.cumsum(group)])
    q = np.sort(np.random.default_rng(0).choice(group.size, size=min(n_queries, group.size), replace=False))
    rows = np.concatenate([np.arange(ptr[k], ptr[k + 1]) for k in q])
    X = X[rows][:, :12].copy()
    X[np.random.default_rng(1).random(X.shape) < 0.05] = np.nan  # NaN sides take their own path
    w = np.random.default_rng(2).uniform(0.5, 2.0, rows.size)
    return X, y[rows], group[q], w


def _fits(device: str, n_queries: int, only: list) -> dict:
    X, y, group, w = _data(n_queries)
    out = {}
    for name, opts in CASES:
        if only and name not in only:
            continue
        kw = {**_BASE, **opts}
        weights = w if "bagging" in name else None
        model = TreeBooster(device=device, **kw).fit(X, y, group, sample_weight=weights)
        out[f"{name}/trees"] = np.frombuffer(json.dumps(json.loads(model.to_json())["trees"]).encode(), np.uint8)
        out[f"{name}/predict"] = model.predict(X)
        print(name, sum(len(t.nodes) for t in model.trees_), "nodes", flush=True)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    act = ap.add_mutually_exclusive_group(required=True)
    act.add_argument("--record", type=Path)
    act.add_argument("--compare", type=Path)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--only", default="", help="comma-separated case names (default: all)")
    args = ap.parse_args(argv)
    only = [s for s in args.only.split(",") if s]
    got = _fits(args.device, args.queries, only)
    if args.record is not None:
        np.savez(args.record, **got)
        print(f"recorded {len(got)} arrays to {args.record}")
        return 0
    with np.load(args.compare) as ref:
        keys = [k for k in ref.files if not only or k.split("/")[0] in only]
        differ = [k for k in keys if k not in got or ref[k].tobytes() != got[k].tobytes()]
    print(f"{len(keys)} arrays, {len(differ)} differ" + "".join(f"\n  {k}" for k in differ))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
