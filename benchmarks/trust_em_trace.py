"""Issue 43: how TrustEM's estimate of the trust parameters moves with the EM iterations under one
deterministic production ranker, and what the variants the issue suggests change.

Per fold of MQ2008, the training part gets the trust click log of benchmarks/trust_study.py's first log
(``simulate_clicks`` defaults, ``--sessions`` per query, compare's weak production ranker seeded by the
fold). TrustEM runs ``--iterations`` EM iterations (``n_estimators=10``, ``learning_rate=0.05``) and after
each one the parameters it would report are compared with the simulation's: the largest absolute error
over the ten positions of ``alpha`` and of ``beta``, and ``family``, the largest error of ``alpha`` after
the best scale (``alpha / a``, the freedom clicks leave; what no convention can remove). Variants:

- ``default``: TrustEM's own updates;
- ``monotone``: ``p+_k`` and ``p-_k`` made non-increasing in ``k`` after each M-step (isotonic, weighted):
  examination falls with the position and trust does not grow with it, so both click rates fall;
- ``small``: a relevance model of less capacity (``num_leaves=7``, ``min_child_samples=200``);
- ``pbm_init``: started from position bias alone (``p+ = ctr / ctr_0``, ``p- = 0.05 ctr``).

    python benchmarks/trust_em_trace.py [--data ../shared/data] [--folds 1,2,3,4,5] [--sessions 48]
        [--iterations 10] [--variants default,monotone,small,pbm_init] [--out trust_em_trace.json]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import numpy as np  # noqa: E402

import customobj  # noqa: E402
from customobj import adapters  # noqa: E402,F401  (before lightgbm: OpenMP wait policy)
from customobj._io import atomic_write_text  # noqa: E402
from customobj.clicks import TrustEM  # noqa: E402
from customobj.clicks.regression_em import EPS, checked_rows, learned_relevance  # noqa: E402
from customobj.clicks.trust_em import _stretched, trust_e_step, trust_m_step, trust_parameters  # noqa: E402
from customobj.compare.clicks import _weak_ranker, parse_clicks, true_curves  # noqa: E402

VARIANTS = {"default": ({}, {}), "monotone": ({}, {"monotone": True}),
            "small": ({"num_leaves": 7, "min_child_samples": 200}, {}), "pbm_init": ({}, {"init": "pbm"})}


def errors(alpha, beta, truth):
    ta, tb = truth
    scale = float(alpha @ ta / (ta @ ta))
    return {"alpha": float(np.abs(alpha - ta).max()), "beta": float(np.abs(beta - tb).max()),
            "family": float(np.abs(alpha - scale * ta).max())}


def _non_increasing(v, weight):
    from sklearn.isotonic import IsotonicRegression

    return IsotonicRegression(increasing=False).fit_transform(np.arange(v.size), v, sample_weight=weight)


def trace(em, X, y, position, truth, monotone=False, init="default"):
    """TrustEM.fit's loop, with the reported parameters' errors after every iteration."""
    clicks, pos, w = checked_rows(X, y, position, 0, None)
    n_pos = int(pos.max()) + 1
    count = np.bincount(pos, weights=w, minlength=n_pos)
    ctr = np.bincount(pos, weights=w * clicks, minlength=n_pos) / count
    plus, minus = np.clip(1.5 * ctr, EPS, 1 - EPS), np.clip(0.5 * ctr, EPS, 1 - EPS)
    if init == "pbm":
        plus, minus = np.clip(ctr / ctr[0], EPS, 1 - EPS), np.clip(0.05 * ctr, EPS, 1 - EPS)
    gamma = np.full(clicks.size, 0.5)
    learner = em._learner()
    out = []
    for _ in range(em.n_iter):
        rel = trust_e_step(clicks, plus[pos], minus[pos], gamma)
        plus, minus = trust_m_step(pos, clicks, w, rel, n_pos)
        if monotone:
            wr = np.bincount(pos, weights=w * rel, minlength=n_pos)
            plus = np.clip(_non_increasing(plus, wr), EPS, 1 - EPS)
            minus = np.clip(_non_increasing(minus, count - wr), EPS, 1 - EPS)
        learner.fit(X, rel, sample_weight=w)
        gamma = _stretched(learned_relevance(learner, X))
        out.append(errors(*trust_parameters(plus, minus), truth))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.path.join(_HERE, "..", "..", "shared", "data"))
    ap.add_argument("--folds", default="1,2,3,4,5")
    ap.add_argument("--sessions", type=int, default=48)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--out", default="trust_em_trace.json")
    args = ap.parse_args(argv)
    variants = [v for v in args.variants.split(",") if v]
    if not variants or any(v not in VARIANTS for v in variants) or args.sessions < 1 or args.iterations < 1:
        ap.error(f"--variants: a list of {', '.join(VARIANTS)}; --sessions and --iterations positive")
    curves = true_curves(parse_clicks(f"trust:eta=1.0,sessions={args.sessions},shown=10"))
    truth = (np.array(curves["alpha"]), np.array(curves["beta"]))
    out = []
    for fold in [int(f) for f in args.folds.split(",") if f]:
        train = customobj.load_letor(os.path.join(args.data, "mq2008", f"Fold{fold}", "train.txt.gz"))
        split = argparse.Namespace(X=train.X, y=train.y, sizes=np.asarray(train.group))
        log = customobj.data.simulate_clicks((train.X, train.y, np.asarray(train.group)),
                                             ranker=_weak_ranker(split, fold, 1), click_model="trust", shown=10,
                                             sessions=args.sessions, seed=fold)
        for name in variants:
            options, how = VARIANTS[name]
            em = TrustEM(seed=fold, n_iter=args.iterations, n_estimators=10, learning_rate=0.05, **options)
            start = time.perf_counter()
            steps = trace(em, log.X, log.y, log.position, truth, **how)
            out.append({"fold": fold, "variant": name, "seconds": round(time.perf_counter() - start, 1), "trace": steps})
            print(f"fold {fold} {name}: " + " ".join(f"{s['alpha']:.3f}/{s['beta']:.3f}" for s in steps), flush=True)
    atomic_write_text(args.out, json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
