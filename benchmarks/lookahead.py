"""Best-first lookahead on real data: how many batches (a GPU backend's blocking reads) a tree takes,
and how much work the expansions it never uses add, for each ``lookahead`` (issue 42, item 3: "a
frontier per read ... the best-first frontier").

    python benchmarks/lookahead.py [--data ../shared/data/mq2008/Fold1] [--criteria ole_fast,ole]
        [--num-leaves 31] [--trees 20] [--lookahead 1,2,3,4,6,64] [--out lookahead.json]

Best-first growth splits the open leaf of largest gain; the GPU backend reads the children's splits
of each batch it is handed once, so one leaf a batch is one read a split. With ``lookahead`` k the
grower hands it the tree's next split and up to k - 1 more, the leaves best-first would split next as
far as the expansions made tell (``customobj.ole.grower.TreeGrower._best_first_batch``): the trees
are the same bit for bit (checked here on every tree), the reads fewer, and the expansions the tree
never uses (a child of larger gain came first and the tree filled) are work for nothing. Measured on
the CPU backend, whose batches are the GPU's (the same grower; counts, not times): per tree, the
batches, the expansions, the rows of the leaves expanded (what the partitions and the children's row
histograms walk) and their in-node pairs (what the pair partitions and pair histograms walk; ``ole_fast``:
the pairs its pruning kept), each against ``lookahead`` 1, and the most leaves the backend's table held in a tree
(``customobj.ole.grower.leaves_held``: ``2 num_leaves - 1`` with lookahead).

>>> r = measure(_tiny(), "ole", num_leaves=8, trees=2, lookaheads=(1, 4), min_data_in_leaf=5)
>>> one, four = r["lookahead"]["1"], r["lookahead"]["4"]
>>> one["batches_per_tree"] == one["splits_per_tree"] > four["batches_per_tree"] and r["same_trees"]
True
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Dict, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
#: MQ2008 Fold 1 of ``$CUSTOMOBJ_DATA`` (the tests' data folder) or of ../shared/data beside the repository
DEFAULT_DATA = Path(os.environ.get("CUSTOMOBJ_DATA", ROOT.parent / "shared" / "data")) / "mq2008" / "Fold1"


def _tiny() -> tuple:
    """A small ranking set (12 queries of 30 rows, 5 features) for the docstring and the tests."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(360, 5))
    y = np.clip(np.round(X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.7, size=360)), 0, 3)
    return X, y, np.full(12, 30)


