"""Xia, Zhai, Wang's protocol (Figure 2): NDCG@10 of OLE minus SE against boosting rounds, LambdaMART.

The paper ("Analysis of regression tree fitting algorithms in learning to rank", section 5) trains
LambdaMART (NDCG loss) with breadth-first regression trees of 10 and 20 leaves, learning rate 0.06 /
0.1 / 0.12, 1,000 trees, on MSLR-10K (136 features, ~120 documents per query, 5 folds) and Yahoo,
and plots test NDCG@10 of OLE minus SE against the number of trees (Figure 2); it reports OLE
+0.3 to +0.4 NDCG points over SE. Here: MSLR-10K-shaped data from ``customobj.data.synthetic``
(``--queries`` x ~``--rows`` rows x ``--features``; the full shape is 6,000 x 120 x 136), queries
split 3:1:1 into train / valid / test by a seeded permutation (MSLR's fold proportions), learning
rate 0.1 and, for every leaf count, ``customobj.ole.TreeBooster(LambdaRank(metric="ndcg"),
criterion=c, growth="breadth_first")`` for ``c`` in ``se`` (Friedman's least squares on the
gradients), ``ole`` (the exact node hessian with the pair couplings) and ``ole_fast``.

Per round (a fit callback; the tree just grown is added to the valid / test scores, so the
evaluation costs one tree per round and is not counted in the tree's time): valid and test NDCG@10,
wall and process-CPU seconds of the tree (round 1 also pays for binning: per-tree means use rounds
2..R). At the end: final test NDCG@10 per (leaves, criterion), per-query paired differences against
SE with Wilcoxon signed-rank and paired t-test p-values (scipy), per-tree times and their ratios to
SE. Outputs in ``--out`` (each file written atomically, rewritten after every configuration so an
interrupted run keeps what finished): ``curves.csv``, ``results.json``, ``table.txt`` and
``ole_paper.png`` (left: OLE - SE and ole_fast - SE in NDCG points against rounds, one line per
leaf count, as Figure 2; right: the test NDCG@10 curves themselves).

    python benchmarks/ole_paper.py --queries 6000 --rounds 1000 --out runs/ole_paper
    python benchmarks/ole_paper.py --queries 60 --rounds 3 --rows 30 --out /tmp/op   # seconds

Configurations run one after the other (leaves 10: se, ole, ole_fast; then leaves 20), so load
changes on a shared machine skew the time ratios; CPU time (all threads) is the steadier one.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import sys
import textwrap
import time
from typing import Any, Callable, List, NamedTuple, Optional, Sequence

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]  # nothing here shadows a module

#: MSLR-10K's shape (Xia et al., Table 1) and fold proportions (train:valid:test = 3:1:1).
MSLR_QUERIES, MSLR_ROWS, MSLR_FEATURES = 6_000, 120, 136
SPLIT = (0.6, 0.2, 0.2)
#: The paper's grid (section 5): leaves 10 and 20; its learning rates are 0.06, 0.1, 0.12 (0.1 here).
PAPER_LEAVES = (10, 20)
CRITERIA = ("se", "ole", "ole_fast")
BASELINE = "se"
METRIC_K = 10
POINTS = 100.0  # NDCG points: the paper reports measures in percent


class Split(NamedTuple):
    """One part of the data: features (float64, C order), labels, query sizes."""
    X: np.ndarray
    y: np.ndarray
    group: np.ndarray


class OnePerLineParser(argparse.ArgumentParser):
    """argparse with one-line errors (``ole_paper.py: error: ...``), no usage dump."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def _int_at_least(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if v < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {v}")
        return v
    return parse


def _positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return v


