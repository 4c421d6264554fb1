"""Robustness of the metrics and the linear combination (issue 7)."""
from __future__ import annotations

import numba
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from customobj import _validation as V
from customobj import combine as C
from customobj import metrics as M
from customobj.groups import Groups

Y = np.array([0.0, 1.0, 2.0, 0.0, 1.0])
S = np.array([0.5, -0.25, 1.0, 0.0, 0.375])
G = [2, 3]
RANKED = [M.ndcg, M.dcg, M.ndcg_mpboost, M.err, M.average_precision, M.reciprocal_rank]
ALL = RANKED + [M.precision_at_percent, M.misordered_pairs]

BAD_CALLS = [
    ("labels shorter", lambda f: f(S, Y[:4], G), ValueError, r"labels has 4 rows but data has 5"),
    ("groups do not sum", lambda f: f(S, Y, [2, 2]), ValueError, r"group sizes sum to 4 but data has 5"),
    ("group missing", lambda f: f(S, Y, None), TypeError, r"group is required"),
    ("NaN score", lambda f: f([np.nan, 0, 0, 0, 0], Y, G), ValueError, r"scores must be finite; found nan at position 0"),
    ("inf score", lambda f: f([0, 0, 0, 0, np.inf], Y, G), ValueError, r"scores must be finite; found inf at position 4"),
    ("NaN label", lambda f: f(S, [0, 0, np.nan, 0, 0], G), ValueError, r"labels must be finite; found nan at position 2"),
    ("negative label", lambda f: f(S, [0, 0, -3, 0, 0], G), ValueError, r"labels must be non-negative.*-3.0 at row 2"),
    ("object scores", lambda f: f(np.array(S, dtype=object), Y, G), TypeError, r"scores has dtype object"),
    ("2-D scores", lambda f: f(np.zeros((5, 2)), Y, G), ValueError, r"scores must be 1-D, got shape \(5, 2\)"),
    ("sparse scores", lambda f: f(__import__("scipy.sparse").sparse.csr_matrix(S), Y, G), TypeError,
     r"scipy.sparse matrix; use .toarray\(\)"),
]


@pytest.mark.parametrize("f", ALL, ids=lambda f: f.__name__)
@pytest.mark.parametrize("name,call,exc,msg", BAD_CALLS, ids=[c[0] for c in BAD_CALLS])
def test_bad_input_raises_clear_error(f, name, call, exc, msg):
    with pytest.raises(exc, match=msg):
        call(f)


OPTION_ERRORS = [
    (lambda: M.ndcg(S, Y, G, k=0), ValueError, r"k must be >= 1, got 0"),
    (lambda: M.ndcg(S, Y, G, k=2.5), TypeError, r"k must be an integer"),
    (lambda: M.ndcg(S, Y, G, empty="skip"), ValueError, r"empty must be one of \['exclude'\]"),
    (lambda: M.ndcg(S, Y, G, empty=float("nan")), ValueError, r"empty must be finite"),
    (lambda: M.ndcg(S, Y, G, ties="random"), ValueError, r"ties must be one of"),
    (lambda: M.ndcg(S, [0, 0.5, 1, 1, 1], G, gain=[0, 1, 3]), ValueError, r"labels must be integer grades.*0.5 at row 1"),
    (lambda: M.ndcg(S, Y, G, gain=[0, 1]), ValueError, r"gain table has 2 entries .* labels reach 2"),
    (lambda: M.err(S, [0, 0.5, 1, 1, 1], G), ValueError, r"labels must be integer grades.*0.5 at row 1"),
    (lambda: M.err(S, Y, G, max_grade=1), ValueError, r"max_grade must be finite and >= the largest label \(2\)"),
    (lambda: M.precision_at_percent(S, Y, G, percent=0), ValueError, r"percent must be in \(0, 100\]"),
    (lambda: M.precision_at_percent(S, Y, G, percent="10"), TypeError, r"percent must be a number"),
    (lambda: M.ndcg([], [], []), ValueError, r"no query to average over"),
    (lambda: M.ndcg(S, np.zeros(5), G, empty="exclude"), ValueError, r"every query was excluded"),
    (lambda: M.get_metric("ndcg@0"), ValueError, r"cut-off K must be >= 1"),
    (lambda: M.get_metric("precision@150%"), ValueError, r"percentage must be in \(0, 100\]"),
    (lambda: M.get_metric("auc"), ValueError, r"unknown metric 'auc'"),
    (lambda: M.get_metric(3), TypeError, r"metric name must be a string"),
    (lambda: C.best_linear_combination(S, S[:4], Y, G), ValueError, r"s2 has 4 rows but data has 5"),
    (lambda: C.best_linear_combination(S, [np.nan] * 5, Y, G), ValueError, r"s2 must be finite; found nan"),
]


