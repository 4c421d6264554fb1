"""The semi-synthetic click study of issue 33's "Done when": debiasing methods on simulated clicks,
five folds of MQ2008 and OHSUMED, three click logs per fold, four click models, Holm-corrected.

Each (data set, click model, fold, log) is what ``customobj compare --clicks`` trains on: the fold's
training part replaced by a click log (customobj.compare.clicks.click_folds: a weak production
ranker orders the queries, the top ``--shown`` rows of each are shown to ``--sessions`` simulated
users per query, examination ``(1/r)^eta``; log ``l`` is seeded ``--seed + 1000 l`` plus the fold),
validation and test keep their graded labels. Every method (a compare method string) is trained by
compare's own runner and trainers: ``--rounds`` trees at most, early stopping on the validation
part's true NDCG@10. The score is test NDCG@10 on the true labels over the queries with a relevant
row (the issue's convention; ``ndcg@10_compare`` in the CSV counts the others as 1.0, as compare does).

Statistics, per data set and click model: every pair of methods (the later one in ``--methods``
minus the earlier) is a paired t-test over the ``folds x logs`` units
(customobj.compare.stats.paired_difference: mean difference, 95% interval), Holm-adjusted over the
pairs of that data set and click model (customobj.compare.stats.holm). Verdicts, the issue's targets:
under trust bias Affine beats ``Unbiased`` and XGBoost's ``lambdarank_unbiased`` (difference > 0,
adjusted p < 0.05); under PBM Affine is no worse than ``Unbiased`` (not significantly below it);
DCM and UBM: the table only.

    python benchmarks/click_study.py [--data ../shared/data] [--datasets mq2008,ohsumed] [--folds 1,2,3,4,5]
        [--logs 3] [--click-models trust,pbm,dcm,ubm] [--methods LIST] [--rounds 200] [--jobs 2]
        [--out click_study] [--quick]

Writes (each atomically) ``click_study.json`` (options, per-unit scores, means, contrasts, verdicts,
wall time), ``click_study.csv`` (one row per unit and method) and ``click_study.png`` (the contrasts
with their intervals) to ``--out``; prints the table; progress goes to stderr.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import numpy as np  # noqa: E402

from customobj import adapters  # noqa: E402,F401  (before lightgbm / xgboost: OpenMP wait policy)
from customobj._cli_errors import UsageError  # noqa: E402
from customobj._io import atomic_write_bytes, atomic_write_text  # noqa: E402
from customobj.clicks.simulation import CLICK_MODELS  # noqa: E402
from customobj.compare import report, runner  # noqa: E402
from customobj.compare.clicks import click_folds, parse_clicks  # noqa: E402
from customobj.compare.command import _check_methods, _jobs, _nonnegative_int, _positive_float, _positive_int  # noqa: E402
from customobj.compare.folds import load_folds, parse_folds  # noqa: E402
from customobj.compare.methods import build_objective, parse_method, split_methods  # noqa: E402
from customobj.compare.stats import ALPHA, holm, paired_difference  # noqa: E402
from customobj.compare.trainers import Settings, train  # noqa: E402

DATASETS = ("mq2008", "ohsumed")
STUDY_CLICK_MODELS = ("trust", "pbm", "dcm", "ubm")
#: The methods that exist today: naive LambdaRank (customobj's, which reads no positions: compare's
#: ``lgb:lambdarank`` gets the log's position field and is LightGBM's own position debiasing), XGBoost's
#: Unbiased LambdaMART, customobj's Unbiased LambdaMART.
BASE_METHODS = ("lgb:LambdaRank", "xgb:rank:ndcg(lambdarank_unbiased=true)", "lgb:Unbiased(objective=LambdaRank)")
AFFINE_METHOD = "lgb:Affine(objective=LambdaRank)"
#: Seeds of the click logs of one fold: ``--seed + LOG_STRIDE * log`` (click_folds adds the fold number).
LOG_STRIDE = 1000
MAX_LOGS = 100
#: The full study and ``--quick``'s smoke run (options not given on the command line take these).
FULL = dict(datasets="mq2008,ohsumed", folds="1,2,3,4,5", logs=3, click_models=",".join(STUDY_CLICK_MODELS),
            rounds=200, sessions=12)
QUICK = dict(datasets="mq2008", folds="1", logs=1, click_models="trust,pbm", rounds=10, sessions=4)
FILES = ("click_study.json", "click_study.csv", "click_study.png")
UNIT_COLUMNS = ("dataset", "click_model", "fold", "log", "log_seed", "method", "ndcg@10", "ndcg@10_compare",
                "valid_ndcg@10", "best_round", "rounds_trained", "train_time_s")
CONTRAST_COLUMNS = ("dataset", "click_model", "method", "versus", "n", "mean", "ci_low", "ci_high", "wins",
                    "losses", "p", "p_holm")


def role(label: str) -> str | None:
    """The part a method plays in the issue's targets, from its parsed compare label."""
    if label.startswith(("lgb:Affine", "xgb:Affine")):
        return "Affine"
    if label.startswith(("lgb:Unbiased", "xgb:Unbiased")):
        return "Unbiased"
    if label.startswith("xgb:rank:ndcg(") and "lambdarank_unbiased=true" in label:
        return "XGBoost unbiased"
    if label == "lgb:LambdaRank":
        return "naive LambdaRank"
    return None


