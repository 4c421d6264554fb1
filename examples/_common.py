"""Shared plumbing of the paper example scripts: options, data, training, curves, tables, plots.

Every script builds its parser with :func:`make_parser`, reads folds with :func:`iter_folds`
(``Split`` objects: dense float32 ``X``, float64 ``y``, int64 query ``sizes``), trains through the
``customobj.adapters`` (LightGBM / XGBoost) or ``customobj.ole.TreeBooster``, turns models into per-round
test scores with the ``staged_*`` helpers, and prints / saves its tables with :func:`emit_table`.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as `python examples/x.py` from anywhere, without installing
    sys.path.insert(0, str(REPO))

from customobj import adapters  # noqa: E402  (before lightgbm / xgboost: sets the OpenMP wait policy)
import customobj as co  # noqa: E402
from customobj.data import load_letor_folds  # noqa: E402
from customobj._io import atomic_write_bytes, replace_files  # noqa: E402
from customobj.compare.trainers import Split as _BaseSplit  # noqa: E402

__all__ = [
    "REPO", "Split", "Fold", "make_parser", "parse", "iter_folds", "progress", "lgb_params", "train_lightgbm",
    "train_xgboost", "staged_lightgbm", "staged_xgboost", "staged_ole", "curve", "metric_row",
    "linear_primal", "linear_ranksvm", "best_round", "emit_table", "mean_rows", "save_figure", "draw_curves",
    "legend_below", "data_title", "Timer",
]


# ------------------------------------------------------------------------------------------------
# options
# ------------------------------------------------------------------------------------------------
def default_data_dir():
    env = os.environ.get("CUSTOMOBJ_DATA")
    return Path(env) if env else REPO.parent / "shared" / "data"


def make_parser(description, *, rounds, folds="1", datasets="mq2008,ohsumed", full_folds="1,2,3,4,5"):
    """The common options. ``--quick`` = tiny settings for tests; ``--full`` = every fold."""
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--data-dir", type=Path, default=default_data_dir(),
                   help="folder holding mq2008/ and ohsumed/ (default: $CUSTOMOBJ_DATA or ../shared/data)")
    p.add_argument("--datasets", default=datasets, help="comma-separated data set names")
    p.add_argument("--folds", default=folds, help="comma-separated fold numbers, or 'all'")
    p.add_argument("--rounds", type=int, default=rounds, help="boosting rounds")
    p.add_argument("--out", type=Path, default=Path("examples-output"), help="output folder (tables, CSV, PNG)")
    p.add_argument("--quick", action="store_true", help="tiny settings (one fold, few rounds, few queries)")
    p.add_argument("--full", action="store_true", help=f"all folds ({full_folds}) instead of --folds")
    p.add_argument("--threads", type=int, default=2, help="threads for LightGBM / XGBoost / numba")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    p.set_defaults(_full_folds=full_folds)
    return p


def parse(parser, argv, *, quick_rounds=4):
    """Parse ``argv``; ``--quick`` forces one fold and ``quick_rounds`` rounds and subsamples queries."""
    args = parser.parse_args(argv)
    if args.full:
        args.folds = args._full_folds
    if args.quick:
        args.folds = str(_fold_list(args.folds)[0])
        args.rounds = min(args.rounds, quick_rounds)
    args.dataset_list = [d.strip() for d in args.datasets.split(",") if d.strip()]
    args.fold_list = _fold_list(args.folds)
    args.out.mkdir(parents=True, exist_ok=True)
    return args


def _fold_list(spec):
    spec = str(spec).strip().lower()
    if spec == "all":
        return [1, 2, 3, 4, 5]
    return [int(s) for s in spec.split(",") if s.strip()]


# ------------------------------------------------------------------------------------------------
# data
# ------------------------------------------------------------------------------------------------
class Split(_BaseSplit):
    """One part of a fold: dense float32 features, float64 labels and int64 query sizes
    (``customobj.compare``'s split, plus query sub-setting for the scripts)."""

    @classmethod
    def from_letor(cls, d):
        return cls(np.ascontiguousarray(d.X, dtype=np.float32), np.asarray(d.y, dtype=np.float64),
                   np.asarray(d.group, dtype=np.int64))

    @property
    def n_queries(self):
        return int(self.sizes.size)

    def queries(self, idx):
        """The sub-split made of the queries ``idx`` (in that order)."""
        rows, groups = co.Groups.from_sizes(self.sizes).subset(idx)
        return Split(self.X[rows], self.y[rows], groups.sizes)

    def head(self, max_rows):
        """The first queries holding at most ``max_rows`` rows (at least one query)."""
        n_q = max(1, int(np.searchsorted(np.cumsum(self.sizes), max_rows, side="right")))
        return self.queries(np.arange(min(n_q, self.n_queries)))


@dataclass
class Fold:
    dataset: str
    fold: int
    train: Split
    vali: Split
    test: Split


_QUICK_ROWS = {"train": 1500, "vali": 600, "test": 600}


def iter_folds(args):
    """Yield a :class:`Fold` per (data set, fold) of ``args``; ``--quick`` keeps a few queries."""
    for name in args.dataset_list:
        root = Path(args.data_dir) / name
        if not root.is_dir():
            raise SystemExit(f"data set folder {root} not found (use --data-dir or $CUSTOMOBJ_DATA)")
        for f in load_letor_folds(root, args.fold_list):
            parts = {k: Split.from_letor(getattr(f, k)) for k in ("train", "vali", "test")}
            if args.quick:
                parts = {k: v.head(_QUICK_ROWS[k]) for k, v in parts.items()}
            yield Fold(name, f.fold, parts["train"], parts["vali"], parts["test"])


def progress(iterable=None, *, args=None, desc=None, total=None):
    from tqdm.auto import tqdm

    disable = bool(args is not None and (args.no_progress or args.quick))
    return tqdm(iterable, desc=desc, total=total, disable=disable, leave=False, file=sys.stderr)


class Timer:
    def __enter__(self):
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.t0


# ------------------------------------------------------------------------------------------------
# training
# ------------------------------------------------------------------------------------------------
def lgb_params(args, **overrides):
    p = {"num_leaves": 31, "learning_rate": 0.1, "min_data_in_leaf": 20, "verbose": -1,
         "num_threads": args.threads, "seed": args.seed, "deterministic": True, "force_row_wise": True}
    p.update(overrides)
    return p


def train_lightgbm(objective, train, rounds, params, *, init_score=None, line_search=None, valid=()):
    """``lightgbm.train`` with a customobj objective (through ``customobj.adapters``) or a native one (a string).

    ``line_search``: shrinkage ``eta`` for :class:`customobj.adapters.LineSearch` (QBRank's step rule; the tree
    is then built with ``learning_rate=1`` and rescaled by ``eta * rho``). Returns the Booster.
    """
    import lightgbm as lgb

    params = dict(params)
    if isinstance(objective, str):
        params["objective"] = objective
    else:
        params["objective"] = adapters.lightgbm_objective(objective)
    dtrain = lgb.Dataset(train.X, train.y, group=train.sizes, init_score=init_score, free_raw_data=False)
    callbacks = []
    if line_search is not None:
        params["learning_rate"] = 1.0
        callbacks.append(adapters.LineSearch(objective, train.X, train.y, train.sizes, shrinkage=line_search))
    return lgb.train(params, dtrain, num_boost_round=rounds, callbacks=callbacks)


def train_xgboost(objective, train, rounds, args, **params):
    """``xgboost.train`` with a customobj objective through ``customobj.adapters.xgboost_objective``."""
    import xgboost as xgb

    base = {"tree_method": "hist", "max_leaves": 31, "grow_policy": "lossguide", "max_depth": 0, "eta": 0.1,
            "min_child_weight": 1e-3, "nthread": args.threads, "seed": args.seed}
    base.update(params)
    dtrain = xgb.DMatrix(train.X, train.y)
    dtrain.set_group(train.sizes)
    return xgb.train(adapters.xgboost_params(objective, base), dtrain, rounds,
                     obj=adapters.xgboost_objective(objective))


def staged_lightgbm(booster, X, init=None):
    """``(rounds, n)`` raw scores after each round (tree increments summed; ``init`` added)."""
    n_it = booster.current_iteration()
    acc = np.zeros(X.shape[0]) if init is None else np.asarray(init, dtype=np.float64).copy()
    out = np.empty((n_it, X.shape[0]))
    for it in range(n_it):
        acc += booster.predict(X, start_iteration=it, num_iteration=1, raw_score=True)
        out[it] = acc
    return out


def staged_xgboost(booster, X):
    import xgboost as xgb

    dm = xgb.DMatrix(X)
    n_it = booster.num_boosted_rounds()
    acc = np.zeros(X.shape[0])
    out = np.empty((n_it, X.shape[0]))
    # each one-tree margin includes the global bias once (iteration_range=(0, 0) would mean "all trees")
    base = float(json.loads(booster.save_config())["learner"]["learner_model_param"]["base_score"].strip("[]"))
    for it in range(n_it):
        acc += booster.predict(dm, iteration_range=(it, it + 1), output_margin=True) - base
        out[it] = acc + base
    return out


def staged_ole(model, X):
    """Per-round ranking scores of a ``TreeBooster`` (McRank: expected grade)."""
    return np.array(list(model.staged_predict(X, raw_score=False)))


def curve(staged, split, metric):
    """``metric`` (a name of ``customobj.metrics.get_metric``) after every round of ``staged``."""
    m = co.metrics.get_metric(metric)
    return np.array([m.func(s, split.y, split.sizes) for s in staged])


def metric_row(scores, split, names):
    """``{name: value}`` of the metric names on one split."""
    return {n: float(co.metrics.get_metric(n).func(scores, split.y, split.sizes)) for n in names}


def linear_primal(X, terms, *, lam):
    """``w`` minimising ``lam/2 |w|^2 + sum_t scale_t * L_t(X w)`` by truncated Newton
    (``scipy.optimize.minimize(method="trust-ncg")``), Chapelle's primal training of linear SVMs.

    ``terms``: ``(objective, prepared, scale)`` triples; each customobj objective gives the loss,
    gradient, diagonal hessian ``h`` and (pairwise losses) the pair couplings ``c_ij`` of its exact
    (generalised) Hessian ``H = diag(h) - sum_pairs c_ij (e_i e_j^T + e_j e_i^T)``. Hessian-vector
    products ``X^T H X p + lam p`` never form ``H``.
    """
    from scipy.optimize import minimize

    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    cache = {}

    def at(w):
        key = w.tobytes()
        if key not in cache:
            cache.clear()
            s = X @ w
            parts = []
            for obj, prep, scale in terms:
                g, h = obj.grad_hess_prepared(s, prep)
                pairs = obj.pair_couplings_prepared(s, prep) if obj.pairwise else None
                parts.append((scale, g.copy(), h.copy(), pairs))
            cache[key] = (s, parts)
        return cache[key]

    def fun(w):
        s, parts = at(w)
        f = 0.5 * lam * w @ w + sum(scale * obj.loss_prepared(s, prep) for obj, prep, scale in terms)
        g = sum(scale * gg for scale, gg, _, _ in parts)
        return f, X.T @ g + lam * w

    def hessp(w, p):
        _, parts = at(w)
        u = X @ p
        hu = np.zeros(n)
        for scale, _, h, pairs in parts:
            hu += scale * h * u
            if pairs is not None and len(pairs[0]):
                pi, pj, c = pairs
                hu -= scale * (np.bincount(pi, c * u[pj], minlength=n) + np.bincount(pj, c * u[pi], minlength=n))
        return X.T @ hu + lam * p

    res = minimize(fun, np.zeros(X.shape[1]), jac=True, hessp=hessp, method="trust-ncg",
                   options={"gtol": 1e-6, "maxiter": 200})
    return res.x


def linear_ranksvm(train, *, lam, margin=1.0):
    """Linear RankSVM in the primal (Chapelle 2007 slides): ``w`` minimising
    ``lam/2 |w|^2 + sum_{label pairs} max(0, margin - (x_i - x_j) w)^2`` (``customobj.RankSVM``)."""
    obj = co.RankSVM(margin=margin)
    return linear_primal(train.X, [(obj, obj.prepare(train.y, train.sizes), 1.0)], lam=lam)


def best_round(vali_staged, vali, metric):
    """1-based round with the best validation ``metric`` (first one on ties) and that curve."""
    c = curve(vali_staged, vali, metric)
    return int(np.argmax(c)) + 1, c


# ------------------------------------------------------------------------------------------------
# output
# ------------------------------------------------------------------------------------------------
def mean_rows(rows, keys, values):
    """Average ``values`` of ``rows`` (dicts) over rows sharing ``keys`` (folds); keeps first-seen order."""
    groups = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in keys), []).append(r)
    out = []
    for key, rs in groups.items():
        row = dict(zip(keys, key))
        for v in values:
            vals = [r[v] for r in rs if r.get(v) is not None]
            mean = float(np.mean(vals)) if vals else None
            if vals and all(isinstance(x, (int, np.integer)) for x in vals) and mean == int(mean):
                mean = int(mean)
            row[v] = mean
        row["folds"] = len(rs)
        out.append(row)
    return out


