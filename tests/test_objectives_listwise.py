"""LambdaRank (ndcg/err/map/mrr) vs slow NumPy references, finite differences, LightGBM's native
lambdarank and brute force over permutations; StructuredDCG's options and composition.

Also the tests of the pure kernels of customobj/objectives/_lambdarank_pass.py (the |dZ| formulas
and pair loops), through the objective that wraps them. StructuredDCG against brute force:
tests/test_objectives_structured_kernels.py; the drivers' fused and buffered pair passes:
tests/test_objectives_lambdarank_kernels.py."""
import numpy as np
import pytest

from _objective_cases import random_queries
from _oracles import fd_grad, fd_jacobian

from customobj import Groups, LambdaRank, StructuredDCG

METRICS = ["ndcg", "err", "map", "mrr"]


# ---------------------------------------------------------------- slow references -----------------
def metric_value(metric, perm, y, k, gain=None, y_max=None):
    """The metric of ranking ``perm`` (rows in rank order), computed from scratch."""
    n = len(perm)
    kk = n if k is None else min(k, n)
    G = (np.asarray(gain)[y.astype(int)] if gain is not None else 2.0 ** y - 1.0)
    if metric == "ndcg":
        disc = 1.0 / np.log2(2.0 + np.arange(n))
        disc[kk:] = 0.0
        idcg = np.sum(np.sort(G)[::-1] * disc)
        return np.sum(G[perm] * disc) / idcg if idcg > 0 else 0.0
    if metric == "err":
        R = G / (1.0 + (np.asarray(gain)[int(y_max)] if gain is not None else 2.0 ** y_max - 1.0))
        total, p = 0.0, 1.0
        for r in range(kk):
            total += p * R[perm[r]] / (r + 1)
            p *= 1 - R[perm[r]]
        return total
    rel = (y > 0)[perm]
    if metric == "map":
        n_rel = min(rel.sum(), kk)
        hits = np.cumsum(rel)
        return sum(hits[r] / (r + 1) for r in range(kk) if rel[r]) / n_rel if n_rel else 0.0
    for r in range(kk):
        if rel[r]:
            return 1.0 / (r + 1)
    return 0.0


def ref_lambdarank(s, y, sizes, metric="ndcg", k=None, sigma=1.0, truncation=None, gain=None,
                   norm=False, w=None):
    """grad, hess, loss and {(i, j): h_ij} by swapping every pair and recomputing the metric."""
    n = len(s)
    grad, hess = np.zeros(n), np.zeros(n)
    loss, coup = 0.0, {}
    y_max = y.max()
    w = np.ones(n) if w is None else w
    start = 0
    for size in sizes:
        rows = np.arange(start, start + size)
        start += size
        if size < 2:
            continue
        perm = rows[np.argsort(-s[rows], kind="mergesort")]
        base = metric_value(metric, perm - rows[0], y[rows], k, gain, y_max)
        spread = s[perm[0]] != s[perm[-1]]
        qg, qh, ql, qc, total = np.zeros(n), np.zeros(n), 0.0, {}, 0.0
        for a in range(size):
            for b in range(a + 1, size):
                if truncation is not None and a >= truncation:
                    continue
                i, j = perm[a], perm[b]
                if y[i] == y[j]:
                    continue
                if y[i] < y[j]:
                    i, j = j, i
                sw = perm.copy()
                sw[a], sw[b] = sw[b], sw[a]
                dz = abs(base - metric_value(metric, sw - rows[0], y[rows], k, gain, y_max))
                if dz < 1e-15:
                    continue
                d = s[i] - s[j]
                if norm and spread:
                    dz /= 0.01 + abs(d)
                rho = np.exp(-np.logaddexp(0.0, sigma * d))
                total += 2 * sigma * dz * rho
                pw = 0.5 * (w[i] + w[j])
                lam, h = pw * sigma * dz * rho, pw * sigma**2 * dz * rho * (1 - rho)
                qg[i] -= lam
                qg[j] += lam
                qh[i] += h
                qh[j] += h
                ql += pw * dz * np.logaddexp(0.0, -sigma * d)
                qc[(i, j)] = h
        f = np.log2(1 + total) / total if norm and total > 0 else 1.0
        grad += f * qg
        hess += f * qh
        loss += f * ql
        coup.update({key: f * v for key, v in qc.items()})
    return grad, hess, loss, coup


