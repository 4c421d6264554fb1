"""Pair enumeration strategies for RankNet / RankSVM grad_hess at 2,000 queries x 120 rows.

Compares (a) a direct O(n_q^2) double loop with a label test per candidate pair, (b) the
label-sorted block loop used by customobj (serial and prange over queries), and (c) a
materialised pair list. Run: python benchmarks/pairwise_strategies.py [n_queries] [rows]
"""
import sys
import time

import numba
import numpy as np
from numba import njit

from customobj.objectives import _pairwise_kernels as PK


@njit(cache=True)
def direct_grad_hess(scores, labels, ptr, kind, p, out_grad, out_hess):
    for q in range(ptr.size - 1):
        lo, hi = ptr[q], ptr[q + 1]
        for i in range(lo, hi):
            for j in range(lo, hi):
                if labels[i] > labels[j]:
                    g, c = PK.pair_grad(kind, scores[i] - scores[j], p)
                    out_grad[i] += g
                    out_grad[j] -= g
                    out_hess[i] += c
                    out_hess[j] += c


@njit(cache=True)
def specialised_ranknet(scores, ptr, order, lower, sigma, out_grad, out_hess):
    # RankNet written out by hand: measures the cost of the generic kind / theta dispatch.
    for q in range(ptr.size - 1):
        hi = ptr[q + 1]
        for a in range(ptr[q], hi):
            i = order[a]
            gi = 0.0
            hh = 0.0
            for b in range(lower[a], hi):
                j = order[b]
                z = sigma * (scores[i] - scores[j])
                e = np.exp(-abs(z))
                inv = 1.0 / (1.0 + e)
                rho = e * inv if z >= 0.0 else inv
                c = sigma * sigma * e * inv * inv
                gi -= sigma * rho
                hh += c
                out_grad[j] += sigma * rho
                out_hess[j] += c
            out_grad[i] += gi
            out_hess[i] += hh


def one_thread(kernel, *args):
    saved = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        return kernel(*args)
    finally:
        numba.set_num_threads(saved)


def best_of(fn, repeat=5):
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main(nq=2000, rows=120):
    rng = np.random.default_rng(0)
    n = nq * rows
    labels = rng.integers(0, 3, n).astype(np.float64)
    scores = rng.normal(size=n)
    ptr = np.arange(0, n + 1, rows, dtype=np.int64)
    order = np.empty(n, np.int64)
    lower = np.empty(n, np.int64)
    PK.label_order_kernel(labels, ptr, order, lower)
    m = int((np.repeat(ptr[1:], np.diff(ptr)) - lower).sum())
    pi = np.empty(m, np.int64); pj = np.empty(m, np.int64); th = np.empty(m)
    PK.label_pair_list_kernel(labels, ptr, order, lower, int(PK.Theta.CONST), 1.0, pi, pj, th)
    g = np.zeros(n); h = np.zeros(n)
    E = np.zeros(0)
    print(f"{nq} queries x {rows} rows, {m} label pairs")
    for name, kind in (("RankNet", PK.PairKind.LOGISTIC), ("RankSVM", PK.PairKind.SQ_HINGE)):
        spec = PK.pair_spec(kind, PK.Theta.CONST, 1.0, 1.0)
        res = {
            "direct double loop": lambda: direct_grad_hess(scores, labels, ptr, spec.kind, 1.0, g, h),
            "sorted blocks, one thread": lambda: one_thread(PK.label_pairs_grad_hess_parallel,
                scores, labels, ptr, order, lower, E, False, spec, g, h),
            "sorted blocks, prange": lambda: PK.label_pairs_grad_hess_parallel(
                scores, labels, ptr, order, lower, E, False, spec, g, h),
            "materialised pair list": lambda: PK.pair_list_grad_hess(
                scores, pi, pj, th, E, False, E, False, spec, g, h),
        }
        if kind == PK.PairKind.LOGISTIC:
            res["hand-specialised, serial"] = lambda: specialised_ranknet(scores, ptr, order, lower, 1.0, g, h)
        for label, fn in res.items():
            print(f"  {name:8s} {label:24s} {best_of(fn) * 1e3:8.1f} ms")


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:3]]
    main(*args)
