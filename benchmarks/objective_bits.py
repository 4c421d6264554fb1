"""Record, or compare bit for bit, every objective's CPU outputs on MQ2008 Fold1 (train).

For each loss / option combination (every class of ``customobj.objectives.__all__``, the options
that select another kernel path: metrics, conventions, cutoffs, truncation, norm, DDFs, margins,
hessians, explicit pairs, weights) and three score sets (N(0, 1); N(0, 1) times 400, so pair
gaps reach the hundreds and ``sigma d`` overflows ``exp``; scores rounded to three values, so
ties), it stores ``grad``, ``hess``, the loss and, for pairwise losses, the couplings
``(i, j, c)``. ``--compare`` recomputes them and reports every array whose bytes differ: a
refactoring of the kernels must leave them all equal.

    python benchmarks/objective_bits.py --record /tmp/bits_before.npz   # at the old commit
    python benchmarks/objective_bits.py --compare /tmp/bits_before.npz  # after the change
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

import customobj as co
from customobj.data import load_letor

_OBJECTIVES = [
    "RankNet()", "RankNet(sigma=7.0)", "RankSVM()", "RankSVM(margin=0.0)", "MPBoost()", "MPBoost(ddf='ldd', alpha=0.5)",
    "MPBoost(ddf='logdd', lam=2.0)", "MPBoost(ddf='logitdd', beta=3.0)", "QBRank()", "QBRank(margin=0.5)",
    "QBRank(hessian='upper_bound')", "QBRank(pairs=pairs, label_pairs=True)", "QBRank(pairs=pairs, w=1.0)",
    "PreferencePairs(pairs, margin=1.0)", "PreferencePairs(pairs, weight=pair_w)",
    "SquaredError()", "Logistic(sigma=2.0)", "Logistic(balanced=True)", "SquaredHinge(C=0.5)",
    "McRank(n_classes=3)", "StructuredDCG()", "StructuredDCG(k=3)",
    "ListNet()", "QuerySoftMax()", "QueryRMSE()", "XENDCG(seed=1)", "LambdaLoss()", "YetiRank(seed=2)",
    "SquaredError() + RankNet()", "0.5 * RankSVM()",
]
_BINARY = ("Logistic", "SquaredHinge")
for metric in ("ndcg", "err", "map", "mrr"):
    for opts in ("", "norm=True", "truncation=5", "k=5", "sigma=3.0, norm=True, truncation=10", "sigma=1000.0"):
        _OBJECTIVES.append(f"LambdaRank(metric={metric!r}{', ' if opts else ''}{opts})")
_OBJECTIVES += ["LambdaRank.like_lightgbm()", "LambdaRank.like_xgboost()"]


def _data():
    root = Path(os.environ.get("CUSTOMOBJ_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    d = load_letor(root / "mq2008" / "Fold1" / "train.txt.gz")
    y = np.asarray(d.y, dtype=np.float64)
    group = np.asarray(d.group, dtype=np.int64)
    rng = np.random.default_rng(0)
    ptr = np.concatenate([[0], np.cumsum(group)])
    q = rng.integers(0, group.size, size=400)
    a = ptr[q] + (rng.random(q.size) * group[q]).astype(np.int64)
    b = ptr[q] + (rng.random(q.size) * group[q]).astype(np.int64)
    keep = a != b
    pairs = np.stack([a[keep], b[keep]], axis=1)
    pair_w = rng.uniform(0.5, 2.0, size=pairs.shape[0])
    weight = np.repeat(rng.uniform(0.5, 2.0, size=group.size), group)  # per query: every convention takes it
    base = rng.normal(size=y.size)
    scores = {"normal": base, "wide": base * 400.0, "ties": np.round(base)}
    return y, group, pairs, pair_w, weight, scores


def outputs():
    """``{name: array}`` of every combination's CPU outputs."""
    y, group, pairs, pair_w, weight, scores = _data()
    ns = {n: getattr(co, n) for n in dir(co) if not n.startswith("_")}
    ns.update(pairs=pairs, pair_w=pair_w)
    out = {}
    for expr in _OBJECTIVES:
        obj = eval(expr, ns)  # noqa: S307 - the expressions are the list above
        labels = (y > 0).astype(np.float64) if expr.startswith(_BINARY) else y
        if expr.startswith("McRank"):
            labels = np.minimum(y, 2.0)
        for wname, w in (("unweighted", None), ("weighted", weight)):
            prep = obj.prepare(labels, group, w)
            for sname, s in scores.items():
                if obj.n_outputs and obj.n_outputs > 1:
                    s = np.stack([s * f for f in (0.5, 1.0, 1.5)], axis=1)
                key = f"{expr} | {wname} | {sname}"
                g, h = obj.grad_hess_prepared(s, prep)
                out[key + " | grad"], out[key + " | hess"] = g, h
                out[key + " | loss"] = np.array([obj.loss_prepared(s, prep)])
                if obj.pairwise:
                    for name, arr in zip("ijc", obj.pair_couplings_prepared(s, prep)):
                        out[f"{key} | pairs_{name}"] = arr
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--record", type=Path)
    mode.add_argument("--compare", type=Path)
    args = ap.parse_args(argv)
    got = outputs()
    if args.record:
        np.savez(args.record, **got)
        print(f"recorded {len(got)} arrays to {args.record}")
        return 0
    want = np.load(args.compare)
    missing = sorted(set(want.files) ^ set(got))
    differ = [k for k in want.files if k in got and (want[k].dtype != got[k].dtype or want[k].shape != got[k].shape
                                                    or want[k].tobytes() != got[k].tobytes())]
    print(f"compared {len(want.files)} arrays bit for bit: {len(differ)} differ, {len(missing)} missing or new")
    for k in differ[:20] + missing[:20]:
        print("  ", k)
    return 1 if differ or missing else 0


if __name__ == "__main__":
    sys.exit(main())
