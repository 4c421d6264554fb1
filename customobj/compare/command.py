"""``customobj compare``: train several rankers on the same folds and compare them on the test folds.

``add_arguments(parser)`` fills an argparse (sub)parser, ``run(args) -> int`` does the work: it
checks everything it can before training (methods and their options on a sample of the data,
the output folder, the data files, the labels) and raises :class:`customobj.cli.UsageError`
(exit status 2) for what is wrong there, :class:`customobj.cli.RunError` (exit status 1) when a
training run or writing the results fails. ``customobj.cli.main`` turns both into one line on
stderr.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from .._cli_errors import RunError, UsageError, one_line, stderr_held
from .._device import Device, as_device
from .._extras import available, install_hint
from . import output, report, runner
from .clicks import CLICK_TRAINERS
from .ensemble import member_specs
from .multi_settings import add_arguments as multi_label_arguments, refuse_without_labels
from .harvested import N_RANKERS, checkable, harvest_folds, wants_harvest
from .folds import MAX_GRADE, SYNTHETIC_DOCS, SYNTHETIC_FOLDS, SYNTHETIC_QUERIES, load_folds, parse_folds
from .methods import build_objective, parse_method, parse_methods, split_methods, valid_names_help
from .trainers import CLICK_CURVE_METRIC, Settings, catboost_available, train, warm_up, warm_up_sample

__all__ = ["add_arguments", "run", "DEFAULT_METHODS", "MAX_GRADE", "UsageError", "RunError"]

#: Default method set: native rankers of both libraries, customobj objectives through both
#: adapters, and the OLE booster with the OLE and WSE split criteria (sized for ~2 min on 2 cores).
DEFAULT_METHODS = ("lgb:lambdarank,xgb:rank:ndcg,lgb:LambdaRank,lgb:QBRank,xgb:RankNet,"
                   "ole:LambdaRank[ole],ole:LambdaRank[wse]")
#: Default method set of --click-log: the naive ranker and every click method of both libraries.
CLICK_LOG_METHODS = ("lgb:LambdaRank,lgb:lambdarank,lgb:Unbiased(objective=LambdaRank),lgb:RegressionEM,"
                     "xgb:rank:ndcg(lambdarank_unbiased=true)")
#: Seeds, rounds and patience go to the libraries as 32-bit C ints.
INT32_MAX = 2**31 - 1
MAX_LEAVES = 131072  # LightGBM's upper limit of num_leaves
MAX_JOBS = 1024
#: Upper limits of --tune and --seeds: far beyond any useful budget, low enough that a typo
#: (--tune 80000) is refused instead of running for weeks.
MAX_TRIALS = 10000
MAX_SEEDS = 1000


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


_positive_int = _number(int, lambda v: 1 <= v <= INT32_MAX, f"a positive integer <= {INT32_MAX}")
_nonnegative_int = _number(int, lambda v: 0 <= v <= INT32_MAX, f"an integer in 0..{INT32_MAX}")
_leaves = _number(int, lambda v: 2 <= v <= MAX_LEAVES, f"an integer in 2..{MAX_LEAVES}")
_jobs = _number(int, lambda v: 1 <= v <= MAX_JOBS, f"an integer in 1..{MAX_JOBS}")
_trials = _number(int, lambda v: 0 <= v <= MAX_TRIALS, f"an integer in 0..{MAX_TRIALS}")
_seeds = _number(int, lambda v: 1 <= v <= MAX_SEEDS, f"an integer in 1..{MAX_SEEDS}")
_positive_float = _number(float, lambda v: v > 0 and np.isfinite(v), "a positive finite number")


def _device(text):
    """``--device``: the one device parser's record (customobj._device)."""
    try:
        return as_device(text, "--device")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _on_gpu(args) -> bool:
    return getattr(args, "device", Device.CPU).is_cuda



