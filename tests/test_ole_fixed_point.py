"""customobj.ole.fixed_point: the grid step bounds every partial sum (sums exact in any order, the
R channel's double count included), the rounding moves each value by at most half a step, the
step depends only on order-free quantities, and degenerate inputs (zeros, NaN, inf, tiny and
huge values) neither crash nor produce NaN where the input had none."""
import math

import numpy as np
import pytest

from customobj.ole.fixed_point import (VALUE_LIMIT, check_tree_values, first_outside, fold_abs_max, grid_step,
                                       grid_step_of, grid_step_of_rows, magnitude_units, pow2_at_least, round_range,
                                       round_rows, to_grid)

from _isolated import run_isolated


@pytest.mark.parametrize("x", [1e-300, 3e-9, 0.75, 1.0, 1.5, 2.0**40 + 1, 1e300])
def test_pow2_at_least_is_the_smallest_power_of_two_not_below(x):
    p = pow2_at_least(x)
    assert p >= x and p / 2 < x and math.frexp(p)[0] == 0.5
    assert pow2_at_least(0.0) == 0.0 and pow2_at_least(np.nan) == 0.0 and pow2_at_least(np.inf) == 0.0


@pytest.mark.parametrize("seed", range(4))
def test_rounded_sums_are_exact_in_any_order_and_within_the_bound(seed):
    rng = np.random.default_rng(seed)
    x = rng.lognormal(sigma=3.0, size=2000) * rng.choice([-1.0, 1.0], 2000)
    step = grid_step_of(x, 0, x.size)
    total = np.abs(x).sum()
    assert step >= 2 * total * 2.0**-52 and step < 4 * (total + x.size * 2.0**-20 * np.abs(x).max()) * 2.0**-52
    xr = x.copy()
    round_range(xr, 0, xr.size, step)
    assert np.abs(xr - x).max() <= step / 2
    assert np.all(np.mod(xr, step) == 0)
    sums = {math.fsum(xr)}  # the exact sum ...
    for _ in range(5):  # ... is what every order gives, twice the values too (the R channel)
        perm = rng.permutation(xr.size)
        acc = 0.0
        for v in xr[perm]:
            acc += v
        sums.add(acc)
        acc2 = 0.0
        for v in np.r_[xr, xr][rng.permutation(2 * xr.size)]:
            acc2 += v
        assert acc2 == 2 * acc
    assert len(sums) == 1


def test_the_step_depends_on_the_values_not_their_order():
    rng = np.random.default_rng(7)
    x = rng.random(500)
    order = rng.permutation(500).astype(np.int64)
    assert grid_step_of(x, 0, 500) == grid_step_of(x[::-1].copy(), 0, 500) == grid_step_of_rows(order, x)
    out = np.zeros(500)
    s = round_rows(order, x, grid_step_of_rows(order, x), out)
    assert s == math.fsum(out)


def test_degenerate_values_never_crash_or_make_nan():
    assert grid_step_of(np.zeros(5), 0, 5) == 0.0  # nothing to round: values kept
    assert to_grid(0.3, 0.0) == 0.3
    for bad in (np.nan, np.inf):
        x = np.array([1.0, bad, 2.0])
        assert grid_step_of(x, 0, 3) == 0.0 and fold_abs_max(0.0, bad) == np.inf
        assert magnitude_units(bad, 4.0) == 0
    tiny = np.array([1e-320, 3e-321])
    step = grid_step_of(tiny, 0, 2)
    assert step > 0 and not np.isnan(to_grid(tiny[0], step))
    huge = np.array([1e300, -1e300])
    step = grid_step_of(huge, 0, 2)
    assert np.isfinite(step) and to_grid(1e300, step) == pytest.approx(1e300, rel=1e-15)
    assert grid_step(1.0, 0) == 0.0


def test_values_above_the_largest_power_of_two_have_no_grid_instead_of_a_hang():
    """Issue 39: ``pow2_at_least`` doubled 2**1023 to inf and then halved inf for ever (TreeBooster
    never returned); above 2**1023 there is no power of two, so no grid. In a child process: the old
    code hangs there, which fails this test instead of stalling the suite."""
    out = run_isolated("""
        import numpy as np
        from customobj.ole.fixed_point import grid_step_of, pow2_at_least
        print(pow2_at_least(1.5e308), pow2_at_least(2.0**1023), grid_step_of(np.array([1.0, -1.5e308]), 0, 2))
    """, timeout=90)
    assert out.split() == ["0.0", str(2.0**1023), "0.0"]


def test_a_grid_whose_range_overflows_is_no_grid_not_a_nan_rounding():
    """Issue 39: 16 values of 2**1020 made ``R`` inf, a step of inf and every rounded value NaN."""
    x = np.full(16, 2.0**1020)
    step = grid_step_of(x, 0, 16)
    assert step == 0.0 and to_grid(x[0], step) == x[0]
    assert grid_step(2.0**1020, 16 * 2**20) == 0.0
    assert np.isfinite(grid_step_of(np.full(16, VALUE_LIMIT), 0, 16))  # the booster's range has its grid


def test_tree_values_outside_the_range_are_refused_naming_them():
    g, h = np.array([1.0, -VALUE_LIMIT]), np.array([0.0, VALUE_LIMIT])
    check_tree_values(g, h)  # the limit itself is accepted
    assert first_outside(g, VALUE_LIMIT) == -1 and first_outside(np.array([[1.0, np.inf]]), 1.0) == 1
    for bad, name in ((np.nan, "gradients"), (np.inf, "gradients"), (2.0**1020, "gradients"),
                      (-np.inf, "hessians"), (np.nextafter(VALUE_LIMIT, np.inf), "hessians")):
        gg, hh = (np.array([1.0, bad]), h) if name == "gradients" else (g, np.array([0.0, bad]))
        with pytest.raises(ValueError, match=rf"objective's {name} must be finite with magnitude at most 2\*\*900.*at row 1"):
            check_tree_values(gg, hh)
    with pytest.raises(ValueError, match="hessians .* at row 1, column 0"):
        check_tree_values(np.zeros((2, 2)), np.array([[0.0, 1.0], [np.nan, 1.0]]))
