"""Evaluation, summary tables, the paired test against a baseline, CSV/JSON files and the plot."""
from __future__ import annotations

import csv
import io
import json
import math
import os
import textwrap
import warnings
from typing import NamedTuple

import numpy as np

from .._io import read_regular_file

__all__ = ["TEST_METRICS", "Scoring", "LABELS", "evaluate", "summarize", "paired_comparison",
           "format_table", "format_paired", "csv_text", "json_text", "read_results", "render_files",
           "curves_png", "position_bias_rows", "position_bias_png", "EXAMINATION", "mean_curve",
           "RESULTS_SCHEMA", "RESULTS_SCHEMA_VERSION", "READABLE_SCHEMA_VERSIONS"]

#: (column, metric name for customobj.metrics.get_metric) of the test-set table.
TEST_METRICS = (
    ("ndcg@1", "ndcg@1"),
    ("ndcg@3", "ndcg@3"),
    ("ndcg@5", "ndcg@5"),
    ("ndcg@10", "ndcg@10"),
    ("err@10", "err@10"),
    ("map", "map"),
    ("precision@100%", "precision@100%"),  # one name: the metric's (it was "p@100%" here)
)
RUN_COLUMNS = ("train_time_s", "best_round", "rounds_trained")
PAIRED_COLUMNS = ("method", "baseline", "n_queries", "mean_diff_ndcg@10", "wins", "losses", "ties",
                  "wilcoxon_p", "wilcoxon_p_holm", "ttest_p", "ttest_p_holm")


class Scoring(NamedTuple):
    """What a run is scored with: the test columns (``(column, metric name or Metric)``), the column
    of the per-query paired test and the seed spread (``primary``), the validation column, what the
    paired test pairs (``unit``: a test part of clicks pairs sessions). The true
    labels' (:data:`LABELS`) unless the test part has clicks only (``compare --click-log`` without
    ``--test``: the IPS click metrics, customobj.compare.click_log)."""

    metrics: tuple
    primary: str
    valid: str
    unit: str = "queries"

    @property
    def result_columns(self) -> tuple:
        return ("method", "fold", "seed", *(c for c, _ in self.metrics), self.valid, *RUN_COLUMNS)

    @property
    def paired_columns(self) -> tuple:
        return tuple(f"mean_diff_{self.primary}" if c == "mean_diff_ndcg@10" else c for c in PAIRED_COLUMNS)


#: Scoring on graded labels: TEST_METRICS, the paired test on NDCG@10.
LABELS = Scoring(TEST_METRICS, "ndcg@10", "valid_ndcg@10")
RESULT_COLUMNS = LABELS.result_columns


def evaluate(scores: np.ndarray, split, scoring: Scoring = LABELS) -> tuple[dict, np.ndarray]:
    """Test metrics of one fold (means over queries) and the per-query primary metric (NDCG@10) for
    the paired test."""
    from ..metrics import get_metric

    funcs = {col: (get_metric(m) if isinstance(m, str) else m).func for col, m in scoring.metrics}
    row = {col: float(f(scores, split.y, split.sizes)) for col, f in funcs.items()}
    per_query = np.asarray(funcs[scoring.primary](scores, split.y, split.sizes, per_query=True), dtype=np.float64)
    return row, per_query


def summarize(rows: list[dict], methods: list[str], scoring: Scoring = LABELS) -> list[dict]:
    """Per method (in the given order), every numeric column averaged over seeds within a fold, then
    mean and std over folds (``ddof=0``). With several seeds also ``<column>_seed_std``: the std over
    seeds within a fold (``ddof=0``), averaged over folds -- the seed spread beside the fold spread."""
    out = []
    numeric = [c for c in scoring.result_columns if c not in ("method", "fold", "seed")]
    for m in methods:
        mine = [r for r in rows if r["method"] == m]
        if not mine:
            continue
        folds = list(dict.fromkeys(r["fold"] for r in mine))
        by_fold = [[r for r in mine if r["fold"] == f] for f in folds]
        n_seeds = min(len(b) for b in by_fold)
        entry = {"method": m, "n_folds": len(folds)}
        if n_seeds > 1:
            entry["n_seeds"] = n_seeds
        for c in numeric:
            vals = [np.array([r[c] for r in b], dtype=np.float64) for b in by_fold]
            means = np.array([v.mean() for v in vals])
            entry[f"{c}_mean"] = float(means.mean())
            entry[f"{c}_std"] = float(means.std())
            if n_seeds > 1:
                entry[f"{c}_seed_std"] = float(np.mean([v.std() for v in vals]))
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


