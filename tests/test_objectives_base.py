"""The objective protocol: preparation once per dataset, composition, validation at the boundary; its records
(customobj/objectives/records.py: DeviceRoute, PairSource, RelevancePairs) through the objectives that use them."""
import numpy as np
import pytest

import customobj
from customobj import Groups, SquaredError


def data():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 3, 12).astype(float)
    s = rng.normal(size=12)
    w = rng.uniform(0.5, 2.0, 12)
    return s, y, [5, 4, 3], w


def test_squared_error_formulas_and_weights():
    s, y, g, w = data()
    grad, hess = SquaredError().grad_hess(s, y, g, weight=w)
    assert np.allclose(grad, w * (s - y)) and np.allclose(hess, w)
    assert SquaredError().loss(s, y, g, weight=w) == pytest.approx(0.5 * np.sum(w * (s - y) ** 2))
    assert SquaredError().pair_couplings(s, y, g) is None


def test_group_is_optional_for_pointwise():
    s, y, _, _ = data()
    grad, _ = SquaredError().grad_hess(s, y)
    assert np.allclose(grad, s - y)


def test_prepared_is_reused_and_outputs_buffers_are_overwritten():
    s, y, g, w = data()
    obj = SquaredError()
    prep = obj.prepare(y, Groups.from_sizes(g), w)
    out_g = np.full(12, 99.0)
    out_h = np.full(12, 99.0)
    grad, hess = obj.grad_hess_prepared(s, prep, out_g, out_h)
    assert grad is out_g and hess is out_h
    assert np.allclose(grad, w * (s - y))
    # float32 and int scores are converted once at the boundary
    grad32, _ = obj.grad_hess_prepared(s.astype(np.float32), prep)
    assert grad32.dtype == np.float64 and np.allclose(grad32, w * (s.astype(np.float32) - y))


def test_equality_and_hash_follow_options():
    assert SquaredError() == SquaredError()
    assert hash(SquaredError()) == hash(SquaredError())
    assert SquaredError() + SquaredError() == SquaredError() + SquaredError()
    assert repr(2 * SquaredError()) == "2.0 * SquaredError()"


def test_array_options_are_frozen_once_and_compare_by_content():
    from customobj.objectives import QBRank
    a, b = QBRank(pairs=[[0, 1], [2, 3]]), QBRank(pairs=np.array([[0, 1], [2, 3]]))
    assert a == b and hash(a) == hash(b)
    # the read-only pairs are turned into bytes once: the same bytes object every call
    assert dict(a._cache_key()[1:])["pairs"][2] is dict(a._cache_key()[1:])["pairs"][2]
    assert a != QBRank(pairs=[[0, 1], [3, 2]])
    # a writeable array stored later is frozen on every call, so an edit in place is seen
    a.pairs = np.array([[0, 1], [2, 3]])
    before = a._cache_key()
    a.pairs[1, 1] = 4
    assert a._cache_key() != before and a != b


