"""Robustness of the objectives (issue 7): bad input raises a clear error, extremes stay finite,
results do not depend on the numba thread count."""
from __future__ import annotations

import numba
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import customobj as co
from customobj import _validation as V
from customobj.groups import Groups

Y = np.array([0.0, 1.0, 2.0, 0.0, 1.0])
S = np.array([0.5, -0.25, 1.0, 0.0, 0.375])  # exact in float32
G = [2, 3]


def _rank(**kw):
    return co.RankNet(**kw)


# (name, call, exception, message regex)
BAD_CALLS = [
    ("scores shorter", lambda: _rank().grad_hess(S[:4], Y, G), ValueError, r"scores has 4 rows but data has 5"),
    ("scores 2-D", lambda: _rank().grad_hess(np.zeros((5, 2)), Y, G), ValueError, r"scores must be 1-D.*\(5, 2\)"),
    ("groups do not sum", lambda: _rank().grad_hess(S, Y, [2, 2]), ValueError, r"group sizes sum to 4 but data has 5"),
    ("negative group", lambda: _rank().grad_hess(S, Y, [6, -1]), ValueError, r"group 1 has size -1"),
    ("fractional group", lambda: _rank().grad_hess(S, Y, [2.5, 2.5]), TypeError, r"group sizes must hold integers; found 2.5"),
    ("string group", lambda: _rank().grad_hess(S, Y, "23"), TypeError, r"group must be a sequence of query sizes"),
    ("group missing", lambda: _rank().grad_hess(S, Y), ValueError, r"RankNet is a ranking objective and needs group="),
    ("NaN label", lambda: _rank().grad_hess(S, [0, np.nan, 1, 1, 1], G), ValueError, r"labels must be finite; found nan at position 1"),
    ("inf label", lambda: _rank().grad_hess(S, [0, 1, np.inf, 1, 1], G), ValueError, r"labels must be finite; found inf at position 2"),
    ("negative label", lambda: _rank().grad_hess(S, [0, -1, 1, 1, 1], G), ValueError, r"labels must be non-negative.*-1.0 at row 1"),
    ("NaN score", lambda: _rank().grad_hess([0, 1, np.nan, 0, 0], Y, G), ValueError, r"scores must be finite; found nan at position 2"),
    ("inf score", lambda: _rank().grad_hess([0, -np.inf, 0, 0, 0], Y, G), ValueError, r"scores must be finite; found -inf at position 1"),
    ("huge score", lambda: _rank().grad_hess([0, 0, 0, 1e200, 0], Y, G), ValueError, r"\|scores\| <= 1e\+100; found 1e\+200 at position 3"),
    ("NaN weight", lambda: _rank().grad_hess(S, Y, G, [1, 1, np.nan, 1, 1]), ValueError, r"weight must be finite; found nan at position 2"),
    ("negative weight", lambda: _rank().grad_hess(S, Y, G, [1, 1, -2, 1, 1]), ValueError, r"weight must be non-negative; found -2.0 at row 2"),
    ("weight length", lambda: _rank().grad_hess(S, Y, G, [1, 1, 1]), ValueError, r"weight has 3 rows but data has 5"),
    ("object labels", lambda: _rank().grad_hess(S, np.array([0, 1, 2, 0, 1], dtype=object), G), TypeError, r"labels has dtype object"),
    ("string labels", lambda: _rank().grad_hess(S, np.array(list("01201")), G), TypeError, r"labels must be numeric, got dtype <U1"),
    ("complex scores", lambda: _rank().grad_hess(S.astype(complex), Y, G), TypeError, r"scores must be numeric, got dtype complex128"),
    ("ragged scores", lambda: _rank().grad_hess([[1, 2], [3]], Y, G), TypeError, r"scores could not be converted"),
    ("None labels", lambda: _rank().grad_hess(S, None, G), TypeError, r"labels must be an array, got None"),
    ("sparse scores", lambda: _rank().grad_hess(__import__("scipy.sparse").sparse.csr_matrix(S), Y, G), TypeError,
     r"scores must be a dense 1-D array, got a scipy.sparse matrix"),
    ("McRank fractional grade", lambda: co.McRank().grad_hess(np.zeros((5, 3)), [0, 1.5, 2, 0, 1]), ValueError,
     r"labels must be integer grades.*1.5 at row 1"),
    ("McRank grade above K", lambda: co.McRank(n_classes=2).grad_hess(np.zeros((5, 2)), Y), ValueError,
     r"labels has grade 2 but McRank\(n_classes=2\) allows 0..1"),
    ("McRank scores shape", lambda: co.McRank(n_classes=3).grad_hess(np.zeros(5), Y), ValueError,
     r"scores must have shape \(n_rows, 3\)"),
    ("Logistic non-binary", lambda: co.Logistic().grad_hess(S, [0, 1, 2, 0, 1]), ValueError,
     r"Logistic needs binary labels.*found 2.0 at row 2"),
    ("Logistic mixed signs", lambda: co.Logistic().grad_hess(S, [-1, 1, 0, 1, 1]), ValueError,
     r"labels must be binary.*found 0.0 at row 2"),
    ("pair out of range", lambda: co.PreferencePairs([[0, 7]]).grad_hess(S, Y), ValueError,
     r"pairs\[0\] = \[0, 7\] points outside the data \(rows 0..4\)"),
    ("pair negative", lambda: co.PreferencePairs([[1, 2], [0, -1]]), ValueError,
     r"pairs\[1\] = \[0, -1\] holds a negative row index"),
    ("pair same row", lambda: co.PreferencePairs([[1, 2], [3, 3]]), ValueError, r"pairs\[1\] pairs row 3 with itself"),
    ("pair fractional", lambda: co.QBRank(pairs=[[0, 1.5]]), TypeError, r"pairs must hold integer row indices; found 1.5 in pairs\[0\]"),
    ("pair shape", lambda: co.PreferencePairs([[0, 1, 2]]), ValueError, r"pairs must have shape \(m, 2\).*\(1, 3\)"),
    ("pair booleans", lambda: co.PreferencePairs(np.ones((2, 2), bool)), TypeError, r"got booleans"),
    ("sigma zero", lambda: co.RankNet(sigma=0), ValueError, r"sigma must be > 0, got 0"),
    ("sigma NaN", lambda: co.RankNet(sigma=float("nan")), ValueError, r"sigma must be finite"),
    ("sigma string", lambda: co.RankNet(sigma="1"), TypeError, r"sigma must be a real number, got str"),
    ("margin negative", lambda: co.RankSVM(margin=-1), ValueError, r"margin must be >= 0"),
    ("ddf unknown", lambda: co.MPBoost(ddf="xx"), ValueError, r"ddf must be one of"),
    ("QBRank w", lambda: co.QBRank(w=1.5), ValueError, r"w must be in \[0, 1\], got 1.5"),
    ("negative scale", lambda: -1.0 * co.RankNet(), ValueError, r"factor must be >= 0"),
    ("out_grad float32", lambda: _rank().grad_hess_prepared(S, _rank().prepare(Y, G), np.zeros(5, np.float32)),
     ValueError, r"out_grad must be a writable C-contiguous float64 array of shape \(5,\), got float32"),
    ("out_hess too short", lambda: _rank().grad_hess_prepared(S, _rank().prepare(Y, G), np.zeros(5), np.zeros(4)),
     ValueError, r"out_hess must be .* shape \(5,\), got float64 array of shape \(4,\)"),
    ("Groups from non-contiguous qid", lambda: Groups.from_qid([1, 1, 2, 1]), ValueError,
     r"qid 1 reappears at row 3 after another query"),
]