def build_parser() -> argparse.ArgumentParser:
    ap = OnePerLineParser(prog="ole_paper.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=_int_at_least(5), default=MSLR_QUERIES,
                    help=f"queries in all (default {MSLR_QUERIES}, MSLR-10K); split 3:1:1")
    ap.add_argument("--rows", type=_positive_float, default=float(MSLR_ROWS), help="mean rows per query")
    ap.add_argument("--features", type=_int_at_least(1), default=MSLR_FEATURES)
    ap.add_argument("--rounds", type=_int_at_least(1), default=1000, help="trees per model (the paper: 1000)")
    ap.add_argument("--leaves", type=_int_at_least(2), nargs="+", default=list(PAPER_LEAVES))
    ap.add_argument("--criteria", nargs="+", choices=CRITERIA, default=list(CRITERIA),
                    help="split criteria; se (the baseline) always runs")
    ap.add_argument("--learning-rate", type=_positive_float, default=0.1)
    ap.add_argument("--seed", type=_int_at_least(0), default=0, help="data and split seed")
    ap.add_argument("--threads", type=_int_at_least(1), default=2)
    ap.add_argument("--out", required=True, help="output folder (created if missing)")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    return ap


def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    ap = build_parser()
    args = ap.parse_args(argv)
    if args.rows < 2:
        ap.error(f"--rows must be >= 2, got {args.rows}")
    if args.learning_rate > 1:
        ap.error(f"--learning-rate must be <= 1, got {args.learning_rate}")
    if len(set(args.leaves)) != len(args.leaves):
        ap.error(f"--leaves has repeats: {args.leaves}")
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        ap.error(f"--out {args.out!r} exists and is not a folder")
    args.criteria = [BASELINE] + [c for c in dict.fromkeys(args.criteria) if c != BASELINE]
    return args


# --- data ----------------------------------------------------------------------------------------
def split_queries(group: np.ndarray, seed: int) -> List[np.ndarray]:
    """Query indices of train / valid / test: a seeded permutation cut at :data:`SPLIT` (each sorted)."""
    n_q = len(group)
    perm = np.random.default_rng(seed).permutation(n_q)
    n_train = max(1, int(round(SPLIT[0] * n_q)))
    n_valid = max(1, int(round(SPLIT[1] * n_q)))
    if n_train + n_valid >= n_q:
        raise ValueError(f"--queries {n_q} is too few for a train / valid / test split")
    cuts = (perm[:n_train], perm[n_train:n_train + n_valid], perm[n_train + n_valid:])
    return [np.sort(c) for c in cuts]


def take_queries(X: np.ndarray, y: np.ndarray, group: np.ndarray, queries: np.ndarray) -> Split:
    """The rows of ``queries`` (contiguous per query, in query order)."""
    ptr = np.concatenate([[0], np.cumsum(group)])
    rows = np.concatenate([np.arange(ptr[q], ptr[q + 1]) for q in queries])
    return Split(np.ascontiguousarray(X[rows], dtype=np.float64), y[rows].astype(np.float64),
                 group[queries].astype(np.int64))


def make_data(args: argparse.Namespace) -> List[Split]:
    from customobj.data import synthetic
    X, y, group = synthetic(args.queries, args.rows, args.features, seed=args.seed)
    group = np.asarray(group, dtype=np.int64)
    return [take_queries(X, y, group, q) for q in split_queries(group, args.seed)]


