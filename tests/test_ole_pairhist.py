"""customobj.ole.pairhist: the chunked pair histogram against its per-pair definition (any pair order,
NaN, feature-major bins), and the kernel's float32 chunk accumulators (the former criterion="ole")
against float64 ones; criterion="ole" (now float64 on pre-rounded couplings) against "ole_float64".

The exactness statement checked here (Xia, Zhai, Wang, "Analysis of regression tree fitting
algorithms in learning to rank", section 3.1):

- pair histograms: every candidate child coupling ``C_left(t)`` (cumulative sums of the hi channel,
  the quantity the split search adds up) is within ``1e-6 * C_node`` of the float64 histogram's;
- trees: the same splits as the reference, except near-ties (the reference gains of the two
  candidate splits within 1e-6 relative), and every node's OLE hessian ``H - 2C`` (seen through
  the node values ``-G / (H - 2C + lambda)``) and recorded gain within 1e-6 relative.
"""
import json

import numpy as np
import pytest

from customobj import LambdaRank, RankNet
from customobj.ole import TreeBooster
from customobj.ole.binning import BinMapper
from customobj.ole.pairhist import PairScratch, build_pair_hist

from _ole_cases import assert_subset_slots, make_X, make_rank_data
from _oracles import node_rows

REL = 1e-6


def rank_data(seed, n_queries=30, q_size=40, n_features=8, nan_frac=0.05):
    rng = np.random.default_rng(seed)
    n = n_queries * q_size
    X = rng.normal(size=(n, n_features))
    X[:, 0] = np.round(X[:, 0] * 3)  # long runs of equal bins
    X[rng.random(X.shape) < nan_frac] = np.nan
    y = rng.integers(0, 5, n).astype(float)
    return X, y, np.full(n_queries, q_size)


def pair_hists(X, y, group, obj, scores):
    mapper = BinMapper.fit(X, 255)
    bins = mapper.bins(X)
    pi, pj, pc = (np.ascontiguousarray(a) for a in obj.pair_couplings(scores, y, group))
    pi, pj = pi.astype(np.int32), pj.astype(np.int32)
    out = {}
    for dtype in (np.float32, np.float64):
        scratch = PairScratch(bins.shape[0], bins.shape[1], bool(mapper.has_nan.any()), dtype=dtype)
        out[dtype] = build_pair_hist(bins, pi, pj, pc, 0, pi.size, mapper.offsets, mapper.n_bins, mapper.n_slots,
                                     scratch)
    return mapper, pc.sum(), out[np.float32], out[np.float64]


def assert_candidate_couplings_close(mapper, c_node, ph32, ph64):
    worst = 0.0
    for f in range(mapper.n_bins.shape[0]):
        lo, hi = mapper.offsets[f], mapper.offsets[f + 1]
        for ch in (0, 1, 2):  # cumulative sums: C_left(t) for every threshold t, per channel
            a, b = np.cumsum(ph32[lo:hi, ch]), np.cumsum(ph64[lo:hi, ch])
            worst = max(worst, np.abs(a - b).max())
    assert worst <= REL * c_node
    assert not np.array_equal(ph32, ph64)  # the float32 path really ran (sums differ in the last bits)
    return worst / c_node


@pytest.mark.parametrize("seed", [0, 1])
def test_float32_pair_hist_candidates_within_1e6_of_the_node_coupling_random(seed):
    X, y, group = rank_data(seed)
    scores = np.random.default_rng(seed).normal(size=y.size)
    mapper, c_node, ph32, ph64 = pair_hists(X, y, group, RankNet(sigma=1.3), scores)
    assert_candidate_couplings_close(mapper, c_node, ph32, ph64)


def test_float32_pair_hist_candidates_within_1e6_of_the_node_coupling_mq2008(mq2008_fold1):
    X, y, group = mq2008_fold1["train"]
    mapper, c_node, ph32, ph64 = pair_hists(X, y, group, LambdaRank(truncation=30), np.zeros(y.size))
    assert_candidate_couplings_close(mapper, c_node, ph32, ph64)


# ---- trees -------------------------------------------------------------------------------------------


def reference_gain(X, rows, f, thr, default_left, g, h, pairs, lam):
    """The float64 OLE gain of splitting ``rows`` at ``X[:, f] <= thr`` (NaN to ``default_left``)."""
    pi, pj, pc = pairs
    x = X[rows, f]
    left_rows = rows[np.where(np.isnan(x), default_left, x <= thr)]
    in_node = np.zeros(X.shape[0], bool)
    in_node[rows] = True
    in_left = np.zeros(X.shape[0], bool)
    in_left[left_rows] = True
    in_right = in_node & ~in_left

    def score(mask):
        d = h[mask].sum() - 2 * pc[mask[pi] & mask[pj]].sum()
        d = d if d > 1e-9 * h[mask].sum() else 0.0
        return g[mask].sum() ** 2 / (d + lam) if d + lam > 0 else 0.0
    return score(in_left) + score(in_right) - score(in_node)


