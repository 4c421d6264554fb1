"""customobj.ole.histogram: col-wise row histograms with ordered gradients against a row-by-row
reference, and the ordered gather of gradients and hessians."""
import numpy as np
import pytest

from customobj.ole.binning import BinMapper
from customobj.ole.histogram import build_row_hist_fm, gather_gh

from _ole_cases import make_X


def reference_hist(bins, rows, grad, hess, mapper):
    out = np.zeros((mapper.n_slots, 3))
    for r in rows:
        for f in range(bins.shape[1]):
            s = mapper.offsets[f] + int(bins[r, f])
            out[s] += (grad[r], hess[r], 1.0)
    return out


@pytest.mark.parametrize("max_bin", [32, 400])
@pytest.mark.parametrize("subset", ["all", "run", "sparse", "tiny", "empty"])
def test_colwise_hist_matches_reference(subset, max_bin):
    n = 300
    X = make_X(3, n=n)
    X[:, 3] = np.arange(n) * 0.5  # 297 distinct values: uint16 bins when max_bin=400
    X[:3, 3] = np.nan
    mapper = BinMapper.fit(X, max_bin)
    bins = mapper.bins(X)
    fm = mapper.bins_feature_major(X)
    assert fm.dtype == (np.uint16 if max_bin == 400 else np.uint8)
    rng = np.random.default_rng(3)
    grad, hess = rng.normal(size=n), rng.random(n)
    rows = {"all": np.arange(n), "run": np.arange(50, 121), "sparse": np.sort(rng.choice(n, 77, replace=False)),
            "tiny": np.array([5, 9, 100]), "empty": np.zeros(0, np.int64)}[subset].astype(np.int64)
    # the node sits inside a longer order array, as in the grower
    order = np.concatenate([[7, 3], rows, [1]]).astype(np.int64)
    got = build_row_hist_fm(fm, order, 2, 2 + rows.size, grad, hess, mapper.offsets, mapper.n_slots)
    want = reference_hist(bins, rows, grad, hess, mapper)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(got[:, 2], want[:, 2])
    # known counts (the cached root counts) are copied, and the sums are the same bits
    known = build_row_hist_fm(fm, order, 2, 2 + rows.size, grad, hess, mapper.offsets, mapper.n_slots,
                              counts=want[:, 2].copy())
    np.testing.assert_array_equal(known, got)


def test_gather_gh_orders_and_sums():
    order = np.array([4, 0, 2, 3], dtype=np.int64)
    grad, hess = np.arange(5.0), np.arange(5.0) * 10
    out = np.empty((2, 2))
    G, H = gather_gh(order, 1, 3, grad, hess, out)
    np.testing.assert_array_equal(out, [[0.0, 0.0], [2.0, 20.0]])
    assert (G, H) == (2.0, 20.0)


@pytest.mark.parametrize("with_scratch", [False, True])
def test_parallel_path_gathers_the_same_bits_as_the_serial_one(with_scratch, monkeypatch, two_threads):
    """Large nodes gather their ordered gradients inside the parallel kernel (rows across threads),
    small ones with gather_gh first: the same histogram, bit for bit, at 1 and 2 threads."""
    import numba
    from customobj.ole import histogram
    n = 500
    X = make_X(4, n=n)
    mapper = BinMapper.fit(X, 64)
    fm = mapper.bins_feature_major(X)
    rng = np.random.default_rng(4)
    grad, hess = rng.normal(size=n), rng.random(n)
    order = np.concatenate([[3], np.sort(rng.choice(n, 333, replace=False)), [0]]).astype(np.int64)
    gh = np.full((n, 2), np.nan) if with_scratch else None  # a dirty scratch is overwritten
    runs = []
    saved = numba.get_num_threads()
    try:
        for updates, threads in ((10**12, 1), (0, 1), (0, two_threads)):
            monkeypatch.setattr(histogram, "PARALLEL_UPDATES", updates)
            numba.set_num_threads(threads)
            runs.append(build_row_hist_fm(fm, order, 1, 334, grad, hess, mapper.offsets, mapper.n_slots, gh))
    finally:
        numba.set_num_threads(saved)
    np.testing.assert_allclose(runs[0], reference_hist(mapper.bins(X), order[1:334], grad, hess, mapper),
                               rtol=1e-12, atol=1e-12)
    for other in runs[1:]:
        np.testing.assert_array_equal(other, runs[0])