@pytest.mark.parametrize("name,call,exc,msg", BAD_CALLS, ids=[c[0] for c in BAD_CALLS])
def test_bad_input_raises_clear_error(name, call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


def _listwise():
    return [co.LambdaRank(sigma=100.0), co.LambdaRank(metric="err"), co.LambdaRank(metric="map", norm=True),
            co.LambdaRank(metric="mrr", k=3), co.StructuredDCG()]


def _ranking_objectives():
    return [co.RankNet(sigma=100.0), co.RankSVM(margin=100.0), co.MPBoost(), co.MPBoost(ddf="ldd", alpha=100.0),
            co.MPBoost(ddf="logdd", lam=100.0), co.MPBoost(ddf="logitdd", beta=100.0), co.QBRank(),
            co.QBRank(hessian="upper_bound", margin=5.0), co.QBRank(pairs=[[0, 1], [7, 30]], label_pairs=True),
            co.SquaredError() + co.RankNet(), 0.5 * co.RankSVM()] + _listwise()


def test_listwise_rejects_fractional_grades_for_err():
    with pytest.raises(ValueError, match=r"integer grades.*0.5 at row 1"):
        co.LambdaRank(metric="err").grad_hess(S, [0, 0.5, 1, 1, 1], G)


def _extreme_scores(rng, n):
    return {
        "+-1e6": rng.choice([-1e6, 1e6], n),
        "normal(0, 1e6)": rng.normal(0.0, 1e6, n),
        "all equal": np.full(n, 3.0),
        "+-1e100 (the limit)": rng.choice([-1e100, 1e100], n),
    }


@pytest.mark.parametrize("obj", _ranking_objectives(), ids=repr)
def test_extremes_stay_finite(obj):
    rng = np.random.default_rng(0)
    n = 60
    sizes = [1, 20, 39]  # a one-row query, and queries with ties
    labels = {"graded": rng.integers(0, 3, n).astype(float), "all equal": np.ones(n)}
    for lname, y in labels.items():
        prep = obj.prepare(y, sizes)
        for sname, s in _extreme_scores(rng, n).items():
            g, h = obj.grad_hess_prepared(s, prep)
            assert np.all(np.isfinite(g)) and np.all(np.isfinite(h)), (lname, sname)
            assert np.all(h >= 0), (lname, sname)
            if abs(s).max() <= 1e6:  # quadratic losses of 1e100 margins overflow: only grads promised there
                assert np.isfinite(obj.loss_prepared(s, prep)), (lname, sname)
            if lname == "all equal":
                assert not np.any(g) or isinstance(obj, (co.Sum, co.QBRank)), "equal labels: no pair gradient"
            pc = obj.pair_couplings_prepared(s, prep)
            if pc is not None:
                assert np.all(np.isfinite(pc[2])) and np.all(pc[2] >= 0)


@pytest.mark.parametrize("obj", [co.SquaredError(), co.Logistic(sigma=100.0), co.Logistic(sigma=100.0, balanced=True),
                                 co.SquaredHinge(C=100.0)], ids=repr)
def test_pointwise_extremes_stay_finite(obj):
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 50).astype(float)
    for s in _extreme_scores(rng, 50).values():
        g, h = obj.grad_hess(s, y)
        assert np.all(np.isfinite(g)) and np.all(np.isfinite(h)) and np.all(h >= 0)
        if abs(s).max() <= 1e6:
            assert np.isfinite(obj.loss(s, y))


