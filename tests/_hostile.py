"""Hypothesis strategies of hostile input for the metrics and the objectives (issue 13), and the
property every public entry point must keep: finite output, or ValueError/TypeError.

Run in a child process by the robust tests (``_isolated.run_isolated``) so a segfault or a hang is a
test failure. ``python tests/_hostile.py N`` runs N examples per property (a longer fuzz run).
"""
from __future__ import annotations

import sys

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

HUGE_INTS = [0, 1, 2, 3, 2**31, 2**40, 2**40 + 1, 2**62, 2**62 + 10, 2**63 - 1, 2**63, 2**64, 2**70, -1]
HUGE_FLOATS = [0.0, 1.0, 2.0, 53.0, 54.0, 700.0, 701.0, 1024.0, 1e50, 1e51, 1e100, 1e101, 1e300, 1.7e308,
               -1.0, -1e300, float("nan"), float("inf"), -float("inf"), 5e-324]


@st.composite
def _array(draw, element, n):
    """``n`` benign values; in about half the examples one of them replaced by a hostile one."""
    values = draw(st.lists(element, min_size=n, max_size=n))
    if n and draw(st.booleans()):
        values[draw(st.integers(0, n - 1))] = draw(st.sampled_from(HUGE_FLOATS))
    return values


@st.composite
def data(draw):
    """(scores, labels, group, weight): mostly consistent lengths, sometimes hostile in any part."""
    n = draw(st.integers(0, 12))
    y = draw(_array(st.integers(0, 4).map(float), n))
    s = draw(_array(st.floats(-10, 10), n if draw(st.integers(0, 9)) != 7 else draw(st.integers(0, 12))))
    if draw(st.integers(0, 19)) == 7:  # not 0: hypothesis favours 0
        s = np.asarray(s) > 0  # boolean scores
    kind = draw(st.integers(0, 5))
    kind = 0 if kind > 3 else kind  # consistent groups half of the time
    if kind == 0 and n:
        cuts = sorted(draw(st.lists(st.integers(0, n), max_size=4)))
        group = np.diff([0, *cuts, n]).tolist()
    elif kind == 1:
        group = draw(st.lists(st.sampled_from(HUGE_INTS), max_size=5))
    elif kind == 2:
        group = [n]
    else:
        group = draw(st.lists(st.integers(-1, 6), max_size=5))
    weight = None
    if draw(st.booleans()):
        weight = draw(_array(st.floats(0, 3), n))
    return s, y, group, weight


def _finite(out):
    if out is None:
        return True
    if isinstance(out, tuple):
        return all(_finite(o) for o in out)
    arr = np.asarray(out, dtype=float)
    return bool(np.all(np.isfinite(arr)))


def _call(fn):
    """The property: finite output or ValueError/TypeError (anything else propagates and fails)."""
    try:
        out = fn()
    except (ValueError, TypeError):
        return
    assert _finite(out), f"non-finite output {out!r}"


def fuzz_metrics(n_examples: int) -> None:
    from customobj import combine, metrics

    fns = [metrics.ndcg, metrics.dcg, metrics.ndcg_mpboost, metrics.err, metrics.average_precision,
           metrics.reciprocal_rank]
    ks = st.one_of(st.none(), st.sampled_from(HUGE_INTS), st.integers(1, 5))

    @settings(max_examples=n_examples, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(data(), ks, st.sampled_from(range(len(fns))), st.one_of(st.none(), st.lists(st.floats(0, 9), min_size=1, max_size=6),
                                                           st.lists(st.sampled_from(HUGE_FLOATS), max_size=3)))
    def prop(d, k, which, gain):
        s, y, group, _ = d
        f = fns[which]
        kw = {"gain": gain} if f in (metrics.ndcg, metrics.dcg) and gain is not None else {}
        _call(lambda: f(s, y, group, k, **kw))
        _call(lambda: f(s, y, group, k, per_query=True, **kw))
        _call(lambda: metrics.misordered_pairs(s, y, group))
        _call(lambda: metrics.precision_at_percent(s, y, group, 50))
        _call(lambda: combine.best_linear_combination(s, y, y, group, k=k))

    prop()


def fuzz_objectives(n_examples: int) -> None:
    import customobj as co

    params = st.sampled_from(HUGE_FLOATS + [0.5, 3.0, 10**400])

    def build(i, p, k):
        makers = [
            lambda: co.RankNet(sigma=p), lambda: co.RankSVM(margin=p), lambda: co.MPBoost(ddf="ldd", alpha=p),
            lambda: co.MPBoost(ddf="logdd", lam=p), lambda: co.QBRank(margin=p), lambda: co.Logistic(sigma=p),
            lambda: co.SquaredHinge(C=p), lambda: co.SquaredError(), lambda: co.McRank(),
            lambda: co.LambdaRank(k=k, sigma=p), lambda: co.LambdaRank(metric="err", truncation=k),
            lambda: co.LambdaRank(metric="map", norm=True), lambda: co.StructuredDCG(k=k if k else 3, hess=p),
            lambda: p * co.RankNet(), lambda: co.RankNet() + p * co.SquaredError(),
            lambda: co.ListNet(), lambda: co.QuerySoftMax(beta=p), lambda: co.XENDCG(seed=k if k else 0),
            lambda: co.XENDCG(convention="lightgbm"), lambda: co.QueryRMSE(), lambda: co.LambdaLoss(mu=p, sigma=p),
            lambda: co.YetiRank(permutations=k if k else 2, decay=p),
        ]
        return makers[i]()

    @settings(max_examples=n_examples, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(data(), st.integers(0, 21), params, st.one_of(st.none(), st.sampled_from(HUGE_INTS)))
    def prop(d, i, p, k):
        s, y, group, weight = d
        try:
            obj = build(i, p, k)
        except (ValueError, TypeError):
            return
        if obj.n_outputs != 1:  # McRank: one column per grade
            s = np.tile(np.asarray(s, dtype=float)[:, None], (1, 3)) if np.ndim(s) == 1 else s
        _call(lambda: obj.grad_hess(s, y, group, weight))
        _call(lambda: obj.loss(s, y, group, weight))
        _call(lambda: obj.pair_couplings(s, y, group))

    prop()


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    fuzz_metrics(n)
    fuzz_objectives(n)
    print(f"fuzz: {n} examples per property, no crash, hang, NaN or stray exception")
