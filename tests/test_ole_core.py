"""customobj.ole: split search vs a brute-force NumPy reference, the paper's theorems, FD hessians."""
import json

import numpy as np
import pytest

from customobj import Logistic, McRank, MPBoost, RankNet, SquaredError
from customobj.ole import TreeBooster
from customobj.ole.binning import BinMapper
from customobj.ole.common import SPLIT_SIZE, SplitInfo
from customobj.ole.histogram import build_row_hist
from customobj.ole.pairhist import build_pair_hist
from customobj.ole.splitting import CRITERIA, find_best_split

from _oracles import node_rows

QUIET = dict(verbose=False)


def make_rank_data(seed, n_queries=12, q_size=25, n_features=4, nan_frac=0.05, n_values=40):
    rng = np.random.default_rng(seed)
    n = n_queries * q_size
    X = np.round(rng.normal(size=(n, n_features)) * n_values / 6) / 10  # few distinct values: exact bins
    X[rng.random(X.shape) < nan_frac] = np.nan
    y = rng.integers(0, 3, n).astype(float)
    return X, y, [q_size] * n_queries


def tree_dicts(model):
    return json.loads(model.to_json())["trees"]


# ------------------------------------------------------------------------------------------------
# Brute-force reference: every feature, threshold and NaN side, sums over explicit row / pair masks.
# ------------------------------------------------------------------------------------------------
def reference_best_split(bins, n_bins, rows, grad, hess, pairs, criterion, lam=0.0, min_data=1, min_hess=0.0):
    pi, pj, pc = pairs
    in_node = np.zeros(bins.shape[0], bool)
    in_node[rows] = True
    keep = in_node[pi] & in_node[pj]
    pi, pj, pc = pi[keep], pj[keep], pc[keep]

    def denom(g, h, n, c):
        if criterion == "se":
            return n
        if criterion == "wse":
            return h
        d = h - 2 * c
        return d if d > 1e-9 * h else 0.0

    def score(g, d):
        return g * g / (d + lam) if d + lam > 0 else 0.0

    G, H, N, C = grad[rows].sum(), hess[rows].sum(), len(rows), pc.sum()
    parent = score(G, denom(G, H, N, C))
    best = (0.0, None)
    for f in range(bins.shape[1]):
        nb = n_bins[f]
        b = bins[:, f].astype(np.int64)
        for nan_left in (False, True):
            if nan_left and not np.any(b[rows] == nb):
                continue
            for t in range(nb - 1):
                left = np.where(b == nb, nan_left, b <= t)
                L = rows[left[rows]]
                R = rows[~left[rows]]
                if len(L) < min_data or len(R) < min_data:
                    continue
                cl = pc[left[pi] & left[pj]].sum()
                cr = pc[~left[pi] & ~left[pj]].sum()
                dl = denom(grad[L].sum(), hess[L].sum(), len(L), cl)
                dr = denom(grad[R].sum(), hess[R].sum(), len(R), cr)
                ml, mr = (hess[L].sum(), hess[R].sum()) if criterion != "ole" else (dl, dr)
                if ml < min_hess or mr < min_hess:
                    continue
                gain = score(grad[L].sum(), dl) + score(grad[R].sum(), dr) - parent
                if gain > best[0] * (1 + 1e-12) + 1e-15:
                    best = (gain, (f, t, nan_left, L, R, cl, cr))
    return best


def kernel_best_split(mapper, bins, rows, grad, hess, pairs, criterion, lam=0.0, min_data=1, min_hess=0.0):
    pi, pj, pc = pairs
    in_node = np.zeros(bins.shape[0], bool)
    in_node[rows] = True
    keep = in_node[pi] & in_node[pj]
    pi, pj, pc = (np.ascontiguousarray(a[keep]) for a in (pi, pj, pc))
    order = np.asarray(rows, dtype=np.int64)
    hist = build_row_hist(bins, order, 0, order.size, grad, hess, mapper.offsets, mapper.n_slots)
    ph = build_pair_hist(bins, pi, pj, pc, 0, pi.size, mapper.offsets, mapper.n_bins, mapper.n_slots)
    res = np.zeros(SPLIT_SIZE)
    mask = np.ones(bins.shape[1], dtype=np.bool_)
    find_best_split(hist, ph, criterion == "ole", CRITERIA[criterion], mapper.n_bins, mapper.offsets, mask,
                    grad[order].sum(), hess[order].sum(), float(order.size), pc.sum(), lam, float(min_data),
                    min_hess, res)
    return SplitInfo.from_array(res)


def ranknet_setup(seed, **kw):
    X, y, group = make_rank_data(seed, **kw)
    obj = RankNet(sigma=1.3)
    rng = np.random.default_rng(seed + 100)
    s = rng.normal(size=y.size)
    g, h = obj.grad_hess(s, y, group)
    pairs = obj.pair_couplings(s, y, group)
    pairs = tuple(np.ascontiguousarray(a) for a in pairs)
    return X, y, group, obj, s, g, h, pairs


def leaf_rows(tree, X):
    leaf = np.zeros(X.shape[0], dtype=int)
    for node, rows in node_rows(tree, X).items():
        f, thr, dl = tree["split_feature"][node], tree["threshold"][node], tree["default_left"][node]
        x = X[rows, f]
        left = np.where(np.isnan(x), dl, x <= thr)
        for child, part in ((tree["left_child"][node], rows[left]), (tree["right_child"][node], rows[~left])):
            if child < 0:
                leaf[part] = ~child
    return leaf


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


@pytest.mark.parametrize("n,m,start,end", [(50, 400, 30, 350), (5000, 300_000, 1_000, 299_000)])
def test_partition_pairs_is_stable_three_way(n, m, start, end):
    # the second case spans several parallel blocks (65,536 pairs each)
    from customobj.ole.pairhist import partition_pairs
    rng = np.random.default_rng(21)
    go_left = rng.random(n) < 0.4
    pi = rng.integers(0, n, m).astype(np.int32)
    pj = rng.integers(0, n, m).astype(np.int32)
    pc = rng.random(m)
    oi, oj, oc = np.full(m, -7, np.int32), np.full(m, -7, np.int32), np.full(m, -7.0)
    a, b, c = pi.copy(), pj.copy(), pc.copy()
    nl, nr = partition_pairs(a, b, c, start, end, go_left, oi, oj, oc)
    side = np.where(go_left[pi[start:end]] & go_left[pj[start:end]], 0,
                    np.where(~go_left[pi[start:end]] & ~go_left[pj[start:end]], 1, 2))
    order = np.argsort(side, kind="stable") + start
    assert (nl, nr) == ((side == 0).sum(), (side == 1).sum())
    np.testing.assert_array_equal(oi[start:end], pi[order])
    np.testing.assert_array_equal(oj[start:end], pj[order])
    np.testing.assert_array_equal(oc[start:end], pc[order])
    assert np.all(oi[:start] == -7) and np.all(oi[end:] == -7)  # outside the range: untouched
    np.testing.assert_array_equal(a, pi)  # the source is left as it was
    np.testing.assert_array_equal(c, pc)