@pytest.mark.parametrize("call,exc,msg", OPTION_ERRORS)
def test_bad_options_raise_clear_error(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


def _variants():
    import pandas as pd

    ro = S.copy()
    ro.setflags(write=False)
    return {
        "float32 / int": (S.astype(np.float32), Y.astype(np.int64), np.array(G, np.int32)),
        "read-only": (ro, Y, G),
        "non-contiguous": (np.repeat(S, 3)[::3], np.repeat(Y, 3)[::3], G),
        "pandas": (pd.Series(S), pd.Series(Y), pd.Series(G)),
        "Groups": (S, Y, Groups.from_sizes(G)),
    }


@pytest.mark.parametrize("f", ALL, ids=lambda f: f.__name__)
def test_input_containers_give_identical_results(f):
    ref = f(S, Y, G)
    for name, args in _variants().items():
        assert f(*args) == ref, name


@pytest.mark.parametrize("f", ALL, ids=lambda f: f.__name__)
def test_extreme_and_degenerate_inputs(f):
    rng = np.random.default_rng(0)
    n = 61
    sizes = [1, 20, 40]
    y = rng.integers(0, 3, n).astype(float)
    for s in (rng.choice([-1e6, 1e6], n), rng.choice([-1e300, 1e300], n), np.zeros(n), rng.normal(0, 1e6, n)):
        for labels in (y, np.ones(n), np.zeros(n)):
            out = f(s, labels, sizes)
            vals = np.atleast_1d(np.asarray(out, dtype=float))
            assert np.all(np.isfinite(vals)), (f.__name__, out)
    # A single query holding every row.
    assert np.isfinite(np.asarray(f(rng.normal(size=n), y, [n]), dtype=float)).all()


def test_all_equal_labels_documented_values():
    s = np.arange(6.0)
    zero, two = np.zeros(6), np.full(6, 2.0)
    assert M.ndcg(s, zero, [6]) == 1.0 and M.ndcg(s, zero, [6], empty=0.0) == 0.0
    assert M.ndcg(s, two, [6]) == 1.0  # every ordering is ideal
    assert M.err(s, zero, [6]) == 0.0
    assert M.precision_at_percent(s, two, [6]) == 1.0  # no pair to misorder
    assert M.misordered_pairs(s, two, [6]) == (0, 0.0)


def test_20000_row_query_pairwise_metrics():
    """precision@100% needs no pair list; smaller percentages would need 1.3e8 pairs and refuse clearly."""
    rng = np.random.default_rng(1)
    n = 20_000
    y = rng.integers(0, 3, n).astype(float)
    s = y + rng.normal(size=n)
    p100 = M.precision_at_percent(s, y, [n], 100)  # equals 1 - misordered fraction (tested above, small n)
    assert 0.5 < p100 < 1.0
    with pytest.raises(ValueError, match=r"precision_at_percent\(percent=10\) would materialise .* row pairs"):
        M.precision_at_percent(s, y, [n], 10)
    with pytest.raises(ValueError, match=r"best_linear_combination would materialise .* row pairs"):
        C.best_linear_combination(s, -s, y, [n])


def test_precision_at_100_equals_pair_list_path(monkeypatch):
    rng = np.random.default_rng(2)
    for _ in range(30):
        sizes = rng.integers(1, 15, 4)
        n = int(sizes.sum())
        y = rng.integers(0, 3, n).astype(float)
        s = rng.integers(0, 4, n).astype(float)  # many ties
        fast = M.precision_at_percent(s, y, sizes, 100)
        # 99.9999% of <1000 pairs keeps every pair, through the sorted pair list.
        assert fast == M.precision_at_percent(s, y, sizes, 99.9999)


def test_combination_work_limit(monkeypatch):
    monkeypatch.setattr(C, "MAX_WORK", 1000.0)
    y = np.arange(30.0) % 3
    with pytest.raises(ValueError, match=r"the largest query, group 1, has 20 rows.*MAX_WORK"):
        C.best_linear_combination(np.arange(30.0), -np.arange(30.0), y, [10, 20])


def test_pair_budget_is_configurable(monkeypatch):
    monkeypatch.setattr(V, "MAX_PAIRS", 3)
    with pytest.raises(ValueError, match=r"would materialise 8 row pairs"):
        M.precision_at_percent(S, Y, [5], 50)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.floats(-1e6, 1e6)), min_size=1, max_size=30), st.integers(1, 4),
       st.integers(1, 12))