def compare_boosters(X, y, group, obj, rounds, lam=0.0, **kw):
    """Trees of ole and ole_float64 round by round; returns (identical trees, near-ties seen)."""
    models = [TreeBooster(obj, criterion=c, n_estimators=rounds, lambda_l2=lam, verbose=False, **kw).fit(X, y, group)
              for c in ("ole", "ole_float64")]
    trees = [json.loads(m.to_json())["trees"] for m in models]
    same = 0
    for r, (t32, t64) in enumerate(zip(*trees)):
        keys = ("split_feature", "threshold_bin", "default_left", "left_child", "right_child")
        if all(t32[k] == t64[k] for k in keys):
            for k in ("split_gain", "internal_value", "leaf_value"):  # values carry H - 2C: 1e-6 relative
                np.testing.assert_allclose(t32[k], t64[k], rtol=REL, atol=1e-12)
            np.testing.assert_array_equal(t32["internal_weight"], t64["internal_weight"])
            same += 1
            continue
        # first difference: the reference gains of the two choices must be a near-tie
        scores = models[1].predict(X, num_iteration=r) if r > 0 else np.zeros(y.size)
        g, h = obj.grad_hess(scores, y, group)
        pairs = obj.pair_couplings(scores, y, group)
        n = next(k for k in range(len(t64["split_feature"]))
                 if any(t32[key][k] != t64[key][k] for key in ("split_feature", "threshold_bin", "default_left")))
        rows32, rows64 = node_rows(t32, X)[n], node_rows(t64, X)[n]
        if np.array_equal(np.sort(rows32), np.sort(rows64)):  # same leaf, another split of it
            a = reference_gain(X, rows64, t32["split_feature"][n], t32["threshold"][n], t32["default_left"][n],
                               g, h, pairs, lam)
            b = reference_gain(X, rows64, t64["split_feature"][n], t64["threshold"][n], t64["default_left"][n],
                               g, h, pairs, lam)
        else:  # another leaf split first (best-first order): their best gains tie
            a, b = t32["split_gain"][n], t64["split_gain"][n]
        assert abs(a - b) <= REL * max(abs(a), abs(b)), (r, n, a, b)
        return same, 1
    return same, 0


@pytest.mark.parametrize("growth", ["best_first", "breadth_first"])
def test_ole_float32_trees_equal_the_float64_reference_random(growth):
    X, y, group = rank_data(5, n_queries=40)
    same, ties = compare_boosters(X, y, group, LambdaRank(truncation=20), rounds=4, lam=0.5, num_leaves=12,
                                  min_data_in_leaf=5, growth=growth)
    assert same + ties >= 1 and (same == 4 or ties == 1)


def test_ole_float32_trees_equal_the_float64_reference_mq2008(mq2008_fold1):
    X, y, group = mq2008_fold1["train"]
    same, ties = compare_boosters(X, y, group, LambdaRank(truncation=30), rounds=4, num_leaves=31)
    assert same == 4 or ties == 1