def _fmt(v, digits):
    if isinstance(v, (float, np.floating)):
        if math.isnan(v):
            return "nan"
        return f"{v:.{digits}f}"
    return "" if v is None else str(v)


def emit_table(args, name, rows, columns, *, title, digits=4, note=None):
    """Print ``rows`` as an aligned text table, and write ``<out>/<name>.csv`` and ``.txt``. Returns the text."""
    cells = [[_fmt(r.get(c), digits) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) if cells else len(c) for i, c in enumerate(columns)]
    lines = [title, "  ".join(c.ljust(w) for c, w in zip(columns, widths)), "  ".join("-" * w for w in widths)]
    for row in cells:
        lines.append("  ".join(v.rjust(w) if _is_num(v) else v.ljust(w) for v, w in zip(row, widths)))
    if note:
        lines.append(note)
    text = "\n".join(lines)
    print(text + "\n", flush=True)
    table = io.StringIO(newline="")
    w = csv.DictWriter(table, fieldnames=columns, extrasaction="ignore")
    w.writeheader()
    for r in rows:
        w.writerow({c: ("" if r.get(c) is None else r.get(c)) for c in columns})
    # the .txt and .csv of a table are one change: both replaced, or (a failed write) neither
    replace_files(args.out, {f"{name}.txt": (text + "\n").encode(), f"{name}.csv": table.getvalue().encode()})
    return text


