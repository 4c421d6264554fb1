"""Xia, Zhai, Wang, "Analysis of regression tree fitting algorithms in learning to rank": SE vs WSE
vs OLE node splitting for LambdaMART and McRank (the paper's Tables 2-3 and Figure 2).

``customobj.ole.TreeBooster`` grows breadth-first trees (the paper's choice) with the split gain of
``criterion="se"`` (Friedman's least squares on the gradients), ``"wse"`` (LightGBM/XGBoost's
Newton gain) or ``"ole"`` (the exact objective-loss decrease, with the pair couplings of the
node). Systems: LambdaMART = ``LambdaRank(metric="ndcg")``; McRank = ``McRank`` (3 grades, one tree
per grade each round, ranked by the expected grade; pointwise, so OLE = WSE by the paper's
Theorem 1). The paper's grid: 10 and 20 leaves, learning rates 0.06 / 0.1 / 0.12. Reports test
NDCG@1/3/10 and ERR after the last round, the count of (configuration, measure) comparisons where
OLE beats SE by more than 0.1 NDCG point (0.001), the final training loss, and the training time
(overhead of OLE over SE). The paper trains 1000 / 2500 rounds on Yahoo / MSLR data; the default
here is 100 rounds on fold 1, so expect smaller and noisier differences.

    python examples/ole.py                        # MQ2008 + OHSUMED fold 1, 100 rounds
    python examples/ole.py --full --rounds 300    # all folds
"""
from __future__ import annotations

import sys

import numpy as np

import _common as C
from _common import co
from customobj.ole import TreeBooster

LEAVES = [10, 20]
RATES = [0.06, 0.1, 0.12]
CRITERIA = ["se", "wse", "ole"]
METRICS = ["ndcg@1", "ndcg@3", "ndcg@10", "err"]
POINT = 0.001  # "0.1 point" of a measure reported in percent


def systems():
    return [("LambdaMART", lambda: co.LambdaRank(metric="ndcg")), ("McRank", lambda: co.McRank(n_classes=3))]


def main(argv=None):
    parser = C.make_parser(__doc__.split("\n")[0], rounds=100)
    args = C.parse(parser, argv, quick_rounds=3)
    grid = [(10, 0.1)] if args.quick else [(lv, lr) for lv in LEAVES for lr in RATES]
    rows, diffs = [], {}
    warm = False
    for fold in C.iter_folds(args):
        if not warm:  # compile / load the numba kernels before anything is timed
            small = fold.train.head(300)
            for (_, make), crit in ((s, c) for s in systems() for c in CRITERIA):
                TreeBooster(make(), criterion=crit, num_leaves=4, n_estimators=2, growth="breadth_first",
                            verbose=False, n_jobs=args.threads).fit(small.X, small.y, small.sizes)
            warm = True
        jobs = [(s, make, lv, lr, c) for s, make in systems() for lv, lr in grid for c in CRITERIA]
        test_curves = {}
        for system, make, leaves, rate, crit in C.progress(jobs, args=args, desc=f"{fold.dataset} fold {fold.fold}"):
            obj = make()
            model = TreeBooster(obj, criterion=crit, num_leaves=leaves, learning_rate=rate, n_estimators=args.rounds,
                                growth="breadth_first", verbose=False, n_jobs=args.threads, random_state=args.seed)
            with C.Timer() as t:
                model.fit(fold.train.X, fold.train.y, fold.train.sizes)
            staged = C.staged_ole(model, fold.test.X)
            test_curves[(system, leaves, rate, crit)] = C.curve(staged, fold.test, "ndcg@10")
            loss = obj.loss(model.predict(fold.train.X), fold.train.y, fold.train.sizes)
            rows.append({"dataset": fold.dataset, "fold": fold.fold, "system": system, "leaves": leaves, "lr": rate,
                         "criterion": crit.upper(), **C.metric_row(staged[-1], fold.test, METRICS),
                         "train loss": loss / fold.train.y.size, "seconds": t.seconds})
        for (system, leaves, rate, crit), c in test_curves.items():
            if crit == "ole":
                diffs.setdefault((fold.dataset, system, leaves, rate), []).append(
                    c - test_curves[(system, leaves, rate, "se")])

    keys = ["dataset", "system", "leaves", "lr", "criterion"]
    cols = METRICS + ["train loss", "seconds"]
    table = C.mean_rows(rows, keys, cols)
    C.emit_table(args, "ole_table", table, keys + cols,
                 title=f"SE / WSE / OLE: test measures after {args.rounds} rounds, mean training loss per row, "
                       f"training seconds (breadth-first trees; mean over folds {args.folds})")
    summary = summarize(table)
    C.emit_table(args, "ole_summary", summary,
                 ["dataset", "system", "OLE > SE + 0.001", "OLE < SE - 0.001", "mean OLE - SE", "loss OLE/SE",
                  "time OLE/SE", "time WSE/SE"],
                 title="OLE vs SE over the grid: (configuration, measure) comparisons won / lost by more than "
                       "0.1 point, mean difference, final training loss ratio, training time ratio")
    plot(args, diffs)
    return table, summary


def summarize(table):
    out = []
    for d in dict.fromkeys(r["dataset"] for r in table):
        for s in dict.fromkeys(r["system"] for r in table):
            by = {(r["leaves"], r["lr"], r["criterion"]): r for r in table if (r["dataset"], r["system"]) == (d, s)}
            configs = sorted({(lv, lr) for lv, lr, _ in by})
            dv = np.array([by[(lv, lr, "OLE")][m] - by[(lv, lr, "SE")][m] for lv, lr in configs for m in METRICS])
            ratio = lambda col, a, b: float(np.mean([by[(lv, lr, a)][col] / by[(lv, lr, b)][col]  # noqa: E731
                                                      for lv, lr in configs]))
            out.append({"dataset": d, "system": s, "OLE > SE + 0.001": f"{int(np.sum(dv > POINT))}/{dv.size}",
                        "OLE < SE - 0.001": f"{int(np.sum(dv < -POINT))}/{dv.size}", "mean OLE - SE": float(dv.mean()),
                        "loss OLE/SE": ratio("train loss", "OLE", "SE"), "time OLE/SE": ratio("seconds", "OLE", "SE"),
                        "time WSE/SE": ratio("seconds", "WSE", "SE")})
    return out


def plot(args, diffs):
    datasets = list(dict.fromkeys(k[0] for k in diffs))
    systems_ = list(dict.fromkeys(k[1] for k in diffs))
    fig, axes = C.new_figure(len(datasets), len(systems_))
    colors = {0.06: "tab:blue", 0.1: "tab:green", 0.12: "tab:red"}
    for i, d in enumerate(datasets):
        for j, s in enumerate(systems_):
            ax = axes[i, j]
            lines = []
            for (dd, ss, leaves, rate), cs in diffs.items():
                if (dd, ss) == (d, s):
                    c = np.mean(cs, axis=0)
                    lines.append((np.arange(1, c.size + 1), c, f"{leaves} leaves, lr {rate}",
                                  dict(ls="-" if leaves == 10 else "--", color=colors.get(rate, "k"), lw=1.1)))
            C.draw_curves(ax, lines)
            ax.axhline(0, color="k", lw=0.6)
            ax.set(title=f"{d}, {s}: test NDCG@10, OLE minus SE", xlabel="rounds (trees)", ylabel="OLE - SE")
            C.legend_below(ax)
    C.data_title(fig, args, "OLE against SE split criteria (Xia et al.), per configuration")
    C.save_figure(fig, args, "ole")


if __name__ == "__main__":
    main(sys.argv[1:])
