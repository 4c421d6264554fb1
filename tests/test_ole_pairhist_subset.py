"""customobj.ole.pairhist_subset: the pair-by-pair histogram of a few features equals the chunked one."""
import numpy as np
import pytest

from customobj.ole.binning import BinMapper
from customobj.ole.pairhist import FeatureSlots, HistPairs, PairScratch, _BLOCK_PAIRS, _pair_block
from customobj.ole.pairhist_subset import _BLOCK_PAIRS as SUBSET_BLOCK, build_pair_hist_subset, zero_feature_slots


def data(seed, n=400, n_features=6, n_pairs=3000):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, n_features)) * 3) / 3
    X[rng.random(X.shape) < 0.1] = np.nan
    mapper = BinMapper.fit(X, 255)
    bins = np.ascontiguousarray(mapper.bins(X))
    pi = rng.integers(0, n, n_pairs).astype(np.int32)
    pj = rng.integers(0, n, n_pairs).astype(np.int32)
    pc = rng.exponential(size=n_pairs)
    return mapper, bins, pi, pj, pc


def chunked(mapper, bins, pi, pj, pc, lo, hi, feats):
    """The reference: pairhist's chunked kernel, float64 accumulators, the same features."""
    s = PairScratch(bins.shape[0], bins.shape[1], True, chunk_rows=16)
    feats = np.asarray(feats, np.int64)
    foff, fnb = mapper.offsets[feats].astype(np.int64), mapper.n_bins[feats].astype(np.int64)
    out = np.zeros((mapper.n_slots, 3))
    zero_feature_slots(out, foff, fnb)
    _pair_block(bins, HistPairs(pi, pj, pc), lo, hi, FeatureSlots(feats, foff, fnb), True, s.chunk(0, s.tile_for(bins)),
                out)
    return out


@pytest.mark.parametrize("feats", [[0], [2, 5], [0, 1, 3, 4]])
def test_equals_the_chunked_kernel_with_nan_rows(feats):
    mapper, bins, pi, pj, pc = data(0)
    got = build_pair_hist_subset(bins, pi, pj, pc, 100, 2900, mapper.offsets, mapper.n_bins, mapper.n_slots, feats)
    want = chunked(mapper, bins, pi, pj, pc, 100, 2900, feats)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    others = np.ones(mapper.n_slots, bool)
    for f in feats:
        others[mapper.offsets[f]:mapper.offsets[f] + mapper.n_bins[f] + 1] = False
    assert not got[others].any()  # other features' slots stay 0


def test_blocks_sum_to_the_single_pass_and_the_scratch_is_reused_clean():
    n_pairs = 3 * SUBSET_BLOCK + 5  # several blocks: the parallel path
    mapper, bins, pi, pj, pc = data(1, n_pairs=n_pairs)
    args = (mapper.offsets, mapper.n_bins, mapper.n_slots)
    scratch = {}
    a = build_pair_hist_subset(bins, pi, pj, pc, 0, n_pairs, *args, [1, 4], scratch).copy()
    np.testing.assert_allclose(a, chunked(mapper, bins, pi, pj, pc, 0, n_pairs, [1, 4]), rtol=1e-10)
    b = build_pair_hist_subset(bins, pi, pj, pc, 0, 50, *args, [2], scratch)  # same array, other features
    np.testing.assert_allclose(b, build_pair_hist_subset(bins, pi, pj, pc, 0, 50, *args, [2]), rtol=0, atol=0)
    assert _BLOCK_PAIRS <= SUBSET_BLOCK


def test_features_out_of_range_are_refused():
    mapper, bins, pi, pj, pc = data(2, n_pairs=10)
    with pytest.raises(ValueError, match="features"):
        build_pair_hist_subset(bins, pi, pj, pc, 0, 10, mapper.offsets, mapper.n_bins, mapper.n_slots, [0, 6])
