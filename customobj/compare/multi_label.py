r"""``customobj compare --labels COL,COL[,...]``: the trade-off between several labels, method by method.

Each method of :class:`customobj.multi.MultiObjective` named in ``--methods`` trains LightGBM with one
LambdaRank per label on every fold, once per preference vector (the preference-based methods) or per
bound (the constrained ones); every model is scored on the fold's test part by each label's NDCG@k.
Reported per method (mean over folds): each label's NDCG@k; the hypervolume of its front (the exact
volume its models' points ``(NDCG_1, ..., NDCG_m)`` dominate above 0 on one fold, :func:`hypervolume`);
for the preference-based methods the maximum weighted loss of Mahapatra et al. (2023, section 5.2),
``max_k r_k (1 - NDCG_k)`` (lower: closer to the preference ray); for the constrained ones whether each
bound was met on the training data (the secondary labels' mean LambdaRank loss per query, which the
bound caps) and on the test part (secondary NDCG@k at least that of the linear model whose training
costs gave the bound, minus :data:`NDCG_SLACK`).

Label columns: ``label`` is the data set's relevance label; a number ``j`` is feature ``j`` (LETOR's
1-based feature id), graded per query into ``0..GRADES`` and removed from the features (the KDD
paper's protocol, as ``load_letor(label_features=...)`` moves it). The first column is the primary.

References
----------
Mahapatra, Dong, Chen, Momma (2023), "Multi-Label Learning to Rank through Multi-Objective
Optimization", KDD, sections 4-5.
"""
from __future__ import annotations

import argparse
import io
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from .._cli_errors import RunError, UsageError
from .._extras import available, install_hint
from . import output
from .multi_settings import BOUND_RAYS, RAYS, parse_bounds, parse_preferences, preference_vectors

__all__ = ["column_name", "MULTI_METHODS", "DEFAULT_MULTI_METHODS", "RAYS", "BOUND_RAYS", "RESULT_FILES",
           "parse_labels", "parse_multi_methods", "preferences", "hypervolume", "max_weighted_loss", "run"]

#: The ``method=`` names of MultiObjective, in the order compare reports them.
MULTI_METHODS = ("linear", "stochastic", "chebyshev", "epo", "wc_mgda", "epsilon_constraint", "ec_mgda")
PREFERENCE_METHODS = frozenset(MULTI_METHODS[:5])
CONSTRAINED_METHODS = frozenset(MULTI_METHODS[5:])
DEFAULT_MULTI_METHODS = "linear,epo,epsilon_constraint"
# RAYS and BOUND_RAYS (multi_settings): the default --preferences and --bounds.
#: A bound counts as met on the test part when the secondary NDCG@k is at most this far below the target.
NDCG_SLACK = 0.01
GRADES = 4  # a feature used as a label is graded per query into 0..GRADES
K = 10  # NDCG@K
RESULT_FILES = ("multi_label.csv", "multi_summary.csv", "pareto.png", "weights.png", "multi_label.json")


def parse_labels(text: str) -> list:
    """``"label,41"`` -> ``["label", 41]``; at least two distinct columns (``UsageError`` naming the bad one)."""
    out: list = []
    for tok in (t.strip() for t in str(text).split(",")):
        if tok == "label":
            col: object = "label"
        else:
            try:
                col = int(tok)
            except ValueError:
                raise UsageError(f"--labels: unknown label column {tok!r} (use 'label' for the relevance label "
                                 "or a feature number such as 41)") from None
            if col < 1:
                raise UsageError(f"--labels: unknown label column {tok!r} (feature numbers start at 1)")
        if col in out:
            raise UsageError(f"--labels: column {tok!r} is given twice")
        out.append(col)
    if len(out) < 2:
        raise UsageError(f"--labels needs at least 2 label columns (got {len(out)}: {text!r}); one label is "
                         "one objective: run compare without --labels")
    return out


def parse_multi_methods(text: str) -> list:
    """``"linear,epo"`` -> the names, each one of :data:`MULTI_METHODS` (``UsageError`` naming it)."""
    names = [t.strip() for t in str(text).split(",") if t.strip()]
    for n in names:
        if n not in MULTI_METHODS:
            raise UsageError(f"--methods: unknown multi-label method {n!r} with --labels (choose from "
                             f"{', '.join(MULTI_METHODS)})")
    if not names or len(set(names)) != len(names):
        raise UsageError(f"--methods with --labels needs distinct method names, got {text!r}")
    return names


