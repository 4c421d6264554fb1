"""criterion="ole_fast": the bound on what it changes, checked node by node.

Bound, two tolerances. ``ole_fast_features = k``: at every node the split is the best OLE split
among the ``k`` features with the largest WSE gains at that node (ties: lower index).
``ole_fast_epsilon``: that OLE split is searched with the pruned pairs (per query, the largest
couplings holding all but ``epsilon`` of its mass, customobj.ole.pair_pruning), so every node's
in-node coupling ``C~`` (hence ``H - 2C~`` and the recorded gain) is within ``epsilon`` times the
coupling mass of the queries it holds below the exact ``C``; ``G, H, N`` are exact, and leaf values
use the exact ``C`` (every pair). With ``epsilon = 0`` and ``k`` at least the number of features
it grows the trees of ``criterion="ole"``.
"""
import json

import numpy as np
import pytest

from customobj import LambdaRank, RankNet
from customobj.ole import TreeBooster
from customobj.ole.binning import BinMapper
from customobj.ole.grower import select_features
from customobj.ole.pair_pruning import prune_pairs, query_of_rows


def rank_data(seed, n_queries=30, q_size=30, n_features=8, nan_frac=0.05):
    rng = np.random.default_rng(seed)
    n = n_queries * q_size
    X = np.round(rng.normal(size=(n, n_features)) * 4) / 4  # few distinct values: exact bins
    X[rng.random(X.shape) < nan_frac] = np.nan
    y = rng.integers(0, 4, n).astype(float)
    return X, y, np.full(n_queries, q_size)


def splits(rows, b, nb):
    """Every (threshold bin, nan_left, left mask) of one feature's bins ``b`` on ``rows``."""
    for nan_left in (False, True):
        for t in range(nb - 1):
            yield t, nan_left, np.where(b == nb, nan_left, b <= t)


def best_gains(bins, n_bins, rows, g, h, pairs, lam, min_data, min_hess, crit):
    """Per feature: the best gain > 0 (0 if none) and its (t, nan_left), brute force over masks."""
    pi, pj, pc = pairs
    n = bins.shape[0]
    in_node = np.zeros(n, bool)
    in_node[rows] = True

    def denom(mask):
        hs = h[mask].sum()
        if crit == "wse":
            return hs
        d = hs - 2 * pc[mask[pi] & mask[pj]].sum()
        return d if d > 1e-9 * hs else 0.0

    def score(mask):
        d = denom(mask)
        return g[mask].sum() ** 2 / (d + lam) if d + lam > 0 else 0.0
    parent = score(in_node)
    out = []
    for f in range(bins.shape[1]):
        best = (0.0, None)
        b = bins[rows, f].astype(int)
        for t, nan_left, left in splits(rows, b, int(n_bins[f])):
            L = np.zeros(n, bool)
            L[rows[left]] = True
            R = in_node & ~L
            if L.sum() < min_data or R.sum() < min_data:
                continue
            if min(denom(L) if crit != "wse" else h[L].sum(), denom(R) if crit != "wse" else h[R].sum()) < min_hess:
                continue
            gain = score(L) + score(R) - parent
            if gain > best[0] * (1 + 1e-9) + 1e-15:
                best = (gain, (t, nan_left))
        out.append(best)
    return out


def internal_nodes(tree, bins, n_bins):
    """Rows of every internal node, walking the tree on bins (threshold bins, default_left)."""
    out = {}

    def walk(node, rows):
        out[node] = rows
        f, t, dl = tree["split_feature"][node], tree["threshold_bin"][node], tree["default_left"][node]
        b = bins[rows, f].astype(int)
        left = np.where(b == n_bins[f], dl, b <= t)
        for child, part in ((tree["left_child"][node], rows[left]), (tree["right_child"][node], rows[~left])):
            if child >= 0:
                walk(child, part)
    walk(0, np.arange(bins.shape[0]))
    return out


