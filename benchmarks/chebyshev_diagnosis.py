"""Where weighted Chebyshev settles: the per-label loss against the cost that picks the label (issue 41).

``benchmarks/mo_lightgbm.py`` found customobj's ``method="chebyshev"`` farther from the ``w = .8`` ray than
MO-LightGBM's. This script takes the method apart on the same data (MQ2008, PageRank graded as label 2, the
same trees and rounds). Each variant is the method's definition as a plain loop, with every round's weight on
the label of larger ``r_k cost_k``, through a Python objective in stock ``lightgbm.train``. It crosses:

- the per-label gradient: ``customobj`` (``LambdaRank()``, what the benchmark trained) or ``lightgbm``
  (``LambdaRank.like_lightgbm()``, the fork's per-label loss);
- the cost that picks the label: ``customobj`` (``LambdaRank().loss``), ``lightgbm`` (the
  ``like_lightgbm()`` loss: ``MultiObjective`` with that per-label loss) or ``fork`` (the fork's cost,
  ``mo_lightgbm.fork_costs``).

The loop with both ``customobj`` is ``MultiObjective(method="chebyshev")`` itself (tested). With
``--molgbm`` the fork's own run is added: its weights from its log, its steps and costs replayed from its
model file. Per variant and fold it reports:

- the rounds on label 2, and the first round on label 1 (where the ray's balance is first crossed);
- the RMS change of the training scores in label-1 and in label-2 rounds;
- the mean factor by which each label's cost (the picking cost) changes after a label-1 round and after a
  label-2 round;
- the test NDCG@10 of both labels and ``mwl = max_k r_k (1 - NDCG@10_k)``, and customobj minus the fork.

    nice -n 10 python benchmarks/chebyshev_diagnosis.py [--molgbm /path/to/MO-LightGBM/LightGBM/lightgbm] \\
        [--data ../shared/data/mq2008] [--folds 1,2,3,4,5] [--w 0.8] [--rounds 100] [--out diagnosis.json]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import mo_lightgbm as MO  # noqa: E402  (it takes this folder off sys.path again on import)
import numpy as np  # noqa: E402

from customobj import LambdaRank  # noqa: E402
from customobj._io import atomic_write_bytes  # noqa: E402
from customobj.metrics import ndcg  # noqa: E402

# mo_lightgbm: the data path, trees, fork runner and the fork's cost have one home
lgb = MO.lgb
GRADIENTS = {"customobj": LambdaRank, "lightgbm": LambdaRank.like_lightgbm}
COSTS = {"customobj": lambda s, y, g: LambdaRank().loss(s, y, g) / len(g),
         "lightgbm": lambda s, y, g: LambdaRank.like_lightgbm().loss(s, y, g) / len(g),
         "fork": MO.fork_costs}
#: (gradient, picking cost): the crossed variants; ("lightgbm", "lightgbm") is MultiObjective with like_lightgbm()
VARIANTS = [("customobj", "customobj"), ("customobj", "fork"), ("lightgbm", "customobj"), ("lightgbm", "fork"),
            ("lightgbm", "lightgbm")]


def chebyshev_loop(split, w, rounds, gradient, cost):
    """Weighted Chebyshev by its definition: each round all weight on ``argmax_k r_k cost_k`` at the round's
    scores, ``r = (1 - w, w)``, that label's gradient and hessian. Returns (booster, picks, costs): the label
    of each round (0 or 1) and the picking costs (rounds x 2)."""
    X, y, y2, group = split
    losses = [GRADIENTS[gradient](), GRADIENTS[gradient]()]
    picks, costs = [], []

    def objective(preds, _):
        c = [COSTS[cost](preds, lab, group) for lab in (y, y2)]
        k = int(np.argmax([(1 - w) * c[0], w * c[1]]))  # the first label on a tie, as MultiObjective
        picks.append(k)
        costs.append(c)
        return losses[k].grad_hess(preds, (y, y2)[k], group=group)

    booster = lgb.train(dict(MO.STUDY.LGB, objective=objective), lgb.Dataset(X, y, group=group), rounds)
    return booster, np.array(picks), np.array(costs, dtype=np.float64)


def trajectory(scores, picks, costs):
    """The per-round facts of one Chebyshev run from its training scores after each round (rounds + 1 rows,
    the first all zero), its picks and its picking costs (see the module's docstring)."""
    steps = np.sqrt(np.mean(np.diff(scores, axis=0) ** 2, axis=1))
    on1 = np.flatnonzero(picks == 0)
    out = dict(label2_rounds=int(picks.sum()), first_label1_round=int(on1[0]) + 1 if on1.size else None)
    for k in (0, 1):
        mine = picks == k
        out[f"step_label{k + 1}"] = float(steps[mine].mean()) if mine.any() else None
        nxt = np.flatnonzero(mine[:-1])  # rounds on label k with a round after them
        factor = costs[nxt + 1] / costs[nxt] if nxt.size else None
        out[f"after_label{k + 1}"] = None if factor is None else factor.mean(axis=0).tolist()
    return out


def _test_row(scores, split, w):
    _, y, y2, group = split
    n1, n2 = ndcg(scores, y, group, 10), ndcg(scores, y2, group, 10)
    return dict(ndcg1=n1, ndcg2=n2, mwl=max((1 - w) * (1 - n1), w * (1 - n2)))


def loop_row(train, test, w, rounds, gradient, cost):
    booster, picks, costs = chebyshev_loop(train, w, rounds, gradient, cost)
    scores = np.array([np.zeros(len(train[1]))] + [booster.predict(train[0], num_iteration=t)
                                                   for t in range(1, rounds + 1)])
    return dict(_test_row(booster.predict(test[0]), test, w), **trajectory(scores, picks, costs))


def fork_row(args, train, test, w):
    """The fork's own Chebyshev: its picks from the weights it logs, its scores and costs (its cost,
    :func:`mo_lightgbm.fork_costs`) replayed from its model file round by round."""
    with tempfile.TemporaryDirectory(prefix="cheb_diagnosis_") as workdir:
        MO.write_tsv(os.path.join(workdir, "train.tsv"), train)
        _, weights, _ = MO.mo_lightgbm(args.molgbm, workdir, "chebyshev", MO.fork_settings("chebyshev", w=w),
                                       args.rounds, "cheb")
        model = os.path.join(workdir, "model_cheb.txt")
        scores = np.array([np.zeros(len(train[1]))] + [MO.predict_fork_model(model, train, num_iteration=t)
                                                       for t in range(1, args.rounds + 1)])
        test_scores = MO.predict_fork_model(model, test)
    picks = (np.asarray(weights)[:, 0] > 0.5).astype(np.int64)  # the fork logs label 2 first
    costs = np.array([[MO.fork_costs(s, lab, train[3]) for lab in (train[1], train[2])] for s in scores[:-1]])
    return dict(_test_row(test_scores, test, w), **trajectory(scores, picks, costs))


def run_fold(args, fold):
    root = os.path.join(args.data, f"Fold{fold}")
    train = MO.STUDY.load_split(os.path.join(root, "train.txt.gz"), args.feature)
    test = MO.STUDY.load_split(os.path.join(root, "test.txt.gz"), args.feature)
    rows = {f"{g}/{c}": loop_row(train, test, args.w, args.rounds, g, c) for g, c in VARIANTS}
    if args.molgbm:
        rows["fork"] = fork_row(args, train, test, args.w)
    for name, r in rows.items():
        print(f"Fold{fold} {name:20s} NDCG@10 {r['ndcg1']:.4f}/{r['ndcg2']:.4f} mwl {r['mwl']:.4f} | label 2 "
              f"{r['label2_rounds']} rounds, first on label 1: {r['first_label1_round']} | RMS step label 1/2 "
              f"{r['step_label1'] or 0:.4f}/{r['step_label2'] or 0:.4f} | costs after a label-1 round x"
              f"{np.round(r['after_label1'] or [np.nan] * 2, 3).tolist()}, after a label-2 round x"
              f"{np.round(r['after_label2'] or [np.nan] * 2, 3).tolist()}", flush=True)
    return rows


def summarise(per_fold):
    """Per variant: mean ``mwl`` over the folds and, with the fork's run, customobj minus the fork (95% t)."""
    out = {}
    for name in per_fold[0]:
        mwl = [f[name]["mwl"] for f in per_fold]
        row = dict(mwl=float(np.mean(mwl)), label2_rounds=[f[name]["label2_rounds"] for f in per_fold])
        if "fork" in per_fold[0] and name != "fork":
            row["minus_fork"] = MO.STUDY.interval([f[name]["mwl"] - f["fork"]["mwl"] for f in per_fold])
        out[name] = row
        extra = (f", minus the fork {row['minus_fork'][0]:+.4f} +- {row['minus_fork'][1]:.4f}"
                 if "minus_fork" in row else "")
        print(f"{name:20s} mwl {row['mwl']:.4f}{extra}; rounds on label 2 {row['label2_rounds']}")
    return out


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--molgbm", default=None, help="MO-LightGBM's lightgbm binary (adds the fork's own run)")
    ap.add_argument("--data", default=os.path.join(_HERE, "..", "..", "shared", "data", "mq2008"))
    ap.add_argument("--folds", type=lambda t: [int(v) for v in t.split(",")], default=[1, 2, 3, 4, 5])
    ap.add_argument("--feature", type=int, default=41)
    ap.add_argument("--w", type=float, default=0.8, help="the ray (1 - w, w): w on label 2")
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--out", default=None, help="write every fold's figures to this JSON file, atomically")
    return ap


def main(argv=None):
    args = parser().parse_args(argv)
    if args.molgbm is not None and not (os.path.isfile(args.molgbm) and os.access(args.molgbm, os.X_OK)):
        parser().error(f"--molgbm: {args.molgbm!r} is not an executable file")
    if not 0 < args.w < 1 or args.rounds < 2:
        parser().error("--w must be in (0, 1) and --rounds at least 2")
    per_fold = [run_fold(args, fold) for fold in args.folds]
    summary = summarise(per_fold)
    if args.out:
        atomic_write_bytes(args.out, json.dumps(dict(folds=per_fold, summary=summary), indent=1).encode())


if __name__ == "__main__":
    main()