def preferences(m: int) -> np.ndarray:
    """One preference vector per ray of :data:`RAYS`: ``(1 - w, w / (m - 1), ...)``, all positive.

    >>> preferences(2)[0].tolist()
    [0.9, 0.1]
    """
    return preference_vectors(RAYS, m)


def hypervolume(points: np.ndarray, reference: np.ndarray) -> float:
    r"""The exact volume dominated by ``points`` (larger is better) above ``reference``.

    .. math:: HV = \lambda\Big(\bigcup_i [z_1, p_{i1}] \times \dots \times [z_m, p_{im}]\Big)

    Computed by slicing along the last coordinate (Zitzler's HSO): between two successive levels of
    the last coordinate the slice is the ``m - 1``-dimensional volume of the points at or above it.
    With two labels this is the sweep of the staircase: exact area. Points not above the reference
    in every coordinate add nothing.

    >>> float(hypervolume(np.array([[0.5, 0.2], [0.3, 0.4]]), np.zeros(2)))
    0.16
    """
    p = np.asarray(points, dtype=np.float64).reshape(-1, np.size(reference))
    z = np.asarray(reference, dtype=np.float64)
    p = p[np.all(p > z, axis=1)]
    if p.shape[0] == 0:
        return 0.0
    if z.size == 1:
        return float(p[:, 0].max() - z[0])
    levels = np.unique(p[:, -1])[::-1]
    total = 0.0
    for i, level in enumerate(levels):
        below = levels[i + 1] if i + 1 < levels.size else z[-1]
        total += hypervolume(p[p[:, -1] >= level][:, :-1], z[:-1]) * (level - below)
    return round(total, 12)


def max_weighted_loss(ndcgs: np.ndarray, preference: np.ndarray) -> float:
    """``max_k r_k (1 - NDCG_k)``: how far a model lies from its preference ray (the paper's measure).

    >>> max_weighted_loss(np.array([0.8, 0.5]), np.array([0.5, 0.5]))
    0.25
    """
    return float(np.max(np.asarray(preference) * (1.0 - np.asarray(ndcgs))))


def column_name(col) -> str:
    """How a label column is written in tables and plots: ``relevance`` or ``feature 41``."""
    return "relevance" if col == "label" else f"feature {col}"


def _grade_per_query(values, sizes):
    out = np.zeros(values.size)
    start = 0
    for n in sizes:
        v = values[start:start + n]
        span = v.max() - v.min() if n else 0.0
        if span > 0:
            out[start:start + n] = np.round(GRADES * (v - v.min()) / span)
        start += n
    return out


def _columns(split, cols):
    """``(X without the label features, [label column per entry of cols])``."""
    feats = [c - 1 for c in cols if c != "label"]
    labels = [split.y if c == "label" else _grade_per_query(split.X[:, c - 1], split.sizes) for c in cols]
    keep = np.setdiff1d(np.arange(split.X.shape[1]), feats)
    return np.ascontiguousarray(split.X[:, keep]), labels


def _train(X, labels, sizes, method, kw, args):
    import lightgbm as lgb

    from customobj import LambdaRank, adapters
    from customobj.multi import MultiObjective

    obj = MultiObjective([LambdaRank() for _ in labels], labels=[None, *labels[1:]], method=method, **kw)
    f = adapters.lightgbm_objective(obj)
    ds = lgb.Dataset(X, labels[0], group=sizes)
    params = dict(objective=f, learning_rate=args.learning_rate, num_leaves=args.num_leaves, seed=args.seed,
                  num_threads=args.jobs, deterministic=True, force_row_wise=True, verbose=-1)
    booster = lgb.train(params, ds, args.rounds)
    with warnings.catch_warnings():  # an unmet bound is reported in the table, not as a warning
        warnings.simplefilter("ignore", UserWarning)
        fitted = f.fitted_attributes(ds)
    return booster, fitted


def _measure(booster, X, labels, sizes):
    """Each label's cost (mean LambdaRank loss per query: what the bounds cap) and NDCG@K at the model's scores."""
    from customobj import LambdaRank
    from customobj.metrics import ndcg

    s = booster.predict(X)
    return (np.array([LambdaRank().loss(s, y, sizes) / sizes.size for y in labels]),
            np.array([ndcg(s, y, sizes, K) for y in labels]))


