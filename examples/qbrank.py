"""QBRank (Zheng, Zha, Zhang, Chapelle, Chen, Sun, NIPS 2007): Table 1 and Figure 1 on LETOR data.

Compares, with 20-leaf LightGBM trees, shrinkage eta = 0.05, w = 0.5 and tau = grade difference
(the paper's settings):
- GBT: squared error on all labelled rows (the paper's "GBT using L1+L2");
- QBRank P2: the preference pairs derived from the labels of multi-label queries only;
- QBRank P2+L1: those pairs plus the rows of single-label queries as labelled data;
- RankSVM: a linear RankSVM trained in the primal by truncated Newton (Chapelle's slides),
  regularisation chosen on the validation fold.
Both QBRank hessian modes ("exact" diagonal, the paper's "upper_bound"), and line search on / off
(on: learning_rate 1 and the step ``eta * rho`` of ``customobj.adapters.LineSearch``; off: learning_rate eta).
Reports precision at K% (K = 10..100) and DCG@5 on the test fold after the last round, and plots
test DCG@5 against rounds. The paper's data (a commercial search engine's) is not public: LETOR
MQ2008 / OHSUMED stand in for it, so the numbers are not comparable with the paper's.

    python examples/qbrank.py                       # MQ2008 + OHSUMED, fold 1, 200 rounds
    python examples/qbrank.py --full --rounds 400   # all five folds
"""
from __future__ import annotations

import sys

import numpy as np

import _common as C
from _common import co

PERCENTS = list(range(10, 101, 10))
ETA, W, LEAVES = 0.05, 0.5, 20


def methods():
    """(name, hessian, objective factory); hessian None for methods without the option."""
    out = [("GBT", "-", lambda: co.SquaredError())]
    for hess in ("exact", "upper_bound"):
        out.append(("QBRank P2", hess, lambda h=hess: co.QBRank(w=W, hessian=h, labeled="none")))
        out.append(("QBRank P2+L1", hess, lambda h=hess: co.QBRank(w=W, hessian=h, labeled="single_label_queries")))
    return out


def ranksvm_scores(fold, args):
    """Linear RankSVM with ``lam`` picked on the validation DCG@5; returns (test scores, lam)."""
    n_pairs = int(co.metrics.misordered_pairs(np.zeros(fold.train.y.size), fold.train.y, fold.train.sizes)[0])
    best = None
    for c in (1e-4, 1e-3, 1e-2, 1e-1):
        lam = c * max(n_pairs, 1)
        w = C.linear_ranksvm(fold.train, lam=lam)
        v = C.metric_row(fold.vali.X @ w, fold.vali, ["dcg@5"])["dcg@5"]
        if best is None or v > best[0]:
            best = (v, lam, w)
    return fold.test.X @ best[2], best[1]


def evaluate(scores, split):
    row = {f"P@{k}%": co.metrics.precision_at_percent(scores, split.y, split.sizes, k) for k in PERCENTS}
    row["DCG@5"] = co.metrics.dcg(scores, split.y, split.sizes, k=5)
    return row