@pytest.mark.parametrize("k", [1, 3])
def test_every_split_is_the_best_ole_split_among_the_top_k_wse_features(k):
    X, y, group = rank_data(0)
    obj, lam, min_data = RankNet(sigma=1.3), 0.3, 6
    s = np.random.default_rng(1).normal(size=y.size)
    model = TreeBooster(obj, criterion="ole_fast", ole_fast_features=k, ole_fast_epsilon=0.0, num_leaves=7,
                        n_estimators=1, lambda_l2=lam, min_data_in_leaf=min_data, learning_rate=1.0,
                        verbose=False).fit(X, y, group, init_score=s)
    tree = json.loads(model.to_json())["trees"][0]
    assert tree["num_leaves"] == 7
    mapper = BinMapper.fit(X, 255)
    bins = mapper.bins(X)
    g, h = obj.grad_hess(s, y, group)
    pairs = obj.pair_couplings(s, y, group)
    off_top = 0
    for node, rows in internal_nodes(tree, bins, mapper.n_bins).items():
        wse = best_gains(bins, mapper.n_bins, rows, g, h, pairs, lam, min_data, 1e-3, "wse")
        ole = best_gains(bins, mapper.n_bins, rows, g, h, pairs, lam, min_data, 1e-3, "ole")
        top = select_features(np.array([w[0] for w in wse]), np.ones(X.shape[1], bool), k)
        want = max(top, key=lambda f: (ole[f][0], -f))  # best OLE gain within the top k, first on ties
        f = tree["split_feature"][node]
        assert f == want, (node, f, want)
        assert (tree["threshold_bin"][node], tree["default_left"][node]) == ole[f][1]
        assert tree["split_gain"][node] == pytest.approx(ole[f][0], rel=1e-9)  # exact gain of the chosen split
        off_top += int(np.argmax([o[0] for o in ole]) not in top)
    if k == 1:
        assert off_top > 0  # the restriction bites somewhere: the test can tell the criteria apart


def pruned(pairs, group, eps):
    """The pairs ole_fast searches splits with: ``prune_pairs`` of the objective's couplings."""
    pi, pj, pc = pairs
    ptr = np.r_[0, np.cumsum(group)]
    out = tuple(np.empty(pc.size, a.dtype) for a in (pi, pj, pc))
    k = prune_pairs(pi, pj, pc, query_of_rows(ptr), len(group), eps, *out)
    return tuple(a[:k] for a in out)


@pytest.mark.parametrize("eps", [0.1, 0.4])
def test_with_epsilon_splits_are_the_best_ole_splits_of_the_pruned_pairs_within_the_bound(eps):
    X, y, group = rank_data(5, n_features=4)
    obj, lam, min_data = LambdaRank(truncation=10), 0.3, 6
    s = np.random.default_rng(2).normal(size=y.size)
    model = TreeBooster(obj, criterion="ole_fast", ole_fast_features=4, ole_fast_epsilon=eps, num_leaves=7,
                        n_estimators=1, lambda_l2=lam, min_data_in_leaf=min_data, learning_rate=1.0,
                        verbose=False).fit(X, y, group, init_score=s)
    tree = json.loads(model.to_json())["trees"][0]
    mapper = BinMapper.fit(X, 255)
    bins = mapper.bins(X)
    g, h = obj.grad_hess(s, y, group)
    full = obj.pair_couplings(s, y, group)
    kept = pruned(full, group, eps)
    assert kept[0].size < 0.9 * np.count_nonzero(full[2])  # pruning bites
    q_of_row = query_of_rows(np.r_[0, np.cumsum(group)])
    q_mass = np.bincount(q_of_row[full[0]], weights=full[2], minlength=len(group))
    differs = 0
    for node, rows in internal_nodes(tree, bins, mapper.n_bins).items():
        ole = best_gains(bins, mapper.n_bins, rows, g, h, kept, lam, min_data, 1e-3, "ole")
        f = tree["split_feature"][node]
        assert f == max(range(X.shape[1]), key=lambda j: (ole[j][0], -j)), node
        assert tree["threshold_bin"][node] == ole[f][1][0]
        if np.isnan(X[rows, f]).any():  # else the grower sends NaN where 0 goes (no NaN seen here)
            assert tree["default_left"][node] == ole[f][1][1]
        assert tree["split_gain"][node] == pytest.approx(ole[f][0], rel=1e-9)
        # the bound: C - C~ <= eps * (coupling mass of the queries the node holds)
        m = np.zeros(y.size, bool)
        m[rows] = True
        c_full = full[2][m[full[0]] & m[full[1]]].sum()
        c_kept = kept[2][m[kept[0]] & m[kept[1]]].sum()
        assert 0 <= c_full - c_kept <= eps * q_mass[np.unique(q_of_row[rows])].sum() * (1 + 1e-12)
        exact = best_gains(bins, mapper.n_bins, rows, g, h, full, lam, min_data, 1e-3, "ole")
        differs += int(max(range(X.shape[1]), key=lambda j: (exact[j][0], -j)) != f or exact[f][1] != ole[f][1])
    if eps == 0.4:
        assert differs > 0  # the pruning changes some split: the test can tell the pair sets apart