def paired_comparison(per_query: dict, methods: list[str], baseline: str, scoring: Scoring = LABELS) -> list[dict]:
    """Each method against ``baseline`` on test NDCG@10 per query, pooled over folds.

    ``per_query[method]`` is the concatenation over folds (same fold order for every method; with
    several seeds, each query's mean over seeds), so entries are paired by query. Two-sided Wilcoxon
    signed-rank (zero differences dropped, scipy's default) and paired t-test p-values; NaN when
    every difference is zero. ``*_holm`` are the same p-values Holm-adjusted over all the methods
    compared (:func:`customobj.compare.stats.holm`), one family per test.
    """
    from scipy import stats

    from .stats import holm

    base = per_query[baseline]
    out = []
    for m in methods:
        if m == baseline:
            continue
        diff = per_query[m] - base
        out.append({
            "method": m, "baseline": baseline, "n_queries": int(diff.size),
            f"mean_diff_{scoring.primary}": float(diff.mean()) if diff.size else math.nan,
            "wins": int((diff > 0).sum()), "losses": int((diff < 0).sum()), "ties": int((diff == 0).sum()),
            "wilcoxon_p": _safe_p(stats.wilcoxon, diff),
            "ttest_p": _safe_p(lambda d: stats.ttest_1samp(d, 0.0), diff),
        })
    for test in ("wilcoxon_p", "ttest_p"):
        for row, adjusted in zip(out, holm([r[test] for r in out])):
            row[f"{test}_holm"] = float(adjusted)
    return out


# --- terminal -------------------------------------------------------------------------------------
def _render(header, body, align):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *body)]
    def line(cells):
        return "  ".join(str(c).ljust(w) if a == "l" else str(c).rjust(w) for c, w, a in zip(cells, widths, align))
    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), rule, *(line(r) for r in body)])


def format_table(summary: list[dict], *, tuning: str | None = None, scoring: Scoring = LABELS) -> str:
    """Methods x (test metrics mean±std over folds, time, rounds); with several seeds a column of the
    NDCG@10 seed spread; ``tuning`` (a sentence on the search and its budget) ends the note."""
    n_seeds = max((s.get("n_seeds", 1) for s in summary), default=1)
    header = ["method", *(c.upper() for c, _ in scoring.metrics), "time s", "rounds"]
    if n_seeds > 1:
        header.insert(len(scoring.metrics) + 1, f"{scoring.primary.upper()} seed±")
    body = []
    for s in summary:
        cells = [s["method"]]
        for c, _ in scoring.metrics:  # one fold has no spread: "±0.000" would claim one
            spread = f"±{s[c + '_std']:.3f}" if s["n_folds"] > 1 else ""
            cells.append(f"{s[c + '_mean']:.4f}{spread}")
        if n_seeds > 1:
            cells.append(f"{s.get(scoring.primary + '_seed_std', 0.0):.4f}")
        cells.append(f"{s['train_time_s_mean']:.2f}")
        cells.append(f"{s['best_round_mean']:.0f}/{s['rounds_trained_mean']:.0f}")
        body.append(cells)
    n_folds = max((s["n_folds"] for s in summary), default=0)
    of_seeds = f" of the mean over {n_seeds} seeds" if n_seeds > 1 else ""
    what = f"mean±std over {n_folds} folds{of_seeds}" if n_folds > 1 else f"one fold{of_seeds} (no spread)"
    note = (f"test metrics: {what}; time = training seconds per fold; "
            "rounds = kept (best on validation) / trained")
    if n_seeds > 1:
        note += f"; seed± = std of {scoring.primary.upper()} over the {n_seeds} seeds, averaged over folds"
    if tuning:
        note += "\n" + tuning
    return _render(header, body, "l" + "r" * (len(header) - 1)) + "\n" + note


