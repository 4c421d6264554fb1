"""customobj.ole.splitting: split search vs a brute-force NumPy reference, the OLE node hessian as
the finite-difference second derivative, parallel search equal to serial, and the paper's theorems
(Xia, Zhai, Wang: Theorem 1 pointwise WSE = OLE, Theorem 2 squared error SE = WSE = OLE)."""
import numpy as np
import pytest

from customobj import Logistic, McRank, MPBoost, RankNet, SquaredError
from customobj._kernel_status import KernelStatus, split_found
from customobj.ole import TreeBooster
from customobj.ole.binning import BinMapper
from customobj.ole.common import ChildSums
from customobj.ole.criterion import SplitScore
from customobj.ole.histogram import build_row_hist_fm
from customobj.ole.splitting import FeatureBins, SplitRules

from _ole_cases import QUIET, kernel_best_split, make_X, make_rank_data, ranknet_setup, reference_best_split, tree_dicts


@pytest.mark.parametrize("criterion", ["se", "wse", "ole"])
@pytest.mark.parametrize("seed", [0, 1])
def test_split_kernel_matches_brute_force(criterion, seed):
    X, y, group, obj, s, g, h, pairs = ranknet_setup(seed)
    mapper = BinMapper.fit(X, 255)
    bins = mapper.bins(X)
    rng = np.random.default_rng(seed)
    # the root, and a sub-node whose rows have pairs leaving the node (they keep their full weight)
    for rows in (np.arange(y.size), np.sort(rng.choice(y.size, y.size // 2, replace=False))):
        ref_gain, ref = reference_best_split(bins, mapper.n_bins, rows, g, h, pairs, criterion, lam=0.5, min_data=3)
        res = kernel_best_split(mapper, bins, rows, g, h, pairs, criterion, lam=0.5, min_data=3)
        assert ref is not None
        f, t, nan_left, L, R, cl, cr = ref
        assert res.gain == pytest.approx(ref_gain, rel=1e-9)
        assert (res.feature, res.bin) == (f, t)
        assert res.left.N == len(L) and res.right.N == len(R)
        if criterion == "ole":
            assert res.left.C == pytest.approx(cl, rel=1e-9, abs=1e-12)
            assert res.right.C == pytest.approx(cr, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("make_obj", [lambda: RankNet(sigma=0.7), lambda: MPBoost(ddf="ldd", alpha=0.5)])
def test_ole_node_hessian_is_exact_second_derivative(make_obj):
    """H - 2C of each child equals d^2 L / d o^2 when all rows of the child move by o (central FD)."""
    X, y, group = make_rank_data(3)
    obj = make_obj()
    s = np.random.default_rng(4).normal(size=y.size)
    g, h = obj.grad_hess(s, y, group)
    pairs = tuple(np.ascontiguousarray(a) for a in obj.pair_couplings(s, y, group))
    mapper = BinMapper.fit(X, 255)
    bins = mapper.bins(X)
    rng = np.random.default_rng(5)
    for rows in (np.arange(y.size), np.sort(rng.choice(y.size, 2 * y.size // 3, replace=False))):
        res = kernel_best_split(mapper, bins, rows, g, h, pairs, "ole", min_data=5)
        f, t, nan_left = res.feature, res.bin, res.nan_left
        b = bins[rows, f].astype(int)
        left = np.where(b == mapper.n_bins[f], nan_left, b <= t)
        eps = 1e-3
        for side, H, C, G in ((rows[left], res.left.H, res.left.C, res.left.G), (rows[~left], res.right.H, res.right.C, res.right.G)):
            e = np.zeros(y.size)
            e[side] = 1.0
            L = lambda o: obj.loss(s + o * e, y, group)
            fd2 = (L(eps) - 2 * L(0.0) + L(-eps)) / eps**2
            fd1 = (L(eps) - L(-eps)) / (2 * eps)
            assert H - 2 * C == pytest.approx(fd2, rel=1e-5)
            assert G == pytest.approx(fd1, rel=1e-6)
            # the WSE hessian overstates it whenever pairs sit inside the child
            assert H > fd2 * (1 + 1e-3)


@pytest.mark.parametrize("criterion", ["se", "wse", "ole"])
def test_parallel_split_search_equals_serial(criterion, two_threads):
    import numba
    from customobj.ole.pairhist import build_pair_hist
    from customobj.ole.common import SPLIT_FEATURE, SPLIT_SIZE
    from customobj.ole.criterion import CRITERIA
    from customobj.ole.splitting import find_best_split, find_best_split_parallel
    from customobj.pairs import label_pairs
    X = make_X(8, n=300, n_features=9)
    X[:, 4] = X[:, 3]  # duplicate feature: equal gains, the first one must win
    mapper = BinMapper.fit(X, 16)
    fm = mapper.bins_feature_major(X)
    rng = np.random.default_rng(8)
    y = rng.integers(0, 3, 300).astype(float)
    grad, hess = rng.normal(size=300), rng.random(300) + 0.1
    pi, pj, _ = label_pairs(y, [30] * 10)
    pc = rng.random(pi.size) * 0.05
    order = np.arange(300, dtype=np.int64)
    hist = build_row_hist_fm(fm, order, 0, 300, grad, hess, mapper.offsets, mapper.n_slots)
    ph = build_pair_hist(fm.T, pi, pj, pc, 0, pi.size, mapper.offsets, mapper.n_bins, mapper.n_slots)
    mask = np.ones(9, dtype=np.bool_)
    mask[7] = False
    args = (hist, ph, criterion == "ole", FeatureBins(mapper.n_bins, mapper.offsets), mask,
            ChildSums(grad.sum(), hess.sum(), 300.0, pc.sum()), SplitRules(int(CRITERIA[criterion].score), 0.5, 5.0, 1e-3))
    want, got = np.zeros(SPLIT_SIZE), np.zeros(SPLIT_SIZE)
    assert find_best_split(*args, want) == KernelStatus.SPLIT_FOUND
    saved = numba.get_num_threads()
    try:
        for threads in (1, two_threads):
            numba.set_num_threads(threads)
            got[:] = 7.0
            assert find_best_split_parallel(*args, got) == KernelStatus.SPLIT_FOUND
            np.testing.assert_array_equal(got, want)
    finally:
        numba.set_num_threads(saved)
    assert want[SPLIT_FEATURE] != 4  # the duplicate never beats its twin


@pytest.mark.parametrize("lam", [0.0, 1.0])
def test_theorem2_squared_error_se_wse_ole_identical(lam):
    X, _, _ = make_rank_data(11, n_queries=10, q_size=30)
    y = np.random.default_rng(1).uniform(0, 4, size=X.shape[0])
    trees = [tree_dicts(TreeBooster(SquaredError(), criterion=c, num_leaves=7, n_estimators=3, lambda_l2=lam,
                                    min_data_in_leaf=5, **QUIET).fit(X, y)) for c in ("se", "wse", "ole")]
    assert trees[0] == trees[1] == trees[2]
    assert trees[0][0]["num_leaves"] == 7


@pytest.mark.parametrize("make_obj", [lambda: Logistic(), lambda: McRank()])
def test_theorem1_pointwise_wse_equals_ole(make_obj):
    X, y, group = make_rank_data(12, n_queries=10, q_size=30)
    if isinstance(make_obj(), Logistic):
        y = (y > 0).astype(float)
    trees = [tree_dicts(TreeBooster(make_obj(), criterion=c, num_leaves=6, n_estimators=2, min_data_in_leaf=5,
                                    **QUIET).fit(X, y)) for c in ("wse", "ole")]
    assert trees[0] == trees[1]


def test_pairwise_ole_and_wse_trees_differ():
    X, y, group, obj, *_ = ranknet_setup(13)
    t_wse = tree_dicts(TreeBooster(obj, criterion="wse", num_leaves=8, n_estimators=2, min_data_in_leaf=5,
                                   **QUIET).fit(X, y, group))
    t_ole = tree_dicts(TreeBooster(obj, criterion="ole", num_leaves=8, n_estimators=2, min_data_in_leaf=5,
                                   **QUIET).fit(X, y, group))
    assert t_wse != t_ole


def _node(seed=14):
    """A node's histograms, sums and split constraints: the arguments of the split kernels."""
    from customobj.ole.pairhist import build_pair_hist
    from customobj.pairs import label_pairs
    X = make_X(seed, n=120, n_features=4, nan_frac=0.1)
    mapper = BinMapper.fit(X, 8)
    fm = mapper.bins_feature_major(X)
    rng = np.random.default_rng(seed)
    grad, hess = rng.normal(size=120), rng.random(120) + 0.1
    pi, pj, _ = label_pairs(rng.integers(0, 3, 120).astype(float), [30] * 4)
    pc = rng.random(pi.size) * 0.05
    hist = build_row_hist_fm(fm, np.arange(120, dtype=np.int64), 0, 120, grad, hess, mapper.offsets, mapper.n_slots)
    ph = build_pair_hist(fm.T, pi, pj, pc, 0, pi.size, mapper.offsets, mapper.n_bins, mapper.n_slots)
    sums = (grad.sum(), hess.sum(), 120.0, pc.sum())
    return hist, ph, mapper, sums


@pytest.mark.parametrize("code", [-1, 3, 4, 99])
def test_an_unknown_criterion_code_is_flagged_never_computed(code):
    """Every kernel with the criterion dispatch returns UNKNOWN_CODE for a code outside SplitScore
    (3 and 4 were ole_fast's and ole_float64's user codes) and leaves no split; the boundary raises."""
    from customobj.ole.common import SPLIT_FEATURE, SPLIT_GAIN, SPLIT_SIZE
    from customobj.ole.criterion import OLE, WSE
    from customobj.ole.splitting import (feature_gains, find_best_split, find_best_split_parallel,
                                         node_hessian, split_gain)
    hist, ph, mapper, (G, H, N, C) = _node()
    mask = np.ones(mapper.n_bins.shape[0], dtype=np.bool_)
    for kernel in (find_best_split, find_best_split_parallel):
        res = np.full(SPLIT_SIZE, 7.0)
        bins, node = FeatureBins(mapper.n_bins, mapper.offsets), ChildSums(G, H, N, C)
        known = kernel(hist, ph, True, bins, mask, node, SplitRules(OLE, 0.5, 3.0, 1e-3), res)
        assert known == KernelStatus.SPLIT_FOUND and res[SPLIT_GAIN] > 0  # the same node with a known code splits
        res[:] = 7.0
        status = kernel(hist, ph, True, bins, mask, node, SplitRules(code, 0.5, 3.0, 1e-3), res)
        assert status == KernelStatus.UNKNOWN_CODE
        assert res[SPLIT_GAIN] == 0.0 and res[SPLIT_FEATURE] == -1.0
        with pytest.raises(ValueError, match=f"unknown criterion code {code}"):
            split_found(status, kernel.__name__, code, SplitScore, "criterion")
    args = (ChildSums(G, H, N, C), ChildSums(G / 2, H / 2, N / 2, 0.0), ChildSums(G / 2, H / 2, N / 2, 0.0))
    assert split_gain(SplitRules(OLE, 0.5, 3.0, 1e-3), *args)[0] == KernelStatus.SPLIT_NONE
    assert split_gain(SplitRules(code, 0.5, 3.0, 1e-3), *args) == (KernelStatus.UNKNOWN_CODE, 0.0)
    out = np.full(mask.size, 5.0)
    wse_node = ChildSums(G, H, N, 0.0)
    assert feature_gains(hist, bins, mask, wse_node, SplitRules(WSE, 0.5, 3.0, 1e-3), out) == KernelStatus.SPLIT_NONE
    assert out.max() > 0
    for bad in (code, OLE):  # a row-only kernel: the OLE score is no code of it either
        out[:] = 5.0
        assert feature_gains(hist, bins, mask, wse_node, SplitRules(bad, 0.5, 3.0, 1e-3), out) == KernelStatus.UNKNOWN_CODE
        assert not out.any()
    assert np.isnan(node_hessian(code, G, H, N, C))


def test_split_found_reads_found_and_none():
    assert split_found(KernelStatus.SPLIT_FOUND, "k", 2, SplitScore, "criterion") is True
    assert split_found(KernelStatus.SPLIT_NONE, "k", 2, SplitScore, "criterion") is False
    with pytest.raises(ValueError, match="k: a split search returned status 5"):
        split_found(5, "k", 2, SplitScore, "criterion")