def _runs(methods, m, rays=RAYS, bounds=parse_bounds(None)):
    """``[(method, setting name, options, preference or None, Bound or None)]`` in training order (the
    linear models of the bounds' shares train first, in ``_fold``, when a constrained method needs them)."""
    prefs = preference_vectors(rays, m)
    runs = []
    for method in methods:
        if method in PREFERENCE_METHODS:
            runs += [(method, f"w={w:g}", {"preference": p}, p, None) for w, p in zip(rays, prefs)]
        else:
            runs += [(method, b.name, {}, None, b) for b in bounds]
    return runs


def _fold(fold, train, test, cols, methods, args, bar, trade):
    """One fold's rows and first weights; ``trade`` is ``(shares of --preferences, Bounds of --bounds)``."""
    X, labels = _columns(train, cols)
    Xt, tlabels = _columns(test, cols)
    m = len(cols)
    anchors: dict = {}  # linear models of the bounds' shares: (training costs, test NDCGs)
    rows, weights = [], {}
    if CONSTRAINED_METHODS & set(methods):
        for w in {b.ray for b in trade[1] if b.ray is not None}:
            booster, _ = _train(X, labels, train.sizes, "linear", {"preference": preference_vectors((w,), m)[0]}, args)
            anchors[w] = (_measure(booster, X, labels, train.sizes)[0][1:],
                          _measure(booster, Xt, tlabels, test.sizes)[1])
    for method, setting, kw, pref, bound in _runs(methods, m, *trade):
        bar.set_description(f"fold {fold} {method} {setting}")
        if bound is not None:
            kw = {"bounds": anchors[bound.ray][0] if bound.ray is not None else np.full(m - 1, bound.value)}
        booster, fitted = _train(X, labels, train.sizes, method, kw, args)
        test_cost, nd = _measure(booster, Xt, tlabels, test.sizes)
        row = {"fold": fold, "method": method, "setting": setting,
               **{f"ndcg{K}_{c}": float(v) for c, v in zip(cols, nd)}}
        if pref is not None:
            row["preference"] = "/".join(f"{v:.3g}" for v in pref)
            row["max_weighted_loss"] = max_weighted_loss(nd, pref)
        else:
            cap = kw["bounds"]
            train_cost = _measure(booster, X, labels, train.sizes)[0][1:]  # after the last tree, as the bound's
            row["bounds"] = "/".join(f"{v:.4g}" for v in cap)
            row["train_costs"] = "/".join(f"{v:.4g}" for v in train_cost)
            row["bound_met_train"] = bool(np.all(train_cost <= cap))
            if bound.ray is not None:  # met on test: within NDCG_SLACK of the linear model's secondary NDCG
                target = anchors[bound.ray][1][1:]
                row[f"ndcg{K}_targets"] = "/".join(f"{v:.4f}" for v in target)
                row["bound_met_test"] = bool(np.all(nd[1:] >= target - NDCG_SLACK))
            else:  # a cost bound: met on test when the secondary test costs are within it
                row["test_costs"] = "/".join(f"{v:.4g}" for v in test_cost[1:])
                row["bound_met_test"] = bool(np.all(test_cost[1:] <= cap))
        rows.append(row)
        weights.setdefault(method, []).append((setting, fitted["label_weights_"]))
        bar.update(1)
    return rows, weights


def _interval(values):
    """Mean and the half-width of a 95% t-interval over the folds (0 for one fold: no spread measured)."""
    from scipy import stats

    v = np.asarray(values, dtype=float)
    if v.size < 2:
        return float(v.mean()), 0.0
    return float(v.mean()), float(stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size))


def summarise(rows: list, cols: list, methods: list) -> list:
    """Per method: each label's mean NDCG@k, the hypervolume (mean and 95% t half-width over folds), the
    mean maximum weighted loss or the bounds met (counts of models) on the training and test parts."""
    keys = [f"ndcg{K}_{c}" for c in cols]
    out = []
    for method in methods:
        mine = [r for r in rows if r["method"] == method]
        folds = sorted({r["fold"] for r in mine})
        hv = [hypervolume(np.array([[r[k] for k in keys] for r in mine if r["fold"] == f]), np.zeros(len(cols)))
              for f in folds]
        s = {"method": method, "models": len(mine), "folds": len(folds),
             **{k: float(np.mean([r[k] for r in mine])) for k in keys}}
        s["hypervolume"], s["hypervolume_ci95"] = _interval(hv)
        if method in PREFERENCE_METHODS:
            s["max_weighted_loss"], s["max_weighted_loss_ci95"] = _interval(
                [np.mean([r["max_weighted_loss"] for r in mine if r["fold"] == f]) for f in folds])
        else:
            s["bounds_met_train"] = f"{sum(r['bound_met_train'] for r in mine)}/{len(mine)}"
            s["bounds_met_test"] = f"{sum(r['bound_met_test'] for r in mine)}/{len(mine)}"
        out.append(s)
    return out


