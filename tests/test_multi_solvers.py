"""customobj/multi/solvers.py: each method's per-round weights against a direct (slow) solve of its
defining problem, a dense grid over the simplex or the box, on random and degenerate Gram matrices
(parallel, opposite and zero gradients)."""
import itertools

import numpy as np
import pytest

from customobj.multi.methods import METHODS, check_settings
from customobj.multi.solvers import augmented_lagrangian, epo_problem, first_memory, step


def settings(name, m, **kw):
    opts = dict(preference=None, bounds=None, reference_point=None, smoothing=None, mgda_u=None, penalty=None,
                secondary_cap=None, random_state=None, dual_interval=None)
    opts.update(kw)
    return check_settings(METHODS[name], m, **opts)


def simplex_grid(m, n=400):
    """Points of the simplex on a grid (m = 2: n + 1 points; m = 3: about n^2 / 2)."""
    if m == 2:
        t = np.linspace(0, 1, n + 1)
        return np.stack([t, 1 - t], axis=1)
    pts = [(i / n, j / n, 1 - (i + j) / n) for i in range(n + 1) for j in range(n + 1 - i)]
    return np.array(pts)


def gradients(kind, m, rng, n=30):
    g = rng.normal(size=(m, n))
    if kind == "parallel":
        g[1] = 2.5 * g[0]
    elif kind == "opposite":
        g[1] = -g[0]
    elif kind == "zero":
        g[1] = 0.0
    return g


KINDS = ["random", "parallel", "opposite", "zero"]


# --- EPO ---------------------------------------------------------------------------------------------------
def epo_reference(costs, gram, pref, grid):
    """Balance mode, formed from the paper's definitions here (not the module's helper)."""
    rt = (1 / pref) / np.linalg.norm(1 / pref)
    anchor = costs - rt * (costs @ rt)
    g_hat = gram / np.linalg.eigvalsh(gram)[-1] if np.linalg.eigvalsh(gram)[-1] > 0 else gram
    a_hat = anchor / np.linalg.norm(anchor)
    values = np.sum((grid @ g_hat.T - a_hat) ** 2, axis=1)
    return values, g_hat, a_hat


@pytest.mark.parametrize("m", [2, 3])
@pytest.mark.parametrize("kind", KINDS)
def test_epo_balance_mode_solves_its_least_squares_over_the_simplex(m, kind):
    rng = np.random.default_rng(m * 10 + KINDS.index(kind))
    grid = simplex_grid(m, 400 if m == 2 else 150)
    for _ in range(3):
        g = gradients(kind, m, rng)
        gram = g @ g.T
        pref = rng.uniform(0.2, 1, m)
        costs = rng.uniform(0.5, 2, m)
        s = settings("epo", m, preference=pref)
        rt = (1 / s.preference) / np.linalg.norm(1 / s.preference)
        if 1 - (costs @ rt / np.linalg.norm(costs)) ** 2 < 0.01:  # near the ray: descent mode, tested below
            costs = costs + 0.5 * (np.eye(m)[0] - rt * rt[0])
        res = step(s, first_memory(m), costs, gram)
        values, g_hat, a_hat = epo_reference(costs, gram, s.preference, grid)
        assert res.weights.min() >= 0 and res.weights.sum() == pytest.approx(1)
        got = np.sum((g_hat @ res.weights - a_hat) ** 2)
        assert got <= values.min() + 1e-6  # at least as good as the best grid point
        if kind == "random" and np.linalg.cond(gram) < 1e6:  # strictly convex: one minimiser
            assert np.abs(res.weights - grid[np.argmin(values)]).max() < (3e-3 if m == 2 else 2e-2)


def test_epo_descent_mode_keeps_the_cost_change_on_the_ray():
    rng = np.random.default_rng(5)
    pref = np.array([0.45, 0.55])
    rt = (1 / pref) / np.linalg.norm(1 / pref)
    costs = 1.7 * rt  # on the ray: descend
    solved = 0
    for _ in range(5):
        g = rng.normal(size=(2, 20))
        g[1] = 0.6 * g[0] + 0.8 * g[1]  # correlated, so a direction along the ray exists in the hull
        gram = g @ g.T
        res = step(settings("epo", 2, preference=pref), first_memory(2), costs, gram)
        # closed form for m = 2: (I - rr^T) G alpha = 0 on the segment alpha = (t, 1 - t)
        p = (np.eye(2) - np.outer(rt, rt)) @ gram
        row = p[0]
        t = -row[1] / (row[0] - row[1])
        if 0 <= t <= 1 and not res.fallback:
            assert res.weights == pytest.approx([t, 1 - t], abs=1e-5)
            change = gram @ res.weights
            assert abs(change @ np.array([rt[1], -rt[0]])) < 1e-6 * np.linalg.norm(change)
            solved += 1
        else:
            assert res.weights == pytest.approx(pref)  # MO-LightGBM's fallback: the preference
    assert solved >= 2