def measure(data: tuple, criterion: str, *, num_leaves: int = 31, trees: int = 20,
            lookaheads: Sequence[int] = (1, 2, 3, 4, 6, 64), min_data_in_leaf: int = 20) -> Dict[str, Any]:
    """Per ``lookahead``: batches, expansions and rows expanded per tree of a ``TreeBooster`` fit
    (``LambdaRank()``, best-first) on ``data = (X, y, group)``, and whether every fit's trees equal
    the first's (``lookaheads[0]``, normally 1) bit for bit."""
    from customobj import LambdaRank
    from customobj.ole import TreeBooster
    from customobj.ole import backend as backend_module

    X, y, group = data
    if not lookaheads or any(int(k) < 1 for k in lookaheads):
        raise ValueError(f"lookaheads must be integers >= 1, got {list(lookaheads)}")
    counts: Dict[str, float] = {}

    class Counting(backend_module.CPUBackend):
        def expand(self, batch):
            counts["batches"] += 1
            counts["expansions"] += len(batch)
            counts["tree_expansions"] += len(batch)
            counts["rows"] += float(sum(e.split.left.N + e.split.right.N for e in batch))
            table = self._current().table  # the pairs each leaf holds before its split (criteria on pairs)
            counts["pairs"] += float(sum(table[e.leaf].pend - table[e.leaf].pstart for e in batch))
            return super().expand(batch)

        def end_tree(self, spans=None):
            counts["trees"] += 1
            counts["most_held"] = max(counts["most_held"], 1 + counts["tree_expansions"])
            counts["tree_expansions"] = 0
            return super().end_tree(spans)

    out: Dict[str, Any] = {"criterion": criterion, "num_leaves": num_leaves, "trees": trees,
                           "rows": int(X.shape[0]), "lookahead": {}}
    first = None
    same = True
    import customobj.ole.training as training
    original = training.CPUBackend
    try:
        training.CPUBackend = Counting  # make_backend's CPU class for these fits
        for k in lookaheads:
            Counting.lookahead = int(k)
            counts.update(batches=0, expansions=0, rows=0.0, pairs=0.0, trees=0, tree_expansions=0, most_held=0)
            t0 = time.perf_counter()
            model = TreeBooster(LambdaRank(), criterion=criterion, num_leaves=num_leaves, n_estimators=trees,
                                min_data_in_leaf=min_data_in_leaf, verbose=False).fit(X, y, group)
            seconds = time.perf_counter() - t0
            n = max(counts["trees"], 1)
            out["lookahead"][str(k)] = {"batches_per_tree": counts["batches"] / n,
                                        "expansions_per_tree": counts["expansions"] / n,
                                        "rows_expanded_per_tree": counts["rows"] / n,
                                        "pairs_expanded_per_tree": counts["pairs"] / n,
                                        "splits_per_tree": sum(len(t.nodes) for t in model.trees_) / n,
                                        "most_leaves_held": int(counts["most_held"]),
                                        "seconds": seconds}
            if first is None:
                first = model.trees_
            else:
                same = same and len(first) == len(model.trees_) and all(
                    np.array_equal(a.nodes, b.nodes) and np.array_equal(a.leaves, b.leaves)
                    for a, b in zip(first, model.trees_))
    finally:
        training.CPUBackend = original
    base = out["lookahead"][str(lookaheads[0])]
    for r in out["lookahead"].values():
        r["rows_ratio"] = r["rows_expanded_per_tree"] / max(base["rows_expanded_per_tree"], 1.0)
        r["pairs_ratio"] = r["pairs_expanded_per_tree"] / max(base["pairs_expanded_per_tree"], 1.0)
    out["same_trees"] = bool(same)
    return out


def _load(folder: Path) -> tuple:
    from customobj.data import load_letor
    path = folder / "train.txt.gz"
    if not path.is_file():
        path = folder / "train.txt"
    if not path.is_file():
        raise FileNotFoundError(f"no train.txt(.gz) in {folder} (--data: a LETOR fold folder)")
    d = load_letor(path)
    return d.X, d.y, d.group


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="a LETOR fold folder (default: %(default)s)")
    ap.add_argument("--criteria", default="ole_fast,ole")
    ap.add_argument("--num-leaves", type=int, default=31)
    ap.add_argument("--trees", type=int, default=20)
    ap.add_argument("--lookahead", default="1,2,3,4,6,64")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    if a.num_leaves < 2 or a.trees < 1:
        ap.error("--num-leaves must be >= 2 and --trees >= 1")
    try:
        lookaheads = [int(v) for v in a.lookahead.split(",")]
    except ValueError:
        ap.error(f"--lookahead must be integers separated by commas, got {a.lookahead!r}")
    data = _load(a.data)
    results = []
    for criterion in a.criteria.split(","):
        r = measure(data, criterion, num_leaves=a.num_leaves, trees=a.trees, lookaheads=lookaheads)
        results.append(r)
        print(f"{criterion}, {a.num_leaves} leaves, {r['rows']} rows, {a.trees} trees; same trees: {r['same_trees']}")
        print("  lookahead  batches/tree  expansions/tree  rows expanded (x lookahead 1)  pairs expanded (x)  "
              "most leaves held")
        for k, v in r["lookahead"].items():
            print(f"  {k:>9}  {v['batches_per_tree']:12.2f}  {v['expansions_per_tree']:15.2f}  "
                  f"{v['rows_expanded_per_tree']:10.0f} ({v['rows_ratio']:.3f})  "
                  f"{v['pairs_expanded_per_tree']:9.0f} ({v['pairs_ratio']:.3f})  {v['most_leaves_held']:>16}")
    if a.out is not None:
        from customobj._io import atomic_write_text
        atomic_write_text(a.out, json.dumps({"data": str(a.data), "results": results}, indent=2))
    return 0 if all(r["same_trees"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
