"""XENDCG (customobj/objectives/xendcg.py) through customobj/objectives/_listwise_kernels.py: a slow
reference with LightGBM's generator written out in Python, finite differences, the round counter,
thread independence, the expected-value form, LightGBM's native ``rank_xendcg`` trees, degenerate
queries, bad options, and a short LightGBM / XGBoost / TreeBooster training run."""
import numpy as np
import pytest

from _peer_cases import LABELS, SIZES, check_derivatives, rounds_per_thread_count, scores, training_improves

from customobj import XENDCG


class LightGBMRandom:
    """LightGBM's ``Random(int seed)`` (``include/LightGBM/utils/random.h``), ``NextFloat`` only."""

    def __init__(self, seed):
        self.x = seed & 0xFFFFFFFF

    def next_float(self):
        self.x = (214013 * self.x + 2531011) & 0xFFFFFFFF
        return ((self.x >> 16) & 0x7FFF) / 32768.0


def phis(y, sizes, seed, rounds):
    """``phi = 2^y - gamma`` per query for each of ``rounds`` rounds (one generator per query)."""
    out = [np.zeros(y.size) for _ in range(rounds)]
    lo = 0
    for q, n in enumerate(sizes):
        rng = LightGBMRandom(seed + q)
        for r in range(rounds):
            if n >= 2:
                out[r][lo:lo + n] = [2.0 ** y[t] - rng.next_float() for t in range(lo, lo + n)]
        lo += n
    return out


def reference(s, y, sizes, phi, weight=None):
    """(loss, grad, lightgbm grad, hess) of one round, query by query, as LightGBM's loop writes them."""
    w = np.ones(s.size) if weight is None else np.asarray(weight, float)
    loss, g, g_lgb, h = 0.0, np.zeros(s.size), np.zeros(s.size), np.zeros(s.size)
    lo = 0
    for n in sizes:
        sl = slice(lo, lo + n)
        lo += n
        if n < 2:
            continue
        rho = np.exp(s[sl] - s[sl].max())
        rho /= rho.sum()
        t = phi[sl] / phi[sl].sum()
        wq = w[sl].mean()
        loss += wq * -(t * np.log(rho)).sum()
        g[sl] = wq * (rho - t)
        lam = rho - t
        params = lam / (1 - rho)
        second = rho * (params.sum() - params)
        params2 = second / (1 - rho)
        g_lgb[sl] = w[sl] * (lam + second + rho * (params2.sum() - params2))
        h[sl] = rho * (1 - rho)
    return loss, g, g_lgb, h


