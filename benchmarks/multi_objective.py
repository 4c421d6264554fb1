"""Multi-label learning to rank (issue 41): a study of the trade-offs on MQ2008, and the cost of a round.

``study``: MQ2008, every fold; the second label is a feature (``--feature``, default 41, PageRank),
graded per query into 0..4 (``round(4 (v - min) / (max - min))`` within each query) and removed from
the features (``load_letor(label_features=[...])``). LightGBM trains ``MultiObjective([LambdaRank(),
LambdaRank()], labels=[None, second])`` on the training split with the same trees for every model:

- linear scalarisation on an 11-point grid of weights ``(1 - w, w)``, w = 0, 0.1, ..., 1;
- EPO on the preference rays ``(1 - w, w)`` of ``--rays`` (a subset of the grid), beside the
  grid's linear model of the same vector: the paper's maximum weighted loss ``max_k r_k l_k``
  with ``l_k = 1 - NDCG@10`` of label k on the test split (lower: closer to the ray), and with
  ``l_k`` the test costs (mean LambdaRank loss per query: what EPO balances in training);
- epsilon-constraint with a bound on the second label's training cost taken from the linear model
  at ``--bound-weights`` (so the bound is met by some model): on the test split, the bound is met
  when its NDCG@10 on label 2 is at least that linear model's minus 0.01; its NDCG@10 on label 1 is
  compared with the best grid model that meets the same NDCG bound on the test split; once per
  augmented-Lagrangian ``--penalties``.

Prints per fold and the mean with a 95% t-interval over the folds. ``--synthetic`` runs the same study
on two conflicting synthetic tasks (``conflicting_tasks``: the labels grade two linear scores whose
directions are at cosine -0.5, 300 queries of 20 rows to train and to test; each ``--folds`` entry a seed).

    nice -n 10 python benchmarks/multi_objective.py study [--data ../shared/data/mq2008] [--rounds 100]
        [--folds 1,2,3,4,5] [--feature 41] [--rays 0.2,0.4,0.5,0.6,0.8] [--bound-weights 0.3,0.7]
        [--penalties 1,10] [--dual-interval 10] [--plot docs/img/multi_objective_front.png] [--synthetic]

``rounds``: the cost of one round of ``MultiObjective`` with m = 2 and 4 LambdaRank labels (methods
``linear``: no costs; ``epsilon_constraint``: the per-label costs, from the gradients' own pass; ``epo``:
costs, Gram matrix and its LP) against m rounds of one LambdaRank, through each library's callable (LightGBM and XGBoost), timed interleaved
(single, multi, single, multi, ...); prints the median ratio ``multi / (m * single)`` per method and
library (the target: at most 1.1, on the fold as it is). ``--scales 1,10,50`` also times the fold's
queries repeated 10 and 50 times (10x, 50x the rows, each copy with its own scores), where a fixed
per-round cost (the LP, Python per round) weighs less: a report beside the target, not the target. A
timing: run it on an idle machine only.

    python benchmarks/multi_objective.py rounds [--data ../shared/data/mq2008/Fold1] [--repeats 30]
        [--methods linear,epsilon_constraint,epo] [--scales 1,10,50]

``kernel``: LambdaRank's pass with the per-label cost (``GRAD_LOSS``) against the gradient-only pass
(``GRAD``) on the same scores, interleaved: the median ratio (what the cost adds per label; ``--scales``
as above).

    python benchmarks/multi_objective.py kernel [--data ../shared/data/mq2008/Fold1] [--repeats 200] [--scales 1,10]

``train``: a user's whole training (``lightgbm.train`` / ``xgboost.train``, ``--rounds`` rounds, trees included)
with m labels against one label's, interleaved: the medians of ``multi / (m * single)`` and ``multi / single``.

    python benchmarks/multi_objective.py train [--rounds 20] [--repeats 10] [--labels 2,4] [--methods ...]

``lp``: one call of EPO's per-round LP on random rounds (``--labels`` m), timed interleaved per call:
scipy's ``linprog`` (HiGHS, the route before), ``milp`` (the same HiGHS solve, the route without highspy),
the closed form (``m = 2``), and the kept model (``customobj.multi.highs_lp``: one highspy model whose
costs and rows change per call, what ``m >= 3`` takes now); prints each one's median and quartiles and its largest difference from ``linprog``'s weights.

    python benchmarks/multi_objective.py lp [--labels 4] [--calls 300]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import numpy as np  # noqa: E402

from customobj import adapters  # noqa: E402  (before lightgbm / xgboost: OpenMP wait policy)
from customobj import LambdaRank  # noqa: E402
from customobj.data import load_letor  # noqa: E402
from customobj.metrics import ndcg  # noqa: E402
from customobj.multi import MultiObjective  # noqa: E402

import lightgbm as lgb  # noqa: E402

LGB = dict(learning_rate=0.1, num_leaves=31, min_data_in_leaf=20, deterministic=True, num_threads=2, verbose=-1,
           force_row_wise=True)
GRID = np.round(np.linspace(0, 1, 11), 1)


def grade_per_query(values: np.ndarray, group: np.ndarray, grades: int = 4) -> np.ndarray:
    """Each query's values scaled to [0, 1] within the query and rounded to ``0..grades``."""
    out = np.zeros(values.size)
    start = 0
    for size in group:
        v = values[start:start + size]
        span = v.max() - v.min()
        if span > 0:
            out[start:start + size] = np.round(grades * (v - v.min()) / span)
        start += size
    return out


