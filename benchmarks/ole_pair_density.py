"""Benchmark: OLE's cost over WSE as a function of the pairs per row.

OLE's extra work per node is one pass over the node's pairs for every feature (the pair
histograms), so its cost over WSE grows with the number of pairs with nonzero coupling per row.
LambdaRank's truncation level T sets that number (a pair needs a row in the current top T): this
script runs ``benchmarks/ole.py``'s WSE, OLE and ole_fast learners on the same MSLR-shaped data for
several T, interleaved ``--repeat`` times (best of each), and prints pairs/row, time per tree,
OLE / WSE and ole_fast / WSE; ``--plot`` also draws them.

    python benchmarks/ole_pair_density.py
    python benchmarks/ole_pair_density.py --truncations 1 3 10 30 --rounds 5 --repeat 2 --plot ole_density.png
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run(mode, truncation, args):
    cmd = [sys.executable, str(HERE / "ole.py"), "--mode", mode, "--truncation", str(truncation),
           "--rounds", str(args.rounds), "--queries", str(args.queries), "--query-size", str(args.query_size),
           "--features", str(args.features), "--threads", str(args.threads)]
    if args.ole_fast_epsilon is not None:  # else ole.py's defaults (TreeBooster's)
        cmd += ["--ole-fast-epsilon", repr(args.ole_fast_epsilon)]
    if args.ole_fast_features is not None:
        cmd += ["--ole-fast-features", str(args.ole_fast_features)]
    proc = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--truncations", type=int, nargs="+", default=[1, 3, 10, 30])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=2, help="interleaved runs per learner; best of each")
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--query-size", type=int, default=120)
    ap.add_argument("--features", type=int, default=136)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ole-fast-epsilon", type=float, default=None, help="epsilon of ole_fast (default: TreeBooster's)")
    ap.add_argument("--ole-fast-features", type=int, default=None, help="k of ole_fast (default: TreeBooster's)")
    ap.add_argument("--plot", metavar="PNG", help="also save OLE / WSE against pairs per row")
    args = ap.parse_args()
    rows = []
    print("load average (1, 5, 15 min): %.2f %.2f %.2f" % os.getloadavg())
    print(f"{'T':>4} {'pairs/row':>9} {'WSE s/tree':>10} {'OLE s/tree':>10} {'OLE/WSE':>8} {'fast/WSE':>8}")
    for t in args.truncations:
        best = {}
        for _ in range(max(1, args.repeat)):
            for mode in ("wse", "ole", "ole_fast"):
                r = run(mode, t, args)
                best[mode] = r if mode not in best else {**r, "per_tree_s": min(r["per_tree_s"], best[mode]["per_tree_s"])}
        wse, ole, fast = (best[m]["per_tree_s"] for m in ("wse", "ole", "ole_fast"))
        density = best["ole"]["pairs_per_row"]
        rows.append((t, density, wse, ole, ole / wse, fast / wse))
        print(f"{t:>4} {density:>9.2f} {wse:>10.3f} {ole:>10.3f} {ole / wse:>8.2f} {fast / wse:>8.2f}", flush=True)
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(5, 3.5))
        ax.plot([r[1] for r in rows], [r[4] for r in rows], "o-", label="ole")
        ax.plot([r[1] for r in rows], [r[5] for r in rows], "s-", label="ole_fast")
        ax.legend(fontsize=8)
        for t, d, _, _, ratio, _ in rows:
            ax.annotate(f"T={t}", (d, ratio), textcoords="offset points", xytext=(4, -10), fontsize=8)
        ax.axhline(1.3, color="grey", ls="--", lw=1)
        ax.set_xlabel("pairs with nonzero coupling per row")
        ax.set_ylabel("time per tree / WSE's")
        ax.set_title("OLE overhead vs pair density (LambdaRank@T)", fontsize=10)
        fig.tight_layout()
        from customobj._io import atomic_open
        with atomic_open(args.plot, "wb") as fh:
            fig.savefig(fh, dpi=120, format="png")
        print(f"plot: {args.plot}")


if __name__ == "__main__":
    main()
