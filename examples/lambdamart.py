"""Burges (2010), "From RankNet to LambdaRank to LambdaMART": the losses, model adaptation and the
optimal linear combination of two rankers, on LETOR MQ2008 / OHSUMED with LightGBM trees.

1. RankNet vs LambdaRank with NDCG, ERR and MAP as the measure (customobj objectives through
   ``customobj.adapters.lightgbm_objective``) vs LightGBM's native ``lambdarank``; 31 leaves, rate 0.1,
   rounds chosen on the validation NDCG@10; test NDCG@1/3/10, ERR@10 and MAP.
2. Model adaptation (sec. 7): the training queries are split in halves A and B. A base
   LambdaMART model is trained on A; the adapted model continues from its scores on B
   (``init_score``) for half as many rounds. Compared with the base alone, a model trained on B
   alone, and one trained on A and B together.
3. Optimal linear combination (sec. 7.1): ``alpha s1 + (1 - alpha) s2`` of LambdaMART-NDCG with
   each other ranker, alpha found exactly on the validation fold (``best_linear_combination``)
   and applied to the test fold.

    python examples/lambdamart.py                 # MQ2008 + OHSUMED fold 1, 200 rounds
    python examples/lambdamart.py --full          # all folds
"""
from __future__ import annotations

import sys

import numpy as np

import _common as C
from _common import co
from customobj.combine import best_linear_combination

METRICS = ["ndcg@1", "ndcg@3", "ndcg@10", "err@10", "map"]


def rankers():
    return [("RankNet", lambda: co.RankNet()),
            ("LambdaRank-NDCG", lambda: co.LambdaRank(metric="ndcg")),
            ("LambdaRank-ERR", lambda: co.LambdaRank(metric="err")),
            ("LambdaRank-MAP", lambda: co.LambdaRank(metric="map")),
            ("native lambdarank", lambda: "lambdarank")]


def fit_select(obj, train, fold, rounds, params, init=None, init_vali=None, init_test=None):
    """Train; return (round chosen on validation NDCG@10, vali scores, test scores, test curve)."""
    b = C.train_lightgbm(obj, train, rounds, params, init_score=init)
    sv = C.staged_lightgbm(b, fold.vali.X, init_vali)
    st = C.staged_lightgbm(b, fold.test.X, init_test)
    T, _ = C.best_round(sv, fold.vali, "ndcg@10")
    return T, sv[T - 1], st[T - 1], C.curve(st, fold.test, "ndcg@10")