def _compare_refuses(name: str) -> str | None:
    """Why compare's method parser cannot build the customobj objective ``name`` (None: it can)."""
    try:
        build_objective(parse_method(name))
    except (ValueError, TypeError) as exc:
        return str(exc).splitlines()[0]
    return None


def default_methods(note) -> str:
    """BASE_METHODS, and Affine's when ``customobj.Affine`` exists and compare trains it (``note`` says
    why it was left out otherwise)."""
    import customobj

    if not hasattr(customobj, "Affine"):
        note(f"note: customobj.Affine is not importable here, so the default methods leave out {AFFINE_METHOD}")
        return ",".join(BASE_METHODS)
    why = _compare_refuses(AFFINE_METHOD)
    if why is not None:
        note(f"note: customobj.Affine exists but compare cannot train {AFFINE_METHOD} ({why}), so the default "
             "methods leave it out")
        return ",".join(BASE_METHODS)
    return ",".join((*BASE_METHODS, AFFINE_METHOD))


def _names(text, known, option):
    """A comma-separated list of distinct names out of ``known``."""
    names = [t.strip() for t in text.split(",") if t.strip()]
    bad = [n for n in names if n not in known]
    if not names or bad or len(set(names)) != len(names):
        raise UsageError(f"{option}: expected distinct names out of {', '.join(known)}, got {text!r}")
    return names


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.path.join(_HERE, "..", "..", "shared", "data"),
                    help="folder holding mq2008/ and ohsumed/ (LETOR Fold1..5)")
    ap.add_argument("--datasets", help=f"comma-separated (default {FULL['datasets']})")
    ap.add_argument("--folds", help=f"comma-separated fold numbers (default {FULL['folds']})")
    ap.add_argument("--logs", type=_positive_int, help=f"click logs per fold (default {FULL['logs']})")
    ap.add_argument("--click-models", help=f"comma-separated, of {', '.join(CLICK_MODELS)} "
                                           f"(default {FULL['click_models']})")
    ap.add_argument("--methods", help="comma-separated compare method names (default: " + ",".join(BASE_METHODS)
                                      + f", and {AFFINE_METHOD} when customobj.Affine exists)")
    ap.add_argument("--rounds", type=_positive_int, help=f"maximum boosting rounds (default {FULL['rounds']})")
    ap.add_argument("--learning-rate", type=_positive_float, default=0.1)
    ap.add_argument("--num-leaves", type=_positive_int, default=31)
    ap.add_argument("--early-stopping", type=_nonnegative_int, default=20, metavar="N",
                    help="patience on the validation part's NDCG@10 (0 = off; default 20)")
    ap.add_argument("--sessions", type=_positive_int, help=f"sessions per query (default {FULL['sessions']})")
    ap.add_argument("--shown", type=_positive_int, default=10, help="rows shown per session (default 10)")
    ap.add_argument("--eta", type=float, default=1.0, help="examination (1/r)^eta (default 1)")
    ap.add_argument("--logger", default="deterministic", help="simulate_clicks' logger: deterministic (default), "
                                                              "randomised, swap or stochastic (issue 43)")
    ap.add_argument("--explore", type=float, default=1.0, help="randomised / swap logger: share of sessions")
    ap.add_argument("--temperature", type=float, default=1.0, help="stochastic logger: Plackett-Luce temperature")
    ap.add_argument("--seed", type=_nonnegative_int, default=0)
    ap.add_argument("--jobs", type=_jobs, default=2, help="training threads (default 2)")
    ap.add_argument("--out", default="click_study", help="folder of " + ", ".join(FILES) + " (default ./click_study)")
    ap.add_argument("--quick", action="store_true",
                    help="a smoke run: " + ", ".join(f"{k.replace('_', '-')} {v}" for k, v in QUICK.items()))
    args = ap.parse_args(argv)
    for key, value in (QUICK if args.quick else FULL).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    try:
        _check(args)
    except (UsageError, argparse.ArgumentTypeError) as exc:
        ap.error(str(exc))
    return args


