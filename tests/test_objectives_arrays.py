"""customobj/objectives/_arrays.py: optional weights in kernel form, array options in hashable
form (frozen once per read-only array, recomputed for arrays whose bytes can still change), and
outputs zeroed in place (by all threads when large) before an objective adds into them."""
import gc

import numpy as np
import pytest

from customobj.objectives import _arrays as A
from customobj.objectives._arrays import PARALLEL_FILL, zero_fill


def test_kernel_weights_no_weights_is_an_empty_float64_array():
    w, use = A.kernel_weights(None)
    assert use is False and w.dtype == np.float64 and w.shape == (0,)
    given = np.array([1.0, 2.0])
    w, use = A.kernel_weights(given)
    assert use is True and w is given  # passed through, no copy


def test_query_sums_match_a_loop_over_the_queries_empty_ones_included():
    rng = np.random.default_rng(3)
    sizes = np.array([3, 0, 1, 0, 5])
    values = rng.normal(size=int(sizes.sum()))
    ptr = np.concatenate(([0], np.cumsum(sizes)))
    expected = [values[ptr[q]:ptr[q + 1]].sum() for q in range(sizes.size)]
    got = A.query_sums(sizes, values)
    assert got.dtype == np.float64 and got.shape == (sizes.size,)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    assert A.query_sums(np.zeros(0, np.int64), np.zeros(0)).shape == (0,)


def test_freeze_option_is_hashable_and_compares_by_content():
    a = np.array([[0, 1], [2, 3]], dtype=np.int64)
    fa = A.freeze_option(a)
    assert fa == ("nd", (2, 2), a.tobytes()) and hash(fa) == hash(A.freeze_option(a.copy()))
    assert A.freeze_option(a.reshape(4)) != fa  # same bytes, another shape
    assert A.freeze_option(1.5) == 1.5 and A.freeze_option("ndcg") == "ndcg"


def test_a_read_only_array_is_frozen_once_a_writeable_one_every_time():
    ro = np.arange(5)
    ro.setflags(write=False)
    assert A.freeze_option(ro) is A.freeze_option(ro)  # cached: the bytes cannot change
    rw = np.arange(5)
    first = A.freeze_option(rw)
    rw[0] = 9
    assert A.freeze_option(rw) != first  # recomputed: the edit is seen
    base = np.arange(5)
    view = base[:]
    view.setflags(write=False)
    f1 = A.freeze_option(view)
    base[0] = 7  # a read-only view of a writeable array can still change
    assert A.freeze_option(view) != f1


def test_a_cached_entry_leaves_with_its_array():
    ro = np.arange(3)
    ro.setflags(write=False)
    key = id(ro)
    A.freeze_option(ro)
    assert key in A._FROZEN
    del ro
    gc.collect()
    assert key not in A._FROZEN


@pytest.mark.parametrize("shape", [(5,), (3, 4), (PARALLEL_FILL + 3,), (PARALLEL_FILL // 2 + 1, 2)])
def test_zero_fill_zeroes_small_and_large_outputs_in_place(shape):
    out = np.full(shape, np.nan)
    assert zero_fill(out) is out
    assert np.array_equal(out, np.zeros(shape)) and not np.signbit(out).any()


def test_given_outputs_are_zeroed_before_the_objective_adds_into_them():
    from customobj import LambdaRank
    rng = np.random.default_rng(5)
    sizes = np.full(PARALLEL_FILL // 50 + 1, 50)
    y = rng.integers(0, 3, sizes.sum()).astype(float)
    s = rng.normal(size=y.size)
    obj = LambdaRank(truncation=5)
    prep = obj.prepare(y, sizes)
    want = obj.grad_hess_prepared(s, prep)
    g, h = np.full(y.size, 7.0), np.full(y.size, -3.0)  # dirty, large: the parallel fill
    got = obj.grad_hess_prepared(s, prep, out_grad=g, out_hess=h)
    assert got[0] is g and got[1] is h
    assert np.array_equal(g, want[0]) and np.array_equal(h, want[1])