def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
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
    data.add_argument("--test", metavar="FILE", help="test file (reported metrics); with --click-log a labelled LETOR "
                                                     "file, or a folder holding test.txt")
    data.add_argument("--folds", type=parse_folds, metavar="LIST",
                      help=f"folds to run, e.g. 1,2 (default: every fold of --letor; {SYNTHETIC_FOLDS} for synthetic)")
    # default None: given with --letor / --train they are an error, not silently ignored
    data.add_argument("--synthetic-queries", type=_positive_int, metavar="N",
                      help=f"queries of the synthetic data (default {SYNTHETIC_QUERIES})")
    data.add_argument("--synthetic-docs", type=_positive_int, metavar="N",
                      help=f"documents per synthetic query (default {SYNTHETIC_DOCS})")
    data.add_argument("--clicks", metavar="MODEL[:eta=E,sessions=S,shown=K]",
                      help="train on simulated clicks instead of the training labels: pbm, cascade, trust, dcm or "
                           "ubm users on a weak ranker's top K rows (default eta=1, sessions=12, shown=10; trust "
                           "takes epsilon_plus=/epsilon_minus=, dcm continue_prob=, each a number or one per "
                           "position joined by /); validation and test "
                           "keep the true labels; methods such as lgb:Unbiased(objective=LambdaRank) and "
                           "lgb:RegressionEM debias them")
    data.add_argument("--click-log", metavar="FILE",
                      help="train every method on a real click log (Parquet or CSV, one row per shown document), "
                           "validate on the IPS click NDCG@10 of held-out queries, test on --test's labels or, "
                           "without --test, on the click metrics of more held-out queries")
    data.add_argument("--click-columns", metavar="KEY=COLUMN,...",
                      help="the log's columns: query=, position=, click= (default: columns of those names), "
                           "session=, document= (default: those columns when present), features=a:b:c or "
                           "features=f* (default: every other column)")
    data.add_argument("--first-position", type=_nonnegative_int, metavar="N",
                      help="the number the top position carries in --click-log (default: the smallest, 0 or 1)")
    m = parser.add_argument_group("methods and training")
    m.add_argument("--methods", default=DEFAULT_METHODS, metavar="LIST",
                   help=f"comma-separated method names (default: {DEFAULT_METHODS}; with --click-log "
                        f"{CLICK_LOG_METHODS})")
    m.add_argument("--labels", metavar="COL,COL[,...]",
                   help="compare multi-label methods instead: two or more label columns, each 'label' (the "
                        "relevance label) or a feature number (graded per query, removed from the features); "
                        "--methods then names MultiObjective methods (default linear,epo,epsilon_constraint)")
    multi_label_arguments(m)  # --preferences, --bounds
    m.add_argument("--baseline", metavar="NAME", help="method of the paired comparison (default: the first)")
    m.add_argument("--rounds", type=_positive_int, default=200, help="maximum boosting rounds (default 200)")
    m.add_argument("--num-leaves", type=_leaves, default=31, help="leaves per tree (default 31)")
    m.add_argument("--learning-rate", type=_positive_float, default=0.1, help="shrinkage (default 0.1)")
    m.add_argument("--early-stopping", type=_nonnegative_int, default=20, metavar="N",
                   help="stop after N rounds without validation NDCG@10 gain, for every method (0 = off; default 20)")
    m.add_argument("--seed", type=_nonnegative_int, default=0,
                   help="seed of the data and of every library (default 0)")
    m.add_argument("--jobs", type=_jobs, default=2, help="training threads (default 2)")
    m.add_argument("--device", type=_device, default=Device.CPU, metavar="{cpu,cuda,cuda:N}",
                   help="where XGBoost methods (xgb:...) train: cuda (or cuda:N, CUDA device N) = XGBoost device='cuda' "
                        "with customobj's GPU objectives (needs the cuda extra and an NVIDIA GPU); other backends "
                        "use the CPU")
    m.add_argument("--tune", type=_trials, default=0, metavar="N",
                   help="N trials of hyperparameter search (seeded Optuna TPE) per method and fold on the "
                        "validation part, the same budget for every method; it searches leaves (depth for "
                        "CatBoost), learning rate, minimum data per leaf, L2, feature fraction and the "
                        "objective's own sigma, truncation or lam, and records the chosen values and each "
                        "trial's score in results.json (default 0: no tuning, the fixed settings above)")
    m.add_argument("--seeds", type=_seeds, default=1, metavar="K",
                   help="K seeds per method and fold (--seed, --seed+1, ...): the mean, with the seed spread beside "
                        "the fold spread; refused when no seed changes a method (default 1)")
    o = parser.add_argument_group("output")
    o.add_argument("--out", metavar="DIR",
                   help="folder for " + ", ".join(output.RESULT_FILES) + f" (default ./{output.DEFAULT_OUT}, whose "
                        "earlier results each run replaces; a folder you name is never overwritten without "
                        "--overwrite)")
    o.add_argument("--overwrite", action="store_true",
                   help="replace the results of an earlier run in --out (without it, such a folder is refused)")
    o.add_argument("--no-plot", action="store_true", help="do not draw curves.png")
    o.add_argument("--quiet", action="store_true",
                   help="no progress bar, no tables on the terminal (the folder written is still printed)")
    return parser


