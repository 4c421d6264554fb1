"""adapters._stamp: the cheap check that a Dataset's / DMatrix's labels, weights or groups changed."""
import numpy as np
import pytest

from customobj import adapters  # noqa: F401  (before xgboost: sets the OpenMP wait policy)

import xgboost as xgb

from customobj.adapters import _stamp
from customobj.adapters._stamp import SAMPLE_ROWS, Stamp, sample_hash, xgboost_fields


def test_sample_hash_sees_sampled_rows_length_and_dtype():
    a = np.arange(10 * SAMPLE_ROWS, dtype=np.float32)
    h = sample_hash(a)
    b = a.copy()
    b[-1] += 1  # the last row is always sampled
    assert sample_hash(b) != h
    c = a.copy()
    c[-1 - 10] += 1  # and every 10th row before it (10 * SAMPLE_ROWS rows)
    assert sample_hash(c) != h
    assert sample_hash(a[:-1]) != h
    assert sample_hash(a.astype(np.float64)) != h
    assert sample_hash(a.copy()) == h
    assert sample_hash(None) is None and sample_hash(np.empty(0)) == (0, "d")


def test_stamp_identity_and_hashes():
    a, w = np.arange(5.0), np.ones(5)
    pinned = Stamp((a, w, None), by="identity")
    assert pinned.matches((a, w, None))
    assert not pinned.matches((a.copy(), w, None))  # same values, another array: LightGBM's set_label
    assert not pinned.matches((a, w, np.array([5])))
    by_value = Stamp((a, w, None), by="content")
    assert by_value.matches((a.copy(), w.copy(), None))  # XGBoost: fresh views every call
    b = a.copy()
    b[0] = 7
    assert not by_value.matches((b, w, None))
    with pytest.raises(ValueError, match="by must be"):
        Stamp((a,), by="id")


@pytest.mark.parametrize("c_api", [True, False])
def test_xgboost_fields_read_what_the_public_getters_return(monkeypatch, c_api):
    if not c_api:
        monkeypatch.setattr(_stamp, "_xgb_api", None)  # as if the C calls were missing
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 50).astype(np.float64)
    d = xgb.DMatrix(rng.normal(size=(50, 3)), y, group=[20, 30])
    label, weight, ptr = xgboost_fields(d)
    np.testing.assert_array_equal(label, d.get_label())
    assert weight is None or np.size(weight) == 0
    np.testing.assert_array_equal(ptr, [0, 20, 50])
    d.set_weight([2.0, 3.0])
    np.testing.assert_array_equal(xgboost_fields(d)[1], [2.0, 3.0])