def _pm(s: dict, key: str) -> str:
    """``mean +- half-width`` over several folds, the mean alone for one."""
    return f"{s[key]:.4f}" + (f" +- {s[key + '_ci95']:.4f}" if s["folds"] > 1 else "")


def format_summary(summary: list, cols: list) -> str:
    head = f"{'method':<20}" + "".join(f"{'NDCG@' + str(K) + ' ' + column_name(c):>20}" for c in cols)
    lines = [head + f"{'hypervolume':>20}  trade-off"]
    for s in summary:
        hv = _pm(s, "hypervolume")
        if "max_weighted_loss" in s:
            extra = f"max weighted loss {_pm(s, 'max_weighted_loss')}"
        else:
            extra = f"bounds met: train {s['bounds_met_train']}, test {s['bounds_met_test']}"
        lines.append(f"{s['method']:<20}" + "".join(f"{s[f'ndcg{K}_{c}']:>20.4f}" for c in cols) + f"{hv:>20}  {extra}")
    return "\n".join(lines)


def _csv(rows: list) -> bytes:
    import csv

    keys: list = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=keys, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue().encode()


def _png(fig) -> bytes:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


def draw_pareto(rows: list, cols: list, methods: list, title: str, rays: tuple = RAYS) -> bytes:
    """Labels 1 and 2: each model's test NDCG@k (fold means), the preference rays ``r_1 l_1 = r_2 l_2``
    (``l = 1 - NDCG``) dashed, and each constrained model's test target (the bound in NDCG) dotted."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    k1, k2 = f"ndcg{K}_{cols[0]}", f"ndcg{K}_{cols[1]}"
    fig, ax = plt.subplots(figsize=(6.5, 4.8))
    for w, p in zip(rays, preference_vectors(rays, len(cols))):
        t = np.linspace(0, 1, 50)
        ax.plot(1 - t * p[1], 1 - t * p[0], ls="--", lw=0.6, color="0.75")  # r1 (1 - x) = r2 (1 - y)
    for i, method in enumerate(methods):
        mine = [r for r in rows if r["method"] == method]
        settings = list(dict.fromkeys(r["setting"] for r in mine))
        pts = np.array([[np.mean([r[k] for r in mine if r["setting"] == s]) for k in (k1, k2)] for s in settings])
        ax.plot(pts[:, 0], pts[:, 1], "os^vD<>"[i % 7], color=f"C{i}", label=method)
        for s, p in zip(settings, pts):
            ax.annotate(s.replace("bound from ", ""), p, textcoords="offset points", xytext=(4, 2), fontsize=6,
                        color=f"C{i}")
        if method in CONSTRAINED_METHODS:
            for s in (s for s in settings if s.startswith("bound from")):  # a cost bound has no NDCG target
                target = np.mean([float(r[f"ndcg{K}_targets"].split("/")[0]) for r in mine if r["setting"] == s])
                ax.axhline(target - NDCG_SLACK, color=f"C{i}", lw=0.7, ls=":")
    lo = min(min(r[k1] for r in rows), min(r[k2] for r in rows)) - 0.02
    ax.set_xlim(lo, 1.0)
    ax.set_ylim(lo, 1.0)
    ax.set_xlabel(f"test NDCG@{K}, label 1: {column_name(cols[0])} (fold mean)")
    ax.set_ylabel(f"test NDCG@{K}, label 2: {column_name(cols[1])} (fold mean)")
    ax.set_title(title, fontsize=8)
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    return _png(fig)


def draw_weights(weights: dict, cols: list) -> bytes:
    """Per method, each model's weight on label 2 (the rest on label 1 when m = 2) round by round, first fold."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(weights), 1, figsize=(6.5, 1.9 * len(weights)), squeeze=False, sharex=True)
    for ax, (method, runs) in zip(axes[:, 0], weights.items()):
        for j, (setting, w) in enumerate(runs):
            ax.plot(np.arange(1, w.shape[0] + 1), w[:, 1], lw=0.9, color=f"C{j}", label=setting)
        top = max(float(w[:, 1].max()) for _, w in runs)  # epsilon_constraint's multipliers may pass 1
        ax.set_ylim(-0.02, max(1.02, 1.05 * top))
        ax.set_ylabel(f"weight of {column_name(cols[1])}", fontsize=7)
        ax.set_title(method, fontsize=8)
        ax.legend(fontsize=6, loc="upper right", ncol=3)
    axes[-1, 0].set_xlabel("boosting round")
    fig.tight_layout()
    return _png(fig)


