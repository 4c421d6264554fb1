"""Chapelle (2007), "Large-scale SVMs" slides: primal RankSVM, structured DCG boosting, web-spam graph.

Part 1, ranking on LETOR (MQ2008, OHSUMED): the RankSVM squared hinge (``RankSVM``) and the
structured-output DCG loss (``StructuredDCG(k=10)``, boosted with the constant-hessian surrogate
of the slides) through both adapters (LightGBM and XGBoost, 31-leaf trees, rate 0.1), against
regression (``SquaredError``) and LambdaRank (``LambdaRank(metric="ndcg")``), and a linear RankSVM
trained in the primal by truncated Newton. Rounds are chosen on the validation NDCG@10.

Part 2, semi-supervised web-spam classification on a generated host graph (the slides' "Web spam
classification"): hosts with weakly informative features, 25% spam, a directed link graph in
which non-spam hosts rarely link to spam; 15% of hosts labelled. Squared hinge on the labelled
hosts alone vs plus the graph regulariser ``Omega = sum_{i -> j} max(0, f_j - f_i)^2`` over all
links (= ``2 * PreferencePairs(edges, margin=0)``), both as a linear model (the slides' inductive
primal SVM) and with LightGBM trees. Reports AUC and accuracy on the unlabelled hosts, per seed.

    python examples/chapelle.py                  # MQ2008 + OHSUMED fold 1, 200 rounds; 3 graph seeds
    python examples/chapelle.py --full           # all folds
"""
from __future__ import annotations

import sys

import numpy as np

import _common as C
from _common import co

RANK_METRICS = ["ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10"]
LAMBDAS = [0.0, 0.03, 0.1, 0.3, 1.0]


def ranking_objectives():
    return [("regression", co.SquaredError), ("RankSVM (sq. hinge)", co.RankSVM),
            ("StructuredDCG@10", lambda: co.StructuredDCG(k=10)), ("LambdaRank", lambda: co.LambdaRank(metric="ndcg"))]


def ranking(args):
    rows, curves = [], {}
    for fold in C.iter_folds(args):
        jobs = [(lib, name, make) for lib in ("lightgbm", "xgboost") for name, make in ranking_objectives()]
        for lib, name, make in C.progress(jobs, args=args, desc=f"{fold.dataset} fold {fold.fold}"):
            obj = make()
            with C.Timer() as t:
                if lib == "lightgbm":
                    b = C.train_lightgbm(obj, fold.train, args.rounds, C.lgb_params(args))
                    sv, st = C.staged_lightgbm(b, fold.vali.X), C.staged_lightgbm(b, fold.test.X)
                else:
                    b = C.train_xgboost(obj, fold.train, args.rounds, args)
                    sv, st = C.staged_xgboost(b, fold.vali.X), C.staged_xgboost(b, fold.test.X)
            T, _ = C.best_round(sv, fold.vali, "ndcg@10")
            curves.setdefault((fold.dataset, lib, name), []).append(C.curve(st, fold.test, "ndcg@10"))
            rows.append({"dataset": fold.dataset, "fold": fold.fold, "method": name, "library": lib, "T": T,
                         **C.metric_row(st[T - 1], fold.test, RANK_METRICS), "seconds": t.seconds})
        with C.Timer() as t:
            n_pairs = max(1, co.metrics.misordered_pairs(np.zeros(fold.train.y.size), fold.train.y,
                                                         fold.train.sizes)[0])
            fits = [C.linear_ranksvm(fold.train, lam=c * n_pairs) for c in (1e-4, 1e-3, 1e-2, 1e-1)]
            w = max(fits, key=lambda w: C.metric_row(fold.vali.X @ w, fold.vali, ["ndcg@10"])["ndcg@10"])
        rows.append({"dataset": fold.dataset, "fold": fold.fold, "method": "RankSVM linear (primal Newton)",
                     "library": "scipy", "T": None, **C.metric_row(fold.test.X @ w, fold.test, RANK_METRICS),
                     "seconds": t.seconds})
    cols = RANK_METRICS + ["T", "seconds"]
    table = C.mean_rows(rows, ["dataset", "method", "library"], cols)
    C.emit_table(args, "chapelle_ranking", table, ["dataset", "method", "library"] + cols,
                 title=f"Chapelle, ranking: test NDCG at the round chosen on validation NDCG@10 "
                       f"(mean over folds {args.folds}; at most {args.rounds} rounds)")
    return table, curves


