"""grad_hess / loss / pair_couplings of the pointwise and pairwise objectives at 2,000 queries x 120 rows.

Random data (labels 0-2 uniform: ~9.5M label pairs; or MQ2008-like 70/20/10%: ~4M pairs).
Times are the best of 5 calls on a prepared data set (compilation and label-only state excluded;
state build time printed separately). Run: python benchmarks/bench_objectives_grad_hess.py [skewed]
"""
import sys
import time

import numpy as np

from customobj.objectives import (
    Logistic, McRank, MPBoost, PreferencePairs, QBRank, RankNet, RankSVM, SquaredError, SquaredHinge,
)


def best_of(fn, repeat=5):
    fn()
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return min(out)


def main(skewed=False, nq=2000, rows=120):
    rng = np.random.default_rng(0)
    n = nq * rows
    p = [0.7, 0.2, 0.1] if skewed else [1 / 3] * 3
    y = rng.choice(3, size=n, p=p).astype(float)
    groups = np.full(nq, rows)
    s = rng.normal(size=n)
    explicit = np.stack([rng.integers(0, n, 200_000), rng.integers(0, n, 200_000)], axis=1)
    explicit = explicit[explicit[:, 0] != explicit[:, 1]]
    objs = [SquaredError(), Logistic(), SquaredHinge(), RankNet(), RankSVM(), MPBoost(ddf="ldd"),
            QBRank(), QBRank(hessian="upper_bound"), QBRank(pairs=explicit), PreferencePairs(explicit)]
    print(f"{nq} queries x {rows} rows ({'skewed' if skewed else 'uniform'} labels 0-2)")
    for obj in objs:
        yy = (y > 0).astype(float) if isinstance(obj, (Logistic, SquaredHinge)) else y
        t0 = time.perf_counter()
        prep = obj.prepare(yy, groups)
        t_state = time.perf_counter() - t0
        t_gh = best_of(lambda: obj.grad_hess_prepared(s, prep))
        t_loss = best_of(lambda: obj.loss_prepared(s, prep))
        t_c = best_of(lambda: obj.pair_couplings_prepared(s, prep), repeat=2) if obj.pairwise else float("nan")
        print(f"  {obj!r:60.60s} prepare {t_state*1e3:7.1f} ms  grad_hess {t_gh*1e3:7.1f} ms"
              f"  loss {t_loss*1e3:7.1f} ms  couplings {t_c*1e3:7.1f} ms")
    mc = McRank(n_classes=3)
    prep = mc.prepare(y, groups)
    f = rng.normal(size=(n, 3))
    print(f"  {'McRank(n_classes=3)':60s} grad_hess {best_of(lambda: mc.grad_hess_prepared(f, prep))*1e3:7.1f} ms")


if __name__ == "__main__":
    main(skewed="skewed" in sys.argv[1:])