def main(argv=None):
    parser = C.make_parser(__doc__.split("\n")[0], rounds=200)
    args = C.parse(parser, argv, quick_rounds=4)
    params = C.lgb_params(args)
    rows, adapt_rows, comb_rows, curves, alpha_curves = [], [], [], {}, {}
    for fold in C.iter_folds(args):
        tag = {"dataset": fold.dataset, "fold": fold.fold}
        scores = {}
        for name, make in C.progress(rankers(), args=args, desc=f"{fold.dataset} fold {fold.fold} rankers"):
            with C.Timer() as t:
                T, sv, st, c = fit_select(make(), fold.train, fold, args.rounds, params)
            scores[name] = (sv, st)
            curves.setdefault((fold.dataset, name), []).append(c)
            rows.append({**tag, "method": name, "T": T, **C.metric_row(st, fold.test, METRICS), "seconds": t.seconds})

        # --- model adaptation --------------------------------------------------------------------
        rng = np.random.default_rng(args.seed + fold.fold)
        perm = rng.permutation(fold.train.n_queries)
        A, B = fold.train.queries(np.sort(perm[: perm.size // 2])), fold.train.queries(np.sort(perm[perm.size // 2:]))
        lr = co.LambdaRank(metric="ndcg")
        half = max(1, args.rounds // 2)
        variants = {}
        base = C.train_lightgbm(lr, A, args.rounds, params)
        T, _ = C.best_round(C.staged_lightgbm(base, fold.vali.X), fold.vali, "ndcg@10")
        base_raw = {k: base.predict(s.X, num_iteration=T, raw_score=True) for k, s in
                    (("B", B), ("vali", fold.vali), ("test", fold.test))}
        variants["base (A)"] = (T, base_raw["test"])
        Tb, _, st, _ = fit_select(lr, B, fold, args.rounds, params)
        variants["B only"] = (Tb, st)
        Ta, _, st, c = fit_select(co.LambdaRank(metric="ndcg"), B, fold, half, params, init=base_raw["B"],
                                  init_vali=base_raw["vali"], init_test=base_raw["test"])
        variants["adapted: base (A) + B"] = (Ta, st)
        curves.setdefault((fold.dataset, "adaptation"), []).append(c)
        Tf, _, st, _ = fit_select(lr, fold.train, fold, args.rounds, params)
        variants["A and B together"] = (Tf, st)
        for name, (T, st) in variants.items():
            adapt_rows.append({**tag, "model": name, "T": T, **C.metric_row(st, fold.test, ["ndcg@10", "err@10"])})

        # --- optimal linear combination ----------------------------------------------------------
        s1v, s1t = scores["LambdaRank-NDCG"]
        for other in [n for n, _ in rankers() if n != "LambdaRank-NDCG"]:
            s2v, s2t = scores[other]
            alpha, vbest = best_linear_combination(s1v, s2v, fold.vali.y, fold.vali.sizes, k=10)
            comb = alpha * s1t + (1 - alpha) * s2t
            nd = lambda s, sp=fold.test: co.metrics.ndcg(s, sp.y, sp.sizes, k=10)  # noqa: E731
            comb_rows.append({**tag, "s1": "LambdaRank-NDCG", "s2": other, "alpha": alpha,
                              "vali s1": nd(s1v, fold.vali), "vali s2": nd(s2v, fold.vali), "vali combined": vbest,
                              "test s1": nd(s1t), "test s2": nd(s2t), "test combined": nd(comb)})
            grid = np.linspace(0, 1, 101)
            alpha_curves.setdefault((fold.dataset, other), []).append(
                [co.metrics.ndcg(a * s1v + (1 - a) * s2v, fold.vali.y, fold.vali.sizes, k=10) for a in grid])

    t1 = C.mean_rows(rows, ["dataset", "method"], METRICS + ["T", "seconds"])
    C.emit_table(args, "lambdamart_rankers", t1, ["dataset", "method"] + METRICS + ["T", "seconds"],
                 title=f"RankNet / LambdaRank / LambdaMART: test metrics at the round chosen on validation NDCG@10 "
                       f"(mean over folds {args.folds}; at most {args.rounds} rounds)")
    t2 = C.mean_rows(adapt_rows, ["dataset", "model"], ["ndcg@10", "err@10", "T"])
    C.emit_table(args, "lambdamart_adaptation", t2, ["dataset", "model", "ndcg@10", "err@10", "T"],
                 title=f"Model adaptation (LambdaRank-NDCG): base on query half A, continued on half B from its "
                       f"scores for at most {max(1, args.rounds // 2)} rounds (test)")
    t3 = C.mean_rows(comb_rows, ["dataset", "s1", "s2"],
                     ["alpha", "vali s1", "vali s2", "vali combined", "test s1", "test s2", "test combined"])
    C.emit_table(args, "lambdamart_combination", t3,
                 ["dataset", "s1", "s2", "alpha", "vali s1", "vali s2", "vali combined", "test s1", "test s2",
                  "test combined"],
                 title="Optimal linear combination alpha*s1 + (1-alpha)*s2: alpha exact on validation NDCG@10, "
                       "test NDCG@10")
    plot(args, curves, alpha_curves, t2)
    return t1, t2, t3


def plot(args, curves, alpha_curves, adapt):
    # draw_curves draws coinciding curves once, labelled "A = B" (RankNet and LambdaRank-MAP, say, can
    # give the same curve on few rounds), and partly overlapping ones over a pale, wide copy.
    datasets = list(dict.fromkeys(d for d, _ in curves))
    fig, axes = C.new_figure(len(datasets), 3, height=4.6)  # room for the legends below the panels
    for d, (a1, a2, a3) in zip(datasets, axes):
        means = [(name, np.mean(cs, axis=0)) for (dd, name), cs in curves.items() if dd == d and name != "adaptation"]
        C.curve_panel(a1, [(np.arange(1, c.size + 1), c, name, dict(lw=1.2)) for name, c in means],
                      title=f"{d}: test NDCG@10 against rounds", xlabel="rounds", ylabel="NDCG@10")
        c = np.mean(curves[(d, "adaptation")], axis=0)
        x = np.arange(1, c.size + 1)
        lines = [(x, c, "adapted: base (A) + rounds on B", dict(color="tab:red", lw=1.2))]
        for r, style in zip([r for r in adapt if r["dataset"] == d and not r["model"].startswith("adapted")],
                            (":", "--", "-.")):
            lines.append((x[[0, -1]], np.full(2, r["ndcg@10"]), r["model"], dict(ls=style, color="k", lw=1)))
        C.curve_panel(a2, lines,
                      title=f"{d}: model adaptation", xlabel="adaptation rounds on B", ylabel="test NDCG@10")
        grid = np.linspace(0, 1, 101)
        C.curve_panel(a3, [(grid, np.mean(cs, axis=0), f"LambdaRank-NDCG + {other}", dict(lw=1.2))
                           for (dd, other), cs in alpha_curves.items() if dd == d],
                      title=f"{d}: combination on validation", xlabel="alpha (weight of LambdaRank-NDCG)",
                      ylabel="validation NDCG@10")
    C.data_title(fig, args, "RankNet, LambdaRank and LambdaMART (Burges 2010): rounds, model adaptation, "
                            "linear combination")
    C.save_figure(fig, args, "lambdamart")


if __name__ == "__main__":
    main(sys.argv[1:])