def _p(x):
    return "n/a" if not np.isfinite(x) else (f"{x:.2e}" if x < 1e-3 else f"{x:.4f}")


def _survives(p):
    from .stats import ALPHA

    return bool(np.isfinite(p) and p <= ALPHA)


def format_paired(paired: list[dict], scoring: Scoring = LABELS) -> str:
    """The paired tests, raw and Holm-adjusted; ``*`` marks a Wilcoxon test that survives Holm at
    :data:`customobj.compare.stats.ALPHA`."""
    from .stats import ALPHA

    if not paired:
        return ""
    base = paired[0]["baseline"]
    header = ["method", f"Δ{scoring.primary.upper()}", "wins/losses/ties", "Wilcoxon p", "Holm", "t-test p", "Holm", ""]
    body = [[p["method"], f"{p['mean_diff_' + scoring.primary]:+.4f}", f"{p['wins']}/{p['losses']}/{p['ties']}",
             _p(p["wilcoxon_p"]), _p(p["wilcoxon_p_holm"]), _p(p["ttest_p"]), _p(p["ttest_p_holm"]),
             "*" if _survives(p["wilcoxon_p_holm"]) else ""] for p in paired]
    n = paired[0]["n_queries"]
    title = f"paired comparison with {base} on test {scoring.primary.upper()} ({n} {scoring.unit} pooled over folds, two-sided):"
    kept = sum(_survives(p["wilcoxon_p_holm"]) for p in paired)
    note = (f"* = significant at {ALPHA:g} after Holm's correction over the {len(paired)} methods compared "
            f"(Wilcoxon): {kept} of {len(paired)}")
    return title + "\n" + _render(header, body, "lrrrrrrl") + "\n" + note


# --- files ----------------------------------------------------------------------------------------
#: Version of the layout of results.json (its "schema_version" field). Readers check it.
RESULTS_SCHEMA = "customobj-compare-results"
RESULTS_SCHEMA_VERSION = 4
#: Versions read_results accepts. 2 added per-seed rows ("seed"), Holm-adjusted p-values, "seeds"
#: and "tuning"; 3 renamed the metric column "p@100%" to "precision@100%" (the metric's name) and
#: added "position_bias" (compare --clicks); 4 gave each "position_bias" record its "quantity" and made
#: "position_bias"'s "true" a ``{quantity: curve}`` object (trust bias has three); every other field kept
#: its meaning, so older files still read.
READABLE_SCHEMA_VERSIONS = (1, 2, 3, 4)
POSITION_BIAS_COLUMNS = ("method", "fold", "seed", "quantity", "position", "estimated", "true")
#: The quantity of position_bias.csv a record estimates unless it names another: the examination
#: propensity relative to position 1 (``position_bias_``). Others: a click model's per-position rates
#: (trust bias' ``epsilon_plus`` / ``epsilon_minus``, an affine correction's ``alpha`` / ``beta``).
EXAMINATION = "examination"


def csv_text(rows: list[dict], columns) -> str:
    """CSV of ``rows`` (dicts) with ``columns``; non-finite floats are empty cells."""
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=list(columns), extrasaction="ignore", lineterminator="\r\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: (_csv_value(v)) for k, v in r.items()})
    return buf.getvalue()


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


def json_text(payload: dict) -> str:
    """results.json: ``payload`` as strict JSON, led by the schema name and version."""
    doc = {"schema": RESULTS_SCHEMA, "schema_version": RESULTS_SCHEMA_VERSION, **payload}
    return json.dumps(_json_clean(doc), indent=1, allow_nan=False) + "\n"


