"""customobj.ole.fixed_point: the grid step bounds every partial sum (sums exact in any order, the
R channel's double count included), the rounding moves each value by at most half a step, the
step depends only on order-free quantities, and degenerate inputs (zeros, NaN, inf, tiny and
huge values) neither crash nor produce NaN where the input had none."""
import math

import numpy as np
import pytest

from customobj.ole.fixed_point import (fold_abs_max, grid_step, grid_step_of, grid_step_of_rows, magnitude_units,
                                       pow2_at_least, round_range, round_rows, to_grid)


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