# --- data -----------------------------------------------------------------------------------------

# --- checks before training -----------------------------------------------------------------------
def _refuse_with_click_log(args):
    """--click-log is the training data: the other data options would be silently ignored."""
    given = [opt for opt, v in (("--letor", args.letor), ("--train", args.train), ("--valid", args.valid),
                                ("--clicks", getattr(args, "clicks", None)), ("--folds", args.folds),
                                ("--synthetic-queries", args.synthetic_queries),
                                ("--synthetic-docs", args.synthetic_docs)) if v is not None]
    if given:
        raise UsageError(f"--click-log is the training data: drop {', '.join(given)} (--test gives the labelled "
                         "test set)")


def _refuse_click_log_options(args):
    given = [opt for opt, v in (("--click-columns", getattr(args, "click_columns", None)),
                                ("--first-position", getattr(args, "first_position", None))) if v is not None]
    if given:
        raise UsageError(f"{' and '.join(given)} describe --click-log, which is not given")


def _method_error(exc):
    """One line: the parser's first line (its ValueError goes on to list every valid name)."""
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if "option '" in first:  # a bad option value: the names were fine
        return UsageError(first)
    return UsageError(f"{first} (customobj compare --help lists the valid names)")


def _check_methods(args):
    try:
        specs = parse_methods(split_methods(args.methods))
    except (ValueError, TypeError) as exc:
        raise _method_error(exc) from None
    for s in member_specs(specs):  # an ensemble's members are checked as single methods
        if s.backend == "cb" and not catboost_available():
            raise UsageError(f"{s.label} needs CatBoost, an optional extra: {install_hint('catboost')}")
        if s.backend == "xgb" and not available("xgboost"):
            raise UsageError(f"{s.label} needs XGBoost, an optional extra: {install_hint('xgboost')}")
        if s.target in CLICK_TRAINERS:
            _check_trainer(s, args)
        elif not s.native:
            _check_harvest(s, args)
            try:
                build_objective(checkable(s))  # bad options fail now, not after an hour of training
            except (ValueError, TypeError, OverflowError) as exc:
                raise UsageError(one_line(exc)) from None
    if getattr(args, "click_log", None):
        from .click_log import refuse_methods

        refuse_methods(specs)
    if _on_gpu(args):
        _check_gpu_methods(member_specs(specs), args.device)
    labels = [s.label for s in specs]
    baseline = labels[0]
    if args.baseline:
        try:
            baseline = parse_method(args.baseline).label
        except (ValueError, TypeError) as exc:
            raise _method_error(exc) from None
        if baseline not in labels:
            raise UsageError(f"--baseline {baseline} is not one of --methods: {', '.join(labels)}")
    return specs, baseline