# ------------------------------------------------------------------------------------------------
# web spam on a generated host graph
# ------------------------------------------------------------------------------------------------
def spam_graph(seed, n_hosts=3000, n_features=12, spam_rate=0.25, out_degree=6.0):
    """Hosts (features, spam labels) and directed links: non-spam hosts link to non-spam hosts 95%
    of the time; spam hosts link to spam (link farms) 70% of the time. Features carry a weak,
    partly non-linear spam signal plus noise."""
    rng = np.random.default_rng(seed)
    spam = rng.random(n_hosts) < spam_rate
    X = rng.standard_normal((n_hosts, n_features))
    X[:, 0] += 0.6 * spam
    X[:, 1] += 0.4 * spam
    X[:, 2] = np.abs(X[:, 2]) + 0.5 * spam * (X[:, 3] > 0)
    src = np.repeat(np.arange(n_hosts), 1 + rng.poisson(out_degree - 1, n_hosts))
    same = rng.random(src.size) < np.where(spam[src], 0.7, 0.95)
    to_spam = np.where(same, spam[src], ~spam[src])
    pools = [np.flatnonzero(~spam), np.flatnonzero(spam)]
    dst = np.empty_like(src)
    for k in (0, 1):
        m = to_spam == k
        dst[m] = rng.choice(pools[k], m.sum())
    keep = src != dst
    return X, spam.astype(np.float64), np.stack([src[keep], dst[keep]], axis=1)


def spam_eval(scores, spam, mask):
    from sklearn.metrics import roc_auc_score

    return roc_auc_score(spam[mask], scores[mask]), float(np.mean((scores[mask] > 0) == (spam[mask] > 0)))


def spam_trees(X, y_obs, weight, edges, lam, args, rounds):
    """LightGBM trees on ``SquaredHinge`` (labelled hosts) + ``lam * Omega`` (all links). The two
    terms are prepared separately so that the zero weights of unlabelled hosts do not also switch
    off their links (row weights scale pair terms too)."""
    import lightgbm as lgb

    sh, pp = co.SquaredHinge(), co.PreferencePairs(edges, margin=0.0)
    sh_prep, pp_prep = sh.prepare(y_obs, None, weight), pp.prepare(y_obs, None)

    def fobj(preds, _data):
        g, h = sh.grad_hess_prepared(preds, sh_prep)
        if lam > 0:
            g2, h2 = pp.grad_hess_prepared(preds, pp_prep)
            g, h = g + 2 * lam * g2, h + 2 * lam * h2
        return g, h

    params = C.lgb_params(args, objective=fobj, num_leaves=15, learning_rate=0.1, min_data_in_leaf=10)
    return lgb.train(params, lgb.Dataset(X, y_obs), rounds).predict(X, raw_score=True)


def spam_linear(X, y_obs, weight, edges, lam):
    sh, pp = co.SquaredHinge(), co.PreferencePairs(edges, margin=0.0)
    Xb = np.hstack([X, np.ones((X.shape[0], 1))])  # bias column (regularised like the slides' w)
    terms = [(sh, sh.prepare(y_obs, None, weight), 1.0)]
    if lam > 0:
        terms.append((pp, pp.prepare(y_obs, None), 2.0 * lam))
    return Xb @ C.linear_primal(Xb, terms, lam=1.0)


