"""``customobj compare``: train several rankers on the same folds and compare them on the test folds.

``add_arguments(parser)`` fills an argparse (sub)parser, ``run(args) -> int`` does the work (0 on
success, 2 for bad arguments or data, 1 when a training run fails). ``main(argv)`` runs it alone.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from .._validation import as_labels
from . import report
from .methods import build_objective, parse_method, parse_methods, split_methods, valid_names_help
from .trainers import Settings, Split, catboost_available, train, warm_up

__all__ = ["add_arguments", "run", "main", "DEFAULT_METHODS"]

#: Default method set: native rankers of both libraries, customobj objectives through both
#: adapters, and the OLE booster with the OLE and WSE split criteria (sized for ~2 min on 2 cores).
DEFAULT_METHODS = ("lgb:lambdarank,xgb:rank:ndcg,lgb:LambdaRank,lgb:QBRank,xgb:RankNet,"
                   "ole:LambdaRank[ole],ole:LambdaRank[wse]")
#: Built-in synthetic data used when no data is given (customobj.data.synthetic: LETOR-like, grades 0-4).
SYNTHETIC_QUERIES = 1000
SYNTHETIC_DOCS = 20
SYNTHETIC_FEATURES = 20
SYNTHETIC_FOLDS = "1,2,3,4,5"
N_PARTS = 5  # synthetic folds rotate 5 query parts as LETOR does: 3 train, 1 validation, 1 test


class UsageError(ValueError):
    """Bad arguments or data: reported without a traceback, exit code 2."""


def _number(convert, ok, what):
    """An argparse ``type=``: ``convert`` the text, then require ``ok(value)`` (``what`` names it)."""

    def parse(text):
        try:
            v = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if not ok(v):
            raise argparse.ArgumentTypeError(f"expected {what}, got {v}")
        return v

    return parse


_positive_int = _number(int, lambda v: v >= 1, "a positive integer")
_nonnegative_int = _number(int, lambda v: v >= 0, "an integer >= 0")
_positive_float = _number(float, lambda v: v > 0 and np.isfinite(v), "a positive finite number")


def _folds(text):
    try:
        folds = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated fold numbers like 1,2, got {text!r}") from None
    if not folds or min(folds) < 1 or len(set(folds)) != len(folds):
        raise argparse.ArgumentTypeError(f"expected distinct fold numbers >= 1 like 1,2, got {text!r}")
    return folds


def add_arguments(parser):
    """Add the ``compare`` options to an argparse parser (or subparser)."""
    parser.description = (
        "Train ranking methods on the same folds with early stopping on the validation part and compare "
        "them on the test part. With no data option it uses built-in synthetic data.")
    parser.epilog = valid_names_help()
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    data = parser.add_argument_group("data (default: built-in synthetic data)")
    data.add_argument("--letor", metavar="DIR", help="folder with Fold1..5/{train,vali,test}.txt[.gz] (LETOR layout)")
    data.add_argument("--train", metavar="FILE", help="training file (LETOR/SVMlight); needs --valid and --test")
    data.add_argument("--valid", metavar="FILE", help="validation file (early stopping, learning curves)")
    data.add_argument("--test", metavar="FILE", help="test file (reported metrics)")
    data.add_argument("--folds", type=_folds, metavar="LIST",
                      help=f"folds to run, e.g. 1,2 (default: every fold of --letor; {SYNTHETIC_FOLDS} for synthetic)")
    data.add_argument("--synthetic-queries", type=_positive_int, default=SYNTHETIC_QUERIES, metavar="N",
                      help=f"queries of the synthetic data (default {SYNTHETIC_QUERIES})")
    data.add_argument("--synthetic-docs", type=_positive_int, default=SYNTHETIC_DOCS, metavar="N",
                      help=f"documents per synthetic query (default {SYNTHETIC_DOCS})")
    m = parser.add_argument_group("methods and training")
    m.add_argument("--methods", default=DEFAULT_METHODS, metavar="LIST",
                   help=f"comma-separated method names (default: {DEFAULT_METHODS})")
    m.add_argument("--baseline", metavar="NAME", help="method of the paired comparison (default: the first)")
    m.add_argument("--rounds", type=_positive_int, default=200, help="maximum boosting rounds (default 200)")
    m.add_argument("--num-leaves", type=_positive_int, default=31, help="leaves per tree (default 31)")
    m.add_argument("--learning-rate", type=_positive_float, default=0.1, help="shrinkage (default 0.1)")
    m.add_argument("--early-stopping", type=_nonnegative_int, default=20, metavar="N",
                   help="stop after N rounds without validation NDCG@10 gain, for every method (0 = off; default 20)")
    m.add_argument("--seed", type=int, default=0, help="seed of the data and of every library (default 0)")
    m.add_argument("--jobs", type=_positive_int, default=2, help="training threads (default 2)")
    o = parser.add_argument_group("output")
    o.add_argument("--out", default="compare-results", metavar="DIR",
                   help="folder for results.csv, summary.csv, paired.csv, results.json, curves.png (default ./compare-results)")
    o.add_argument("--no-plot", action="store_true", help="do not draw curves.png")
    o.add_argument("--quiet", action="store_true", help="no progress bar, no tables on the terminal")
    return parser


# --- data -----------------------------------------------------------------------------------------
def _synthetic_folds(args, folds):
    from ..data import synthetic

    bad = [f for f in folds if f > N_PARTS]
    if bad:
        raise UsageError(f"--folds: the synthetic data has folds 1..{N_PARTS}, got {bad}")
    if args.synthetic_queries < N_PARTS:
        raise UsageError(f"--synthetic-queries must be >= {N_PARTS} (one part per fold)")
    data = Split.from_data(synthetic(args.synthetic_queries, args.synthetic_docs, SYNTHETIC_FEATURES, seed=args.seed))
    # Shuffle queries once (seeded), cut into 5 parts, rotate like LETOR: parts k..k+2 train, k+3 vali, k+4 test.
    order = np.random.default_rng(args.seed).permutation(data.sizes.size)
    parts = np.array_split(order, N_PARTS)
    ptr = data.ptr

    def take(queries):
        queries = np.sort(np.concatenate(queries))
        rows = np.concatenate([np.arange(ptr[q], ptr[q + 1]) for q in queries])
        return Split(data.X[rows], data.y[rows], data.sizes[queries])

    out = []
    for k in folds:
        idx = [(k - 1 + i) % N_PARTS for i in range(N_PARTS)]
        out.append((k, take([parts[i] for i in idx[:3]]), take([parts[idx[3]]]), take([parts[idx[4]]])))
    desc = f"synthetic ({args.synthetic_queries} queries x {args.synthetic_docs} docs, {SYNTHETIC_FEATURES} features)"
    return out, desc


def _pad(split, width):
    if split.X.shape[1] < width:
        split.X = np.hstack([split.X, np.zeros((split.X.shape[0], width - split.X.shape[1]))])
    return split


def _load_folds(args):
    """[(fold, train, valid, test)] as Splits, and a one-line description of the data."""
    from ..data import load_letor, load_letor_folds

    files = [args.train, args.valid, args.test]
    if args.letor and any(files):
        raise UsageError("give either --letor DIR or --train/--valid/--test FILE, not both")
    if any(files):
        if not all(files):
            missing = [n for n, f in zip(("--train", "--valid", "--test"), files) if not f]
            raise UsageError(f"--train, --valid and --test go together; missing {', '.join(missing)}")
        if args.folds:
            raise UsageError("--folds applies to --letor and synthetic data, not to --train/--valid/--test")
        for f in files:
            if not Path(f).is_file():
                raise UsageError(f"no such file: {f}")
        splits = []
        for f in files:
            try:
                splits.append(Split.from_data(load_letor(f)))
            except ValueError as exc:
                raise UsageError(f"{f}: {exc}") from None
        width = max(s.X.shape[1] for s in splits)
        return [(1, *(_pad(s, width) for s in splits))], f"files {args.train}, {args.valid}, {args.test}"
    if args.letor:
        root = Path(args.letor)
        if not root.is_dir():
            raise UsageError(f"--letor: no such directory: {root}")
        folds = load_letor_folds(root, args.folds)
        return ([(f.fold, *(Split.from_data(d) for d in (f.train, f.vali, f.test))) for f in folds],
                f"LETOR folds in {root}")
    return _synthetic_folds(args, args.folds or _folds(SYNTHETIC_FOLDS))


# --- run ------------------------------------------------------------------------------------------
def _check_methods(args):
    specs = parse_methods(split_methods(args.methods))
    for s in specs:
        if s.backend == "cb" and not catboost_available():
            raise UsageError(f"{s.label} needs CatBoost, an optional extra: pip install 'customobj[catboost]'")
        if not s.native:
            build_objective(s)  # bad options fail now, not after an hour of training
        if s.backend == "ole":
            try:
                from ..ole import TreeBooster  # noqa: F401
            except ImportError as exc:
                raise UsageError(f"{s.label} needs customobj.ole.TreeBooster, which is not available: {exc}") from None
    labels = [s.label for s in specs]
    baseline = labels[0]
    if args.baseline:
        baseline = parse_method(args.baseline).label
        if baseline not in labels:
            raise UsageError(f"--baseline {baseline} is not one of --methods: {', '.join(labels)}")
    return specs, baseline


def _check_labels(specs, folds):
    """Let each customobj objective check the training labels now (e.g. Logistic wants 0/1 labels)."""
    for fold, tr, _, _ in folds:
        try:
            as_labels(tr.y, name="labels")
        except ValueError as exc:
            raise UsageError(f"fold {fold}: {exc}") from None
    for spec in specs:
        if spec.native:
            continue
        for fold, tr, _, _ in folds:
            try:
                build_objective(spec).prepare(tr.y, tr.sizes)
            except ValueError as exc:
                raise UsageError(f"{spec.label} cannot train on fold {fold}: {exc}") from None


def _progress(total, quiet):
    from tqdm.auto import tqdm

    return tqdm(total=total, file=sys.stderr, disable=quiet, unit="run", dynamic_ncols=True, leave=False)


def run(args):
    """Run the comparison described by parsed ``args``; returns the process exit code."""
    say = (lambda *a: None) if args.quiet else print
    # adapters sets OMP_WAIT_POLICY=passive unless the user chose one; it must be imported before
    # lightgbm/xgboost load OpenMP, or spinning threads slow the Python objectives on a busy machine.
    from customobj import adapters  # noqa: F401
    try:
        specs, baseline = _check_methods(args)
        folds, data_desc = _load_folds(args)
        _check_labels(specs, folds)
    except (UsageError, ValueError, TypeError) as exc:
        print(f"customobj compare: error: {exc}", file=sys.stderr)
        return 2
    settings = Settings(rounds=args.rounds, num_leaves=args.num_leaves, learning_rate=args.learning_rate,
                        seed=args.seed, jobs=args.jobs, early_stopping=args.early_stopping)
    labels = [s.label for s in specs]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    rows, curves, per_query = [], {lab: [] for lab in labels}, {lab: [] for lab in labels}
    start = time.perf_counter()
    bar = _progress(len(folds) * len(specs), args.quiet)
    where = ""
    try:
        for spec in specs:  # compile the numba code once, outside the timings
            where = f"{spec.label} (compiling on tiny data)"
            bar.set_description(f"compiling {spec.label}")
            warm_up(spec, settings)
        for fold, tr, va, te in folds:
            for spec in specs:
                where = f"{spec.label} on fold {fold}"
                bar.set_description(f"fold {fold} {spec.label}")
                result = train(spec, settings, tr, va, te)
                metrics, pq = report.evaluate(result.test_scores, te)
                valid_ndcg = report.evaluate(result.valid_scores, va)[0]["ndcg@10"]
                rows.append({"method": spec.label, "fold": fold, **metrics, "valid_ndcg@10": valid_ndcg,
                             "train_time_s": result.train_time, "best_round": result.best_round,
                             "rounds_trained": result.rounds_trained})
                curves[spec.label].append(result.curve)
                per_query[spec.label].append(pq)
                bar.update(1)
    except Exception as exc:  # noqa: BLE001 - report which run failed, then stop
        bar.close()
        print(f"customobj compare: error: {where} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    bar.close()
    wall = time.perf_counter() - start

    summary = report.summarize(rows, labels)
    pooled = {lab: np.concatenate(v) for lab, v in per_query.items()}
    paired = report.paired_comparison(pooled, labels, baseline)
    report.write_csv(out / "results.csv", rows, report.RESULT_COLUMNS)
    summary_cols = ["method", "n_folds"] + [k for k in summary[0] if k not in ("method", "n_folds")]
    report.write_csv(out / "summary.csv", summary, summary_cols)
    report.write_csv(out / "paired.csv", paired, report.PAIRED_COLUMNS)
    config = {k: v for k, v in vars(args).items() if isinstance(v, (str, int, float, bool, list, type(None)))}
    report.write_json(out / "results.json", {
        "data": data_desc, "folds": [f[0] for f in folds], "methods": labels, "baseline": baseline,
        "settings": vars(settings), "arguments": config, "wall_time_s": wall,
        "results": rows, "summary": summary, "paired": paired,
        "curves": {lab: {"metric": "valid ndcg@10", "per_fold": c} for lab, c in curves.items()},
    })
    if not args.no_plot:
        report.plot_curves(out / "curves.png", curves,
                           f"Validation NDCG@10 — {data_desc}, folds {','.join(str(f[0]) for f in folds)}")
    say(f"data: {data_desc}; folds {','.join(str(f[0]) for f in folds)}; "
        f"{len(specs)} methods; wall time {wall:.1f} s")
    say(report.format_table(summary))
    if paired:
        say()
        say(report.format_paired(paired))
    say(f"\nwrote {out}/results.csv, summary.csv, paired.csv, results.json" + ("" if args.no_plot else ", curves.png"))
    return 0


def main(argv=None):
    parser = add_arguments(argparse.ArgumentParser(prog="customobj compare"))
    return run(parser.parse_args(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
