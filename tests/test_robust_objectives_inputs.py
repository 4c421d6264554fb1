"""Robustness of the objectives to bad input (issues 7 and 13): wrong shapes, dtypes, containers,
labels, options and magnitudes raise a clear error naming the argument; accepted inputs are
converted once (same results whatever the container) and never modified."""
from __future__ import annotations

import numpy as np
import pytest

import customobj as co
from customobj.groups import Groups
from _objective_cases import G, S, S10, Y, Y10, ranknet, ranking_objectives


# (name, call, exception, message regex)
BAD_CALLS = [
    ("scores shorter", lambda: ranknet().grad_hess(S[:4], Y, G), ValueError, r"scores has 4 rows but data has 5"),
    ("scores 2-D", lambda: ranknet().grad_hess(np.zeros((5, 2)), Y, G), ValueError, r"scores must be 1-D.*\(5, 2\)"),
    ("groups do not sum", lambda: ranknet().grad_hess(S, Y, [2, 2]), ValueError, r"group sizes sum to 4 but data has 5"),
    ("negative group", lambda: ranknet().grad_hess(S, Y, [6, -1]), ValueError, r"group 1 has size -1"),
    ("fractional group", lambda: ranknet().grad_hess(S, Y, [2.5, 2.5]), TypeError, r"group sizes must hold integers; found 2.5"),
    ("string group", lambda: ranknet().grad_hess(S, Y, "23"), TypeError, r"group must be a sequence of query sizes"),
    ("group missing", lambda: ranknet().grad_hess(S, Y), ValueError, r"RankNet is a ranking objective and needs group="),
    ("NaN label", lambda: ranknet().grad_hess(S, [0, np.nan, 1, 1, 1], G), ValueError, r"labels must be finite; found nan at position 1"),
    ("inf label", lambda: ranknet().grad_hess(S, [0, 1, np.inf, 1, 1], G), ValueError, r"labels must be finite; found inf at position 2"),
    ("negative label", lambda: ranknet().grad_hess(S, [0, -1, 1, 1, 1], G), ValueError, r"labels must be non-negative.*-1.0 at row 1"),
    ("NaN score", lambda: ranknet().grad_hess([0, 1, np.nan, 0, 0], Y, G), ValueError, r"scores must be finite; found nan at position 2"),
    ("inf score", lambda: ranknet().grad_hess([0, -np.inf, 0, 0, 0], Y, G), ValueError, r"scores must be finite; found -inf at position 1"),
    ("huge score", lambda: ranknet().grad_hess([0, 0, 0, 1e200, 0], Y, G), ValueError, r"\|scores\| <= 1e\+100; found 1e\+200 at position 3"),
    ("NaN weight", lambda: ranknet().grad_hess(S, Y, G, [1, 1, np.nan, 1, 1]), ValueError, r"weight must be finite; found nan at position 2"),
    ("negative weight", lambda: ranknet().grad_hess(S, Y, G, [1, 1, -2, 1, 1]), ValueError, r"weight must be non-negative; found -2.0 at row 2"),
    ("weight length", lambda: ranknet().grad_hess(S, Y, G, [1, 1, 1]), ValueError, r"weight has 3 rows but data has 5"),
    ("object labels", lambda: ranknet().grad_hess(S, np.array([0, 1, 2, 0, 1], dtype=object), G), TypeError, r"labels has dtype object"),
    ("string labels", lambda: ranknet().grad_hess(S, np.array(list("01201")), G), TypeError, r"labels must be numeric, got dtype <U1"),
    ("complex scores", lambda: ranknet().grad_hess(S.astype(complex), Y, G), TypeError, r"scores must be numeric, got dtype complex128"),
    ("ragged scores", lambda: ranknet().grad_hess([[1, 2], [3]], Y, G), TypeError, r"scores could not be converted"),
    ("None labels", lambda: ranknet().grad_hess(S, None, G), TypeError, r"labels must be an array, got None"),
    ("sparse scores", lambda: ranknet().grad_hess(__import__("scipy.sparse").sparse.csr_matrix(S), Y, G), TypeError,
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
    ("out_grad float32", lambda: ranknet().grad_hess_prepared(S, ranknet().prepare(Y, G), np.zeros(5, np.float32)),
     ValueError, r"out_grad must be a writable C-contiguous float64 array of shape \(5,\), got float32"),
    ("out_hess too short", lambda: ranknet().grad_hess_prepared(S, ranknet().prepare(Y, G), np.zeros(5), np.zeros(4)),
     ValueError, r"out_hess must be .* shape \(5,\), got float64 array of shape \(4,\)"),
    ("Groups from non-contiguous qid", lambda: Groups.from_qid([1, 1, 2, 1]), ValueError,
     r"qid 1 reappears at row 3 after another query"),
]


@pytest.mark.parametrize("name,call,exc,msg", BAD_CALLS, ids=[c[0] for c in BAD_CALLS])
def test_bad_input_raises_clear_error(name, call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


def test_listwise_rejects_fractional_grades_for_err():
    with pytest.raises(ValueError, match=r"integer grades.*0.5 at row 1"):
        co.LambdaRank(metric="err").grad_hess(S, [0, 0.5, 1, 1, 1], G)


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


@pytest.mark.parametrize("obj", ranking_objectives() + [co.SquaredError(), co.Logistic(), co.McRank(n_classes=3)],
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


def test_hostile_objective_inputs_fuzz_in_a_child_process():
    """Hypothesis-generated hostile data and options for every objective (tests/_hostile.py): finite
    gradients / loss / couplings or ValueError/TypeError; a crash or hang fails the test."""
    from _isolated import run_isolated

    out = run_isolated("import sys; sys.path.insert(0, 'tests'); import _hostile; _hostile.fuzz_objectives(150); "
                       "print('ok')", timeout=300)
    assert out.strip() == "ok"