def couplings_dict(obj, s, y, sizes):
    i, j, c = obj.pair_couplings(s, y, sizes)
    assert len(set(zip(i.tolist(), j.tolist()))) == i.size
    return {(a, b): v for a, b, v in zip(i.tolist(), j.tolist(), c.tolist())}


# ---------------------------------------------------------------- |dZ| -----------------------------
@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("k", [None, 1, 3, 6])
def test_delta_matches_swap_and_recompute(metric, k):
    """With all scores tied the ranking is the row order and every coupling is |dZ| sigma^2 / 4."""
    rng = np.random.default_rng(11)
    for _ in range(25):
        n = int(rng.integers(2, 11))
        y = rng.integers(0, 4, size=n).astype(float)
        y_max = 3.0
        labels = np.append(y, y_max)  # a one-row query pins the training y_max used by ERR
        i, j, c = LambdaRank(metric=metric, k=k).pair_couplings(np.zeros(n + 1), labels, [n, 1])
        got = {(a, b): 4 * v for a, b, v in zip(i.tolist(), j.tolist(), c.tolist())}
        order = np.arange(n)
        base = metric_value(metric, order, y, k, y_max=y_max)
        for a in range(n):
            for b in range(a + 1, n):
                sw = order.copy()
                sw[a], sw[b] = sw[b], sw[a]
                want = abs(base - metric_value(metric, sw, y, k, y_max=y_max))
                key = (a, b) if y[a] > y[b] else (b, a)
                if key not in got:
                    assert want < 1e-15, (a, b, y)
                else:
                    assert got[key] == pytest.approx(want, rel=1e-12, abs=1e-15), (a, b, y)
        assert all(y[a] > y[b] for a, b in got)


# ---------------------------------------------------------------- lambdas vs reference -------------
CONFIGS = [
    dict(metric="ndcg"),
    dict(metric="ndcg", k=3),
    dict(metric="ndcg", truncation=2),
    dict(metric="ndcg", k=4, truncation=2, sigma=2.5),
    dict(metric="ndcg", gain=[0.0, 1.0, 3.0, 10.0]),
    dict(metric="ndcg", norm=True),
    dict(metric="ndcg", norm=True, truncation=3),
    dict(metric="err"),
    dict(metric="err", k=3, sigma=0.5),
    dict(metric="err", gain=[0.0, 2.0, 2.0, 5.0]),
    dict(metric="map"),
    dict(metric="map", k=3),
    dict(metric="mrr"),
    dict(metric="mrr", k=2, truncation=1)]


