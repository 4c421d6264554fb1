"""Evaluation, summary tables, the paired test against a baseline, CSV/JSON files and the plot."""
from __future__ import annotations

import csv
import json
import math
import warnings

import numpy as np

__all__ = [
    "TEST_METRICS",
    "evaluate",
    "summarize",
    "paired_comparison",
    "format_table",
    "format_paired",
    "write_csv",
    "write_json",
    "plot_curves",
    "mean_curve",
]

#: (column, metric name for customobj.metrics.get_metric) of the test-set table.
TEST_METRICS = (
    ("ndcg@1", "ndcg@1"),
    ("ndcg@3", "ndcg@3"),
    ("ndcg@5", "ndcg@5"),
    ("ndcg@10", "ndcg@10"),
    ("err@10", "err@10"),
    ("map", "map"),
    ("p@100%", "precision@100%"),
)
RUN_COLUMNS = ("train_time_s", "best_round", "rounds_trained")
RESULT_COLUMNS = ("method", "fold", *(c for c, _ in TEST_METRICS), "valid_ndcg@10", *RUN_COLUMNS)
PAIRED_COLUMNS = ("method", "baseline", "n_queries", "mean_diff_ndcg@10", "wins", "losses", "ties",
                  "wilcoxon_p", "ttest_p")


def evaluate(scores, split):
    """Test metrics of one fold (means over queries) and the per-query NDCG@10 for the paired test."""
    from ..metrics import get_metric, ndcg

    row = {col: float(get_metric(name).func(scores, split.y, split.sizes)) for col, name in TEST_METRICS}
    per_query = np.asarray(ndcg(scores, split.y, split.sizes, k=10, per_query=True), dtype=np.float64)
    return row, per_query


def summarize(rows, methods):
    """Mean and std (over folds, ``ddof=0``) of every numeric column, per method in the given order."""
    out = []
    numeric = [c for c in RESULT_COLUMNS if c not in ("method", "fold")]
    for m in methods:
        mine = [r for r in rows if r["method"] == m]
        if not mine:
            continue
        entry = {"method": m, "n_folds": len(mine)}
        for c in numeric:
            vals = np.array([r[c] for r in mine], dtype=np.float64)
            entry[f"{c}_mean"] = float(vals.mean())
            entry[f"{c}_std"] = float(vals.std())
        out.append(entry)
    return out


def _safe_p(test, diff):
    if diff.size < 2 or np.all(diff == 0):
        return math.nan  # identical rankings: no test to run
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            p = float(test(diff).pvalue)
        except ValueError:
            return math.nan
    return p


def paired_comparison(per_query, methods, baseline):
    """Each method against ``baseline`` on test NDCG@10 per query, pooled over folds.

    ``per_query[method]`` is the concatenation over folds (same fold order for every method), so
    entries are paired by query. Two-sided Wilcoxon signed-rank (zero differences dropped, scipy's
    default) and paired t-test p-values; NaN when every difference is zero.
    """
    from scipy import stats

    base = per_query[baseline]
    out = []
    for m in methods:
        if m == baseline:
            continue
        diff = per_query[m] - base
        out.append({
            "method": m, "baseline": baseline, "n_queries": int(diff.size),
            "mean_diff_ndcg@10": float(diff.mean()) if diff.size else math.nan,
            "wins": int((diff > 0).sum()), "losses": int((diff < 0).sum()), "ties": int((diff == 0).sum()),
            "wilcoxon_p": _safe_p(stats.wilcoxon, diff),
            "ttest_p": _safe_p(lambda d: stats.ttest_1samp(d, 0.0), diff),
        })
    return out


# --- terminal -------------------------------------------------------------------------------------
def _render(header, body, align):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *body)]
    def line(cells):
        return "  ".join(str(c).ljust(w) if a == "l" else str(c).rjust(w) for c, w, a in zip(cells, widths, align))
    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), rule, *(line(r) for r in body)])


def format_table(summary):
    """Methods x (test metrics mean±std over folds, time, rounds)."""
    header = ["method", *(c.upper() for c, _ in TEST_METRICS), "time s", "rounds"]
    body = []
    for s in summary:
        cells = [s["method"]]
        for c, _ in TEST_METRICS:
            cells.append(f"{s[c + '_mean']:.4f}±{s[c + '_std']:.3f}")
        cells.append(f"{s['train_time_s_mean']:.2f}")
        cells.append(f"{s['best_round_mean']:.0f}/{s['rounds_trained_mean']:.0f}")
        body.append(cells)
    n_folds = max((s["n_folds"] for s in summary), default=0)
    note = (f"test metrics: mean±std over {n_folds} fold(s); time = training seconds per fold; "
            "rounds = kept (best on validation) / trained")
    return _render(header, body, "l" + "r" * (len(header) - 1)) + "\n" + note


def _p(x):
    return "n/a" if not np.isfinite(x) else (f"{x:.2e}" if x < 1e-3 else f"{x:.4f}")


def format_paired(paired):
    if not paired:
        return ""
    base = paired[0]["baseline"]
    header = ["method", "ΔNDCG@10", "wins/losses/ties", "Wilcoxon p", "t-test p"]
    body = [[p["method"], f"{p['mean_diff_ndcg@10']:+.4f}", f"{p['wins']}/{p['losses']}/{p['ties']}",
             _p(p["wilcoxon_p"]), _p(p["ttest_p"])] for p in paired]
    n = paired[0]["n_queries"]
    title = f"paired comparison with {base} on test NDCG@10 ({n} queries pooled over folds, two-sided):"
    return title + "\n" + _render(header, body, "lrrrr")


# --- files ----------------------------------------------------------------------------------------
def write_csv(path, rows, columns):
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(columns), extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: (_csv_value(v)) for k, v in r.items()})


def _csv_value(v):
    if isinstance(v, float):
        return "" if not math.isfinite(v) else repr(v)
    return v


def _json_clean(obj):
    """NaN/inf -> None (strict JSON), numpy scalars/arrays -> Python."""
    if isinstance(obj, dict):
        return {str(k): _json_clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_clean(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _json_clean(obj.tolist())
    if isinstance(obj, (np.floating, float)):
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, np.integer):
        return int(obj)
    return obj


def write_json(path, payload):
    with open(path, "w") as fh:
        json.dump(_json_clean(payload), fh, indent=1, allow_nan=False)
        fh.write("\n")


def mean_curve(curves):
    """Average of per-fold curves up to the shortest one (early stopping ends folds at different
    rounds; averaging over whichever folds are left would make steps where a fold drops out)."""
    curves = [np.asarray(c, dtype=np.float64) for c in curves if len(c)]
    if not curves:
        return np.zeros(0)
    n = min(c.size for c in curves)
    return np.mean([c[:n] for c in curves], axis=0)


def plot_curves(path, curves_by_method, title):
    """One line per method: validation NDCG@10 against boosting rounds (folds averaged)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5.5), dpi=110)
    cmap = plt.get_cmap("tab10" if len(curves_by_method) <= 10 else "tab20")
    styles = ["-", "--", "-.", ":"]
    for i, (method, curves) in enumerate(curves_by_method.items()):
        c = mean_curve(curves)
        if c.size:
            ax.plot(np.arange(1, c.size + 1), c, label=method, color=cmap(i % cmap.N),
                    linestyle=styles[(i // 10) % len(styles)], linewidth=1.6)
    ax.set_xlabel("boosting round (curves end where the first fold stopped early)")
    ax.set_ylabel("validation NDCG@10 (mean over folds)")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", fontsize=8, framealpha=0.9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