def test_mcrank_extremes_stay_finite():
    rng = np.random.default_rng(2)
    y = rng.integers(0, 3, 40).astype(float)
    for s in (rng.choice([-1e6, 1e6], (40, 3)), rng.choice([-1e100, 1e100], (40, 3)), np.zeros((40, 3))):
        g, h = co.McRank().grad_hess(s, y)
        assert np.all(np.isfinite(g)) and np.all(np.isfinite(h)) and np.all(h >= 0)
        assert np.isfinite(co.McRank().loss(s, y))
        assert np.all(np.isfinite(co.McRank(n_classes=3).predict_relevance(s)))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.floats(-1e6, 1e6)), min_size=1, max_size=25),
       st.floats(1e-3, 100.0), st.integers(1, 4))
def test_hypothesis_ranknet_mpboost_finite(rows, sigma, n_groups):
    y = np.array([r[0] for r in rows], dtype=float)
    s = np.array([r[1] for r in rows])
    n = y.size
    cuts = np.linspace(0, n, min(n_groups, n) + 1).astype(int)
    sizes = np.diff(cuts)
    for obj in (co.RankNet(sigma=sigma), co.MPBoost(ddf="ldd", alpha=sigma), co.RankSVM(margin=sigma)):
        g, h = obj.grad_hess(s, y, sizes)
        assert np.all(np.isfinite(g)) and np.all(np.isfinite(h)) and np.all(h >= 0)
        assert np.isfinite(obj.loss(s, y, sizes))
        # Each pair term is antisymmetric: gradients of a query sum to 0 (up to rounding).
        assert abs(g.sum()) <= 1e-9 * max(1.0, np.abs(g).sum())


def test_one_query_of_20000_rows_no_quadratic_memory():
    """2e8 candidate pairs: gradients stream over them (O(n) memory); the pair list is refused."""
    rng = np.random.default_rng(3)
    n = 20_000
    y = rng.integers(0, 3, n).astype(float)
    s = rng.normal(size=n)
    obj = co.RankSVM()
    prep = obj.prepare(y, [n])
    g, h = obj.grad_hess_prepared(s, prep)
    assert np.all(np.isfinite(g)) and abs(g.sum()) < 1e-6 * np.abs(g).sum()
    with pytest.raises(ValueError, match=r"pair_couplings would materialise 1\d\d,\d{3},\d{3} row pairs.*MAX_PAIRS"):
        obj.pair_couplings_prepared(s, prep)
    with pytest.raises(ValueError, match=r"label_pairs would materialise .* max_pairs_per_query"):
        co.label_pairs(y, [n])
    i, j, d = co.label_pairs(y, [n], max_pairs_per_query=1000, seed=1)
    assert i.size == 1000 and np.all(y[i] > y[j])