def test_ole_float64_is_the_exact_path_and_differs_from_wse():
    X, y, group = rank_data(7)
    obj = RankNet()
    kw = dict(n_estimators=2, num_leaves=8, min_data_in_leaf=5, verbose=False)
    t = {c: json.loads(TreeBooster(obj, criterion=c, **kw).fit(X, y, group).to_json())["trees"]
         for c in ("ole_float64", "wse")}
    assert t["ole_float64"] != t["wse"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_feature_subset_builds_those_features_slots_only(dtype):
    X, y, group = rank_data(9, n_queries=10, q_size=30)
    mapper = BinMapper.fit(X, 255)
    bins = mapper.bins(X)
    pi, pj, pc = RankNet().pair_couplings(np.zeros(y.size), y, group)
    pi, pj = pi.astype(np.int32), pj.astype(np.int32)
    scratch = PairScratch(bins.shape[0], bins.shape[1], True, chunk_rows=16, dtype=dtype)
    args = (bins, pi, pj, pc, 3, pi.size - 2, mapper.offsets, mapper.n_bins, mapper.n_slots, scratch)
    full = build_pair_hist(*args)
    sub = build_pair_hist(*args, features=[5, 2, 2])  # any order, repeats: the set {2, 5}
    assert_subset_slots(sub, full, mapper.offsets, bins.shape[1], (2, 5))
    assert np.all(scratch.loc == -1)
    with pytest.raises(ValueError, match="features"):
        build_pair_hist(*args, features=[bins.shape[1]])


def test_pair_scratch_rejects_other_accumulator_types():
    with pytest.raises(ValueError, match="dtype"):
        PairScratch(10, 2, False, dtype=np.float16)


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


def reference_pair_hist(bins, n_bins, offsets, pi, pj, pc):
    """[hi, nanp, R] per slot straight from the definitions, one pair and feature at a time."""
    out = np.zeros((int(offsets[-1]), 3))
    for f in range(bins.shape[1]):
        nb, off = int(n_bins[f]), int(offsets[f])
        for a, b, c in zip(pi, pj, pc):
            x, z = int(bins[a, f]), int(bins[b, f])
            out[off + x, 2] += c
            out[off + z, 2] += c
            if x < nb and z < nb or x == z == nb:
                out[off + max(x, z), 0] += c
            else:
                out[off + min(x, z), 1] += c
    return out


@pytest.mark.parametrize("nan_frac", [0.0, 0.1])
@pytest.mark.parametrize("chunk_rows", [2, 7, 256])
def test_pair_hist_matches_definition(nan_frac, chunk_rows, monkeypatch):
    """Chunked per-row accumulation == per-pair definition, with NaN, tiny chunks and several blocks."""
    from customobj.ole import pairhist
    X, y, group = make_rank_data(11, n_queries=6, q_size=20, n_features=5, nan_frac=nan_frac)
    obj = RankNet()
    s = np.random.default_rng(12).normal(size=y.size)
    pi, pj, pc = obj.pair_couplings(s, y, group)
    # pairs out of query order and a repeated pair: chunks must not rely on locality
    perm = np.random.default_rng(13).permutation(pi.size)
    pi = np.concatenate([pi[perm], pi[:1]]).astype(np.int32)
    pj = np.concatenate([pj[perm], pj[:1]]).astype(np.int32)
    pc = np.concatenate([pc[perm], pc[:1]])
    mapper = BinMapper.fit(X, 255)
    bins = mapper.bins(X)
    assert mapper.has_nan.any() == (nan_frac > 0)
    ref = reference_pair_hist(bins, mapper.n_bins, mapper.offsets, pi, pj, pc)
    scratch = pairhist.PairScratch(bins.shape[0], bins.shape[1], mapper.has_nan.any(), chunk_rows=chunk_rows)
    for block in (10**9, 37):  # one block, and several blocks summed in order
        monkeypatch.setattr(pairhist, "_BLOCK_PAIRS", block)
        for lo, hi in ((0, pi.size), (5, pi.size // 2)):
            got = build_pair_hist(bins, pi, pj, pc, lo, hi, mapper.offsets, mapper.n_bins, mapper.n_slots, scratch)
            want = ref if (lo, hi) == (0, pi.size) else reference_pair_hist(
                bins, mapper.n_bins, mapper.offsets, pi[lo:hi], pj[lo:hi], pc[lo:hi])
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
        assert np.all(scratch.loc == -1)  # the row -> slot maps are left clean for the next call


# --- feature groups: more work items than blocks, the same bits -----------------------------------
@pytest.mark.parametrize("nan_frac", [0.0, 0.1])
@pytest.mark.parametrize("features", [None, [0, 2, 3, 5, 6, 7, 9, 10, 11]])
def test_feature_groups_give_the_same_bits(nan_frac, features, monkeypatch):
    """Any number of feature groups (and blocks) gives the histogram of one group bit for bit: each
    feature's sums are added in the same order; the per-item maps are left clean."""
    from customobj.ole import pairhist
    X, y, group = make_rank_data(21, n_queries=10, q_size=30, n_features=12, nan_frac=nan_frac)
    s = np.random.default_rng(22).normal(size=y.size)
    pi, pj, pc = (np.asarray(a) for a in LambdaRank(truncation=8).pair_couplings(s, y, group))
    pi, pj = pi.astype(np.int32), pj.astype(np.int32)
    mapper = BinMapper.fit(X, 255)
    bins = mapper.bins(X)
    args = (mapper.offsets, mapper.n_bins, mapper.n_slots)
    monkeypatch.setattr(pairhist, "SUBSET_MAX_PAIRS", 0)  # the chunked kernel for the subset too
    for block in (10**9, 97):  # one block, several blocks
        monkeypatch.setattr(pairhist, "_BLOCK_PAIRS", block)
        hists = {}
        for ng in (1, 2, 3, 12, 50):  # 50: more groups than features, capped at one feature each
            scratch = PairScratch(bins.shape[0], bins.shape[1], bool(mapper.has_nan.any()), chunk_rows=16,
                                  dtype=np.float32)
            hists[ng] = build_pair_hist(bins, pi, pj, pc, 3, pi.size - 2, *args, scratch, features, groups=ng).copy()
            assert np.all(scratch.loc == -1) and scratch.loc.shape[0] >= min(pairhist._MAX_BLOCKS, ng)
        assert np.any(hists[1] != 0)
        for ng in (2, 3, 12, 50):
            assert np.array_equal(hists[ng], hists[1]), (block, ng)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="groups"):
            build_pair_hist(bins, pi, pj, pc, 0, pi.size, *args, groups=bad)


def test_feature_groups_only_when_threads_outnumber_blocks():
    from customobj.ole.pairhist import _GROUP_MIN_FEATURES, _GROUP_MIN_PAIRS, feature_groups
    many = 10 * _GROUP_MIN_PAIRS
    assert feature_groups(8, 136, many, 8) == 1 and feature_groups(8, 136, many, 2) == 1
    assert feature_groups(8, 136, many, 16) == 2 and feature_groups(3, 136, many, 16) == 5
    assert feature_groups(1, 136, many, 16) == 16
    assert feature_groups(1, 136, _GROUP_MIN_PAIRS - 1, 16) == 1  # small node: no parallel region
    assert feature_groups(1, 2 * _GROUP_MIN_FEATURES - 1, many, 16) == 1  # too few features to cut
    assert feature_groups(1, 4 * _GROUP_MIN_FEATURES, many, 16) == 4
    from customobj.ole.pairhist import _MAX_ITEMS
    assert feature_groups(8, 10**4, many, 10**4) * 8 <= _MAX_ITEMS  # scratch memory stays bounded


def test_ole_trees_equal_across_thread_counts(two_threads):
    """1 thread (one work item per block) and 2 threads (feature groups in single-block nodes)."""
    import numba
    X, y, group = make_rank_data(23, n_queries=40, q_size=60, n_features=20, nan_frac=0.05)
    saved = numba.get_num_threads()
    dumps = []
    try:
        for t in (1, two_threads):
            numba.set_num_threads(t)
            m = TreeBooster(LambdaRank(truncation=10), criterion="ole", n_estimators=3, num_leaves=8,
                            min_data_in_leaf=5, n_jobs=t, verbose=False).fit(X, y, group)
            dumps.append(m.booster_.model_to_string() if hasattr(m, "booster_") else json.dumps(
                [[t.nodes.tolist(), t.leaves.tolist()] for t in m.trees_]))
    finally:
        numba.set_num_threads(saved)
    assert dumps[0] == dumps[1]


def test_the_r_channel_is_the_row_histogram_of_each_rows_coupling_sum():
    # Issue 42, item 1: R is a per-row quantity. R[f, b] = sum over the node's rows r at bin b of
    # rho_r, the sum of r's pair couplings inside the node; on the couplings' grid the two sums are
    # the same exact integers of steps, so the identity holds bit for bit (the GPU may build R from
    # the rows, leaving one channel on the pairs).
    from customobj.ole.common import HIST_G, PH_R
    from customobj.ole.fixed_point import grid_step_of, round_range
    from customobj.ole.histogram import build_row_hist_fm

    from _ole_cases import random_pairs

    X = make_X(3, n=200, n_features=4)
    mapper = BinMapper.fit(X, 12)
    bins_fm = mapper.bins_feature_major(X)
    pi, pj, pc, _ = random_pairs(4, n_queries=8, max_rows=25)
    keep = (pi < 200) & (pj < 200)
    pi, pj, pc = (np.ascontiguousarray(a[keep]) for a in (pi, pj, pc))
    round_range(pc, 0, pc.size, grid_step_of(pc, 0, pc.size))
    ph = build_pair_hist(np.ascontiguousarray(bins_fm.T), pi, pj, pc, 0, pi.size, mapper.offsets, mapper.n_bins,
                         mapper.n_slots, PairScratch(bins_fm.shape[1], bins_fm.shape[0], True, dtype=np.float64))
    rho = np.zeros(200)
    np.add.at(rho, pi, pc)
    np.add.at(rho, pj, pc)
    rows = np.unique(np.concatenate([pi, pj])).astype(np.int64)
    rh = build_row_hist_fm(bins_fm, rows, 0, rows.size, rho, np.zeros(200), mapper.offsets, mapper.n_slots)
    assert pi.size > 50 and np.isnan(X).any()
    np.testing.assert_array_equal(ph[:, PH_R], rh[:, HIST_G])