def _check(args):
    """Every option, before any data is read or model trained (UsageError naming the option)."""
    args.datasets = _names(args.datasets, DATASETS, "--datasets")
    args.click_models = _names(args.click_models, tuple(CLICK_MODELS), "--click-models")
    args.folds = parse_folds(args.folds)
    if args.logs > MAX_LOGS:
        raise UsageError(f"--logs: at most {MAX_LOGS}, got {args.logs}")
    if args.seed + LOG_STRIDE * (args.logs - 1) + max(args.folds) > 2**31 - 1:
        raise UsageError("--seed: the click logs' seeds go past 2**31 - 1")
    logger = "" if args.logger == "deterministic" else \
        f",logger={args.logger},explore={args.explore!r},temperature={args.temperature!r}"
    args.specs = {m: parse_clicks(f"{m}:eta={args.eta!r},sessions={args.sessions},shown={args.shown}{logger}")
                  for m in args.click_models}
    if args.methods is None:
        args.methods = default_methods(lambda text: print(text, file=sys.stderr))
    if len(split_methods(args.methods)) < 2:
        raise UsageError("--methods: the study compares at least two methods")
    check = argparse.Namespace(methods=args.methods, baseline=None, clicks=args.click_models[0], rounds=args.rounds,
                               num_leaves=args.num_leaves, learning_rate=args.learning_rate, seed=args.seed)
    args.method_specs = _check_methods(check)[0]
    for name in args.datasets:
        if not os.path.isdir(os.path.join(args.data, name)):
            raise UsageError(f"--data: no folder {name}/ in {os.path.abspath(args.data)}")
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        raise UsageError(f"--out: {args.out} is a file, not a folder")


class Progress:
    """The runner's bar, as lines on stderr (a run of an hour is read in a log, not on a terminal)."""

    def __init__(self, total):
        self.total, self.done, self.text, self.where, self.start = total, 0, "", "", time.perf_counter()

    def set_description(self, text):
        self.text = text

    def update(self, n=1):
        self.done += n
        el = time.perf_counter() - self.start
        eta = el / self.done * (self.total - self.done)
        print(f"[{self.done}/{self.total} runs, {el:.0f} s, ~{eta:.0f} s left] {self.where} {self.text}",
              file=sys.stderr, flush=True)


def _relevant_mean(per_query, split):
    """Mean per-query NDCG@10 over the queries with a relevant row."""
    has = np.maximum.reduceat(split.y, split.ptr[:-1]) > 0
    return float(np.mean(per_query[has]))


def run_study(args):
    """Train every method on every unit; the per-unit rows (UNIT_COLUMNS)."""
    specs = args.method_specs
    settings = Settings(rounds=args.rounds, num_leaves=args.num_leaves, learning_rate=args.learning_rate,
                        seed=args.seed, jobs=args.jobs, early_stopping=args.early_stopping)
    bar = Progress(len(args.datasets) * len(args.click_models) * args.logs * len(args.folds) * len(specs))
    rows = []
    for name in args.datasets:
        ns = argparse.Namespace(train=None, valid=None, test=None, letor=os.path.join(args.data, name),
                                folds=args.folds, synthetic_queries=None, synthetic_docs=None, seed=args.seed)
        folds, _ = load_folds(ns)
        for model, spec in args.specs.items():
            for log in range(args.logs):
                seed = args.seed + LOG_STRIDE * log
                bar.where = f"{name} {model} log {log + 1}/{args.logs}:"
                logged = click_folds(folds, spec, seed, args.jobs)
                out = runner.run_all(specs, logged, settings, seeds=[args.seed], n_trials=0, train_fn=train, bar=bar)
                for r in out.rows:
                    i = next(k for k, f in enumerate(logged) if f[0] == r["fold"])
                    rows.append({"dataset": name, "click_model": model, "fold": r["fold"], "log": log + 1,
                                 "log_seed": seed + r["fold"], "method": r["method"],
                                 "ndcg@10": _relevant_mean(out.per_query[r["method"]][i], logged[i][3]),
                                 "ndcg@10_compare": r["ndcg@10"], "valid_ndcg@10": r["valid_ndcg@10"],
                                 "best_round": r["best_round"], "rounds_trained": r["rounds_trained"],
                                 "train_time_s": r["train_time_s"]})
    return rows