def read_results(path: str | os.PathLike) -> dict:
    """Read a results.json back, checking its schema and version (``ValueError`` naming the file)."""
    try:
        doc = json.loads(read_regular_file(path, reader="read_results").decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("schema") != RESULTS_SCHEMA:
        raise ValueError(f"{path}: not a customobj compare results file (schema must be {RESULTS_SCHEMA!r})")
    version = doc.get("schema_version")
    if type(version) is not int or version not in READABLE_SCHEMA_VERSIONS:
        raise ValueError(f"{path}: schema_version {version!r} is not supported (this customobj reads "
                         f"{', '.join(map(str, READABLE_SCHEMA_VERSIONS))})")
    for key, kind in (("methods", list), ("folds", list), ("results", list), ("summary", list),
                      ("paired", list), ("curves", dict), ("settings", dict)):
        if not isinstance(doc.get(key), kind):
            raise ValueError(f"{path}: field {key!r} must be a JSON {'array' if kind is list else 'object'}")
    if version >= 2:
        if not isinstance(doc.get("seeds"), list) or not all(type(v) is int for v in doc["seeds"]):
            raise ValueError(f"{path}: field 'seeds' must be a JSON array of integers")
        if doc.get("tuning") is not None and not isinstance(doc["tuning"], dict):
            raise ValueError(f"{path}: field 'tuning' must be a JSON object or null")
    return doc


def render_files(rows: list[dict], summary: list[dict], paired: list[dict], payload: dict, *,
                 curves: dict | None = None, title: str = "", position_bias: dict | None = None,
                 true_curves: dict | None = None, bias_title: str = "", plot: bool = True,
                 scoring: Scoring = LABELS) -> dict[str, bytes]:
    """Every result file as bytes, serialised before any is written (a failure here touches nothing).

    ``payload`` is the run description of results.json (the tables are added to it); ``curves``
    (method -> per-fold curves) draws curves.png, ``None`` skips the plot. ``position_bias``
    (:attr:`customobj.compare.runner.Outcome.position_bias`, non-empty for click methods that
    estimate a curve per position) writes position_bias.csv and, with ``plot``, position_bias.png
    against ``true_curves`` (``{quantity: values per position}``, the simulated users' own, when known).
    """
    first = summary[0] if summary else {}
    summary_cols = ["method", "n_folds"] + [k for k in first if k not in ("method", "n_folds")]
    files = {
        "results.csv": csv_text(rows, scoring.result_columns).encode(),
        "summary.csv": csv_text(summary, summary_cols).encode(),
        "paired.csv": csv_text(paired, scoring.paired_columns).encode(),
        "results.json": json_text({**payload, "results": rows, "summary": summary, "paired": paired}).encode(),
    }
    if curves is not None:
        files["curves.png"] = curves_png(curves, title)
    if position_bias:
        files["position_bias.csv"] = csv_text(position_bias_rows(position_bias, true_curves),
                                              POSITION_BIAS_COLUMNS).encode()
        if plot:
            files["position_bias.png"] = position_bias_png(position_bias, true_curves, bias_title)
    return files


def _quantity(record: dict) -> str:
    """What a position-bias record estimates: ``"examination"`` unless it says (``"quantity"``)."""
    return str(record.get("quantity", EXAMINATION))


def position_bias_rows(position_bias: dict, true_curves: dict | None) -> list[dict]:
    """One row per method, fold, seed, quantity and display position (1 first): the estimate (the
    examination relative to position 1, or what the record's ``quantity`` names, e.g. a trust-bias
    ``epsilon_plus``) and, where known, the simulated users' true value of that quantity."""
    rows = []
    for method, records in position_bias.items():
        for rec in records:
            quantity = _quantity(rec)
            truth = (true_curves or {}).get(quantity)
            for p, value in enumerate(rec["estimated"], 1):
                true = truth[p - 1] if truth is not None and p <= len(truth) else None
                rows.append({"method": method, "fold": rec["fold"], "seed": rec["seed"], "quantity": quantity,
                             "position": p, "estimated": float(value), "true": "" if true is None else float(true)})
    return rows


def _figure_title(ax, title: str, width_in: float) -> None:
    """The title wrapped to the figure's width (about 11 characters per inch at 10 pt): a long
    --clicks description cut off on both sides otherwise."""
    ax.set_title("\n".join(textwrap.wrap(title, max(20, int(11 * width_in)))), fontsize=10)


def position_bias_png(position_bias: dict, true_curves: dict | None, title: str) -> bytes:
    """PNG of each click method's estimated curves (mean over folds, first seed of each) against
    display position, one panel per quantity estimated (examination, then e.g. an affine correction's
    alpha), each beside the simulated users' true curve of that quantity when one is known."""
    estimated = [_quantity(r) for records in position_bias.values() for r in records]
    quantities = list(dict.fromkeys([EXAMINATION] * (EXAMINATION in (true_curves or {})) + estimated))
    truths = {q: c for q, c in (true_curves or {}).items() if q in quantities}
    fig, axes = _new_axes((7.5, 4.8 * len(quantities)), rows=len(quantities))
    panels = dict(zip(quantities, np.ravel(axes)))
    for method, records in position_bias.items():
        for quantity in dict.fromkeys(_quantity(r) for r in records):
            mine = [r for r in records if _quantity(r) == quantity]
            first = min(r["seed"] for r in mine)
            c = mean_curve([r["estimated"] for r in mine if r["seed"] == first])
            panels[quantity].plot(np.arange(1, c.size + 1), c, marker="o", ms=3, lw=1.4, label=f"{method} (estimated)")
    for quantity, truth in truths.items():
        panels[quantity].plot(np.arange(1, len(truth) + 1), truth, "k--", lw=1.4, label="true (the simulated users)")
    ylabel = {EXAMINATION: "examination relative to position 1 (mean over folds)"}
    for i, (quantity, ax) in enumerate(panels.items()):
        _label_axes(ax, ("display position (1 = top)", ylabel.get(quantity, f"{quantity} (mean over folds)")),
                    title if i == 0 else quantity, 7.5, "upper right")
    return _png(fig)


def _new_axes(size, rows: int = 1):
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt.subplots(rows, 1, figsize=size, dpi=110, squeeze=rows == 1)


def _label_axes(ax, labels, title, width_in, legend_at) -> None:
    """Axis labels, the wrapped title, grid and legend of one panel."""
    ax.set_xlabel(labels[0])
    ax.set_ylabel(labels[1])
    _figure_title(ax, title, width_in)
    ax.grid(True, alpha=0.3)
    ax.legend(loc=legend_at, fontsize=8, framealpha=0.9)


def _finish(fig, ax, labels, title, width_in, legend_at) -> bytes:
    """:func:`_label_axes`, then the figure as PNG bytes (then closed)."""
    _label_axes(ax, labels, title, width_in, legend_at)
    return _png(fig)


def _png(fig) -> bytes:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    buf = io.BytesIO()
    try:
        fig.savefig(buf, format="png")
    finally:
        plt.close(fig)
    return buf.getvalue()


def mean_curve(curves) -> np.ndarray:
    """Average of per-fold curves up to the shortest one (early stopping ends folds at different
    rounds; averaging over whichever folds are left would make steps where a fold drops out)."""
    curves = [np.asarray(c, dtype=np.float64) for c in curves if len(c)]
    if not curves:
        return np.zeros(0)
    n = min(c.size for c in curves)
    return np.mean([c[:n] for c in curves], axis=0)


def curves_png(curves_by_method: dict, title: str) -> bytes:
    """PNG of one line per method: validation NDCG@10 against boosting rounds (folds averaged)."""
    import matplotlib.pyplot as plt

    fig, ax = _new_axes((9, 5.5))
    cmap = plt.get_cmap("tab10" if len(curves_by_method) <= 10 else "tab20")
    styles = ["-", "--", "-.", ":"]
    for i, (method, curves) in enumerate(curves_by_method.items()):
        c = mean_curve(curves)
        if c.size:
            ax.plot(np.arange(1, c.size + 1), c, label=method, color=cmap(i % cmap.N),
                    linestyle=styles[(i // 10) % len(styles)], linewidth=1.6)
    return _finish(fig, ax, ("boosting round (curves end where the first fold stopped early)",
                             "validation NDCG@10 (mean over folds)"), title, 9, "lower right")
