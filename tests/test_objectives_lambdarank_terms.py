"""The shared LambdaRank math (customobj/objectives/_lambdarank_terms.py): compiled and Python forms
agree (the CPU pass, the GPU kernels, the GPU kernels under the simulator), and ``rho`` never raises
where ``exp`` overflows (issue 30 point 8: the simulator raised OverflowError for a gap of 1000)."""
import math

import numpy as np
import pytest

from customobj import LambdaRank
from customobj.objectives import _lambdarank_terms as LT
from customobj.objectives._lambdarank_records import Channel, Metric


def test_rho_is_zero_where_exp_overflows_in_both_forms():
    for x in (LT.EXP_ARG_MAX, np.nextafter(LT.EXP_ARG_MAX, np.inf), 1e6):
        got = LT.rho(1.0, 0.0, x, 1.0)
        assert got == LT.rho.py_func(1.0, 0.0, x, 1.0)  # the Python form once raised OverflowError here
        assert got == 1.0 / (1.0 + np.exp(np.float64(x))) if x <= LT.EXP_ARG_MAX else got == 0.0
    assert math.isfinite(math.exp(LT.EXP_ARG_MAX))
    with pytest.raises(OverflowError):
        math.exp(np.nextafter(LT.EXP_ARG_MAX, np.inf))


@pytest.mark.parametrize("metric", list(Metric))
def test_pair_dz_compiled_and_python_agree(metric):
    rng = np.random.default_rng(int(metric))
    n, kk = 9, 6
    F = np.zeros((len(Channel), n))
    F[Channel.GAIN] = rng.integers(0, 2, n) * (0.3 if metric == Metric.ERR else 1.0)
    first, second = LT.fill_prefixes(int(metric), F, 0, n, kk)
    G = F.copy()
    assert (first, second) == LT.fill_prefixes.py_func(int(metric), G, 0, n, kk) and np.array_equal(F, G)
    disc = 1.0 / np.log2(2.0 + np.arange(n))
    a_first = F[Channel.A, first] if first < n else 0.0
    for a in range(n - 1):
        for b in range(a + 1, n):
            args = (int(metric), F, 0, a, b, F[Channel.GAIN, a], F[Channel.GAIN, b], kk, first, second, a_first, disc)
            assert LT.pair_dz(*args) == LT.pair_dz.py_func(*args)
    assert math.isnan(LT.pair_dz(9, F, 0, 0, 1, 1.0, 0.0, kk, first, second, a_first, disc))


@pytest.mark.parametrize("metric", ["ndcg", "err", "map", "mrr"])
def test_cpu_pass_with_scores_far_apart_is_finite(metric):
    y = np.array([0.0, 1.0, 2.0, 0.0, 1.0])
    s = np.array([0.0, 1000.0, -1000.0, 3.0, 2.0])
    g, h = LambdaRank(metric=metric, sigma=1000.0).grad_hess(s, y, [5])
    assert np.isfinite(g).all() and np.isfinite(h).all() and (h >= 0).all()


def test_unbiased_pair_divides_by_the_propensities_in_both_forms():
    """XGBoost's ``LambdaGrad<unbiased>``: lambda, hessian and loss over ``t+ t-``, the estimate's cost not."""
    dz, d, sigma = 0.3, -0.7, 1.5
    rho_ = 1.0 / (1.0 + math.exp(sigma * d))
    lam, h = LT.lambda_hess(dz, rho_, 1.0, sigma, sigma * sigma)
    for swapped in (True, False):
        plain = LT.unbiased_pair(lam, h, dz, d, sigma, 1.0, 1.0, swapped)
        got = LT.unbiased_pair(lam, h, dz, d, sigma, 0.5, 0.25, swapped)
        assert got == LT.unbiased_pair.py_func(lam, h, dz, d, sigma, 0.5, 0.25, swapped)
        assert plain[:3] == (lam, h, dz * LT.softplus(-sigma * d))
        np.testing.assert_allclose(got[:3], np.array(plain[:3]) * 8.0, rtol=1e-15)
        assert got[3] == plain[3] == dz * LT.softplus(sigma * d if swapped else -sigma * d)
    assert LT.unbiased_pair(lam, h, dz, d, sigma, 1e-17, 0.5, True)[:3] == plain[:3]  # below TINY: not debiased


def test_softplus_tabled_is_within_its_stated_error():
    """The GRAD_LOSS pass's softplus: within SOFTPLUS_TABLE_ERROR (plus 2^-52 of the value) of
    log(1 + exp(x)) on a dense grid, at the table's knots, mid-knots, its end and far beyond; finite at
    NaN; the error is not far below the bound (a table coarser than stated would fail)."""
    h = LT.SOFTPLUS_STEP
    knots = np.arange(-LT.SOFTPLUS_RANGE - 2, LT.SOFTPLUS_RANGE + 2, h)
    x = np.concatenate([np.linspace(-60, 60, 200_001), knots, knots + h / 2, [-800.0, -40.0, 40.0, 709.0, 1e6, -1e6]])
    got = np.array([LT.softplus_tabled(v) for v in x])
    want = np.logaddexp(0.0, x)
    err = np.abs(got - want)
    assert np.all(err <= LT.SOFTPLUS_TABLE_ERROR + 2.0**-52 * want)
    assert err.max() > 0.8 * (LT.SOFTPLUS_TABLE_ERROR - 1e-15)  # the bound is tight: at mid-knots near 0
    at_knots = np.array([LT.softplus_tabled(v) for v in knots])
    assert np.all(np.abs(at_knots - np.logaddexp(0.0, knots)) <= 1e-15 + 2.0**-52 * np.logaddexp(0.0, knots))
    assert not np.isinf(LT.softplus_tabled(math.nan))  # NaN reads the table's end: no crash, no infinity


@pytest.mark.parametrize("sigma", [1.0, 0.37, 3.0, 1000.0])
def test_softplus_sorted_is_softplus_tabled_bit_for_bit(sigma):
    """The pair loops' form (the gap of a sorted pair, the side, sigma / STEP per pass) reads the same
    knots and fraction as softplus_tabled of the pair's ``-sigma d``: the same bits, on a dense grid of
    gaps, the knots and mid-knots, the table's end and far beyond, both sides, zero gap."""
    h = LT.SOFTPLUS_STEP
    knots = np.arange(0.0, LT.SOFTPLUS_RANGE + 2, h) / sigma
    gaps = np.concatenate([np.linspace(0.0, 60.0 / sigma, 20_001), knots, knots + h / (2 * sigma),
                           [0.0, 1e-300, 5e-324, 40.0 / sigma, 709.0, 1e6, 1e300]])
    zscale = sigma * (1.0 / h)
    for up in (True, False):
        got = np.array([LT.softplus_sorted(g, up, sigma, zscale) for g in gaps])
        want = np.array([LT.softplus_tabled(-sigma * g if up else -sigma * -g) for g in gaps])
        np.testing.assert_array_equal(got, want)
    assert LT._SOFTPLUS_KNOTS.shape == (LT._SOFTPLUS_TABLE.size - 1, 2)
