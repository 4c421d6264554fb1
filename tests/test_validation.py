"""The numeric-range policy of customobj._validation (issue 13): every limit refuses just above
itself and accepts at itself, and every refusal is a ValueError/TypeError naming the argument."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from customobj import _validation as V


# --- integer options ---------------------------------------------------------------------------------
@pytest.mark.parametrize("value,kw,exc,msg", [
    (True, {}, TypeError, r"k must be an integer, got bool"),
    (np.bool_(True), {}, TypeError, r"k must be an integer, got bool"),
    (2.0, {}, TypeError, r"k must be an integer, got float"),
    ("3", {}, TypeError, r"k must be an integer, got str"),
    (2**62 + 1, {}, ValueError, r"k must be <= 4611686018427387903, got 4611686018427387905"),
    (1180591620717411303424, {}, ValueError, r"k must be <= \d+, got 1180591620717411303424"),
    (-(2**63), {}, ValueError, r"k must be >= -4611686018427387903"),
    (0, {"minimum": 1}, ValueError, r"k must be >= 1, got 0"),
    (11, {"maximum": 10, "hint": "k=None means the whole list"}, ValueError,
     r"k must be <= 10, got 11; k=None means the whole list"),
])
def test_check_int_refuses(value, kw, exc, msg):
    with pytest.raises(exc, match=msg):
        V.check_int(value, "k", **kw)


def test_check_int_accepts_numpy_ints_and_bounds():
    assert V.check_int(np.int64(5), "k") == 5 and type(V.check_int(np.int64(5), "k")) is int
    assert V.check_int(V.INT_LIMIT, "k") == V.INT_LIMIT
    assert V.check_int(-V.INT_LIMIT, "k") == -V.INT_LIMIT
    assert V.check_int(None, "k", allow_none=True) is None
    assert V.check_int(10, "k", maximum=10) == 10


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=-(2**80), max_value=2**80))
def test_check_int_result_always_fits_int64_twice(value):
    try:
        v = V.check_int(value, "n")
    except ValueError as exc:
        assert "n must be" in str(exc) and abs(value) > V.INT_LIMIT
    else:
        assert v == value and abs(2 * v) < 2**63  # a sum of two accepted values never wraps


# --- real options ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("check", [V.check_positive, V.check_nonnegative])
def test_real_options_have_a_maximum(check):
    assert check(V.PARAM_LIMIT, "sigma") == V.PARAM_LIMIT
    for bad in (1e300, 1.0001 * V.PARAM_LIMIT, 10**400):
        with pytest.raises(ValueError, match=r"sigma must be <= 1e\+20|sigma must be finite"):
            check(bad, "sigma")
    with pytest.raises(ValueError, match="sigma must be finite"):
        check(float("inf"), "sigma")
    with pytest.raises(TypeError, match="sigma must be a real number, got bool"):
        check(True, "sigma")
    assert check(1e30, "sigma", maximum=None) == 1e30


def test_check_choice_names_unhashable_and_non_string_values():
    with pytest.raises(TypeError, match=r"ddf must be one of \['a', 'b'\] \(a string\), got list \['a'\]"):
        V.check_choice(["a"], "ddf", {"a", "b"})
    with pytest.raises(TypeError, match=r"ddf must be one of .*got dict"):
        V.check_choice({}, "ddf", {"a", "b"})
    with pytest.raises(ValueError, match=r"ddf must be one of \['a', 'b'\], got 'c'"):
        V.check_choice("c", "ddf", {"a", "b"})
    assert V.check_choice("a", "ddf", {"a", "b"}) == "a"


# --- arrays ---------------------------------------------------------------------------------------------
def test_scores_must_be_real_not_boolean():
    with pytest.raises(TypeError, match=r"scores must be real numbers \(float or int\), got booleans"):
        V.as_scores(np.array([True, False]))
    with pytest.raises(TypeError, match=r"s1 must be real numbers"):
        V.as_scores([True, False], name="s1")
    np.testing.assert_array_equal(V.as_scores(np.array([1, 2], np.int32)), [1.0, 2.0])  # integers convert


def test_label_and_weight_limits():
    assert V.as_labels([0, V.LABEL_LIMIT]).max() == V.LABEL_LIMIT
    with pytest.raises(ValueError, match=r"labels must satisfy \|labels\| <= 1e\+100; found 1e\+300 at row 1"):
        V.as_labels([0, 1e300])
    assert V.as_weight([1, V.WEIGHT_LIMIT], 2).max() == V.WEIGHT_LIMIT
    for bad in (1e300, 1.7e308):
        with pytest.raises(ValueError, match=r"weight must satisfy \|weight\| <= 1e\+50; found .* at row 0.*WEIGHT_LIMIT"):
            V.as_weight([bad, 1.0], 2)


def test_python_ints_beyond_int64_are_named():
    with pytest.raises(ValueError, match=r"labels holds 1180591620717411303424, beyond the int64 range"):
        V.as_labels([0, 2**70])
    with pytest.raises(TypeError, match=r"labels has dtype object"):
        V.as_labels(np.array([0, 1], dtype=object))


def test_exp_gain_label_limit_at_the_bound():
    V.check_exp_gain_labels(np.array([0.0, V.EXP_GAIN_MAX_LABEL]))
    assert np.isfinite(2.0**V.EXP_GAIN_MAX_LABEL * V.MAX_ROWS)  # a query's DCG at the bound
    with pytest.raises(ValueError, match=r"labels reach 701 \(row 1\) but the exponential gain 2\*\*y - 1 needs labels <= 700"):
        V.check_exp_gain_labels(np.array([0.0, 701.0]))
    with pytest.raises(ValueError, match=r"needs labels <= 53"):
        V.check_exp_gain_labels(np.array([54.0]), limit=V.ERR_MAX_LABEL, what="ERR")


def test_gain_table():
    np.testing.assert_array_equal(V.as_gain_table([0, 1, 3]), [0.0, 1.0, 3.0])
    for bad, exc, msg in [
        ([], ValueError, r"gain must have one entry per grade"),
        ([0, -1], ValueError, r"gain entries must be >= 0; found -1 at grade 1"),
        ([0, 1e300], ValueError, r"gain entries must be <= 5.26\d*e\+210; found 1e\+300 at grade 1"),
        ([0, np.inf], ValueError, r"gain must be finite"),
        ("013", TypeError, r"gain must be a 1-D sequence"),
        ([True, False], TypeError, r"gain must be real numbers"),
    ]:
        with pytest.raises(exc, match=msg):
            V.as_gain_table(bad)
    with pytest.raises(ValueError, match="non-decreasing"):
        V.as_gain_table([0, 3, 1], nondecreasing=True)


def test_pair_budget_message_has_the_size():
    assert V.check_pair_budget(V.MAX_PAIRS, "x") == V.MAX_PAIRS
    with pytest.raises(ValueError, match=r"f would materialise 100,000,001 row pairs \(about 3.2 GB\), more than "
                                         r"customobj._validation.MAX_PAIRS = 100,000,000; try less"):
        V.check_pair_budget(V.MAX_PAIRS + 1, "f", hint="try less")


def test_limits_compose_to_finite_worst_cases():
    """The arithmetic behind the limits (docs/robustness.md): worst pair terms summed over MAX_ROWS."""
    e50 = np.exp(50.0)
    rows = float(V.MAX_ROWS)
    worst_grad = [
        rows * V.WEIGHT_LIMIT * V.PARAM_LIMIT**2 * e50,                 # MPBoost hessian, D at its limit
        rows * V.WEIGHT_LIMIT * 2 * (V.PARAM_LIMIT + 2 * V.SCORE_LIMIT),  # RankSVM gradient
        rows * V.WEIGHT_LIMIT * 2 * (V.LABEL_LIMIT + 2 * V.SCORE_LIMIT),  # QBRank grade margin
    ]
    for g in worst_grad:
        assert np.isfinite(g * V.PARAM_LIMIT) and g * V.PARAM_LIMIT < 1e200  # even times the largest scale
    assert np.isfinite(V.MAX_ROWS * (V.SCORE_LIMIT * V.MAX_ROWS + 2 * V.MAX_GAIN) * V.WEIGHT_LIMIT * V.PARAM_LIMIT)


def test_check_bool_takes_python_and_numpy_bools_only():
    assert V.check_bool(True, "flag") is True and V.check_bool(np.bool_(False), "flag") is False
    for bad in (1, 0.0, "yes", None, np.array([True])):
        with pytest.raises(TypeError, match="flag must be True or False"):
            V.check_bool(bad, "flag")