def test_pair_budget_message(monkeypatch):
    monkeypatch.setattr(V, "MAX_PAIRS", 5)
    with pytest.raises(ValueError, match=r"would materialise 8 row pairs .*MAX_PAIRS = 5"):
        co.RankNet().pair_couplings(S, Y, [5])


# --- dtypes, memory layouts and containers: converted once, same result ------------------------------
def _variants():
    import pandas as pd

    ro = S.copy()
    ro.setflags(write=False)
    strided = np.repeat(S, 2)[::2]
    return {
        "float64": (S, Y, G),
        "float32 scores, int labels": (S.astype(np.float32), Y.astype(np.int32), np.array(G, np.int32)),
        "read-only": (ro, Y, G),
        "non-contiguous": (strided, np.repeat(Y, 2)[::2], G),
        "lists": (S.tolist(), Y.tolist(), G),
        "pandas": (pd.Series(S), pd.Series(Y), pd.Series(G)),
        "column vector": (S[:, None], Y[:, None], G),
        "Groups": (S, Y, Groups.from_sizes(G)),
    }


@pytest.mark.parametrize("obj", [co.RankNet(), co.QBRank(), co.SquaredError(), co.MPBoost(ddf="ldd")], ids=repr)
def test_input_containers_give_identical_results(obj):
    ref = obj.grad_hess(S, Y, G)
    for name, (s, y, g) in _variants().items():
        out = obj.grad_hess(s, y, g)
        np.testing.assert_array_equal(out[0], ref[0], err_msg=name)
        np.testing.assert_array_equal(out[1], ref[1], err_msg=name)


def test_float32_scores_are_converted_not_rejected():
    s32 = S.astype(np.float32)
    g, _ = co.RankNet().grad_hess(s32, Y, G)
    np.testing.assert_array_equal(g, co.RankNet().grad_hess(s32.astype(np.float64), Y, G)[0])


def test_inputs_are_not_modified():
    # read-only inputs are accepted (a write would raise) ...
    s, y = S.copy(), Y.copy()
    s.setflags(write=False)
    y.setflags(write=False)
    co.QBRank().grad_hess(s, y, G)
    co.RankNet().pair_couplings(s, y, G)
    # ... and writeable ones come back unchanged, bit for bit
    s, y, g = S.copy(), Y.copy(), np.array(G, copy=True)
    co.QBRank().grad_hess(s, y, g)
    co.RankNet().pair_couplings(s, y, g)
    co.LambdaRank().grad_hess(s, y, g)
    assert s.tobytes() == S.tobytes() and y.tobytes() == Y.tobytes() and g.tobytes() == np.asarray(G).tobytes()


def test_empty_data():
    for obj in (co.SquaredError(), co.RankNet(), co.QBRank()):
        g, h = obj.grad_hess([], [], [])
        assert g.shape == (0,) and h.shape == (0,)
        assert obj.loss([], [], []) == 0.0


# --- signed labels inside compositions ---------------------------------------------------------------
def test_signed_labels_inside_sum_and_scaled():
    signed = np.array([-1.0, 1.0, 1.0, -1.0, 1.0])
    binary = (signed > 0).astype(float)
    for obj in (co.Logistic(), co.SquaredHinge(C=2.0)):
        for combo in (obj + co.RankNet(), 2.0 * obj, obj + co.PreferencePairs([[1, 0]]), co.RankNet() + 3.0 * obj):
            got = combo.grad_hess(S, signed, G)
            want = combo.grad_hess(S, binary, G)
            np.testing.assert_array_equal(got[0], want[0])
            np.testing.assert_array_equal(got[1], want[1])
            assert combo.loss(S, signed, G) == combo.loss(S, binary, G)
    with pytest.raises(ValueError, match=r"labels must be non-negative"):
        co.RankNet().grad_hess(S, signed, G)  # only binary losses convert


# --- reproducibility -----------------------------------------------------------------------------------
def _with_threads(n, fn):
    saved = numba.get_num_threads()
    numba.set_num_threads(n)
    try:
        return fn()
    finally:
        numba.set_num_threads(saved)


@pytest.mark.parametrize("obj", [co.RankNet(), co.RankSVM(), co.MPBoost(ddf="logdd"), co.QBRank(),
                                 co.SquaredError() + co.RankNet()] + _listwise(), ids=repr)