@pytest.mark.parametrize("seed", [5, 0, 12345])
def test_matches_reference_round_by_round(seed):
    s = scores(1)
    w = np.linspace(0.5, 2.0, s.size)
    ours, lgbm = XENDCG(seed=seed), XENDCG(seed=seed, convention="lightgbm")
    prep, prep_lgb = ours.prepare(LABELS, SIZES, w), lgbm.prepare(LABELS, SIZES, w)
    for r, phi in enumerate(phis(LABELS, SIZES, seed, 3)):
        loss, g, g_lgb, h = reference(s, LABELS, SIZES, phi, w)
        got_g, got_h = ours.grad_hess_prepared(s, prep)
        np.testing.assert_allclose(got_g, g, rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(ours.loss_prepared(s, prep), loss, rtol=1e-12)  # the same round
        got_lg, got_lh = lgbm.grad_hess_prepared(s, prep_lgb)
        np.testing.assert_allclose(got_lg, g_lgb, rtol=1e-9, atol=1e-14)
        owner_w = np.repeat([w[a:b].mean() for a, b in zip(np.r_[0, np.cumsum(SIZES)[:-1]], np.cumsum(SIZES))],
                            SIZES)
        np.testing.assert_allclose(got_h, owner_w * h, rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(got_lh, w * h, rtol=1e-10, atol=1e-14)


def test_gradient_is_the_derivative_of_the_rounds_loss():
    check_derivatives(XENDCG(), scores(2))
    check_derivatives(XENDCG(seed=9), scores(3), weight=np.linspace(1.0, 3.0, LABELS.size))


def test_deterministic_per_seed_and_round_whatever_the_threads():
    s = scores(4)
    obj = XENDCG(seed=3)
    runs = rounds_per_thread_count(lambda prep: obj.grad_hess_prepared(s, prep)[0], obj)
    for a, b in zip(*runs):
        assert np.array_equal(a, b)
    assert not np.array_equal(runs[0][0], runs[0][1])  # each round draws new noise
    assert not np.array_equal(runs[0][0], XENDCG(seed=4).grad_hess(s, LABELS, SIZES)[0])
    assert np.array_equal(runs[0][0], obj.grad_hess(s, LABELS, SIZES)[0])  # a fresh prepare is round 0


def test_expected_value_over_rounds():
    """The mean gradient over rounds tends to ``rho - E[phi / sum phi]`` (the paper's XE-NDCG)."""
    s = np.array([0.3, -0.2, 0.1, 0.0])
    y = np.array([2.0, 0.0, 1.0, 0.0])
    obj = XENDCG(seed=1)
    prep = obj.prepare(y, [4])
    mean = np.mean([obj.grad_hess_prepared(s, prep)[0] for _ in range(3000)], axis=0)
    gamma = np.random.default_rng(0).uniform(size=(200_000, 4))
    phi = 2.0 ** y - gamma
    target = (phi / phi.sum(axis=1, keepdims=True)).mean(axis=0)
    rho = np.exp(s) / np.exp(s).sum()
    np.testing.assert_allclose(mean, rho - target, atol=2e-3)


def test_degenerate_queries():
    obj = XENDCG()
    g, h = obj.grad_hess([1.0], [3.0], [1])
    assert g.tolist() == [0.0] and h.tolist() == [0.0] and obj.loss([1.0], [3.0], [1]) == 0.0
    # all labels equal (or all zero): only the noise separates the rows; gradients still sum to 0
    for y in ([0.0, 0.0, 0.0], [2.0, 2.0, 2.0]):
        g, h = obj.grad_hess([0.0, 0.0, 0.0], y, [3])
        assert g.any() and abs(g.sum()) < 1e-15 and np.all(h > 0)
    s = np.array([1e100, -1e100, 0.0])
    for o in (XENDCG(), XENDCG(convention="lightgbm")):
        g, h = o.grad_hess(s, [1.0, 0.0, 2.0], [3])
        assert np.all(np.isfinite(g)) and np.all(np.isfinite(h)) and np.all(h >= 0)
        assert np.isfinite(o.loss(s, [1.0, 0.0, 2.0], [3]))


def test_like_lightgbm_seeds():
    assert XENDCG.like_lightgbm() == XENDCG(convention="lightgbm")  # objective_seed 5
    assert XENDCG.like_lightgbm(seed=0, objective_seed=9).seed == 9
    assert XENDCG.like_lightgbm(seed=0).seed == 8855  # measured: LightGBM's seed=0 trains these trees
    with pytest.raises(TypeError):
        XENDCG.like_lightgbm(lambdarank_norm=True)


def test_bad_options():
    with pytest.raises(ValueError, match="seed"):
        XENDCG(seed=-1)
    with pytest.raises(TypeError, match="seed"):
        XENDCG(seed=1.5)
    with pytest.raises(ValueError, match="convention"):
        XENDCG(convention="xgboost")
    with pytest.raises(ValueError, match="labels"):
        XENDCG().grad_hess([0.0, 1.0], [701.0, 0.0], [2])
    with pytest.raises(ValueError, match="integer"):
        XENDCG(convention="lightgbm").grad_hess([0.0, 1.0], [1.5, 0.0], [2])


@pytest.mark.parametrize("lgb_params", [{}, {"objective_seed": 11}, {"seed": 0}, {"seed": 3, "objective_seed": 7}],
                         ids=repr)
def test_lightgbm_convention_trains_lightgbms_rank_xendcg(lgb_params):
    import customobj
    from customobj import adapters
    import lightgbm as lgb

    data = customobj.synthetic(80, 15, 8, seed=3)
    params = dict(num_leaves=7, learning_rate=0.2, verbose=-1, num_threads=1, min_data_in_leaf=5,
                  deterministic=True, force_row_wise=True)
    native = lgb.train(dict(params, objective="rank_xendcg", **lgb_params),
                       lgb.Dataset(data.X, data.y, group=data.group), 10)
    obj = adapters.lightgbm_objective(XENDCG.like_lightgbm(**lgb_params))
    ours = lgb.train(dict(params, objective=obj), lgb.Dataset(data.X, data.y, group=data.group), 10)
    # LightGBM rounds its gradients to float32 in its own loop; ours are rounded once, at the end.
    np.testing.assert_allclose(ours.predict(data.X, raw_score=True), native.predict(data.X, raw_score=True),
                               rtol=0, atol=1e-6)


@pytest.mark.parametrize("library", ["lightgbm", "xgboost", "ole"])
def test_training_improves_ranking(library):
    training_improves(XENDCG(), library)
