"""The shared row math of the pointwise losses (customobj/objectives/_pointwise_terms.py): the compiled
functions and their Python source (the GPU kernels under the CUDA simulator) agree bit for bit."""
import math

import numpy as np

from customobj.objectives import _pointwise_terms as R

RNG = np.random.default_rng(1)
S = np.concatenate([RNG.normal(size=100) * 4, [0.0, 400.0, -400.0, 1e100, -1e100]])


def test_compiled_and_python_rows_agree_bit_for_bit():
    for s in S:
        for y in (0.0, 1.0):
            assert R.squared_error_row(s, y, 1.5) == R.squared_error_row.py_func(s, y, 1.5)
            assert R.logistic_row(s, y, 1.5, 2.0) == R.logistic_row.py_func(s, y, 1.5, 2.0)
            assert R.squared_hinge_margin(s, y) == R.squared_hinge_margin.py_func(s, y)
            assert R.squared_hinge_row(s, y, 1.5, 0.5) == R.squared_hinge_row.py_func(s, y, 1.5, 0.5)


def test_softmax_terms_sum_to_one_and_agree():
    f = np.array([3.0, -700.0, 1.0, 800.0])
    top, z = R.softmax_top_z(f)
    assert (top, z) == R.softmax_top_z.py_func(f)
    p = [R.softmax_p(f, k, top, z) for k in range(f.size)]
    assert p == [R.softmax_p.py_func(f, k, top, z) for k in range(f.size)] and abs(sum(p) - 1.0) < 1e-15
    assert R.mcrank_row_class(0.25, 2, 2, 2.0) == (2.0 * (0.25 - 1.0), 2.0 * 0.25 * 0.75)


def test_row_terms_dispatches_each_kind_and_never_falls_through():
    from customobj.objectives._pointwise_terms import RowKind, row_terms
    for s, y in ((0.3, 1.0), (-2.0, 0.0), (2.0, 1.0)):
        assert row_terms(int(RowKind.SQUARED_ERROR), s, y, 1.5, 0.0) == (True, *R.squared_error_row(s, y, 1.5))
        assert row_terms(int(RowKind.LOGISTIC), s, y, 1.5, 0.7) == (True, *R.logistic_row(s, y, 1.5, 0.7))
        inside = R.squared_hinge_margin(s, y) > 0.0
        want = (True, *R.squared_hinge_row(s, y, 1.5, 2.0)) if inside else (False, 0.0, 0.0)
        assert row_terms(int(RowKind.SQUARED_HINGE), s, y, 1.5, 2.0) == want
        assert row_terms.py_func(int(RowKind.LOGISTIC), s, y, 1.5, 0.7) == row_terms(int(RowKind.LOGISTIC), s, y, 1.5, 0.7)
    adds, g, h = row_terms(9, 0.0, 1.0, 1.0, 1.0)
    assert adds and math.isnan(g) and math.isnan(h)