def test_bit_identical_across_thread_counts(obj, two_threads):
    rng = np.random.default_rng(4)
    sizes = rng.integers(1, 60, 40)
    n = int(sizes.sum())
    y = rng.integers(0, 4, n).astype(float)
    s = np.round(rng.normal(size=n), 1)  # ties on purpose
    w = rng.uniform(0.5, 2.0, n)

    def run():
        prep = obj.prepare(y, sizes, w)
        g, h = obj.grad_hess_prepared(s, prep)
        pc = obj.pair_couplings_prepared(s, prep)
        return g, h, obj.loss_prepared(s, prep), pc

    a = _with_threads(1, run)
    b = _with_threads(two_threads, run)
    c = _with_threads(two_threads, run)
    for other in (b, c):
        np.testing.assert_array_equal(a[0], other[0])
        np.testing.assert_array_equal(a[1], other[1])
        if a[3] is not None:
            for x, z in zip(a[3], other[3]):
                np.testing.assert_array_equal(x, z)
        assert a[2] == other[2]


@pytest.mark.parametrize("obj", _listwise(), ids=repr)
def test_listwise_loss_bit_identical_across_thread_counts(obj, two_threads):
    rng = np.random.default_rng(4)
    sizes = rng.integers(1, 60, 40)
    n = int(sizes.sum())
    y = rng.integers(0, 4, n).astype(float)
    s = np.round(rng.normal(size=n), 1)
    prep = obj.prepare(y, sizes)
    assert _with_threads(1, lambda: obj.loss_prepared(s, prep)) == _with_threads(two_threads, lambda: obj.loss_prepared(s, prep))


def test_label_pairs_sampling_reproducible(two_threads):
    rng = np.random.default_rng(5)
    y = rng.integers(0, 3, 300).astype(float)
    sizes = [100, 150, 50]
    a = _with_threads(1, lambda: co.label_pairs(y, sizes, max_pairs_per_query=50, seed=7))
    b = _with_threads(two_threads, lambda: co.label_pairs(y, sizes, max_pairs_per_query=50, seed=7))
    for x, z in zip(a, b):
        np.testing.assert_array_equal(x, z)
    c = co.label_pairs(y, sizes, max_pairs_per_query=50, seed=8)
    assert not np.array_equal(a[0], c[0])


# --- issue 13: numeric-range policy, misuse, memory -------------------------------------------------------
S10 = np.linspace(-1.0, 1.0, 10)
Y10 = np.array([0.0, 1.0, 2.0, 0.0, 1.0, 3.0, 0.0, 0.0, 1.0, 2.0])


def test_structured_dcg_huge_labels_refused_not_hanging():
    """Labels >= 1024 made the assignment spin forever on inf gains: run where a hang is a timeout."""
    from _isolated import run_isolated

    out = run_isolated("""
        import numpy as np, customobj as co
        try:
            co.StructuredDCG().grad_hess(np.arange(5.0), [0, 1100, 2, 1, 0], [5])
        except ValueError as exc:
            print(exc)
    """, timeout=120)
    assert "labels reach 1100 (row 1) but the exponential gain 2**y - 1 needs labels <= 700" in out


def test_structured_dcg_assignment_stops_on_nonfinite_costs():
    from customobj.objectives import _structured_kernels as SK

    A, D = np.array([2.0, 1.0]), np.array([1.0, 0.63])
    at, ok = SK.assign_max(np.array([0.0, 1.0, 2.0]), np.full(3, np.inf), A, D)  # spun forever before
    assert not ok
    at, ok = SK.assign_max(np.array([0.0, 1.0, 2.0]), np.array([0.0, 1.0, 1.0]), A, D)
    assert ok and sorted(at.tolist()) == [1, 2]


@pytest.mark.parametrize("obj", [co.StructuredDCG(), co.LambdaRank(), co.LambdaRank(norm=True, k=3)], ids=repr)
def test_exponential_gain_at_the_bound_stays_finite(obj):
    y = np.array([0.0, 700.0, 699.0, 1.0, 0.0, 700.0])
    w = np.array([1.0, V.WEIGHT_LIMIT, 1.0, 2.0, 1.0, 1.0])
    for s in (np.linspace(0, 1, 6), np.array([1e100, -1e100, 1e100, 0, 0, -1e100])):
        g, h = obj.grad_hess(s, y, [6], w)
        assert np.all(np.isfinite(g)) and np.all(np.isfinite(h)) and np.any(g != 0)
        assert np.isfinite(obj.loss(s, y, [6], w))
    with pytest.raises(ValueError, match=r"labels reach 1024 \(row 1\) .* needs labels <= 700"):
        obj.grad_hess(np.zeros(3), [0, 1024, 1], [3])