def _check_harvest(spec, args):
    """``Unbiased(..., propensity=harvest)`` needs simulated rankers' logs (customobj.compare.harvested)."""
    if wants_harvest(spec) and not getattr(args, "clicks", None):
        raise UsageError(f"{spec.label} harvests propensities from the simulated logs of {N_RANKERS} rankers: "
                         "add --clicks (a --click-log is one log; harvest yours with "
                         "customobj.clicks.harvest_propensities and pass propensity= to Unbiased)")


def _check_trainer(spec, args):
    """``lgb:RegressionEM(...)``: its options now, and the click log it needs."""
    from .clicks import build_regression_em

    if not getattr(args, "clicks", None) and not getattr(args, "click_log", None):
        raise UsageError(f"{spec.label} learns from clicks: add --clicks pbm (or cascade), or --click-log FILE")
    if _on_gpu(args):
        raise UsageError(f"{spec.label} trains on the CPU: leave it out of --device cuda runs")
    try:
        build_regression_em(spec.backend, spec.kwargs, rounds=args.rounds, num_leaves=args.num_leaves,
                            learning_rate=args.learning_rate, seed=args.seed)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"invalid options for {spec.label}: {one_line(exc)}") from None


def _check_gpu_methods(specs, device):
    """--device cuda: XGBoost methods to train, a real GPU, and a GPU kernel for each customobj objective."""
    from customobj._cuda_runtime import GPUUnavailableError, gpu_status
    from customobj.adapters._cuda import check_gpu_objective

    xgb = [s for s in specs if s.backend == "xgb"]
    if not xgb:
        raise UsageError("--device cuda applies to XGBoost methods (xgb:...), and --methods has none")
    status = gpu_status()
    if not status.available or status.simulator:
        why = status.reason or "numba's CUDA simulator is on (NUMBA_ENABLE_CUDASIM), and XGBoost needs a real GPU"
        raise UsageError(f"--device cuda needs a CUDA GPU: {why}")
    try:
        for s in xgb:
            if not s.native:
                check_gpu_objective(build_objective(checkable(s)), "--device cuda: xgboost_objective", device)
    except (GPUUnavailableError, NotImplementedError) as exc:
        raise UsageError(one_line(exc)) from None


def _check_labels(specs, folds):
    """Let each customobj objective check the training labels now (e.g. Logistic wants 0/1 labels)."""
    for spec in member_specs(specs):
        if spec.native or spec.target in CLICK_TRAINERS:  # RegressionEM checks its clicks when it fits
            continue
        for fold, tr, _, _ in folds:
            try:
                build_objective(checkable(spec)).prepare(tr.y, tr.sizes)
            except (ValueError, TypeError, OverflowError) as exc:
                raise UsageError(f"{spec.label} cannot train on fold {fold}: {one_line(exc)}") from None


def _warm_up(specs, settings, sample, bar):
    """Train every method for two rounds on ``sample``: compiles the numba code outside the timings and
    makes bad options of native methods (which only the library can judge) fail before the real runs."""
    for spec in specs:
        bar.set_description(f"checking {spec.label}")
        try:
            with stderr_held():
                warm_up(spec, settings, sample)
        except Exception as exc:  # noqa: BLE001 - any failure here is about this method and its options
            raise UsageError(f"{spec.label} fails on the first {sample.sizes.size} queries of the training data "
                             f"(a 2-round trial before the real runs): "
                             f"{type(exc).__name__}: {one_line(exc)}") from None


def _progress(total, quiet):
    from tqdm.auto import tqdm

    return tqdm(total=total, file=sys.stderr, disable=quiet, unit="run", dynamic_ncols=True, leave=False)


def _optional_parts(args, note):
    """What a core install (no extras) leaves out, said once each on stderr: the default method set
    without XGBoost's methods, curves.png without matplotlib; ``--tune`` without Optuna is an error."""
    if args.tune and not available("optuna"):
        raise UsageError(f"--tune needs Optuna, an optional extra: {install_hint('optuna')}")
    if getattr(args, "click_log", None) and args.methods == DEFAULT_METHODS:  # a click log: the click methods
        args.methods = CLICK_LOG_METHODS
    if args.methods in (DEFAULT_METHODS, CLICK_LOG_METHODS) and not available("xgboost"):
        args.methods = ",".join(m for m in split_methods(args.methods) if not m.startswith("xgb:"))
        note(f"note: XGBoost is not installed, so the default methods leave out its xgb: methods "
             f"({install_hint('xgboost')} adds them)")
    if not args.no_plot and not available("matplotlib"):
        args.no_plot = True
        note(f"note: matplotlib is not installed, so curves.png is not drawn ({install_hint('matplotlib')} "
             "adds it; --no-plot silences this note)")


