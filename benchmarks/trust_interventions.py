"""Issue 43's intervention done-when: are the trust parameters ``estimate_trust`` gives from a randomised or
swap log, or from several rankers' logs, within .05 of the truth at every position, on every fold?

Per fold of MQ2008, the training part's queries get trust clicks with ``simulate_clicks``' defaults
(``click_model="trust"``, ``eta=1``, 10 shown, relevance 0.1 / 0.5 / 1.0 per grade, Vardasbi et al.'s
``epsilon`` curves), ``--sessions`` sessions per query, from:

- ``randomised`` / ``swap``: compare's weak production ranker (``_weak_ranker``, seeded by the fold, as
  ``trust_study.py``), with a share ``--explore`` of the sessions shuffled / with one pair swapped;
- ``rankers``: the single features ``--rankers`` as deterministic production rankers, the sessions split
  evenly between them (``--sessions`` in all, ``sessions // n_rankers`` each).

The truth is ``alpha_k = theta_k (eps+_k - eps-_k)``, ``beta_k = theta_k eps-_k`` (``theta_k = 1 / k``).
Reported per fold and log: the estimate, its largest absolute error over the positions (and where), the
95% bootstrap intervals over ``--bootstrap`` resamples of whole queries (``resample="queries"``), at how
many positions they hold the truth, their width, and their stability (the largest move of an interval's
end between the first half of the resamples and all of them). ``--sweep`` repeats the estimate (no
bootstrap) at fewer sessions per query: where the .05 starts to hold. JSON to ``--out`` (rewritten after
each fold), a figure to ``--plot``.

    python benchmarks/trust_interventions.py --data ../shared/data --folds 1,2,3,4,5 --sessions 48 \\
        --bootstrap 200 --sweep 6,12,24 --plot docs/img/trust_interventions.png
"""
from __future__ import annotations

import argparse
import json
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import numpy as np  # noqa: E402

import customobj  # noqa: E402
from customobj import adapters  # noqa: E402,F401  (before lightgbm: OpenMP wait policy)
from customobj.clicks import estimate_trust  # noqa: E402
from customobj.clicks.simulation import trust_defaults  # noqa: E402
from customobj.compare.clicks import _weak_ranker  # noqa: E402
from customobj._io import atomic_open, atomic_write_text  # noqa: E402

LOGS = ("randomised", "swap", "rankers")
TARGET = 0.05
SHOWN = 10


def truth(shown: int = SHOWN) -> tuple:
    """The simulation's ``(alpha, beta)`` per position (``simulate_clicks``' defaults, ``eta=1``)."""
    plus, minus = trust_defaults(shown)
    theta = 1.0 / np.arange(1, shown + 1)
    return theta * (plus - minus), theta * minus