def test_lambdarank_err_label_bound():
    """R = (2**y - 1) / 2**y_max rounds to 1 from y = 54 on (division by zero in Burges' formula)."""
    obj = co.LambdaRank(metric="err")
    g, h = obj.grad_hess(np.arange(5.0), [0, 53, 52, 1, 0], [5])
    assert np.all(np.isfinite(g)) and np.all(np.isfinite(h)) and np.any(g != 0)
    for bad in (54, 60, 1024):
        with pytest.raises(ValueError, match=rf"labels reach {bad} \(row 1\) but LambdaRank\(metric='err'\).*<= 53"):
            obj.grad_hess(np.zeros(5), [0, bad, 52, 1, 0], [5])
    # A gain table lifts the grade limit but its largest gain must stay below 2**53.
    g, _ = co.LambdaRank(metric="err", gain=[0, 1, 2.0**53 - 1]).grad_hess(np.arange(3.0), [0, 2, 1], [3])
    assert np.all(np.isfinite(g)) and np.any(g != 0)
    with pytest.raises(ValueError, match=r"gain entries must be <= 2\*\*53 - 1 with metric='err'"):
        co.LambdaRank(metric="err", gain=[0, 1, 2.0**53])


def test_prepared_from_one_objective_is_rechecked_by_another():
    prep = co.RankNet().prepare([0.0, 1.0, 20.0, 3.0], [4])
    with pytest.raises(ValueError, match=r"labels has grade 20 but McRank\(n_classes=3\) allows 0..2"):
        co.McRank(n_classes=3).grad_hess_prepared(np.zeros((4, 3)), prep)
    with pytest.raises(ValueError, match=r"Logistic needs binary labels .* found 20.0 at row 2"):
        co.Logistic().grad_hess_prepared(np.zeros(4), prep)
    with pytest.raises(ValueError, match=r"labels go up to 20 but gain has only 3 entries"):
        co.LambdaRank(gain=[0, 1, 3]).grad_hess_prepared(np.zeros(4), prep)
    with pytest.raises(ValueError, match=r"LambdaRank needs integer grades in labels; found 0.5 at row 1"):
        co.LambdaRank(metric="err").loss_prepared(np.zeros(2), co.RankNet().prepare([0.0, 0.5], [2]))
    for call in ("grad_hess_prepared", "loss_prepared", "pair_couplings_prepared", "grad_hess_couplings_prepared"):
        with pytest.raises(ValueError, match=r"Logistic needs binary labels"):
            getattr(co.Logistic(), call)(np.zeros(4), prep)
    assert prep.checked == ("RankNet(sigma=1.0)",)  # the failed objectives did not get recorded
    co.SquaredError().grad_hess_prepared(np.zeros(4), prep)
    assert prep.checked == ("RankNet(sigma=1.0)", "SquaredError()")


def test_mcrank_learns_classes_from_a_prepared_built_elsewhere():
    prep = co.RankNet().prepare([0.0, 1.0, 2.0, 1.0], [4])
    g, h = co.McRank().grad_hess_prepared(np.zeros((4, 3)), prep)
    assert g.shape == (4, 3) and np.all(np.isfinite(g))


@pytest.mark.parametrize("obj", _ranking_objectives() + [co.SquaredError(), co.Logistic(), co.McRank(n_classes=3)],
                         ids=repr)
def test_boolean_scores_are_refused(obj):
    y = np.arange(60.0) % 3
    y = (y > 0).astype(float) if isinstance(obj, co.Logistic) else y
    s = np.zeros((60, 3), bool) if obj.n_outputs == 3 else np.arange(60) % 2 == 0
    with pytest.raises(TypeError, match=r"scores must be real numbers \(float or int\), got booleans"):
        obj.grad_hess(s, y, [20, 40])