# --- weighted Chebyshev ------------------------------------------------------------------------------------
def test_chebyshev_puts_all_weight_on_the_largest_weighted_cost():
    rng = np.random.default_rng(1)
    for _ in range(20):
        m = rng.integers(2, 5)
        pref, costs, ref = rng.uniform(0.1, 1, m), rng.uniform(0, 3, m), rng.uniform(0, 0.5, m)
        s = settings("chebyshev", m, preference=pref, reference_point=ref)
        w = step(s, first_memory(m), costs, np.zeros((m, m))).weights
        want = max(range(m), key=lambda k: s.preference[k] * (costs[k] - ref[k]))
        assert w.tolist() == [1.0 if k == want else 0.0 for k in range(m)]


def test_smoothing_is_a_moving_average_of_the_weights():
    s = settings("chebyshev", 2, smoothing=0.75)
    mem = first_memory(2)
    r1 = step(s, mem, np.array([2.0, 1.0]), np.zeros((2, 2)))
    assert r1.weights.tolist() == [1.0, 0.0]  # the first round has nothing to average
    r2 = step(s, r1.memory, np.array([1.0, 2.0]), np.zeros((2, 2)))
    assert r2.weights == pytest.approx([0.75, 0.25])
    r3 = step(s, r2.memory, np.array([1.0, 2.0]), np.zeros((2, 2)))
    assert r3.weights == pytest.approx([0.5625, 0.4375])


# --- WC-MGDA -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("m", [2, 3])
@pytest.mark.parametrize("kind", KINDS)
def test_wc_mgda_solves_its_min_max_over_the_simplex(m, kind):
    rng = np.random.default_rng(100 + m * 10 + KINDS.index(kind))
    grid = simplex_grid(m, 400 if m == 2 else 150)
    for u in (0.1, 1.0):
        g = gradients(kind, m, rng)
        gram = g @ g.T
        pref, costs, ref = rng.uniform(0.2, 1, m), rng.uniform(0.5, 2, m), np.zeros(m)
        s = settings("wc_mgda", m, preference=pref, mgda_u=u)
        res = step(s, first_memory(m), costs, gram)
        # the defining problem, formed here: r-hat = r / ||r * l_0||, K = G * r r^T / lambda_max
        r_hat = s.preference / np.linalg.norm(s.preference * costs)
        k = gram * np.outer(r_hat, r_hat)
        k = k / np.linalg.eigvalsh(k)[-1]
        w = r_hat * (costs - ref)
        f = -grid @ w + u * np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", grid, k, grid), 0))
        # the module returns r-hat * alpha normalised: undo it to read alpha
        alpha = res.weights / r_hat
        alpha /= alpha.sum()
        got = -alpha @ w + u * np.sqrt(max(alpha @ k @ alpha, 0))
        assert got <= f.min() + 1e-6
        assert res.weights.min() >= 0 and res.weights.sum() == pytest.approx(1)


# --- EC-MGDA -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_ec_mgda_solves_its_min_max_over_the_box(kind):
    rng = np.random.default_rng(200 + KINDS.index(kind))
    m = 3
    cap = np.array([0.5, 0.4])
    for _ in range(3):
        g = gradients(kind, m, rng)
        gram = g @ g.T
        costs = rng.uniform(0.5, 2, m)
        bounds = rng.uniform(0.3, 2.5, m - 1)
        s = settings("ec_mgda", m, bounds=bounds, secondary_cap=cap, mgda_u=0.3)
        res = step(s, first_memory(m), costs, gram)
        # formed here: costs over their first-round normalisers, G over its largest eigenvalue
        norm = np.concatenate([[costs[0]], np.abs(costs[1:] - bounds)])
        c = bounds / norm[1:] - costs[1:] / norm[1:]
        top = np.linalg.eigvalsh(gram)[-1]
        g_hat = gram / top
        wp = 1 - cap.mean()
        ticks = [np.linspace(0, cap[i], 121) for i in range(m - 1)]
        box = np.array(list(itertools.product(*ticks)))
        full = np.column_stack([np.full(len(box), wp), box])
        f = box @ c + 0.3 * np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", full, g_hat, full), 0))
        x = res.weights[1:] / res.weights[0] * wp  # undo the normalisation
        b = np.concatenate([[wp], x])
        got = x @ c + 0.3 * np.sqrt(max(b @ g_hat @ b, 0))
        assert got <= f.min() + 1e-6
        assert np.all(x <= cap + 1e-9) and res.weights.sum() == pytest.approx(1)


