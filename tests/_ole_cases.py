"""Data and brute-force references shared by the OLE test modules (not a test module): random
feature matrices and ranking data, the brute-force best split of a node (every feature, threshold
and NaN side, sums over explicit row / pair masks) and the split kernel's answer read by name,
the leaf of every row of a grown tree, values put on the fixed-point grid. Imported as
``from _ole_cases import make_X``."""
from __future__ import annotations

import json

import numpy as np

from customobj import RankNet
from customobj.ole.common import SPLIT_SIZE, ChildSums, SplitInfo
from customobj.ole.histogram import build_row_hist
from customobj.ole.pairhist import build_pair_hist
from customobj.ole.criterion import CRITERIA
from customobj.ole.splitting import FeatureBins, SplitRules, find_best_split

from _oracles import node_rows

QUIET = dict(verbose=False)


def on_grid(*arrays):
    """Copies of ``arrays``, each rounded onto its own grid (customobj.ole.fixed_point), as a tree's
    gradients, hessians and couplings are before the GPU builds and searches their histograms: every
    sum of them is then exact, in any order (the GPU search scans the bins in parallel)."""
    from customobj.ole.fixed_point import grid_step_of, round_range

    out = []
    for a in arrays:
        x = np.array(a, dtype=np.float64)
        round_range(x, 0, x.size, grid_step_of(x, 0, x.size))
        out.append(x)
    return out


def make_X(seed, n=157, n_features=6, nan_frac=0.1, dtype=np.float64):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    X[:, 0] = np.round(X[:, 0])  # few distinct values: long runs of equal bins
    X[:, 1] = 0.5  # constant feature: a single bin
    X[rng.random(X.shape) < nan_frac] = np.nan
    return X.astype(dtype)


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
    find_best_split(hist, ph, criterion == "ole", FeatureBins(mapper.n_bins, mapper.offsets), mask,
                    ChildSums(grad[order].sum(), hess[order].sum(), float(order.size), pc.sum()),
                    SplitRules(int(CRITERIA[criterion].score), lam, float(min_data), float(min_hess)), res)
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


def random_pairs(seed, n_queries=40, max_rows=25):
    """Every row pair of random queries in random order, couplings over many octaves (10% zero, 1%
    negative), and the group offsets: pair-pruning inputs."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, max_rows, n_queries)
    ptr = np.r_[0, np.cumsum(sizes)]
    pi, pj = [], []
    for q in range(n_queries):
        a, b = np.triu_indices(sizes[q], 1)
        pi.append(ptr[q] + a)
        pj.append(ptr[q] + b)
    pi, pj = np.concatenate(pi).astype(np.int32), np.concatenate(pj).astype(np.int32)
    perm = rng.permutation(pi.size)  # any order: queries need not be contiguous
    pi, pj = pi[perm], pj[perm]
    pc = rng.lognormal(0.0, 2.0, pi.size)  # couplings over many octaves
    pc[rng.random(pi.size) < 0.1] = 0.0
    pc[rng.random(pi.size) < 0.01] *= -1.0  # negative couplings are always kept
    return pi, pj, pc, ptr


def contiguous_pairs(seed, n_queries, max_rows):
    """``random_pairs`` with each query's pairs in one run (as LambdaRank writes them)."""
    pi, pj, pc, ptr = random_pairs(seed, n_queries=n_queries, max_rows=max_rows)
    by_query = np.argsort(np.repeat(np.arange(ptr.size - 1), np.diff(ptr))[pi], kind="stable")
    return pi[by_query], pj[by_query], pc[by_query], ptr


def assert_subset_slots(sub, full, offsets, n_features, subset):
    """A histogram of a feature ``subset`` equals the full one on those features' slots and is zero
    on every other feature's slots."""
    for f in range(n_features):
        lo, hi = offsets[f], offsets[f + 1]
        if f in subset:
            np.testing.assert_array_equal(sub[lo:hi], full[lo:hi])
        else:
            assert not sub[lo:hi].any()


def backend_case(seed, n_queries, n_features, nan_frac, **params):
    """A RankNet tree's inputs on ``n_queries`` queries of 12 rows: ``(ctx, params, grad, hess, pairs)``
    (``ctx()``: a fresh :class:`~customobj.ole.context.GrowContext` with the queries set, one per backend;
    ``params``: ``TreeBooster(**params)``'s grow parameters), for the backend and device-tree tests."""
    from customobj.ole import TreeBooster
    from customobj.ole.binning import BinMapper
    from customobj.ole.context import GrowContext
    n = 12 * n_queries
    X = make_X(seed, n=n, n_features=n_features, nan_frac=nan_frac)
    y = np.random.default_rng(seed).integers(0, 3, n).astype(float)
    obj = RankNet()
    grow = TreeBooster(obj, verbose=False, **params)._grow_params()
    mapper = BinMapper.fit(X, 8)

    def ctx():
        c = GrowContext(mapper.bins_feature_major(X), mapper)
        c.queries = (np.repeat(np.arange(n_queries), 12).astype(np.int32), n_queries)
        return c
    grad, hess, pairs = obj.grad_hess_couplings_prepared(np.zeros(n), obj.prepare(y, [12] * n_queries, None))
    return ctx, grow, grad, hess, pairs