@pytest.mark.parametrize("opts", CONFIGS, ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items()))
@pytest.mark.parametrize("weighted", [False, True])
def test_lambdas_match_slow_reference(opts, weighted):
    rng = np.random.default_rng(3)
    for trial in range(4):
        s, y, sizes = random_queries(rng, tie_scores=trial == 3)
        w = rng.uniform(0.2, 2.0, size=len(s)) if weighted else None
        obj = LambdaRank(**opts)
        grad, hess = obj.grad_hess(s, y, sizes, w)
        rg, rh, rl, rc = ref_lambdarank(s, y, sizes, w=w, **opts)
        np.testing.assert_allclose(grad, rg, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(hess, rh, rtol=1e-9, atol=1e-12)
        assert obj.loss(s, y, sizes, w) == pytest.approx(rl, rel=1e-9, abs=1e-12)
        if not weighted:
            got = couplings_dict(obj, s, y, sizes)
            assert set(got) == set(rc)
            for key, v in rc.items():
                assert got[key] == pytest.approx(v, rel=1e-9, abs=1e-14)
        assert np.all(hess >= 0)


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("sigma", [1.0, 3.0])
def test_grad_is_derivative_of_loss_and_hess_of_grad(metric, sigma):
    rng = np.random.default_rng(5)
    s, y, sizes = random_queries(rng, n_queries=4, max_size=8)
    obj = LambdaRank(metric=metric, sigma=sigma, k=5, truncation=6)
    prep = obj.prepare(y, sizes)
    grad, hess = obj.grad_hess_prepared(s, prep)
    eps = 1e-6  # far below the 0.27 score gaps: the sort, hence |dZ|, stays frozen
    np.testing.assert_allclose(grad, fd_grad(lambda z: obj.loss_prepared(z, prep), s, eps), atol=1e-7)
    # Full Jacobian of grad: diagonal = hess, off-diagonal (i, j) = -h_ij from the couplings.
    jac = fd_jacobian(lambda z: obj.grad_hess_prepared(z, prep)[0], s, eps)
    want = np.diag(hess)
    i, j, c = obj.pair_couplings_prepared(s, prep)
    np.add.at(want, (i, j), -c)
    np.add.at(want, (j, i), -c)
    np.testing.assert_allclose(jac, want, atol=1e-7)


# ---------------------------------------------------------------- LightGBM --------------------------
@pytest.mark.parametrize("norm", [False, True])
def test_ndcg_matches_lightgbm_native_lambdarank(norm):
    import lightgbm as lgb
    rng = np.random.default_rng(8)
    sizes = rng.integers(3, 15, size=25)
    n = int(sizes.sum())
    X = rng.normal(size=(n, 4))
    y = np.clip(np.round(X[:, 0] + 0.5 * rng.normal(size=n) + 1), 0, 3)
    common = dict(learning_rate=1.0, num_leaves=4, min_data_in_leaf=1, min_sum_hessian_in_leaf=0.0,
                  lambda_l2=0.0, num_threads=1, deterministic=True, verbose=-1, seed=0)
    native = dict(common, objective="lambdarank", lambdarank_norm=norm,
                  lambdarank_truncation_level=int(sizes.max()) + 1, sigmoid=1.0)
    obj = LambdaRank(norm=norm)

    def fobj(preds, data):
        return obj.grad_hess(preds, data.get_label(), data.get_group())

    rounds = 3
    b1 = lgb.train(native, lgb.Dataset(X, y, group=sizes), num_boost_round=rounds)
    b2 = lgb.train(dict(common, objective=fobj), lgb.Dataset(X, y, group=sizes), num_boost_round=rounds)
    p1, p2 = b1.predict(X, raw_score=True), b2.predict(X, raw_score=True)
    assert np.ptp(p1) > 0.1
    # LightGBM's sigmoid is a 1M-bin lookup table and gradients pass through float32.
    np.testing.assert_allclose(p2, p1, rtol=1e-3, atol=1e-4)


# ---------------------------------------------------------------- behaviour --------------------------
def test_truncation_keeps_pairs_touching_the_top():
    rng = np.random.default_rng(9)
    s, y, sizes = random_queries(rng, n_queries=5, max_size=12)
    ptr = Groups.from_sizes(sizes).ptr
    rank = np.empty(len(s), dtype=int)
    for q in range(len(sizes)):
        rows = np.arange(ptr[q], ptr[q + 1])
        rank[rows[np.argsort(-s[rows], kind="mergesort")]] = np.arange(rows.size)
    for t in (1, 2, 4):
        i, j, _ = LambdaRank(truncation=t).pair_couplings(s, y, sizes)
        assert i.size and np.all(np.minimum(rank[i], rank[j]) < t)
        full = couplings_dict(LambdaRank(), s, y, sizes)
        assert {p for p in full if min(rank[p[0]], rank[p[1]]) < t} == set(zip(i.tolist(), j.tolist()))
    big = LambdaRank(truncation=int(sizes.max()))
    np.testing.assert_array_equal(big.grad_hess(s, y, sizes)[0], LambdaRank().grad_hess(s, y, sizes)[0])


@pytest.mark.parametrize("metric", METRICS)
def test_degenerate_queries_give_zero(metric):
    y = np.array([3.0, 2.0, 2.0, 2.0, 0.0, 0.0, 1.0])
    sizes = [1, 3, 0, 2, 1, 0]  # singleton, all-equal labels, empty, all-zero labels, singleton, empty
    s = np.array([0.5, 1.0, -1.0, 1.0, 0.3, 0.3, 2.0])
    obj = LambdaRank(metric=metric)
    g, h = obj.grad_hess(s, y, sizes)
    assert np.all(g == 0) and np.all(h == 0)
    assert obj.loss(s, y, sizes) == 0.0
    assert obj.pair_couplings(s, y, sizes)[0].size == 0
    g, h = StructuredDCG(k=2).grad_hess(s, y, sizes)
    assert np.all(g == 0) and np.all(h == 1.0)


@pytest.mark.parametrize("metric", METRICS)
def test_extreme_scores_stay_finite(metric):
    rng = np.random.default_rng(1)
    s, y, sizes = random_queries(rng, n_queries=5, max_size=10)
    s = np.sign(s) * 1e6 + s
    for sigma in (1.0, 100.0):
        for obj in (LambdaRank(metric=metric, sigma=sigma), LambdaRank(metric=metric, sigma=sigma, norm=True)):
            g, h = obj.grad_hess(s, y, sizes)
            assert np.all(np.isfinite(g)) and np.all(np.isfinite(h)) and np.all(h >= 0)
            assert np.isfinite(obj.loss(s, y, sizes))
            assert np.all(np.isfinite(obj.pair_couplings(s, y, sizes)[2]))
            rg, rh, rl, _ = ref_lambdarank(s, y, sizes, metric=metric, sigma=sigma, norm=obj.norm)
            np.testing.assert_allclose(g, rg, rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(h, rh, rtol=1e-9, atol=1e-12)
    g, h = StructuredDCG(k=3).grad_hess(s, y, sizes)
    assert np.all(np.isfinite(g)) and np.isfinite(StructuredDCG(k=3).loss(s, y, sizes))


@pytest.mark.parametrize("obj", [LambdaRank(), LambdaRank(metric="err", truncation=3),
                                 LambdaRank(metric="map", norm=True), StructuredDCG(k=3)], ids=repr)
def test_invariant_to_permuting_whole_queries(obj):
    rng = np.random.default_rng(4)
    s, y, sizes = random_queries(rng, n_queries=7, max_size=8, tie_scores=True)
    ptr = Groups.from_sizes(sizes).ptr
    perm = rng.permutation(len(sizes))
    rows = np.concatenate([np.arange(ptr[q], ptr[q + 1]) for q in perm])
    w = rng.uniform(0.5, 1.5, size=len(s))
    g, h = obj.grad_hess(s, y, sizes, w)
    g2, h2 = obj.grad_hess(s[rows], y[rows], sizes[perm], w[rows])
    np.testing.assert_allclose(g2, g[rows], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(h2, h[rows], rtol=1e-12, atol=1e-15)
    assert obj.loss(s[rows], y[rows], sizes[perm], w[rows]) == pytest.approx(obj.loss(s, y, sizes, w), rel=1e-12)


def test_ties_sort_stably_by_row_order():
    y = np.array([0.0, 1.0, 2.0])
    s = np.zeros(3)
    g, _ = LambdaRank(k=1).grad_hess(s, y, [3])
    # Ranking by row order puts row 0 on top: only pairs with row 0 move NDCG@1.
    rg, _, _, _ = ref_lambdarank(s, y, [3], k=1)
    np.testing.assert_allclose(g, rg)
    assert g[0] > 0 and g[1] < 0 and g[2] < 0
    # Reversed rows: the label-2 row is now first, so the tie resolves to the ideal ranking.
    g2, _ = LambdaRank(k=1).grad_hess(s, y[::-1], [3])
    np.testing.assert_allclose(g2, ref_lambdarank(s, y[::-1], [3], k=1)[0])
    assert not np.allclose(g2[::-1], g)


def test_err_uses_training_y_max():
    s = np.array([0.3, 0.1, -0.2, 0.5])
    y = np.array([0.0, 1.0, 0.0, 4.0])
    sizes = [3, 1]
    g = LambdaRank(metric="err").grad_hess(s, y, sizes)[0]
    rg, _, _, _ = ref_lambdarank(s, y, sizes, metric="err")  # reference uses y.max() = 4
    np.testing.assert_allclose(g, rg)
    g_small = LambdaRank(metric="err").grad_hess(s[:3], y[:3], [3])[0]  # y_max = 1 now
    assert not np.allclose(g_small, g[:3])


def test_options_are_validated():
    with pytest.raises(ValueError, match="metric"):
        LambdaRank(metric="auc")
    with pytest.raises(ValueError, match="sigma"):
        LambdaRank(sigma=0)
    with pytest.raises(ValueError, match="truncation"):
        LambdaRank(truncation=0)
    with pytest.raises(TypeError, match="k"):
        LambdaRank(k=2.5)
    with pytest.raises(ValueError, match="gain"):
        LambdaRank(metric="map", gain=[0, 1])
    with pytest.raises(ValueError, match="non-decreasing"):
        LambdaRank(gain=[0, 3, 1])
    with pytest.raises(TypeError, match="norm"):
        LambdaRank(norm="yes")
    with pytest.raises(ValueError, match="gain has only"):
        LambdaRank(gain=[0, 1]).grad_hess([0.0, 1.0], [0, 2], [2])
    with pytest.raises(ValueError, match="integer"):
        LambdaRank(metric="err").grad_hess([0.0, 1.0], [0, 1.5], [2])
    with pytest.raises(ValueError, match="group"):
        LambdaRank().grad_hess([0.0, 1.0], [0, 1])
    with pytest.raises(ValueError, match="k"):
        StructuredDCG(k=0)
    with pytest.raises(ValueError, match="hess"):
        StructuredDCG(hess=-1.0)
    assert LambdaRank(gain=[0, 1, 3]) == LambdaRank(gain=(0.0, 1.0, 3.0))
    assert LambdaRank().integer_labels is False and LambdaRank(metric="err").integer_labels is True
    LambdaRank().grad_hess([0.0, 1.0], [0.0, 1.5], [2])  # real labels are fine for default-gain NDCG


def test_truncation_matches_lightgbm_up_to_its_idcg_cutoff():
    """LightGBM normalises by IDCG@truncation_level (discounts untruncated); we by IDCG@k (here all)."""
    import lightgbm as lgb
    rng = np.random.default_rng(18)
    sizes = rng.integers(3, 15, size=25)
    n = int(sizes.sum())
    X = rng.normal(size=(n, 4))
    y = np.clip(np.round(X[:, 0] + 0.5 * rng.normal(size=n) + 1), 0, 3)
    T = 4
    ptr = np.concatenate([[0], np.cumsum(sizes)])

    def idcg(yq, k):
        g = np.sort(2.0 ** yq - 1)[::-1][:k]
        return np.sum(g / np.log2(2 + np.arange(g.size)))

    scale = np.repeat([idcg(y[a:b], b - a) / idcg(y[a:b], T) if y[a:b].max() > 0 else 0.0
                       for a, b in zip(ptr[:-1], ptr[1:])], sizes)
    common = dict(learning_rate=1.0, num_leaves=4, min_data_in_leaf=1, min_sum_hessian_in_leaf=0.0,
                  lambda_l2=0.0, num_threads=1, deterministic=True, verbose=-1, seed=0)
    native = dict(common, objective="lambdarank", lambdarank_norm=False, lambdarank_truncation_level=T)
    obj = LambdaRank(truncation=T)

    def fobj(preds, data):
        g, h = obj.grad_hess(preds, data.get_label(), data.get_group())
        return g * scale, h * scale

    b1 = lgb.train(native, lgb.Dataset(X, y, group=sizes), num_boost_round=3)
    b2 = lgb.train(dict(common, objective=fobj), lgb.Dataset(X, y, group=sizes), num_boost_round=3)
    np.testing.assert_allclose(b2.predict(X, raw_score=True), b1.predict(X, raw_score=True), rtol=1e-3, atol=1e-4)


def test_composes_with_other_objectives():
    from customobj import SquaredError
    rng = np.random.default_rng(6)
    s, y, sizes = random_queries(rng)
    combo = LambdaRank(metric="err") + 0.5 * StructuredDCG(k=3) + SquaredError()
    assert combo.integer_labels and combo.pairwise and combo.needs_group
    g, h = combo.grad_hess(s, y, sizes)
    parts = [LambdaRank(metric="err").grad_hess(s, y, sizes), StructuredDCG(k=3).grad_hess(s, y, sizes),
             SquaredError().grad_hess(s, y, sizes)]
    np.testing.assert_allclose(g, parts[0][0] + 0.5 * parts[1][0] + parts[2][0], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(h, parts[0][1] + 0.5 * parts[1][1] + parts[2][1], rtol=1e-12, atol=1e-14)
    i, j, c = combo.pair_couplings(s, y, sizes)
    np.testing.assert_allclose(c, LambdaRank(metric="err").pair_couplings(s, y, sizes)[2])


def test_hypothesis_lambdas_are_balanced_finite_and_nonnegative():
    import hypothesis as hyp  # the suite needs hypothesis (the test extra): no skip without it
    from hypothesis import strategies as st

    @hyp.settings(max_examples=60, deadline=None)
    @hyp.given(
        data=st.lists(st.tuples(st.integers(0, 4), st.sampled_from([0.0, 1.0, -1.0, 1e6, -1e6, 0.5, 3.0])),
                      min_size=1, max_size=12),
        metric=st.sampled_from(METRICS), sigma=st.sampled_from([0.1, 1.0, 100.0]), norm=st.booleans(),
        truncation=st.sampled_from([None, 1, 3]),
    )
    def check(data, metric, sigma, norm, truncation):
        y = np.array([d[0] for d in data], dtype=float)
        s = np.array([d[1] for d in data])
        sizes = [len(data) // 2, len(data) - len(data) // 2]
        obj = LambdaRank(metric=metric, sigma=sigma, norm=norm, truncation=truncation)
        g, h = obj.grad_hess(s, y, sizes)
        assert np.all(np.isfinite(g)) and np.all(np.isfinite(h)) and np.all(h >= 0)
        assert abs(g[:sizes[0]].sum()) < 1e-9 and abs(g[sizes[0]:].sum()) < 1e-9  # lambdas come in +/- pairs
        i, j, c = obj.pair_couplings(s, y, sizes)
        assert np.all(y[i] > y[j]) and np.all(c >= 0)
        want_h = np.zeros_like(h)
        np.add.at(want_h, i, c)
        np.add.at(want_h, j, c)
        np.testing.assert_allclose(h, want_h, rtol=1e-9, atol=1e-300)
        assert np.isfinite(obj.loss(s, y, sizes))

    check()


# --- issue 13 ---------------------------------------------------------------------------------------------
def test_integer_options_range_checked():
    for kw, msg in [({"k": 2**70}, r"k must be <= 1099511627776, got 1180591620717411303424; k=None means"),
                    ({"truncation": 2**63}, r"truncation must be <= 1099511627776"),
                    ({"k": 2**62}, r"k must be <= 1099511627776")]:
        with pytest.raises(ValueError, match=msg):
            LambdaRank(**kw)
    with pytest.raises(ValueError, match=r"k must be <= 1099511627776"):
        StructuredDCG(k=2**63)
    s, y = np.array([0.3, 0.1, 0.2]), np.array([0.0, 2.0, 1.0])
    np.testing.assert_array_equal(LambdaRank(k=2**40, truncation=2**40).grad_hess(s, y, [3])[0],
                                  LambdaRank().grad_hess(s, y, [3])[0])  # at the bound: no cut-off


def test_gain_tables_bounded():
    with pytest.raises(ValueError, match=r"gain entries must be <= 5.2\d*e\+210"):
        LambdaRank(gain=[0, 1e300])
    with pytest.raises(ValueError, match=r"gain must be finite"):
        LambdaRank(gain=[0, np.inf])
    with pytest.raises(TypeError, match=r"gain must be real numbers"):
        LambdaRank(gain=[False, True])
    with pytest.raises(ValueError, match=r"gain entries must be <= 2\*\*53 - 1 with metric='err'"):
        LambdaRank(metric="err", gain=[0, 2.0**60])
    g, _ = LambdaRank(gain=[0, 1, 2.0**700]).grad_hess(np.array([0.3, 0.1, 0.2]), [0, 2, 1], [3])
    assert np.all(np.isfinite(g)) and np.any(g != 0)


def test_lambdarank_map_mrr_take_any_label_size():
    """Binary relevance (y > 0) needs no gain bound."""
    s = np.array([0.3, 0.1, 0.2])
    for metric in ("map", "mrr"):
        g, _ = LambdaRank(metric=metric).grad_hess(s, [0, 1e6, 0], [3])
        assert np.all(np.isfinite(g)) and np.any(g != 0)