def load_split(path, feature):
    d = load_letor(path, label_features=[feature])
    return d.X, d.y, grade_per_query(d.extra_labels[:, 0], d.group), d.group


def train(obj, split, rounds):
    X, y, _, group = split
    f = adapters.lightgbm_objective(obj)
    ds = lgb.Dataset(X, y, group=group)
    booster = lgb.train(dict(LGB, objective=f), ds, rounds)
    return booster, f.fitted_attributes(ds)


def score(booster, split):
    """Test NDCG@10 of both labels and their costs (mean LambdaRank loss per query, what the methods weigh)."""
    X, y, y2, group = split
    s = booster.predict(X)
    costs = [LambdaRank().loss(s, lab, group) / len(group) for lab in (y, y2)]
    return ndcg(s, y, group, 10), ndcg(s, y2, group, 10), *costs


def train_costs(booster, split):
    """Both labels' costs (mean LambdaRank loss per query) on ``split``: what the methods weigh in training."""
    X, y, y2, group = split
    s = booster.predict(X)
    return tuple(LambdaRank().loss(s, lab, group) / len(group) for lab in (y, y2))


def model(split, method, rounds, **kw):  # noqa: ARG001
    _, _, y2, _ = split
    return MultiObjective([LambdaRank(), LambdaRank()], labels=[None, y2], method=method, **kw)


def interval(values):
    """Mean and the half-width of a 95% t-interval over the folds."""
    from scipy import stats

    v = np.asarray(values, dtype=float)
    if v.size < 2:
        return float(v.mean()), float("nan")
    return float(v.mean()), float(stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size))


def study_fold(root, fold, args):
    train_split = load_split(os.path.join(root, f"Fold{fold}", "train.txt.gz"), args.feature)
    test_split = load_split(os.path.join(root, f"Fold{fold}", "test.txt.gz"), args.feature)
    return study_splits(train_split, test_split, args)


def conflicting_tasks(seed, n_queries=300, size=20, n_features=10, cosine=-0.5):
    """Two conflicting tasks on the same rows: each label grades (0..4, per query) a linear score of the
    features plus noise, the two score directions at the given ``cosine`` (negative: what raises one label
    lowers the other). Returns ``(train, test)`` splits of ``(X, y, y2, group)``, ``n_queries`` each."""
    rng = np.random.default_rng(seed)
    u = rng.normal(size=n_features)
    u /= np.linalg.norm(u)
    v = rng.normal(size=n_features)
    v -= (v @ u) * u
    v /= np.linalg.norm(v)
    w1, w2 = u, cosine * u + np.sqrt(1.0 - cosine ** 2) * v
    splits = []
    for _ in range(2):
        X = rng.normal(size=(n_queries * size, n_features))
        group = np.full(n_queries, size)
        labels = [grade_per_query(X @ w + 0.5 * rng.normal(size=X.shape[0]), group) for w in (w1, w2)]
        splits.append((X, labels[0], labels[1], group))
    return splits