@pytest.mark.parametrize(
    "call, exc, msg",
    [
        (lambda o: o.grad_hess([1.0, 2.0], [1.0]), ValueError, "labels has 1 rows but data has 2 rows|scores has 2 rows but data has 1 rows"),
        (lambda o: o.grad_hess([1.0, np.inf], [1.0, 0.0]), ValueError, "scores must be finite; found inf at position 1"),
        (lambda o: o.grad_hess([1.0, 2.0], [1.0, np.nan]), ValueError, "labels must be finite"),
        (lambda o: o.grad_hess([1.0, 2.0], [1.0, 0.0], [3]), ValueError, "group sizes sum to 3 but data has 2 rows"),
        (lambda o: o.grad_hess([1.0, 2.0], [1.0, 0.0], weight=[1.0, -1.0]), ValueError, "weight must be non-negative"),
        (lambda o: o.grad_hess(np.array(["a", "b"]), [1.0, 0.0]), TypeError, "scores must be numeric"),
        (lambda o: o.grad_hess(np.array([1, None], dtype=object), [1.0, 0.0]), TypeError, "dtype object"),
        (lambda o: 2 * o + 3, TypeError, "unsupported operand"),
        (lambda o: -1.0 * o, ValueError, "factor must be >= 0"),
    ],
)
def test_bad_input_is_named(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call(SquaredError())


def test_read_only_and_strided_inputs_work():
    s, y, g, _ = data()
    s_ro = s.copy()
    s_ro.setflags(write=False)
    wide = np.zeros((12, 2))
    wide[:, 0] = y
    grad, _ = SquaredError().grad_hess(s_ro, wide[:, 0], g)
    assert np.allclose(grad, s - y)


@pytest.mark.parametrize("make", [
    lambda co: co.RankNet(), lambda co: co.LambdaRank(truncation=5), lambda co: co.SquaredError(),
    lambda co: 0.5 * co.QBRank() + co.SquaredError() + 2.0 * co.RankNet(sigma=2.0),
])
def test_grad_hess_couplings_equals_separate_calls(make):
    import customobj as co

    obj = make(co)
    rng = np.random.default_rng(11)
    y = rng.integers(0, 3, 40).astype(float)
    s = rng.normal(size=40)
    prep = obj.prepare(y, [15, 1, 24])
    g, h, c = obj.grad_hess_couplings_prepared(s, prep)
    g2, h2 = obj.grad_hess_prepared(s, prep)
    c2 = obj.pair_couplings_prepared(s, prep)
    np.testing.assert_allclose(g, g2, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(h, h2, rtol=1e-12, atol=1e-14)
    if c2 is None:
        assert c is None
    else:
        for a, b in zip(c, c2):
            np.testing.assert_array_equal(a, b)


def _round_losses():
    from customobj import RankNet, Unbiased, XENDCG, YetiRank

    return [YetiRank(seed=1), XENDCG(seed=3), Unbiased(RankNet()), 0.5 * YetiRank() + customobj.SquaredError()]


@pytest.mark.parametrize("make", range(4), ids=["yetirank", "xendcg", "unbiased", "sum"])
def test_public_calls_on_the_same_data_are_successive_rounds(make):
    """Issue 30, point 3: one public grad_hess call is one round (new pairs, new noise, the propensity
    estimate applied), as a loop over one prepared data set is; other data start at round 0."""
    import pickle

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 40).astype(float)
    group = [8] * 5
    s = rng.normal(size=40)
    ref, obj = _round_losses()[make], _round_losses()[make]
    prep = ref.prepare(y, group)
    expected = [ref.grad_hess_prepared(s, prep)[0].copy() for _ in range(3)]
    assert not np.array_equal(expected[0], expected[1])  # the rounds differ
    got = [obj.grad_hess(s, y, group)[0] for _ in range(3)]
    for e, g in zip(expected, got):
        np.testing.assert_array_equal(g, e)
    assert obj.loss(s, y, group) == ref.loss_prepared(s, prep)  # the latest round's pairs / noise
    assert obj == ref and hash(obj) == hash(ref)  # the cache is no option
    fresh = pickle.loads(pickle.dumps(obj))  # nor does it travel
    np.testing.assert_array_equal(fresh.grad_hess(s, y, group)[0], expected[0])
    y2 = y[::-1].copy()
    np.testing.assert_array_equal(obj.grad_hess(s, y2, group)[0],
                                  _round_losses()[make].grad_hess(s, y2, group)[0])  # new data: round 0


@pytest.mark.parametrize("make", range(4), ids=["yetirank", "xendcg", "unbiased", "sum"])
def test_a_held_out_loss_between_rounds_does_not_restart_them(make):
    """Issue 39: a loss() on held-out data between public grad_hess calls made the next call round 0."""
    rng = np.random.default_rng(1)
    y, y_held = rng.integers(0, 2, 40).astype(float), rng.integers(0, 2, 24).astype(float)
    group, held = [8] * 5, [6] * 4
    s, s_held = rng.normal(size=40), rng.normal(size=24)
    ref, obj = _round_losses()[make], _round_losses()[make]
    prep = ref.prepare(y, group)
    expected = [ref.grad_hess_prepared(s, prep)[0].copy() for _ in range(3)]
    for e in expected:
        np.testing.assert_array_equal(obj.grad_hess(s, y, group)[0], e)
        assert np.isfinite(obj.loss(s_held, y_held, held))  # a validation loss, as a training loop logs it
    if make == 2:  # what was learned is still the training data's
        assert np.array_equal(obj.fitted_attributes()["position_bias_"], ref.fitted_attributes(prep)["position_bias_"])


def test_objectives_whose_rounds_do_not_matter_keep_nothing():
    obj = customobj.LambdaRank()
    obj.grad_hess(np.zeros(4), [1.0, 0.0, 1.0, 0.0], [4])
    assert not obj.rounds_matter and "_last_prep" not in vars(obj)
    with pytest.raises(ValueError, match="no data set yet"):
        obj.fitted_attributes()
    assert obj.fitted_attributes(obj.prepare([1.0, 0.0], [2])) == {}


def test_sums_and_scalings_report_their_parts_fitted_attributes():
    from customobj import RankNet, Unbiased

    rng = np.random.default_rng(1)
    y, group, s = rng.integers(0, 2, 24).astype(float), [6] * 4, rng.normal(size=24)
    obj = 2.0 * (Unbiased(RankNet()) + SquaredError())
    prep = obj.prepare(y, group)
    alone = Unbiased(RankNet())
    prep_alone = alone.prepare(y, group)
    for _ in range(2):
        obj.grad_hess_prepared(s, prep)
        alone.grad_hess_prepared(s, prep_alone)
    np.testing.assert_array_equal(obj.fitted_attributes(prep)["position_bias_"],
                                  alone.fitted_attributes(prep_alone)["position_bias_"])
    assert SquaredError().fitted_attributes(SquaredError().prepare(y)) == {}