def _is_num(s):
    try:
        float(s)
        return True
    except ValueError:
        return False


def new_figure(nrows, ncols, *, width=5.2, height=3.8):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False)
    return fig, axes


#: Curves closer than this fraction of a panel's value range draw on top of each other (a line is
#: about 0.3% of a 4-inch panel): they are drawn once, labelled with every name ("A = B").
OVERLAP = 0.004


def _overlap(a, b, tol):
    """Points of curve ``a`` within ``tol`` of curve ``b`` at the same x."""
    common, ia, ib = np.intersect1d(a[0], b[0], return_indices=True)
    return int(np.count_nonzero(np.abs(a[1][ia] - b[1][ib]) <= tol)) if common.size else 0


def draw_curves(ax, curves):
    """Plot ``[(x, y, label, style dict)]`` so that no curve hides under another: a curve that
    overlaps an earlier one everywhere is drawn once, its legend entry naming both; one that
    overlaps it over part of its length is drawn over a wide, pale copy of the earlier one."""
    curves = [(np.asarray(x, float), np.asarray(y, float), label, style) for x, y, label, style in curves]
    finite = [y[np.isfinite(y)] for _, y, _, _ in curves]
    values = np.concatenate(finite) if finite else np.zeros(0)
    tol = OVERLAP * (float(values.max() - values.min()) if values.size else 0.0)
    drawn = []
    for x, y, label, style in curves:
        for d in drawn:
            if d[0].shape == x.shape and np.array_equal(d[0], x) and np.all(np.abs(d[1] - y) <= tol):
                d[2].append(label)
                break
        else:
            drawn.append((x, y, [label], dict(style)))
    for i, under in enumerate(drawn):
        if any(_overlap(under, over, tol) >= 2 for over in drawn[i + 1:]):
            under[3].update(lw=3.5 * under[3].get("lw", 1.2), alpha=0.45, zorder=1)
    for x, y, labels, style in drawn:
        ax.plot(x, y, label=" = ".join(labels), **style)