# --- one model -----------------------------------------------------------------------------------
class Recorder:
    """Fit callback: per round the tree's wall / CPU seconds, then valid and test NDCG@10.

    The clock restarts after the evaluation, so a tree's time is the boosting round alone.
    """

    def __init__(self, valid: Split, test: Split, bar: Any) -> None:
        from customobj.ole.predictor import PackedTrees, predict_raw
        self._packed, self._predict = PackedTrees, predict_raw
        self.valid, self.test, self.bar = valid, test, bar
        self.valid_raw = np.zeros(valid.X.shape[0])
        self.test_raw = np.zeros(test.X.shape[0])
        self.wall: List[float] = []
        self.cpu: List[float] = []
        self.valid_ndcg: List[float] = []
        self.test_ndcg: List[float] = []
        self.start()

    def start(self) -> None:
        self._t, self._c = time.perf_counter(), time.process_time()

    def _add(self, tree: dict, split: Split, raw: np.ndarray) -> float:
        from customobj.metrics import ndcg
        raw += self._predict(split.X, self._packed([tree]), np.zeros(1, np.int64), 1, 0, 1)[:, 0]
        return float(ndcg(raw, split.y, split.group, METRIC_K))

    def __call__(self, model: Any, iteration: int, evals_result: dict) -> bool:
        self.wall.append(time.perf_counter() - self._t)
        self.cpu.append(time.process_time() - self._c)
        tree = model.trees_[-1]
        self.valid_ndcg.append(self._add(tree, self.valid, self.valid_raw))
        self.test_ndcg.append(self._add(tree, self.test, self.test_raw))
        self.bar.update(1)
        self.start()
        return False


def fit_one(train: Split, valid: Split, test: Split, leaves: int, criterion: str, args: argparse.Namespace,
            bar: Any) -> dict:
    import customobj as co
    from customobj.metrics import ndcg
    from customobj.ole import TreeBooster

    model = TreeBooster(co.LambdaRank(metric="ndcg"), criterion=criterion, num_leaves=leaves,
                        learning_rate=args.learning_rate, n_estimators=args.rounds, growth="breadth_first",
                        n_jobs=args.threads, random_state=args.seed, verbose=False)
    bar.set_description(f"leaves {leaves} {criterion}")
    rec = Recorder(valid, test, bar)
    model.fit(train.X, train.y, train.group, callbacks=[rec])
    per_query = ndcg(rec.test_raw, test.y, test.group, METRIC_K, per_query=True)
    return {"leaves": leaves, "criterion": criterion, "wall": rec.wall, "cpu": rec.cpu,
            "valid_ndcg": rec.valid_ndcg, "test_ndcg": rec.test_ndcg, "per_query": per_query}


def warm_up(args: argparse.Namespace) -> None:
    """Compile (or load) the numba kernels on tiny data so compilation is not timed."""
    import customobj as co
    from customobj.data import synthetic
    from customobj.ole import TreeBooster
    X, y, g = synthetic(20, 20, 5, seed=1)
    for c in args.criteria:
        TreeBooster(co.LambdaRank(metric="ndcg"), criterion=c, num_leaves=4, n_estimators=1, min_data_in_leaf=2,
                    growth="breadth_first", n_jobs=args.threads, verbose=False).fit(X, y, g)


# --- statistics and outputs ----------------------------------------------------------------------
def per_tree(seconds: Sequence[float]) -> float:
    """Mean seconds per tree over rounds 2..R (round 1 also bins the data); round 1 alone if R = 1."""
    s = list(seconds[1:]) or list(seconds)
    return float(np.mean(s))


def paired(diff: np.ndarray) -> dict:
    """Per-query differences: mean, wins / losses / ties, Wilcoxon and paired t-test p-values."""
    from scipy import stats
    out = {"mean": float(diff.mean()), "wins": int((diff > 0).sum()), "losses": int((diff < 0).sum()),
           "ties": int((diff == 0).sum()), "wilcoxon_p": float("nan"), "ttest_p": float("nan")}
    if np.any(diff != 0):  # both tests are undefined when every query ties
        out["wilcoxon_p"] = float(stats.wilcoxon(diff).pvalue)
        if diff.size > 1 and np.std(diff) > 0:
            out["ttest_p"] = float(stats.ttest_1samp(diff, 0.0).pvalue)
    return out