def run(args: argparse.Namespace) -> int:
    """Run the comparison described by parsed ``args``; returns 0 (errors are raised, see the module doc)."""
    if getattr(args, "labels", None) is not None:  # several labels: customobj.compare.multi_label
        from .multi_label import run as run_multi_label

        return run_multi_label(args, DEFAULT_METHODS)
    refuse_without_labels(args)
    say = (lambda *a: None) if args.quiet else print
    _optional_parts(args, (lambda *a: None) if args.quiet else (lambda text: print(text, file=sys.stderr)))
    # adapters sets OMP_WAIT_POLICY=passive unless the user chose one; it must be imported before
    # lightgbm/xgboost load OpenMP, or spinning threads slow the Python objectives on a busy machine.
    from customobj import adapters  # noqa: F401

    click_spec = None
    if getattr(args, "clicks", None) is not None:  # before the methods: RegressionEM asks for --clicks
        from .clicks import parse_clicks

        click_spec = parse_clicks(args.clicks)
    specs, baseline = _check_methods(args)
    seeds = runner.seed_list(args.seed, args.seeds)
    if seeds[-1] > INT32_MAX:
        raise UsageError(f"--seed {args.seed} with --seeds {args.seeds} goes past {INT32_MAX}, the largest seed "
                         "the libraries take")
    # the data first: a wrong --letor / --train names that mistake, not an earlier run's --out folder
    labelled = True
    if getattr(args, "click_log", None):
        from .click_log import load_click_log

        _refuse_with_click_log(args)
        folds, data_desc, labelled = load_click_log(args)
    else:
        _refuse_click_log_options(args)
        folds, data_desc = load_folds(args)
    if click_spec is not None:
        from .clicks import click_folds

        labelled_folds, folds = folds, click_folds(folds, click_spec, args.seed, args.jobs)
        if any(wants_harvest(s) for s in member_specs(specs)):  # the logs of more rankers, harvested
            folds = harvest_folds(labelled_folds, folds, click_spec, args.seed, args.jobs)
        data_desc += f", trained on {click_spec.label} clicks"
    _check_labels(specs, folds)
    # The default folder is the README's command run again: replaced as a whole (atomically, below).
    # A folder the user named keeps its results unless --overwrite says otherwise.
    default_out = args.out is None
    out = output.check_folder(Path(output.DEFAULT_OUT if default_out else args.out),
                              overwrite=args.overwrite or default_out)
    settings = Settings(rounds=args.rounds, num_leaves=args.num_leaves, learning_rate=args.learning_rate,
                        seed=args.seed, jobs=args.jobs, early_stopping=args.early_stopping,
                        device=str(getattr(args, "device", Device.CPU)))
    labels = [s.label for s in specs]
    scoring, propensity = report.LABELS, None
    if getattr(args, "click_log", None):  # one IPS propensity estimate validates (and may test) every method
        from dataclasses import replace

        from .click_log import click_scoring, estimate_propensity

        clicks = folds[0][1:3] if labelled else folds[0][1:]  # the parts of clicks: the metric's positions
        longest = max(int(s.sizes.max()) for s in clicks)
        propensity = estimate_propensity(folds[0][1], settings, longest)
        settings = replace(settings, valid_propensity=tuple(propensity.tolist()))
        scoring = click_scoring(labelled, propensity)

    bar = _progress(len(folds) * len(specs), args.quiet)
    start = time.perf_counter()  # wall time includes the trial runs (numba compilation), as it always did
    try:
        _warm_up(member_specs(specs), settings, warm_up_sample(folds[0][1]), bar)
        if len(seeds) > 1 and not args.tune:  # K identical copies help no one (runner.check_seeds)
            for note in runner.check_seeds(specs, settings, warm_up_sample(folds[0][1]), train, len(seeds)):
                print(note, file=sys.stderr)
        bar.reset(total=runner.n_runs(specs, len(folds), len(seeds), args.tune))
        bar.unit = "trial" if args.tune else "run"
        # `train` is looked up here, at call time, so tests can stand in for it
        result = runner.run_all(specs, folds, settings, seeds=seeds, n_trials=args.tune, train_fn=train, bar=bar,
                                scoring=scoring)
    finally:
        bar.close()
    wall = time.perf_counter() - start

    summary = report.summarize(result.rows, labels, scoring)
    pooled = {lab: np.concatenate(v) for lab, v in result.per_query.items()}
    paired = report.paired_comparison(pooled, labels, baseline, scoring)
    config = {k: v for k, v in vars(args).items() if isinstance(v, (str, int, float, bool, list, type(None)))}
    fold_list = ",".join(str(f[0]) for f in folds)
    tuning = {"n_trials": args.tune, "sampler": "optuna TPESampler", "seed": seeds[0],
              "per_method": result.tuning} if args.tune else None
    # curves.png draws the first seed's curves: say which when there are several
    seed_note = f", seed {seeds[0]} (the first of {len(seeds)}; the tables average them)" if len(seeds) > 1 else ""
    true = None
    if click_spec is not None:  # the simulated users' own curves (pbm and trust)
        from .clicks import true_curves

        true = true_curves(click_spec)
    contents = report.render_files(result.rows, summary, paired, {
            "data": data_desc, "folds": [f[0] for f in folds], "methods": labels, "baseline": baseline,
            "seeds": seeds, "settings": vars(settings), "arguments": config, "wall_time_s": wall,
            "tuning": tuning, "ensembles": result.alphas,
            "curves": {lab: {"metric": scoring.valid.replace("_", " ", 1), "per_fold": c}
                       for lab, c in result.curves.items()},
            "position_bias": {"estimated": result.position_bias, "true": true}
            if click_spec or propensity is not None else None,
            "click_metric": None if propensity is None else {
                "name": CLICK_CURVE_METRIC, "estimated_by": "Unbiased(LambdaRank()) through LightGBM on the training part",
                "propensity": propensity.tolist(), "test": "labels" if labelled else "ips click metrics"},
        },
        curves=None if args.no_plot else result.curves, position_bias=result.position_bias, true_curves=true,
        title=f"Validation {'NDCG@10' if propensity is None else 'IPS click NDCG@10'} — {data_desc}, "
              f"folds {fold_list}{seed_note}",
        bias_title=f"Estimated position bias — {data_desc}, folds {fold_list}", plot=not args.no_plot,
        scoring=scoring)
    replaced = default_out and any((out / name).exists() for name in output.RESULT_FILES)
    written = output.write_results(out, contents, overwrite=args.overwrite or default_out)
    if replaced:  # said even with --quiet, as the line naming the files is
        print(f"replaced the earlier results in ./{output.DEFAULT_OUT} (the default --out; give --out DIR to keep a run)")
    say(f"data: {data_desc}; folds {fold_list}; {len(specs)} methods; wall time {wall:.1f} s")
    say(report.format_table(summary, tuning=runner.tuning_note(args.tune, len(seeds)) if args.tune else None,
                            scoring=scoring))
    if not labelled:
        say("no --test: the test columns are IPS click metrics on held-out sessions of the log, not labels")
    if result.position_bias:  # which of the estimated curves to trust (measured on the simulators)
        from .clicks import ESTIMATOR_NOTE

        say(ESTIMATOR_NOTE)
    if paired:
        say()
        say(report.format_paired(paired, scoring))
        say()
    print(f"wrote {', '.join(written)} to {out.resolve()}")
    return 0