def analyse(rows, methods):
    """Per data set and click model: each method's mean and the Holm-adjusted pairwise contrasts."""
    means, contrasts = [], []
    for cell in dict.fromkeys((r["dataset"], r["click_model"]) for r in rows):
        mine = [r for r in rows if (r["dataset"], r["click_model"]) == cell]
        score = {m: np.array([r["ndcg@10"] for r in sorted((r for r in mine if r["method"] == m),
                                                           key=lambda r: (r["fold"], r["log"]))]) for m in methods}
        for m in methods:
            means.append({"dataset": cell[0], "click_model": cell[1], "method": m, "n": int(score[m].size),
                          "mean": float(score[m].mean()), "std": float(score[m].std(ddof=1)) if score[m].size > 1
                          else float("nan")})
        family = [{"dataset": cell[0], "click_model": cell[1], "method": b, "versus": a,
                   **paired_difference(score[b] - score[a])}
                  for i, a in enumerate(methods) for b in methods[i + 1:]]
        for c, p in zip(family, holm([c["p"] for c in family])):
            c["p_holm"] = float(p)
        contrasts += family
    return means, contrasts


def _contrast(contrasts, dataset, model, a, b):
    """The contrast ``a - b`` of roles ``a`` and ``b`` (flipped if it was computed as ``b - a``), or None."""
    for c in contrasts:
        if (c["dataset"], c["click_model"]) != (dataset, model):
            continue
        if (role(c["method"]), role(c["versus"])) == (a, b):
            return c
        if (role(c["method"]), role(c["versus"])) == (b, a):
            return dict(c, mean=-c["mean"], ci_low=-c["ci_high"], ci_high=-c["ci_low"], wins=c["losses"],
                        losses=c["wins"])
    return None


def _said(c):
    return f"{c['mean']:+.4f} [{c['ci_low']:+.4f}, {c['ci_high']:+.4f}], Holm p {c['p_holm']:.3g}"


def verdicts(contrasts, datasets, models):
    """One line per data set and click model on the issue's target there (or why there is none)."""
    targets = {"trust": [("Affine", "Unbiased", "beats"), ("Affine", "XGBoost unbiased", "beats")],
               "pbm": [("Affine", "Unbiased", "no worse than")]}
    lines = []
    for d in datasets:
        for m in models:
            if m not in targets:
                lines.append(f"{d} {m}: no target (the table only)")
                continue
            parts, met = [], True
            for a, b, how in targets[m]:
                c = _contrast(contrasts, d, m, a, b)
                if c is None or not np.isfinite(c["p_holm"]):
                    why = "no test (too few units, or no difference)" if c is not None else "not measured (" + " and ".join(
                        r for r in (a, b) if not any(role(x["method"]) == r for x in contrasts)) + " not among the methods)"
                    parts.append(f"{a} vs {b}: {why}")
                    met = None
                    continue
                ok = (c["mean"] > 0 and c["p_holm"] < ALPHA) if how == "beats" else (
                    c["mean"] >= 0 or c["p_holm"] >= ALPHA)
                met = met and ok if met is not None else None
                parts.append(f"{a} {how} {b}: {'yes' if ok else 'NO'} ({_said(c)})")
            verdict = "no verdict" if met is None else ("target MET" if met else "target NOT met")
            lines.append(f"{d} {m}: {verdict}; " + "; ".join(parts))
    return lines


def _short(label):
    return role(label) or label


def format_tables(means, contrasts):
    out = []
    for cell in dict.fromkeys((r["dataset"], r["click_model"]) for r in means):
        mine = [r for r in means if (r["dataset"], r["click_model"]) == cell]
        out.append(f"\n{cell[0]}, {cell[1]} clicks: test NDCG@10 (true labels, queries with a relevant row), "
                   f"mean ± sd over {mine[0]['n']} (fold, log) units")
        width = max(len(_short(r["method"])) for r in mine)
        out += [f"  {_short(r['method']):<{width}}  {r['mean']:.4f} ± {r['std']:.4f}   {r['method']}" for r in mine]
        fam = [c for c in contrasts if (c["dataset"], c["click_model"]) == cell]
        out.append(f"  paired differences, 95% interval, t-test p, Holm-adjusted over these {len(fam)} (* < {ALPHA:g}):")
        for c in fam:
            name = f"{_short(c['method'])} - {_short(c['versus'])}"
            star = " *" if c["p_holm"] < ALPHA else ""
            out.append(f"    {name:<{2 * width + 3}}  {c['mean']:+.4f} [{c['ci_low']:+.4f}, {c['ci_high']:+.4f}]  "
                       f"p {c['p']:.3g}  Holm {c['p_holm']:.3g}{star}  wins {c['wins']}/{c['n']}")
    return "\n".join(out)