def table_rows(runs: List[dict]) -> List[dict]:
    """One summary row per finished (leaves, criterion); differences and ratios against SE."""
    base = {r["leaves"]: r for r in runs if r["criterion"] == BASELINE}
    rows = []
    for r in runs:
        b = base.get(r["leaves"])
        row = {"leaves": r["leaves"], "criterion": r["criterion"], "rounds": len(r["test_ndcg"]),
               "test_ndcg10": r["test_ndcg"][-1], "valid_best_round": int(np.argmax(r["valid_ndcg"])) + 1,
               "tree_wall_s": per_tree(r["wall"]), "tree_cpu_s": per_tree(r["cpu"])}
        row["test_ndcg10_at_valid_best"] = r["test_ndcg"][row["valid_best_round"] - 1]
        if b is not None:
            row["diff_points"] = POINTS * (r["test_ndcg"][-1] - b["test_ndcg"][-1])
            row["paired"] = paired(POINTS * (np.asarray(r["per_query"]) - np.asarray(b["per_query"])))
            row["wall_ratio"] = row["tree_wall_s"] / per_tree(b["wall"])
            row["cpu_ratio"] = row["tree_cpu_s"] / per_tree(b["cpu"])
        rows.append(row)
    return rows


def format_table(rows: List[dict], header: str) -> str:
    def f(v, spec):
        return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)
    head = (f"{'leaves':>6} {'criterion':<9} {'rounds':>6} {'NDCG@10':>8} {'vs SE':>7} {'q-mean':>7} "
            f"{'W/L/T':>15} {'Wilcoxon p':>10} {'t-test p':>9} {'s/tree':>7} {'cpu s':>7} "
            f"{'x SE':>5} {'cpu x':>5} {'best v':>6} {'NDCG@bv':>8}")
    lines = [header, head, "-" * len(head)]
    for r in rows:
        p = r.get("paired") if r["criterion"] != BASELINE else None
        wlt = f"{p['wins']}/{p['losses']}/{p['ties']}" if p else "-"
        lines.append(
            f"{r['leaves']:>6} {r['criterion']:<9} {r['rounds']:>6} {POINTS * r['test_ndcg10']:>8.3f} "
            f"{f(r.get('diff_points') if p else None, '+7.3f'):>7} {f(p['mean'] if p else None, '+7.3f'):>7} "
            f"{wlt:>15} {f(p['wilcoxon_p'] if p else None, '10.3g'):>10} {f(p['ttest_p'] if p else None, '9.3g'):>9} "
            f"{r['tree_wall_s']:>7.3f} {r['tree_cpu_s']:>7.3f} {f(r.get('wall_ratio'), '5.2f'):>5} "
            f"{f(r.get('cpu_ratio'), '5.2f'):>5} {r['valid_best_round']:>6} "
            f"{POINTS * r['test_ndcg10_at_valid_best']:>8.3f}")
    lines.append("NDCG@10 in points (%); vs SE = final test NDCG@10 minus SE's (same leaves); q-mean = mean per-query "
                 "difference (equal to vs SE); W/L/T = test queries better / worse / tied; s/tree, cpu s = wall / "
                 "process-CPU seconds per tree, rounds 2..R; x SE = their ratios to SE; best v = round of best valid "
                 "NDCG@10, NDCG@bv = test NDCG@10 there.")
    return "\n".join(lines) + "\n"


def render_figure(runs: List[dict], title: str) -> bytes:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    base = {r["leaves"]: r for r in runs if r["criterion"] == BASELINE}
    colors = dict(zip(sorted({r["leaves"] for r in runs}), ["tab:blue", "tab:red", "tab:green", "tab:purple"] * 8))
    styles = {"ole": "-", "ole_fast": "--", "se": ":"}
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    for r in runs:
        rounds = np.arange(1, len(r["test_ndcg"]) + 1)
        c, ls = colors[r["leaves"]], styles[r["criterion"]]
        ax2.plot(rounds, POINTS * np.asarray(r["test_ndcg"]), ls, color=c, lw=1,
                 label=f"{r['criterion']}, {r['leaves']} leaves")
        b = base.get(r["leaves"])
        if r["criterion"] != BASELINE and b is not None:
            diff = POINTS * (np.asarray(r["test_ndcg"]) - np.asarray(b["test_ndcg"]))
            ax.plot(rounds, diff, ls, color=c, lw=1.2, label=f"{r['criterion']} - se, {r['leaves']} leaves")
    ax.axhline(0.0, color="black", lw=0.7)
    ax.set(xlabel="boosting rounds (trees)", ylabel="test NDCG@10 difference (points)",
           title="criterion minus SE (Xia et al., Figure 2)")
    ax2.set(xlabel="boosting rounds (trees)", ylabel="test NDCG@10 (points)", title="test NDCG@10")
    for a in (ax, ax2):
        a.grid(alpha=0.3)
        if a.get_legend_handles_labels()[0]:  # the left panel is empty until a criterion beside SE finished
            a.legend(fontsize=8)
    fig.suptitle(textwrap.fill(title, 130), fontsize=9)  # the data / settings line is wider than the figure
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