def legend_below(ax, *, ncol=2):
    """The legend under the panel, outside the plot area: it never covers a curve."""
    ax.legend(fontsize=7, ncol=ncol, loc="upper center", bbox_to_anchor=(0.5, -0.16), frameon=False,
              handlelength=3.5)


def curve_panel(ax, curves, *, title, xlabel, ylabel, ncol=2):
    """One panel of curves: :func:`draw_curves`, its title and axis labels, the legend below it."""
    draw_curves(ax, curves)
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    legend_below(ax, ncol=ncol)


def data_title(fig, args, what):
    """The figure's title: what it shows, on which data and folds."""
    folds = ",".join(map(str, args.fold_list))
    data = ", ".join(d.upper() if d in ("mq2008", "mq2007") else d.capitalize().replace("Ohsumed", "OHSUMED")
                     for d in args.dataset_list)
    fig.suptitle(f"{what} (LETOR {data}, fold{'s' if len(args.fold_list) > 1 else ''} {folds}, test set)",
                 fontsize=10)


def save_figure(fig, args, name):
    import matplotlib.pyplot as plt

    path = args.out / f"{name}.png"
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=110, bbox_inches="tight")  # keeps the legends below the panels
    plt.close(fig)
    atomic_write_bytes(path, png.getvalue())
    print(f"saved {path}", flush=True)
    return path