def web_spam(args):
    seeds = [args.seed] if args.quick else [args.seed + k for k in range(3)]
    n_hosts = 600 if args.quick else 3000
    rows = []
    jobs = [(s, model, lam) for s in seeds for model in ("linear", "trees") for lam in LAMBDAS]
    graphs = {}
    for seed, model, lam in C.progress(jobs, args=args, desc="web spam"):
        if seed not in graphs:
            X, spam, edges = spam_graph(seed, n_hosts=n_hosts)
            labelled = np.random.default_rng(seed + 1000).random(n_hosts) < 0.15
            graphs[seed] = (X, spam, edges, labelled)
        X, spam, edges, labelled = graphs[seed]
        y_obs = np.where(labelled, spam, 0.0)  # unlabelled hosts: weight 0, label unused
        weight = labelled.astype(np.float64)
        if model == "linear":
            s = spam_linear(X, y_obs, weight, edges, lam)
        else:
            s = spam_trees(X, y_obs, weight, edges, lam, args, rounds=min(args.rounds, 100))
        auc, acc = spam_eval(s, spam, ~labelled)
        rows.append({"model": model, "lambda": lam, "seed": seed, "AUC": auc, "accuracy": acc,
                     "hosts": n_hosts, "links": len(edges), "labelled": int(labelled.sum())})
    table = C.mean_rows(rows, ["model", "lambda"], ["AUC", "accuracy"])
    for r in table:
        aucs = [x["AUC"] for x in rows if (x["model"], x["lambda"]) == (r["model"], r["lambda"])]
        base = [x["AUC"] for x in rows if (x["model"], x["lambda"]) == (r["model"], 0.0)]
        r["AUC gain vs lambda=0"] = float(np.mean(np.subtract(aucs, base)))
        r["seeds won"] = f"{int(np.sum(np.subtract(aucs, base) > 0))}/{len(aucs)}"
    C.emit_table(args, "chapelle_webspam", table,
                 ["model", "lambda", "AUC", "accuracy", "AUC gain vs lambda=0", "seeds won", "folds"],
                 title=f"Chapelle, web spam: squared hinge on {rows[0]['labelled']} labelled of {n_hosts} hosts "
                       f"+ lambda * graph regulariser ({rows[0]['links']} links); AUC / accuracy on unlabelled hosts, "
                       f"mean of {len(seeds)} generated graphs ('folds' = seeds)")
    return table


def main(argv=None):
    parser = C.make_parser(__doc__.split("\n")[0], rounds=200)
    args = C.parse(parser, argv, quick_rounds=4)
    rank_table, curves = ranking(args)
    spam_table = web_spam(args)
    plot(args, curves, spam_table)
    return rank_table, spam_table


def plot(args, curves, spam_table):
    datasets = list(dict.fromkeys(d for d, _, _ in curves))
    fig, axes = C.new_figure(1, len(datasets) + 1, height=4.6)
    colors = {"regression": "tab:gray", "RankSVM (sq. hinge)": "tab:blue", "StructuredDCG@10": "tab:green",
              "LambdaRank": "tab:red"}
    for ax, d in zip(axes[0], datasets):
        lines = []
        for (dd, lib, name), cs in curves.items():
            if dd == d:
                c = np.mean(cs, axis=0)
                lines.append((np.arange(1, c.size + 1), c, f"{name} ({lib})",
                              dict(ls="-" if lib == "lightgbm" else "--", color=colors[name], lw=1.2)))
        C.curve_panel(ax, lines,
                      title=f"{d}: test NDCG@10 against rounds", xlabel="rounds", ylabel="NDCG@10")
    ax = axes[0, -1]
    C.draw_curves(ax, [([r["lambda"] for r in spam_table if r["model"] == model],
                        [r["AUC"] for r in spam_table if r["model"] == model], f"{model}: AUC",
                        dict(ls=ls, marker=marker)) for model, ls, marker in (("linear", "-", "o"), ("trees", "--", "s"))])
    ax.set_xscale("symlog", linthresh=0.03)
    ax.set(title="web spam: graph regulariser weight (generated host graph)", xlabel="lambda (0 = squared hinge only)",
           ylabel="AUC on unlabelled hosts")
    C.legend_below(ax)
    C.data_title(fig, args, "Chapelle: RankSVM and structured DCG through both adapters")
    C.save_figure(fig, args, "chapelle")


if __name__ == "__main__":
    main(sys.argv[1:])