def study_splits(train_split, test_split, args):
    grid = {}
    for w in GRID:
        booster, _ = train(model(train_split, "linear", args.rounds, preference=[1 - w, w]), train_split, args.rounds)
        # the training costs (mean LambdaRank loss per query) at the end: label 2's is the bounds' value
        grid[w] = (*score(booster, test_split), *train_costs(booster, train_split))
    mwl: dict = {"ls": [], "epo": [], "ls_cost": [], "epo_cost": [], "ls_train": [], "epo_train": []}
    epo_points = {}
    for w in args.rays:
        r = np.array([1 - w, w])
        booster, _ = train(model(train_split, "epo", args.rounds, preference=r), train_split, args.rounds)
        epo_points[w] = (*score(booster, test_split), *train_costs(booster, train_split))
        for name, (n1, n2, l1, l2, t1, t2) in (("epo", epo_points[w]), ("ls", grid[w])):
            mwl[name].append(max(r[0] * (1 - n1), r[1] * (1 - n2)))  # the paper's loss: 1 - NDCG@10
            mwl[name + "_cost"].append(max(r[0] * l1, r[1] * l2))  # the costs EPO balances, on the test split
            mwl[name + "_train"].append(max(r[0] * t1, r[1] * t2))  # ... and on the training split
    ec = []
    for w in args.bound_weights:
        g1, g2, _, _, _, c2 = grid[w]
        for penalty in args.penalties:
            booster, fitted = train(model(train_split, "epsilon_constraint", args.rounds, bounds=[c2], penalty=penalty,
                                          dual_interval=args.dual_interval), train_split, args.rounds)
            n1, n2, *_ = score(booster, test_split)
            feasible = [v[0] for v in grid.values() if v[1] >= g2 - 0.01]
            ec.append(dict(bound_weight=w, penalty=penalty, ndcg2_target=g2, ec_ndcg1=n1, ec_ndcg2=n2,
                           met=n2 >= g2 - 0.01, best_ls_ndcg1=max(feasible),
                           train_cost2=float(fitted["label_costs_"][-1, 1]), bound=c2))
    return dict(grid=grid, ec=ec, epo=epo_points, **{f"mwl_{k}": float(np.mean(v)) for k, v in mwl.items()})