# --- epsilon-constraint (augmented Lagrangian) ---------------------------------------------------------------
def test_augmented_lagrangian_multipliers_are_its_gradient_and_the_dual_update():
    rng = np.random.default_rng(3)
    m = 3
    for _ in range(10):
        bounds = rng.uniform(0.5, 1.5, m - 1)
        s = settings("epsilon_constraint", m, bounds=bounds, penalty=rng.uniform(0.5, 3))
        duals = rng.uniform(0, 2, m - 1)
        costs = rng.uniform(0.2, 2, m)
        res = step(s, first_memory(m)._replace(duals=duals), costs, np.zeros((m, m)))
        h = 1e-6
        fd = [(augmented_lagrangian(costs + h * e, s, duals) - augmented_lagrangian(costs - h * e, s, duals)) / (2 * h)
              for e in np.eye(m)]
        assert res.weights == pytest.approx(fd, rel=1e-5, abs=1e-7)  # d AL / d l_k: (1, nu_k / eps_k)
        nu = np.maximum(0, duals + s.penalty * (costs[1:] / bounds - 1))
        assert res.memory.duals == pytest.approx(duals)  # lambda is kept until the outer step
        every = step(settings("epsilon_constraint", m, bounds=bounds, penalty=s.penalty, dual_interval=1),
                     first_memory(m)._replace(duals=duals), costs, np.zeros((m, m)))
        assert every.memory.duals == pytest.approx(nu) and every.weights == pytest.approx(res.weights)


def test_augmented_lagrangian_multipliers_move_every_dual_interval_rounds():
    s = settings("epsilon_constraint", 2, bounds=[1.0], penalty=1.0, dual_interval=3)
    mem = first_memory(2)
    seen = []
    for _ in range(7):  # the cost stays twice its bound: each outer step adds mu * (2 - 1) = 1
        mem = step(s, mem, np.array([1.0, 2.0]), np.zeros((2, 2))).memory
        seen.append(float(mem.duals[0]))
    assert seen == [0.0, 0.0, 1.0, 1.0, 1.0, 2.0, 2.0]


def test_degenerate_rounds_never_give_nan():
    for name, kw in [("epo", {}), ("wc_mgda", {}), ("ec_mgda", {"bounds": [1.0]}), ("chebyshev", {}),
                     ("epsilon_constraint", {"bounds": [1.0]})]:
        s = settings(name, 2, **kw)
        mem = first_memory(2)
        for costs in (np.zeros(2), np.array([1.0, 1.0])):
            res = step(s, mem, costs, np.zeros((2, 2)))
            assert np.all(np.isfinite(res.weights)) and res.weights.min() >= 0, name
            mem = res.memory


@pytest.mark.parametrize("kind", KINDS)
def test_epo_closed_form_for_two_labels_equals_the_general_solve(kind):
    from customobj.multi.solvers import _epo

    rng = np.random.default_rng(300 + KINDS.index(kind))
    s = settings("epo", 2, preference=[0.45, 0.55])
    rt = (1 / s.preference) / np.linalg.norm(1 / s.preference)
    for costs in [rng.uniform(0.5, 2, 2) for _ in range(4)] + [1.3 * rt]:  # balance, and descent on the ray
        g = gradients(kind, 2, rng)
        gram = g @ g.T
        closed, fell = _epo(costs, gram, s)
        general, fell_general = _epo(costs, gram, s, general=True)
        assert fell == fell_general
        g_hat, a_hat, descent, _ = epo_problem(costs, gram, s.preference)
        if not descent and not fell:  # the same objective value (the minimiser may not be unique)
            f = lambda a: np.sum((g_hat @ a - a_hat) ** 2)  # noqa: E731
            grid = simplex_grid(2)
            assert f(closed) == pytest.approx(f(general), abs=1e-8)
            assert f(closed) <= np.sum((grid @ g_hat.T - a_hat) ** 2, axis=1).min() + 1e-9
        else:
            np.testing.assert_allclose(closed, general, atol=1e-6)
