"""customobj.ole fast kernels vs obvious NumPy references: feature-major bins, col-wise row
histograms with ordered gradients, column partitions; the fused gradient/coupling call per round."""
import numpy as np
import pytest

from customobj import LambdaRank, RankNet
from customobj.ole import TreeBooster
from customobj.ole.binning import BinMapper
from customobj.ole.grower import partition_rows
from customobj.ole.histogram import build_row_hist_fm, gather_gh


def make_X(seed, n=157, n_features=6, nan_frac=0.1, dtype=np.float64):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    X[:, 0] = np.round(X[:, 0])  # few distinct values: long runs of equal bins
    X[:, 1] = 0.5  # constant feature: a single bin
    X[rng.random(X.shape) < nan_frac] = np.nan
    return X.astype(dtype)


@pytest.mark.parametrize("max_bin", [8, 300])
def test_pair_hist_reads_feature_major_bins_through_the_transposed_view(max_bin):
    from customobj.ole.pairhist import PairScratch, build_pair_hist
    from customobj.pairs import label_pairs
    X = make_X(6, n=400, n_features=5)
    X[:, 2] = np.arange(400)  # 300 bins at max_bin=300: uint16
    mapper = BinMapper.fit(X, max_bin)
    rm, fm = mapper.bins(X), mapper.bins_feature_major(X)
    y = np.random.default_rng(6).integers(0, 3, 400).astype(float)
    pi, pj, _ = label_pairs(y, [40] * 10)
    pc = np.random.default_rng(7).random(pi.size)
    args = (pi.astype(np.int32), pj.astype(np.int32), pc, 0, pi.size, mapper.offsets, mapper.n_bins, mapper.n_slots)
    want = build_pair_hist(rm, *args, PairScratch(400, 5, True, chunk_rows=16))
    got = build_pair_hist(fm.T, *args, PairScratch(400, 5, True, chunk_rows=16))
    np.testing.assert_array_equal(got, want)