def test_hypothesis_metrics_bounded(rows, n_groups, k):
    y = np.array([r[0] for r in rows], dtype=float)
    s = np.array([r[1] for r in rows])
    n = y.size
    sizes = np.diff(np.linspace(0, n, min(n_groups, n) + 1).astype(int))
    for f in (M.ndcg, M.ndcg_mpboost, M.err, M.average_precision, M.reciprocal_rank):
        v = f(s, y, sizes, k=k, per_query=True)
        assert np.all((v >= 0.0) & (v <= 1.0 + 1e-12)), f.__name__
    assert 0.0 <= M.precision_at_percent(s, y, sizes, 37.5) <= 1.0
    alpha, best = C.best_linear_combination(s, y, y, sizes, k=k)
    assert 0.0 <= alpha <= 1.0 and best == pytest.approx(M.ndcg(alpha * s + (1 - alpha) * y, y, sizes, k))


def test_bit_identical_across_thread_counts(two_threads):
    rng = np.random.default_rng(3)
    sizes = rng.integers(1, 50, 30)
    n = int(sizes.sum())
    y = rng.integers(0, 3, n).astype(float)
    s = np.round(rng.normal(size=n), 1)

    def run():
        out = [f(s, y, sizes, per_query=True) for f in RANKED]
        out.append(np.array([M.precision_at_percent(s, y, sizes, 25), *M.misordered_pairs(s, y, sizes)]))
        out.append(np.array(C.best_linear_combination(s, y + s, y, sizes)))
        return out

    saved = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        a = run()
        numba.set_num_threads(two_threads)
        b = run()
    finally:
        numba.set_num_threads(saved)
    for x, z in zip(a, b):
        np.testing.assert_array_equal(x, z)


# --- issue 13: numeric-range policy ---------------------------------------------------------------------
EXP_GAIN = [M.ndcg, M.dcg, M.ndcg_mpboost, M.err]


@pytest.mark.parametrize("f", EXP_GAIN, ids=lambda f: f.__name__)
def test_exponential_gain_labels_at_and_beyond_the_bound(f):
    """2**1024 is inf: ndcg/err used to return NaN. Labels up to 700 stay finite; above, a clear error."""
    s = np.array([0.3, 0.1, 0.2, 0.0])
    top = np.array([0.0, V.EXP_GAIN_MAX_LABEL, 3.0, V.EXP_GAIN_MAX_LABEL])
    v = f(s, top, [4], per_query=True)
    assert np.all(np.isfinite(v)) and (f is M.dcg or np.all((v >= 0) & (v <= 1)))
    for bad in (701.0, 1024.0, 1e5):
        with pytest.raises(ValueError, match=rf"labels reach {bad:g} \(row 1\) .* needs labels <= 700"):
            f(s, [0.0, bad, 1.0, 0.0], [4])