def main(argv=None):
    parser = C.make_parser(__doc__.split("\n")[0], rounds=200)
    args = C.parse(parser, argv, quick_rounds=5)
    params = C.lgb_params(args, num_leaves=LEAVES, learning_rate=ETA)
    rows, curves = [], {}
    for fold in C.iter_folds(args):
        jobs = [(m, h, f, ls) for m, h, f in methods() for ls in (True, False)]
        for name, hess, make, ls in C.progress(jobs, args=args, desc=f"{fold.dataset} fold {fold.fold}"):
            obj = make()
            with C.Timer() as t:
                booster = C.train_lightgbm(obj, fold.train, args.rounds, params, line_search=ETA if ls else None)
            staged = C.staged_lightgbm(booster, fold.test.X)
            key = (fold.dataset, name, hess, "on" if ls else "off")
            curves.setdefault(key, []).append(C.curve(staged, fold.test, "dcg@5"))
            rows.append({"dataset": fold.dataset, "fold": fold.fold, "method": name, "hessian": hess,
                         "line_search": key[3], **evaluate(staged[-1], fold.test), "seconds": t.seconds})
        with C.Timer() as t:
            s, lam = ranksvm_scores(fold, args)
        rows.append({"dataset": fold.dataset, "fold": fold.fold, "method": "RankSVM (linear)", "hessian": "-",
                     "line_search": "-", **evaluate(s, fold.test), "seconds": t.seconds})
        curves.setdefault((fold.dataset, "RankSVM (linear)", "-", "-"), []).append(
            np.full(args.rounds, rows[-1]["DCG@5"]))

    value_cols = [f"P@{k}%" for k in PERCENTS] + ["DCG@5", "seconds"]
    table = C.mean_rows(rows, ["dataset", "method", "hessian", "line_search"], value_cols)
    C.emit_table(args, "qbrank_table", table, ["dataset", "method", "hessian", "line_search"] + value_cols,
                 title=f"QBRank: test precision at K% and DCG@5 after {args.rounds} rounds "
                       f"(mean over folds {args.folds}; 20 leaves, eta={ETA}, w={W})", digits=4,
                 note="QBRank P2 with line search: both hessian modes give the same model (without labelled rows the "
                      "upper bound doubles every hessian: same tree, halved leaves, undone by the line search). "
                      "GBT: line search finds rho = 1 (Newton is exact for squared error). seconds = wall time.")
    C.emit_table(args, "qbrank_folds", rows, ["dataset", "fold", "method", "hessian", "line_search"] + value_cols,
                 title="QBRank: per fold", digits=4)
    plot(args, table, curves)
    return table


def plot(args, table, curves):
    datasets = list(dict.fromkeys(r["dataset"] for r in table))
    fig, axes = C.new_figure(len(datasets), 2, height=4.6)
    colors = {("GBT", "-"): "tab:gray", ("QBRank P2", "exact"): "tab:blue", ("QBRank P2", "upper_bound"): "tab:cyan",
              ("QBRank P2+L1", "exact"): "tab:red", ("QBRank P2+L1", "upper_bound"): "tab:orange",
              ("RankSVM (linear)", "-"): "black"}
    # the two hessian modes of a method often coincide: dashes on the second keep both visible,
    # and draw_curves names both where one would hide the other
    dashes = {"exact": "-", "upper_bound": "--", "-": "-"}
    for d, (ax_p, ax_c) in zip(datasets, axes):
        C.curve_panel(ax_p, [(PERCENTS, [r[f"P@{k}%"] for k in PERCENTS],
                              r["method"] + ("" if r["hessian"] == "-" else f" ({r['hessian']})"),
                              dict(marker="o", ms=3, ls=dashes[r["hessian"]], color=colors[(r["method"], r["hessian"])]))
                             for r in table if r["dataset"] == d and r["line_search"] != "off"],
                      title=f"{d}: precision at K% (line search on)", xlabel="K (% of pairs, by |score difference|)",
                      ylabel="fraction of pairs ordered correctly", ncol=1)
        lines = []
        for (dd, m, h, ls), cs in curves.items():
            if dd != d or ls == "off":  # line search off: see the table
                continue
            c = np.mean(cs, axis=0)
            lines.append((np.arange(1, c.size + 1), c, m + ("" if h == "-" else f" ({h})"),
                          dict(ls=dashes[h], color=colors[(m, h)], lw=1.1)))
        C.curve_panel(ax_c, lines, title=f"{d}: test DCG@5 against rounds (line search on)",
                      xlabel="rounds (trees)", ylabel="DCG@5", ncol=1)
    C.data_title(fig, args, "QBRank vs GBT and a linear RankSVM")
    C.save_figure(fig, args, "qbrank")


if __name__ == "__main__":
    main(sys.argv[1:])
