"""Intervention harvesting on simulated logs (issue 33 item 5): how close does
``harvest_propensities`` come to the true PBM curve, per estimator, per set of production rankers?

Each ranker orders every training query of ``--data`` by one LETOR feature (1-based numbers in
``--rankers``, sets separated by ``;``); ranker ``i`` of a set logs ``--sessions`` sessions per query
(seed ``i``), top 10 shown, PBM examination ``(1/r)^eta``, click probability 0.1 / 0.5 / 1.0 for
grades 0 / 1 / 2 (``simulate_clicks``). Printed: the largest absolute error of the harvested curve
over the 10 positions, or why there is no estimate.

    python benchmarks/harvest.py [--data ../shared/data/mq2008/Fold1] [--rankers "1,40,5;1,40;1,5"]
                                 [--etas 0.5,1,2] [--sessions 30]
"""
from __future__ import annotations

import argparse
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import numpy as np  # noqa: E402

from customobj.clicks import harvest_propensities  # noqa: E402
from customobj.clicks.harvest import HARVEST_ESTIMATORS  # noqa: E402
from customobj.data import load_letor, simulate_clicks  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.path.join(_HERE, "..", "..", "shared", "data", "mq2008", "Fold1"))
    ap.add_argument("--rankers", default="1,40,5;1,40;1,5", help="sets of 1-based feature numbers, ';' between sets")
    ap.add_argument("--etas", default="0.5,1,2")
    ap.add_argument("--sessions", type=int, default=30, help="sessions per query and ranker")
    args = ap.parse_args(argv)
    try:
        sets = [[int(f) - 1 for f in s.split(",")] for s in args.rankers.split(";")]
        etas = [float(e) for e in args.etas.split(",")]
    except ValueError:
        ap.error("--rankers and --etas must be comma-separated numbers")
    data = load_letor(os.path.join(args.data, "train.txt.gz"))
    print(f"max |harvested - (1/r)^eta| over positions 1-10 ({args.sessions} sessions per query and ranker)")
    for features in sets:
        for eta in etas:
            logs = [simulate_clicks(data, ranker=np.asarray(data.X[:, j], dtype=np.float64), eta=eta,
                                    sessions=args.sessions, seed=i) for i, j in enumerate(features)]
            true = (1.0 / np.arange(1, 11)) ** eta
            cells = []
            for estimator in HARVEST_ESTIMATORS:
                try:
                    cells.append(f"{estimator} {np.abs(harvest_propensities(logs, estimator=estimator) - true).max():.3f}")
                except ValueError as exc:
                    cells.append(f"{estimator}: no estimate ({str(exc).split(';')[0]})")
            print(f"  features {','.join(str(j + 1) for j in features):<8} eta {eta:<4g} " + "   ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