@pytest.mark.parametrize("eps", [0.0, 0.3])
def test_leaf_values_use_the_exact_node_hessian(eps):
    X, y, group = rank_data(2)
    obj, lam = LambdaRank(truncation=10), 0.2
    model = TreeBooster(obj, criterion="ole_fast", ole_fast_features=2, ole_fast_epsilon=eps, num_leaves=6,
                        n_estimators=1, lambda_l2=lam, min_data_in_leaf=5, learning_rate=1.0,
                        verbose=False).fit(X, y, group)
    tree = json.loads(model.to_json())["trees"][0]
    mapper = BinMapper.fit(X, 255)
    bins = mapper.bins(X)
    g, h = obj.grad_hess(np.zeros(y.size), y, group)
    pi, pj, pc = obj.pair_couplings(np.zeros(y.size), y, group)
    leaf = np.full(y.size, -1)
    for node, rows in internal_nodes(tree, bins, mapper.n_bins).items():
        f, t, dl = tree["split_feature"][node], tree["threshold_bin"][node], tree["default_left"][node]
        b = bins[rows, f].astype(int)
        left = np.where(b == mapper.n_bins[f], dl, b <= t)
        for child, part in ((tree["left_child"][node], rows[left]), (tree["right_child"][node], rows[~left])):
            if child < 0:
                leaf[part] = ~child
    for k in range(tree["num_leaves"]):
        m = leaf == k
        d = h[m].sum() - 2 * pc[m[pi] & m[pj]].sum()
        assert tree["leaf_value"][k] == pytest.approx(-g[m].sum() / (d + lam), rel=1e-9)


def test_with_every_feature_ole_fast_grows_the_ole_trees():
    X, y, group = rank_data(3, n_features=5)
    kw = dict(n_estimators=3, num_leaves=8, min_data_in_leaf=5, verbose=False)
    a = json.loads(TreeBooster(LambdaRank(truncation=10), criterion="ole_fast", ole_fast_features=5,
                               ole_fast_epsilon=0.0, **kw)
                   .fit(X, y, group).to_json())["trees"]
    b = json.loads(TreeBooster(LambdaRank(truncation=10), criterion="ole_float64", **kw).fit(X, y, group).to_json())["trees"]
    for ta, tb in zip(a, b):
        for key in ("split_feature", "threshold_bin", "default_left", "left_child", "right_child"):
            assert ta[key] == tb[key]
        np.testing.assert_allclose(ta["leaf_value"], tb["leaf_value"], rtol=1e-6)


@pytest.mark.parametrize("bad", [0, -3, 2.5, "8"])
def test_ole_fast_features_is_validated(bad):
    with pytest.raises((TypeError, ValueError), match="ole_fast_features"):
        TreeBooster(RankNet(), criterion="ole_fast", ole_fast_features=bad)


@pytest.mark.parametrize("bad", [-0.1, 1.0, 1.5, float("nan"), float("inf"), "0.1", True, None])
def test_ole_fast_epsilon_is_validated(bad):
    with pytest.raises((TypeError, ValueError), match="ole_fast_epsilon"):
        TreeBooster(RankNet(), criterion="ole_fast", ole_fast_epsilon=bad)


@pytest.mark.parametrize("criterion", ["ole", "ole_fast"])
def test_trees_do_not_depend_on_the_thread_count(criterion):
    X, y, group = rank_data(4, n_queries=60, q_size=40)  # ~30k pairs: several pair-histogram blocks
    kw = dict(criterion=criterion, n_estimators=2, num_leaves=10, min_data_in_leaf=10, verbose=False)
    a, b = (TreeBooster(RankNet(), n_jobs=j, **kw).fit(X, y, group).to_json() for j in (1, 2))
    assert a == b


def test_ole_fast_epsilon_round_trips_and_older_files_get_the_default(tmp_path):
    """``ole_fast_epsilon`` is an optional key of the model file: files without it load with the default."""
    X, y, group = rank_data(6, n_queries=6, q_size=15, n_features=4)
    model = TreeBooster(RankNet(), criterion="ole_fast", ole_fast_epsilon=0.35, num_leaves=4, n_estimators=2,
                        min_data_in_leaf=5, verbose=False).fit(X, y, group)
    path = tmp_path / "m.json"
    model.save(path)
    loaded = TreeBooster.load(path)
    assert loaded.ole_fast_epsilon == 0.35
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    doc = json.loads(path.read_text())
    del doc["params"]["ole_fast_epsilon"]
    path.write_text(json.dumps(doc))
    assert TreeBooster.load(path).ole_fast_epsilon == TreeBooster().ole_fast_epsilon
    doc["params"]["ole_fast_epsilon"] = 1.0
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="ole_fast_epsilon"):
        TreeBooster.load(path)
