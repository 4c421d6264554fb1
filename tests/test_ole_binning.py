"""customobj.ole.binning: feature bounds against an np.unique reference, bin lookup as searchsorted,
feature-major bins, float32 input binned like its float64 copy."""
import numpy as np
import pytest

from customobj import RankNet
from customobj.ole import TreeBooster
from customobj.ole.binning import BinMapper

from _ole_cases import make_X


@pytest.mark.parametrize("max_bin", [4, 255, 300])
def test_feature_major_bins_equal_row_major_transposed(max_bin):
    X = make_X(0, n=1200 if max_bin == 300 else 157)
    X[:, 2] = np.arange(X.shape[0])  # many distinct values: uint16 bins when max_bin > 255
    mapper = BinMapper.fit(X, max_bin)
    fm = mapper.bins_feature_major(X)
    assert fm.shape == (X.shape[1], X.shape[0])
    assert fm.dtype == mapper.bins(X).dtype
    np.testing.assert_array_equal(fm, mapper.bins(X).T)


@pytest.mark.parametrize("kind", ["few", "many", "ties", "signed_zero", "nan"])
def test_feature_bounds_match_an_np_unique_reference(kind):
    from customobj.ole.binning import _feature_bounds, _midpoint
    rng = np.random.default_rng(4)
    col = {"few": rng.integers(0, 7, 5000).astype(float), "many": rng.lognormal(size=5000),
           "ties": np.round(rng.normal(size=5000), 2), "signed_zero": np.array([0.0, -0.0, 1.0, -0.0, 2.0] * 50),
           "nan": np.where(rng.random(5000) < 0.3, np.nan, rng.normal(size=5000))}[kind]
    vals = col[~np.isnan(col)]
    uniq, counts = np.unique(vals, return_counts=True)
    cum = np.cumsum(counts)
    cuts = np.arange(uniq.size - 1) if uniq.size <= 64 else np.unique(
        np.searchsorted(cum, cum[-1] * np.arange(1, 64) / 64, side="left"))
    cuts = cuts[cuts < uniq.size - 1]
    want = [_midpoint(uniq[k], uniq[k + 1]) for k in cuts] + [np.inf]
    bounds, (lo, hi) = _feature_bounds(col, 64)
    np.testing.assert_array_equal(bounds, want)
    assert (lo, hi) == (uniq[0], uniq[-1])


@pytest.mark.parametrize("n_bounds", [1, 2, 15, 16, 17, 33, 255, 400])
def test_bin_lookup_is_searchsorted(n_bounds):
    from customobj.ole.binning import BinMapper
    rng = np.random.default_rng(n_bounds)
    bounds = np.append(np.sort(rng.choice(np.arange(-500, 500) / 8.0, n_bounds - 1, replace=False)), np.inf)
    mapper = BinMapper([bounds], [True])
    x = np.concatenate([bounds[:-1], np.nextafter(bounds[:-1], np.inf), np.nextafter(bounds[:-1], -np.inf),
                        rng.uniform(-80, 80, 500), [-np.inf, np.inf, np.nan, 1e300, -1e300]])[:, None]
    want = np.where(np.isnan(x[:, 0]), n_bounds, np.searchsorted(bounds, x[:, 0], side="left"))
    np.testing.assert_array_equal(mapper.bins(x)[:, 0], want)
    np.testing.assert_array_equal(mapper.bins_feature_major(x)[0], want)


def test_float32_input_bins_like_its_exact_float64_copy():
    X32 = make_X(1, dtype=np.float32)
    X64 = X32.astype(np.float64)
    m32, m64 = BinMapper.fit(X32, 16), BinMapper.fit(X64, 16)
    for a, b in zip(m32.bounds, m64.bounds):
        assert a.dtype == np.float64
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(m32.has_nan, m64.has_nan)
    np.testing.assert_array_equal(m32.bins_feature_major(X32), m64.bins_feature_major(X64))


def test_float32_fit_gives_the_float64_model():
    X32 = make_X(2, n=240, nan_frac=0.05, dtype=np.float32)
    rng = np.random.default_rng(2)
    y = rng.integers(0, 3, 240).astype(float)
    kw = dict(n_estimators=3, num_leaves=5, min_data_in_leaf=5, verbose=False)
    a = TreeBooster(RankNet(), **kw).fit(X32, y, [24] * 10).to_json()
    b = TreeBooster(RankNet(), **kw).fit(X32.astype(np.float64), y, [24] * 10).to_json()
    assert a == b