def _check_out(out: Path, overwrite: bool) -> None:
    """compare's rules (customobj.compare.output) for this run's files."""
    output.check_folder(out, overwrite=True)
    found = [n for n in RESULT_FILES if (out / n).exists()]
    if found and not overwrite:
        raise UsageError(f"--out {out} already holds multi-label results ({', '.join(found)}); pass --overwrite "
                         "to replace them, or choose another --out")


def run(args: argparse.Namespace, default_methods: str) -> int:
    """``compare --labels``: check, train every method x setting x fold, report, write the folder.
    ``default_methods`` is compare's own default list: left as it is, the multi-label methods run."""
    from tqdm.auto import tqdm

    from .._io import replace_files
    from .folds import load_folds

    say = (lambda *a: None) if args.quiet else print
    cols = parse_labels(args.labels)
    trade = (parse_preferences(getattr(args, "preferences", None)), parse_bounds(getattr(args, "bounds", None)))
    methods = parse_multi_methods(DEFAULT_MULTI_METHODS if args.methods == default_methods else args.methods)
    for opt, given in (("--click-log", args.click_log), ("--clicks", args.clicks), ("--tune", args.tune),
                       ("--baseline", args.baseline), ("--seeds", args.seeds != 1), ("--device", args.device.is_cuda)):
        if given:
            raise UsageError(f"{opt} does not apply with --labels (multi-label comparison); drop it")
    out = Path(args.out or output.DEFAULT_OUT)
    _check_out(out, args.overwrite or args.out is None)  # the default folder is replaced, as compare's
    plot = not args.no_plot
    if plot and not available("matplotlib"):
        plot = False
        print(f"note: matplotlib is not installed, so pareto.png and weights.png are not drawn "
              f"({install_hint('matplotlib')} adds it; --no-plot silences this note)", file=sys.stderr)
    from customobj import adapters  # noqa: F401  (OpenMP wait policy before lightgbm loads)

    folds, desc = load_folds(args)
    n_feat = folds[0][1].X.shape[1]
    for c in cols:
        if c != "label" and c > n_feat:
            raise UsageError(f"--labels: unknown label column {c}: the data has features 1..{n_feat}")
    if sum(c != "label" for c in cols) >= n_feat:
        raise UsageError("--labels would move every feature into a label: leave some features to train on")
    total = len(folds) * len(_runs(methods, len(cols), *trade))
    bar = tqdm(total=total, file=sys.stderr, disable=args.quiet, unit="run", dynamic_ncols=True, leave=False)

    rows: list = []
    first_weights: dict = {}
    start = time.perf_counter()
    try:
        for fold, train, _, test in folds:
            try:
                fold_rows, weights = _fold(fold, train, test, cols, methods, args, bar, trade)
            except (ValueError, TypeError) as exc:
                raise RunError(f"fold {fold}: {exc}") from None
            rows += fold_rows
            first_weights = first_weights or weights
    finally:
        bar.close()
    wall = time.perf_counter() - start
    summary = summarise(rows, cols, methods)
    title = f"{desc}, folds {','.join(str(f[0]) for f in folds)}, {args.rounds} rounds"
    contents = {"multi_label.csv": _csv(rows), "multi_summary.csv": _csv(summary)}
    if plot:
        contents["pareto.png"] = draw_pareto(rows, cols, methods, title, trade[0])
        contents["weights.png"] = draw_weights(first_weights, cols)
    meta = {"data": desc, "labels": [str(c) for c in cols], "methods": methods, "rays": list(trade[0]),
            "bounds": [b.name for b in trade[1]], "k": K, "hypervolume_reference": [0.0] * len(cols),
            "rounds": args.rounds, "wall_time_s": wall, "summary": summary}
    contents["multi_label.json"] = json.dumps(meta, indent=2).encode()
    try:
        replace_files(out, contents, remove=[n for n in RESULT_FILES if n not in contents])
    except OSError as exc:
        raise RunError(f"could not write the results to {out}: {exc}") from None
    say(f"data: {desc}; labels {', '.join(map(str, cols))}; {len(rows)} models; wall time {wall:.1f} s")
    say(format_summary(summary, cols))
    print(f"wrote {', '.join(contents)} to {out.resolve()}")
    return 0