def figure(contrasts, datasets, models, n_units) -> bytes:
    """PNG of :func:`draw`."""
    import io

    import matplotlib.pyplot as plt

    fig = draw(contrasts, datasets, models, n_units)
    buf = io.BytesIO()
    try:
        fig.savefig(buf, format="png", dpi=110)
    finally:
        plt.close(fig)
    return buf.getvalue()


def draw(contrasts, datasets, models, n_units):
    """The figure: per data set (rows) and click model (columns), each contrast's mean difference and
    interval; the overall title wrapped to the figure's width (about 11 characters per inch at 10 pt)."""
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, axes = plt.subplots(len(datasets), len(models), figsize=(3.3 * len(models) + 1.6, 2.4 * len(datasets) + 1.0),
                             squeeze=False, sharey=True)
    for i, d in enumerate(datasets):
        for j, m in enumerate(models):
            ax = axes[i, j]
            fam = [c for c in contrasts if (c["dataset"], c["click_model"]) == (d, m)]
            y = np.arange(len(fam))[::-1]
            for yy, c in zip(y, fam):
                lo, hi = (c["ci_low"], c["ci_high"]) if np.isfinite(c["ci_low"]) else (c["mean"], c["mean"])
                ax.plot([lo, hi], [yy, yy], "-", color="C0", lw=1.5)
                ax.plot(c["mean"], yy, "o", color="C0", mfc="C0" if c["p_holm"] < ALPHA else "white", ms=5)
            ax.axvline(0, color="k", lw=0.8)
            ax.set_yticks(y, [f"{_short(c['method'])} - {_short(c['versus'])}" for c in fam], fontsize=7)
            ax.set_title(f"{d}, {m} clicks", fontsize=9)
            ax.tick_params(axis="x", labelsize=7)
            ax.xaxis.set_major_locator(MaxNLocator(4))
            ax.grid(axis="x", alpha=0.3)
            if i == len(datasets) - 1:
                ax.set_xlabel("NDCG@10 difference", fontsize=8)
    title = (f"Paired test NDCG@10 differences over {n_units} (fold, log) units, 95% intervals; "
             f"filled: Holm-adjusted p < {ALPHA:g} within each panel")
    fig.suptitle("\n".join(textwrap.wrap(title, int(11 * fig.get_figwidth()))), fontsize=10)
    fig.tight_layout()
    return fig


def main(argv=None):
    args = parse_args(argv)
    methods = [s.label for s in args.method_specs]
    start = time.perf_counter()
    rows = run_study(args)
    wall = time.perf_counter() - start
    means, contrasts = analyse(rows, methods)
    lines = verdicts(contrasts, args.datasets, args.click_models)
    n_units = len(args.folds) * args.logs
    print(f"{len(methods)} methods, data sets {', '.join(args.datasets)}, folds {args.folds}, {args.logs} logs per "
          f"fold, {args.sessions} sessions x {args.shown} shown, eta {args.eta:g}, {args.rounds} rounds at most; "
          f"wall time {wall:.0f} s")
    print(format_tables(means, contrasts))
    print("\nVerdicts (issue 33's targets):")
    print("\n".join("  " + line for line in lines))
    os.makedirs(args.out, exist_ok=True)
    options = {k: v for k, v in vars(args).items() if k not in ("specs", "method_specs")}
    doc = {"options": dict(options, methods=methods), "wall_time_s": wall, "units": rows, "means": means,
           "contrasts": contrasts, "verdicts": lines}
    atomic_write_text(os.path.join(args.out, FILES[0]), json.dumps(report._json_clean(doc), indent=1) + "\n")
    atomic_write_text(os.path.join(args.out, FILES[1]), report.csv_text(rows, UNIT_COLUMNS))
    atomic_write_bytes(os.path.join(args.out, FILES[2]), figure(contrasts, args.datasets, args.click_models, n_units))
    print(f"wrote {', '.join(FILES)} to {os.path.abspath(args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