def plot_front(results, args, path):
    """The fold means of each model's test NDCG@10 on both labels: the linear grid (a line, its weights
    written), EPO per ray, the epsilon-constraint models; written atomically to ``path``."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from customobj._io import atomic_write_bytes

    def mean(points):
        return np.mean([p[0] for p in points]), np.mean([p[1] for p in points])

    fig, ax = plt.subplots(figsize=(6.5, 4.6))
    ls = [mean([r["grid"][w] for r in results]) for w in GRID]
    ax.plot([p[0] for p in ls], [p[1] for p in ls], "o-", color="0.5", label="linear scalarisation (w on label 2)")
    for w, p in zip(GRID, ls):
        ax.annotate(f"{w:g}", p, textcoords="offset points", xytext=(4, 2), fontsize=7, color="0.4")
    epo = [mean([r["epo"][w] for r in results]) for w in args.rays]
    ax.plot([p[0] for p in epo], [p[1] for p in epo], "s", color="C0", label="EPO (one per preference ray)")
    for i, e0 in enumerate(results[0]["ec"]):
        p = mean([(r["ec"][i]["ec_ndcg1"], r["ec"][i]["ec_ndcg2"]) for r in results])
        target = np.mean([r["ec"][i]["ndcg2_target"] for r in results])
        ax.plot(*p, "^", color=f"C{1 + i}", label=f"eps-constraint, bound from w={e0['bound_weight']:g}, "
                f"penalty {e0['penalty']:g}")
        ax.axhline(target - 0.01, color=f"C{1 + i}", lw=0.8, ls=":")
    ax.set_xlabel("NDCG@10, label 1 (relevance), test folds' mean")
    ax.set_ylabel("NDCG@10, label 2 (graded feature), test folds' mean")
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    atomic_write_bytes(path, buf.getvalue())


def study(args):
    results = []
    for fold in args.folds:
        r = study_splits(*conflicting_tasks(fold), args) if args.synthetic else study_fold(args.data, fold, args)
        results.append(r)
        print(f"Fold{fold}: mean max weighted loss (1 - NDCG@10) linear {r['mwl_ls']:.4f}  epo {r['mwl_epo']:.4f}; "
              f"(test costs) linear {r['mwl_ls_cost']:.4f}  epo {r['mwl_epo_cost']:.4f}", flush=True)
        for e in r["ec"]:
            print(f"  eps-constraint (bound from w={e['bound_weight']}, penalty {e['penalty']}): NDCG@10 label2 {e['ec_ndcg2']:.4f} "
                  f"(target {e['ndcg2_target']:.4f}, met {e['met']}), label1 {e['ec_ndcg1']:.4f} vs best "
                  f"feasible linear {e['best_ls_ndcg1']:.4f}; train cost2 {e['train_cost2']:.4f} "
                  f"(bound {e['bound']:.4f})", flush=True)
    for suffix, what in (("", "1 - NDCG@10"), ("_cost", "test costs"), ("_train", "training costs")):
        ls, ci_ls = interval([r["mwl_ls" + suffix] for r in results])
        epo, ci_epo = interval([r["mwl_epo" + suffix] for r in results])
        diff, ci_diff = interval([r["mwl_epo" + suffix] - r["mwl_ls" + suffix] for r in results])
        print(f"mean max weighted loss ({what}) over {len(results)} folds: linear {ls:.4f} +- {ci_ls:.4f}, epo "
              f"{epo:.4f} +- {ci_epo:.4f}, epo - linear {diff:+.4f} +- {ci_diff:.4f} (95% t-interval)")
    for i, e0 in enumerate(results[0]["ec"]):
        met = sum(r["ec"][i]["met"] for r in results)
        met_train = sum(r["ec"][i]["train_cost2"] <= r["ec"][i]["bound"] for r in results)
        d, ci = interval([r["ec"][i]["ec_ndcg1"] - r["ec"][i]["best_ls_ndcg1"] for r in results])
        print(f"eps-constraint, bound from w={e0['bound_weight']}, penalty {e0['penalty']}: met on {met}/{len(results)} "
              f"test folds (training bound met on {met_train}/{len(results)}); label-1 NDCG@10 minus the best "
              f"feasible linear model's {d:+.4f} +- {ci:.4f}")
    if args.plot:
        plot_front(results, args, args.plot)


def scaled_split(X, y, group, scale):
    """The split's queries repeated ``scale`` times (``scale`` times the rows, the same query sizes and
    label mix): a fixed per-round cost (a solver call, Python per round) weighs ``1 / scale`` as much."""
    return np.tile(X, (scale, 1)), np.tile(y, scale), np.tile(group, scale)


def interleaved(first, second, repeats):
    """``second``'s time over ``first``'s, per pair of calls (first, second, first, second, ...), after one
    untimed call of each (preparation, compilation)."""
    first(), second()
    ratios = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        first()
        t1 = time.perf_counter()
        second()
        ratios.append((time.perf_counter() - t1) / (t1 - t0))
    return ratios


def multi_of(m, method, cols):
    """``MultiObjective`` of ``m`` LambdaRank labels (the split's label, then ``cols``) by ``method``
    (epsilon_constraint: every secondary cost bounded by 1)."""
    kw = {"bounds": [1.0] * (m - 1)} if method == "epsilon_constraint" else {}
    return MultiObjective([LambdaRank()] * m, labels=[None, *cols[:m - 1]], method=method, **kw)


def time_rounds(args):
    import xgboost as xgb

    X0, y0, _, group0 = load_split(os.path.join(args.data, "train.txt.gz"), 41)
    for scale in args.scales:
        X, y, group = scaled_split(X0, y0, group0, scale)
        rng = np.random.default_rng(0)
        cols = [grade_per_query(rng.permutation(y), group) for _ in range(3)]
        scores = rng.normal(size=y.size)  # every copy of a query gets its own scores
        ds = lgb.Dataset(X, y, group=group).construct()
        dm = xgb.DMatrix(X, y, group=group)
        for m in (2, 4):
            for method in args.methods:
                multi = multi_of(m, method, cols)
                for lib, data, make in (("lightgbm", ds, adapters.lightgbm_objective),
                                        ("xgboost", dm, adapters.xgboost_objective)):
                    single_f, multi_f = make(LambdaRank()), make(multi)
                    ratios = np.array(interleaved(lambda: single_f(scores, data), lambda: multi_f(scores, data),
                                                  args.repeats)) / m
                    q = np.percentile(ratios, [25, 50, 75])
                    print(f"rows={y.size} m={m} {method:18s} {lib:8s}: round / (m x single round) median "
                          f"{q[1]:.3f} (quartiles {q[0]:.3f}-{q[2]:.3f}, {args.repeats} interleaved pairs)",
                          flush=True)


def time_training(args):
    """Whole trainings (trees included), multi against single, interleaved; the median ratios."""
    import xgboost as xgb

    X, y, _, group = load_split(os.path.join(args.data, "train.txt.gz"), 41)
    rng = np.random.default_rng(0)
    cols = [grade_per_query(rng.permutation(y), group) for _ in range(max(args.labels) - 1)]
    ds, dm = lgb.Dataset(X, y, group=group).construct(), xgb.DMatrix(X, y, group=group)
    xgb_params = dict(eta=0.1, max_depth=6, nthread=LGB["num_threads"], tree_method="hist")
    fits = {"lightgbm": lambda o: lgb.train(dict(LGB, objective=adapters.lightgbm_objective(o)), ds, args.rounds),
            "xgboost": lambda o: xgb.train(adapters.xgboost_params(o, xgb_params), dm, args.rounds,
                                           obj=adapters.xgboost_objective(o))}
    for m in args.labels:
        for method in args.methods:
            multi = multi_of(m, method, cols)
            for lib, fit in fits.items():
                r = np.median(interleaved(lambda: fit(LambdaRank()), lambda: fit(multi), args.repeats))
                print(f"rows={y.size} rounds={args.rounds} m={m} {method:18s} {lib:8s}: training / (m x single "
                      f"training) median {r / m:.3f}, training / single training median {r:.3f} ({args.repeats} "
                      "interleaved pairs)",
                      flush=True)


def time_kernel(args):
    """LambdaRank's gradient pass alone (GRAD) against the same pass with the costs (GRAD_LOSS, what the
    cost-reading methods call per label), interleaved; the median ratio per scale."""
    _, y0, _, group0 = load_split(os.path.join(args.data, "train.txt.gz"), 41)
    for scale in args.scales:
        y, group = np.tile(y0, scale), np.tile(group0, scale)  # scaled_split's labels and queries
        obj = LambdaRank()
        prep = obj.prepare(y, group=group)
        scores = np.random.default_rng(0).normal(size=y.size)
        g, h = np.zeros(y.size), np.zeros(y.size)
        ratios = interleaved(lambda: obj._grad_hess(scores, prep, None, g, h),
                             lambda: obj._grad_hess_loss(scores, prep, None, g, h), args.repeats)
        q = np.percentile(ratios, [25, 50, 75])
        print(f"rows={y.size} GRAD_LOSS / GRAD median {q[1]:.3f} (quartiles {q[0]:.3f}-{q[2]:.3f}, "
              f"{args.repeats} interleaved pairs)", flush=True)


def time_lp(args):
    from scipy.optimize import linprog

    from customobj.multi.solvers import epo_lp, simplex_lp_highs, simplex_lp_two

    def via_linprog(objective, lhs, rhs):
        m = objective.size
        res = linprog(-objective, A_ub=-lhs if lhs.size else None, b_ub=-rhs if lhs.size else None,
                      A_eq=np.ones((1, m)), b_eq=[1.0], bounds=[(0.0, 1.0)] * m, method="highs")
        return None if res.status != 0 else res.x / res.x.sum()

    m, rng = args.labels, np.random.default_rng(0)
    routes = {"linprog": via_linprog, "milp": simplex_lp_highs}
    if m == 2:
        routes["closed form"] = simplex_lp_two
    try:
        from customobj.multi.highs_lp import SimplexLP

        routes["kept model"] = SimplexLP(m).solve  # highspy, what m >= 3 takes now
    except ImportError:
        print("highspy not installed: the kept model's route is left out")
    times, worst = {k: [] for k in routes}, dict.fromkeys(routes, 0.0)
    for t in range(args.calls):  # balance rounds (random costs) and descent rounds (near the ray), alternately
        g, pref = rng.normal(size=(m, 50)), rng.uniform(0.2, 1, m)
        pref /= pref.sum()
        costs = rng.uniform(0.5, 2, m) if t % 2 == 0 else 1.3 / pref * (1 + rng.normal(scale=1e-3, size=m))
        lp = epo_lp(costs, g @ g.T, pref)
        ref = None
        for name, f in routes.items():
            t0 = time.perf_counter()
            x = f(lp.objective, lp.lhs, lp.rhs)
            times[name].append(time.perf_counter() - t0)
            ref = x if name == "linprog" else ref
            if name != "linprog":
                worst[name] = max(worst[name], np.inf if (x is None) != (ref is None) else
                                  0.0 if x is None else float(np.abs(x - ref).max()))
    for name in routes:
        q = np.percentile(times[name], [25, 50, 75]) * 1e6
        diff = "the reference" if name == "linprog" else f"largest |x - linprog's x| {worst[name]:.1e}"
        print(f"m={m} {name:11s}: median {q[1]:8.1f} us per LP (quartiles {q[0]:.1f}-{q[2]:.1f}); {diff}", flush=True)


def parser() -> argparse.ArgumentParser:
    """The command line (``study`` and ``rounds``); its defaults are the study's."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("study")
    s.add_argument("--data", default="../shared/data/mq2008")
    s.add_argument("--rounds", type=int, default=100)
    s.add_argument("--folds", type=lambda t: [int(v) for v in t.split(",")], default=[1, 2, 3, 4, 5])
    s.add_argument("--feature", type=int, default=41)
    s.add_argument("--rays", type=lambda t: [float(v) for v in t.split(",")], default=[0.2, 0.4, 0.5, 0.6, 0.8])
    s.add_argument("--bound-weights", type=lambda t: [float(v) for v in t.split(",")], default=[0.3, 0.7])
    s.add_argument("--penalties", type=lambda t: [float(v) for v in t.split(",")], default=[1.0, 10.0])
    s.add_argument("--dual-interval", type=int, default=10, help="epsilon_constraint's dual_interval")
    s.add_argument("--synthetic", action="store_true",
                   help="two conflicting synthetic tasks (conflicting_tasks; each fold a seed) instead of MQ2008")
    s.add_argument("--plot", default=None, metavar="PNG", help="write the front (fold means) to this PNG, atomically")
    r = sub.add_parser("rounds")
    r.add_argument("--data", default="../shared/data/mq2008/Fold1")
    r.add_argument("--repeats", type=int, default=30)
    r.add_argument("--scales", type=lambda t: [int(v) for v in t.split(",")], default=[1],
                   help="also time the split's queries repeated K times (K times the rows), per K: a fixed "
                        "per-round cost weighs less on more data (a report beside the target's ratio at K = 1)")
    r.add_argument("--methods", type=lambda t: t.split(","), default=["linear", "epsilon_constraint", "epo"],
                   help="linear reads nothing; epsilon_constraint the per-label costs (fused into the gradients' "
                        "pass); epo the costs, the Gram matrix and its LP")
    t = sub.add_parser("train")
    t.add_argument("--data", default="../shared/data/mq2008/Fold1")
    t.add_argument("--rounds", type=int, default=20)
    t.add_argument("--repeats", type=int, default=10)
    t.add_argument("--labels", type=lambda v: [int(x) for x in v.split(",")], default=[2, 4], help="values of m")
    t.add_argument("--methods", type=lambda v: v.split(","), default=["linear", "epsilon_constraint", "epo"])
    k = sub.add_parser("kernel")
    k.add_argument("--data", default="../shared/data/mq2008/Fold1")
    k.add_argument("--repeats", type=int, default=200)
    k.add_argument("--scales", type=lambda t: [int(v) for v in t.split(",")], default=[1])
    lp = sub.add_parser("lp")
    lp.add_argument("--labels", type=int, default=4, help="m, the number of labels (weights of the LP)")
    lp.add_argument("--calls", type=int, default=300)
    return p


def main(argv=None):
    p = parser()
    args = p.parse_args(argv)
    if any(k < 1 for k in getattr(args, "scales", [1])):
        p.error(f"--scales must be positive integers, got {args.scales}")
    for v in getattr(args, "rays", []) + getattr(args, "bound_weights", []):
        if v not in GRID:
            p.error(f"--rays and --bound-weights must be points of the grid {GRID.tolist()}, got {v}")
    if args.command == "train" and (min(args.labels) < 2 or args.rounds < 1):
        p.error(f"train: --labels must be at least 2 and --rounds positive, got {args.labels}, {args.rounds}")
    {"study": study, "rounds": time_rounds, "train": time_training, "kernel": time_kernel,
     "lp": time_lp}[args.command](args)


if __name__ == "__main__":
    main()