@pytest.mark.parametrize("call,exc,msg", [
    (lambda: co.RankNet().grad_hess(S10, Y10, [10], np.full(10, 1e300)), ValueError, r"weight must satisfy \|weight\| <= 1e\+50"),
    (lambda: co.RankNet().grad_hess(S10, Y10, [10], np.full(10, 1.7e308)), ValueError, r"weight .*found 1.7e\+308 at row 0"),
    (lambda: co.SquaredError().grad_hess(S10, np.full(10, 1e300)), ValueError, r"labels must satisfy \|labels\| <= 1e\+100"),
    (lambda: co.RankNet(sigma=1e300), ValueError, r"sigma must be <= 1e\+20"),
    (lambda: co.Logistic(sigma=1e300), ValueError, r"sigma must be <= 1e\+20"),
    (lambda: co.LambdaRank(sigma=1e300), ValueError, r"sigma must be <= 1e\+20"),
    (lambda: co.RankSVM(margin=1e300), ValueError, r"margin must be <= 1e\+20"),
    (lambda: co.QBRank(margin=1e300), ValueError, r"margin must be <= 1e\+20"),
    (lambda: co.PreferencePairs([[0, 1]], margin=1e300), ValueError, r"margin must be <= 1e\+20"),
    (lambda: co.MPBoost(ddf="ldd", alpha=1e300), ValueError, r"alpha must be <= 1e\+20"),
    (lambda: co.MPBoost(lam=1e300), ValueError, r"lam must be <= 1e\+20"),
    (lambda: co.MPBoost(beta=10**400), ValueError, r"beta must be finite"),
    (lambda: co.SquaredHinge(C=1e300), ValueError, r"C must be <= 1e\+20"),
    (lambda: co.StructuredDCG(hess=1e300), ValueError, r"hess must be <= 1e\+20"),
    (lambda: co.PreferencePairs([[0, 1]], weight=[1e300]), ValueError, r"weight must be <= 1e\+50"),
    (lambda: 1e308 * (1e308 * co.RankNet()), ValueError, r"factor must keep the total scale .* <= 1e\+20.*got 1e\+308"),
    (lambda: 1e15 * (co.SquaredError() + 1e15 * co.RankNet()), ValueError, r"got 1e\+15 times 1e\+15"),
    (lambda: co.MPBoost(ddf="ldd", alpha=1e19).grad_hess(S10, Y10 * 100, [10]), ValueError,
     r"alpha \* \(max label - min label\) = 3e\+21 exceeds 1e\+20"),
    (lambda: co.LambdaRank(k=1180591620717411303424), ValueError, r"k must be <= 1099511627776, got 1180591620717411303424"),
    (lambda: co.LambdaRank(truncation=2**63), ValueError, r"truncation must be <= 1099511627776"),
    (lambda: co.StructuredDCG(k=2**63), ValueError, r"k must be <= 1099511627776"),
    (lambda: co.McRank(n_classes=2**63), ValueError, r"n_classes must be <= 1024"),
    (lambda: co.McRank().grad_hess(np.zeros((2, 2)), [0, 5000]), ValueError, r"McRank allows at most 1024 classes"),
    (lambda: co.MPBoost(ddf=["ldd"]), TypeError, r"ddf must be one of \['binary', 'ldd', 'logdd', 'logitdd'\] \(a string\), got list"),
    (lambda: co.LambdaRank(metric={"ndcg"}), TypeError, r"metric must be one of .*got set"),
    (lambda: co.RankNet().grad_hess(S10, Y10, np.repeat([4, 9, 2], [3, 4, 3])), ValueError,
     r"group sizes sum to 54 but data has 10 rows; .*looks like per-row query ids.*Groups.from_qid"),
])
def test_absurd_magnitudes_and_misuse_refused(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


@pytest.mark.parametrize("obj", _ranking_objectives(), ids=repr)
def test_gradients_finite_at_every_limit_at_once(obj):
    """Scores +-1e100, weights up to WEIGHT_LIMIT, labels with a 1e5 spread: finite gradients; the loss
    is finite or a ValueError (a sum of squared 1e100 margins overflows float64)."""
    rng = np.random.default_rng(6)
    n = 40
    y = rng.integers(0, 4, n).astype(float)
    w = rng.choice([1.0, V.WEIGHT_LIMIT], n)
    s = rng.choice([-V.SCORE_LIMIT, V.SCORE_LIMIT], n)
    for scaled in (obj, V.PARAM_LIMIT * obj):
        g, h = scaled.grad_hess(s, y, [10, 30], w)
        assert np.all(np.isfinite(g)) and np.all(np.isfinite(h)) and np.all(h >= 0)
        try:
            assert np.isfinite(scaled.loss(s, y, [10, 30], w))
        except ValueError as exc:
            assert "loss of these scores overflows float64" in str(exc)


@pytest.mark.parametrize("obj", [co.RankNet(sigma=V.PARAM_LIMIT), co.RankSVM(margin=V.PARAM_LIMIT),
                                 co.MPBoost(ddf="ldd", alpha=V.PARAM_LIMIT / 3), co.MPBoost(lam=V.PARAM_LIMIT, ddf="logdd"),
                                 co.LambdaRank(sigma=V.PARAM_LIMIT, norm=True), co.Logistic(sigma=V.PARAM_LIMIT),
                                 co.SquaredHinge(C=V.PARAM_LIMIT), co.StructuredDCG(hess=V.PARAM_LIMIT, k=V.MAX_ROWS)],
                         ids=repr)
def test_options_at_their_limit_stay_finite(obj):
    y = Y10 if not isinstance(obj, (co.Logistic, co.SquaredHinge)) else (Y10 > 0).astype(float)
    w = np.full(10, V.WEIGHT_LIMIT)
    for s in (S10, np.where(np.arange(10) % 2, V.SCORE_LIMIT, -V.SCORE_LIMIT)):
        g, h = obj.grad_hess(s, y, [4, 6], w)
        assert np.all(np.isfinite(g)) and np.all(np.isfinite(h)) and np.all(h >= 0)


def test_loss_overflow_is_a_value_error_not_inf(monkeypatch):
    """Under the limits losses stay finite (the worst pair term is ~1e271); the guard behind them turns
    an overflow into a ValueError. Lift the weight limit to reach it."""
    s = np.where(Y10 > 1, -V.SCORE_LIMIT, V.SCORE_LIMIT)
    assert np.isfinite((V.PARAM_LIMIT * co.SquaredError()).loss(s, Y10, None, np.full(10, V.WEIGHT_LIMIT)))
    monkeypatch.setattr(V, "WEIGHT_LIMIT", 1e300)
    with pytest.raises(ValueError, match=r"the SquaredError loss of these scores overflows float64 \(largest \|scores\| "
                                         r"1e\+100, largest weight 1e\+300\)"):
        co.SquaredError().loss(s, Y10, None, np.full(10, 1e300))


def test_lambdarank_pair_buffer_refused_before_allocation():
    """The OLE path (pair_buffer) skipped the pair budget: one 20,000-row query allocated until
    MemoryError. Now the count pass (no pair memory) is followed by the budget check."""
    rng = np.random.default_rng(3)
    n = 20_000
    y = rng.integers(0, 3, n).astype(float)
    s = rng.normal(size=n)
    obj = co.LambdaRank()
    prep = obj.prepare(y, [n])
    asked = []
    with pytest.raises(ValueError, match=r"LambdaRank couplings would materialise 133,\d{3},\d{3} row pairs \(about 4.3 GB\)"
                                         r".*MAX_PAIRS = 100,000,000"):
        obj.grad_hess_couplings_prepared(s, prep, pair_buffer=lambda m: asked.append(m))
    assert asked == []  # the buffer was never requested
    g, h = obj.grad_hess_prepared(s, prep)  # gradients need no pair list
    assert np.all(np.isfinite(g))


@pytest.mark.parametrize("path", ["pair_couplings", "grad_hess_couplings", "pair_buffer"])
def test_lambdarank_every_pair_path_honours_the_budget(monkeypatch, path):
    obj = co.LambdaRank()
    prep = obj.prepare(Y10, [10])
    full = obj.pair_couplings_prepared(S10, prep)
    m = full[0].size
    monkeypatch.setattr(V, "MAX_PAIRS", m - 1)
    calls = {
        "pair_couplings": lambda: obj.pair_couplings_prepared(S10, prep),
        "grad_hess_couplings": lambda: obj.grad_hess_couplings_prepared(S10, prep),
        "pair_buffer": lambda: obj.grad_hess_couplings_prepared(
            S10, prep, pair_buffer=lambda k: (np.empty(k, np.int32), np.empty(k, np.int32), np.empty(k))),
    }
    with pytest.raises(ValueError, match=rf"LambdaRank couplings would materialise {m} row pairs"):
        calls[path]()
    monkeypatch.setattr(V, "MAX_PAIRS", m)
    out = calls[path]()
    pairs = out if path == "pair_couplings" else out[2]
    np.testing.assert_array_equal(pairs[2], full[2])  # at the budget: the same couplings as before


def test_sum_of_pair_lists_honours_the_budget(monkeypatch):
    obj = co.RankNet() + co.RankSVM()
    one = co.RankNet().pair_couplings(S10, Y10, [10])[0].size
    monkeypatch.setattr(V, "MAX_PAIRS", one)  # each part fits, the joined list does not
    with pytest.raises(ValueError, match=rf"pair_couplings of a Sum would materialise {2 * one} row pairs"):
        obj.pair_couplings(S10, Y10, [10])


def test_hostile_objective_inputs_fuzz_in_a_child_process():
    """Hypothesis-generated hostile data and options for every objective (tests/_hostile.py): finite
    gradients / loss / couplings or ValueError/TypeError; a crash or hang fails the test."""
    from _isolated import run_isolated

    out = run_isolated("import sys; sys.path.insert(0, 'tests'); import _hostile; _hostile.fuzz_objectives(150); "
                       "print('ok')", timeout=300)
    assert out.strip() == "ok"