def simulate(kind, data, production, sessions, seed, args):
    """The click log(s) of one kind: one log of the production ranker, or one log per ranker."""
    if kind == "rankers":
        per = max(1, sessions // len(args.rankers))
        return [customobj.data.simulate_clicks(data, ranker=data[0][:, f], click_model="trust", sessions=per,
                                               seed=seed * 100 + i, ranker_id=i) for i, f in enumerate(args.rankers)]
    return [customobj.data.simulate_clicks(data, ranker=production, click_model="trust", sessions=sessions, seed=seed,
                                           logger=kind, explore=args.explore)]


def errors(alpha, beta, true) -> dict:
    ea, eb = np.abs(alpha - true[0]), np.abs(beta - true[1])
    return {"alpha_error": float(ea.max()), "beta_error": float(eb.max()),
            "alpha_worst_position": int(ea.argmax()) + 1, "beta_worst_position": int(eb.argmax()) + 1}


def bootstrap_record(est, draws, true) -> dict:
    """Intervals, coverage, width and stability (first half of the draws against all) of one estimate."""
    out = {}
    for j, name in enumerate(("alpha", "beta")):
        d = np.array([x[j] for x in draws])
        full = np.quantile(d, [0.025, 0.975], axis=0)
        half = np.quantile(d[: max(2, len(draws) // 2)], [0.025, 0.975], axis=0)
        inside = (full[0] <= true[j]) & (true[j] <= full[1])
        out[name] = {"interval": full.tolist(), "truth_inside": int(inside.sum()),
                     "widest": float((full[1] - full[0]).max()),
                     "stability": float(np.abs(full - half).max())}
        assert np.allclose(full, est.alpha_interval if j == 0 else est.beta_interval)  # the library's own
    return out


def run_fold(path, fold, args, true) -> dict:
    train = customobj.load_letor(os.path.join(path, f"Fold{fold}", "train.txt.gz"))
    split = argparse.Namespace(X=train.X, y=train.y, sizes=np.asarray(train.group))
    production = _weak_ranker(split, fold, 1)
    data = (train.X, train.y.astype(int), train.group)
    out = {}
    for kind in args.logs:
        draws = []
        step = max(1, args.bootstrap // 10)

        def seen(i, a, b, kind=kind, draws=draws):
            draws.append((a, b))
            if i % step == 0 or i == args.bootstrap:
                print(f"fold {fold} {kind}: bootstrap {i}/{args.bootstrap}", flush=True)

        est = estimate_trust(simulate(kind, data, production, args.sessions, fold, args), n_iter=args.n_iter,
                             bootstrap=args.bootstrap, resample="queries", seed=fold, callback=seen)
        rec = {"sessions": args.sessions, "alpha": est.alpha.tolist(), "beta": est.beta.tolist(),
               "n_documents": est.n_documents, **errors(est.alpha, est.beta, true)}
        if args.bootstrap:
            rec["bootstrap"] = bootstrap_record(est, draws, true)
        rec["sweep"] = {}
        for s in args.sweep:
            e = estimate_trust(simulate(kind, data, production, s, fold, args), n_iter=args.n_iter)
            rec["sweep"][str(s)] = errors(e.alpha, e.beta, true)
        out[kind] = rec
        sweep = " ".join(f"{s}: {r['alpha_error']:.3f}/{r['beta_error']:.3f}" for s, r in rec["sweep"].items())
        print(f"fold {fold} {kind}: largest error alpha {rec['alpha_error']:.3f} (position "
              f"{rec['alpha_worst_position']}) beta {rec['beta_error']:.3f} (position {rec['beta_worst_position']})"
              + (f"; sweep (sessions: alpha/beta) {sweep}" if sweep else ""), flush=True)
    return out


def holds_from(results: dict, kind: str, sessions: int) -> int | None:
    """The fewest sessions per query (of those run) from which every fold is within ``TARGET`` at every
    position, at that size and every larger one run."""
    sizes = sorted({int(s) for r in results.values() for s in r[kind]["sweep"]} | {sessions})

    def ok(s):
        for r in results.values():
            e = r[kind] if s == sessions else r[kind]["sweep"].get(str(s))
            if e is None or max(e["alpha_error"], e["beta_error"]) >= TARGET:
                return False
        return True
    good = [s for s in sizes if all(ok(t) for t in sizes if t >= s)]
    return good[0] if good else None


def figure(results: dict, true, logs, path) -> None:
    """Per log kind (columns), alpha and beta (rows) against the position: the truth, and each fold's
    estimate with its bootstrap interval; written to ``path`` atomically."""
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(logs), figsize=(3.6 * len(logs) + 0.8, 5.6), squeeze=False, sharex=True)
    pos = np.arange(1, SHOWN + 1)
    folds = sorted(results, key=int)
    for j, kind in enumerate(logs):
        for i, name in enumerate(("alpha", "beta")):
            ax = axes[i, j]
            ax.plot(pos, true[i], "k-", lw=1.2, label="truth")
            for f_i, fold in enumerate(folds):
                rec = results[fold][kind]
                x = pos + (f_i - (len(folds) - 1) / 2) * 0.09
                v = np.array(rec[name])
                if "bootstrap" in rec:
                    lo, hi = np.array(rec["bootstrap"][name]["interval"])
                    ax.errorbar(x, v, yerr=[np.maximum(v - lo, 0), np.maximum(hi - v, 0)], fmt="o", ms=2.5,
                                lw=0.8, color=f"C{f_i}", label=f"fold {fold}")
                else:
                    ax.plot(x, v, "o", ms=2.5, color=f"C{f_i}", label=f"fold {fold}")
            ax.set_title(f"{kind}: {name}", fontsize=9)
            ax.grid(alpha=0.3)
            if i == 1:
                ax.set_xlabel("position")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle("estimate_trust on MQ2008 trust clicks: estimates, 95% query-bootstrap intervals, truth", fontsize=10)
    fig.tight_layout()
    try:
        with atomic_open(path, "wb", encoding=None) as out:
            fig.savefig(out, format="png", dpi=100)
    finally:
        plt.close(fig)


def _ints(text: str, name: str) -> list:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{name} must be comma-separated integers, got {text!r}") from None
    if any(v < 0 for v in values):
        raise argparse.ArgumentTypeError(f"{name} must be >= 0, got {text!r}")
    return values


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.path.join(_HERE, "..", "..", "shared", "data"))
    ap.add_argument("--folds", type=lambda t: _ints(t, "--folds"), default=[1, 2, 3, 4, 5])
    ap.add_argument("--logs", type=lambda t: [v for v in t.split(",") if v], default=list(LOGS))
    ap.add_argument("--sessions", type=int, default=48)
    ap.add_argument("--explore", type=float, default=1.0, help="share of sessions a randomised / swap logger changes")
    ap.add_argument("--rankers", type=lambda t: _ints(t, "--rankers"), default=[0, 5, 10, 20],
                    help="feature columns, each a deterministic production ranker (the 'rankers' log)")
    ap.add_argument("--bootstrap", type=int, default=200)
    ap.add_argument("--n-iter", type=int, default=200, help="estimate_trust's n_iter")
    ap.add_argument("--sweep", type=lambda t: _ints(t, "--sweep"), default=[], help="fewer sessions per query to try")
    ap.add_argument("--out", default="trust_interventions.json")
    ap.add_argument("--plot", default=None, help="PNG path for the figure")
    return ap


def main(argv=None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    bad = [k for k in args.logs if k not in LOGS]
    if bad or not args.logs:
        ap.error(f"--logs must name some of {', '.join(LOGS)}, got {bad or 'none'}")
    if args.sessions < 1 or args.bootstrap < 0 or not args.folds or not args.rankers:
        ap.error("--sessions must be >= 1, --bootstrap >= 0, --folds and --rankers non-empty")
    true = truth()
    results = {}
    for fold in args.folds:
        results[str(fold)] = run_fold(os.path.join(args.data, "mq2008"), fold, args, true)
        summary = {k: holds_from(results, k, args.sessions) for k in args.logs}
        doc = {"settings": {k: v for k, v in vars(args).items() if k not in ("out", "plot")},
               "truth": {"alpha": true[0].tolist(), "beta": true[1].tolist()}, "target": TARGET,
               "folds": results, "holds_from_sessions": summary}
        atomic_write_text(args.out, json.dumps(doc, indent=1) + "\n")
    for kind in args.logs:
        worst = max(max(r[kind]["alpha_error"], r[kind]["beta_error"]) for r in results.values())
        print(f"{kind}: largest error over folds and positions {worst:.3f} at {args.sessions} sessions; within "
              f"{TARGET} on every fold from {summary[kind]} sessions per query (of those run)", flush=True)
    if args.plot:
        figure(results, true, args.logs, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