def test_exponential_gain_bound_in_combination_and_gain_tables():
    s1, s2 = np.array([0.3, 0.1, 0.2]), np.array([0.1, 0.3, 0.2])
    alpha, best = C.best_linear_combination(s1, s2, [0.0, 700.0, 1.0], [3])
    assert np.isfinite(best) and 0 <= alpha <= 1
    with pytest.raises(ValueError, match=r"labels reach 1024"):
        C.best_linear_combination(s1, s2, [0.0, 1024.0, 1.0], [3])
    with pytest.raises(ValueError, match=r"gain entries must be <= 5.2\d*e\+210; found 1e\+300 at grade 1"):
        M.ndcg(s1, [0, 1, 1], [3], gain=[0, 1e300])
    assert M.ndcg(s1, [0, 1, 1], [3], gain=[0, V.MAX_GAIN]) == pytest.approx(M.ndcg(s1, [0, 1, 1], [3], gain=[0, 1]))


def test_err_max_grade_bound():
    s, y = np.array([0.3, 0.1, 0.2]), np.array([0.0, 2.0, 1.0])
    assert 0 < M.err(s, y, [3], max_grade=V.EXP_GAIN_MAX_LABEL) < 1e-200  # finite, tiny
    for bad in (701, 2000, 10**400):
        with pytest.raises(ValueError, match=r"max_grade must be finite|at most 700"):
            M.err(s, y, [3], max_grade=bad)


@pytest.mark.parametrize("f", RANKED, ids=lambda f: f.__name__)
def test_cutoff_beyond_int64_is_refused(f):
    for k in (2**63, 1180591620717411303424, V.MAX_ROWS + 1):
        with pytest.raises(ValueError, match=rf"k must be <= {V.MAX_ROWS}, got {k}; k=None means the whole list"):
            f(S, Y, G, k)
    assert f(S, Y, G, V.MAX_ROWS) == f(S, Y, G, None)  # at the bound: the whole list
    with pytest.raises(ValueError, match=r"cut-off K must be <= 1099511627776"):
        M.get_metric("ndcg@1180591620717411303424")


@pytest.mark.parametrize("f", ALL, ids=lambda f: f.__name__)
def test_boolean_scores_are_refused(f):
    with pytest.raises(TypeError, match=r"scores must be real numbers \(float or int\), got booleans"):
        f(S > 0.2, Y, G)
    assert f(np.array([1, 0, 2, 0, 1]), Y, G) == f(np.array([1.0, 0, 2, 0, 1]), Y, G)  # integer scores convert


def test_boolean_scores_refused_by_the_combination():
    with pytest.raises(TypeError, match=r"s2 must be real numbers"):
        C.best_linear_combination(S, S > 0, Y, G)


def test_absurd_labels_refused_everywhere():
    for f in ALL:
        with pytest.raises(ValueError, match=r"labels must satisfy \|labels\| <= 1e\+100; found 1e\+300 at row 2"):
            f(S, [0, 1, 1e300, 0, 1], G)


def test_hostile_inputs_fuzz_in_a_child_process():
    """Hypothesis-generated hostile arrays, groups and options (tests/_hostile.py): finite output or
    ValueError/TypeError, never a crash (the child would die), hang (timeout), NaN or other error."""
    from _isolated import run_isolated

    out = run_isolated("import sys; sys.path.insert(0, 'tests'); import _hostile; _hostile.fuzz_metrics(120); print('ok')",
                       timeout=300)
    assert out.strip() == "ok"