def _strict(value: Any) -> Any:
    """``value`` with NaN (an undefined p-value: every query tied) as None, so the JSON is standard."""
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def write_outputs(runs: List[dict], args: argparse.Namespace, sizes: dict, started: float) -> str:
    """Rewrite every output from the runs finished so far; returns the table text."""
    from customobj._io import replace_files

    rows = table_rows(runs)
    header = (f"{sizes['queries']} queries ({sizes['train']}/{sizes['valid']}/{sizes['test']} train/valid/test), "
              f"{sizes['rows']:,} rows x {args.features} features; LambdaMART (LambdaRank NDCG), breadth-first, "
              f"learning rate {args.learning_rate}, {args.rounds} rounds, {args.threads} threads, seed {args.seed}")
    text = format_table(rows, header)
    curves = io.StringIO(newline="")
    w = csv.writer(curves)
    w.writerow(["leaves", "criterion", "round", "valid_ndcg10", "test_ndcg10", "tree_wall_s", "tree_cpu_s"])
    for r in runs:
        for i, vals in enumerate(zip(r["valid_ndcg"], r["test_ndcg"], r["wall"], r["cpu"]), start=1):
            w.writerow([r["leaves"], r["criterion"], i, *(repr(float(v)) for v in vals)])
    doc = {"schema": "customobj.ole_paper/1", "args": {k: v for k, v in vars(args).items()}, "data": sizes,
           "elapsed_s": time.perf_counter() - started, "load_avg": os.getloadavg(), "table": rows,
           "curves": [{k: (list(map(float, v)) if isinstance(v, (list, np.ndarray)) else v) for k, v in r.items()}
                      for r in runs]}
    # one change: a failure while writing leaves the previous outputs whole, never a mix of two updates
    replace_files(args.out, {
        "curves.csv": curves.getvalue().encode(),
        "results.json": (json.dumps(_strict(doc), indent=1, allow_nan=False) + "\n").encode(),
        "table.txt": text.encode(),
        "ole_paper.png": render_figure(runs, header),
    })
    return text


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    from tqdm.auto import tqdm
    os.makedirs(args.out, exist_ok=True)
    started = time.perf_counter()
    train, valid, test = make_data(args)
    sizes = {"queries": args.queries, "train": len(train.group), "valid": len(valid.group),
             "test": len(test.group), "rows": int(train.X.shape[0] + valid.X.shape[0] + test.X.shape[0]),
             "train_rows": int(train.X.shape[0])}
    warm_up(args)
    configs = [(lv, c) for lv in args.leaves for c in args.criteria]
    runs: List[dict] = []
    text = ""
    with tqdm(total=len(configs) * args.rounds, disable=args.no_progress, unit="tree",
              mininterval=1.0 if sys.stderr.isatty() else 30.0) as bar:
        for leaves, criterion in configs:
            runs.append(fit_one(train, valid, test, leaves, criterion, args, bar))
            text = write_outputs(runs, args, sizes, started)
    print(text, end="")
    print(f"wall time {time.perf_counter() - started:.0f} s; outputs in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
