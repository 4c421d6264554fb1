"""customobj/multi/solvers.py: each method's per-round weights against a direct (slow) solve of its
defining problem, a dense grid over the simplex or the box, on random and degenerate Gram matrices
(parallel, opposite and zero gradients)."""
import itertools

import numpy as np
import pytest

from _oracles import gradients

from customobj.multi.methods import METHODS, check_settings
from customobj.multi.solvers import augmented_lagrangian, first_memory, step


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


KINDS = ["random", "parallel", "opposite", "zero"]


# --- EPO ---------------------------------------------------------------------------------------------------
def epo_reference(costs, gram, pref, grid):
    """Mahapatra & Rajan (2020), section 4, formed here from the paper's definitions (not the module's
    helpers): ``(mode, objective values on the grid, feasible mask)``."""
    m = pref.size
    rl = pref * costs
    l_hat = rl / rl.sum()
    mu = np.sum(l_hat * np.log(m * l_hat))  # KL(l_hat || uniform)
    a = pref * (np.log(m * l_hat) - mu)
    c = gram / np.max(np.diag(gram))
    ca = c @ a
    changes = grid @ c  # (points, m): C alpha per grid point (C is symmetric)
    if mu > 1e-4:
        j_up = ca > 0
        rhs = np.where(j_up, -np.inf, ca) if j_up.any() else np.zeros(m)
        if j_up.any():
            rhs[np.argmax(rl)] = 0.0
        feasible = np.all(changes >= rhs - 1e-9, axis=1)
        return "balance", grid @ ca, feasible
    feasible = np.all(changes >= -1e-9, axis=1) & (grid @ ca >= min(ca.max(), 0) - 1e-9)
    return "descent", changes.sum(axis=1), feasible


@pytest.mark.parametrize("m", [2, 3])
@pytest.mark.parametrize("kind", KINDS)
def test_epo_solves_its_linear_program_over_the_simplex(m, kind):
    from customobj.multi.solvers import epo_lp

    rng = np.random.default_rng(m * 10 + KINDS.index(kind))
    grid = simplex_grid(m, 400 if m == 2 else 150)
    seen = set()
    for trial in range(6):
        g = gradients(kind, m, rng)
        gram = g @ g.T
        pref = rng.uniform(0.2, 1, m)
        s = settings("epo", m, preference=pref)
        # balance off the ray; on the ray (r * l uniform) descent
        costs = rng.uniform(0.5, 2, m) if trial % 2 == 0 else 1.3 / s.preference
        mode, values, feasible = epo_reference(costs, gram, s.preference, grid)
        assert epo_lp(costs, gram, s.preference).balance == (mode == "balance")
        res = step(s, first_memory(m), costs, gram)
        w = res.weights
        assert w.min() >= 0 and w.sum() == pytest.approx(1) and np.all(np.isfinite(w))
        if res.fallback:
            continue
        seen.add(mode)
        assert feasible.any()  # solved: the grid has feasible points too (the LP's region is not thin here)
        _, v_w, f_w = epo_reference(costs, gram, s.preference, w[None, :])
        assert f_w[0]  # feasible
        assert v_w[0] >= values[feasible].max() - 1e-6  # at least as good as the best feasible grid point
    if kind == "random":
        assert seen == {"balance", "descent"}


def test_epo_balance_keeps_the_largest_relative_cost_from_rising_and_moves_towards_the_ray():
    rng = np.random.default_rng(5)
    pref = np.array([0.45, 0.55])
    s = settings("epo", 2, preference=pref)
    for _ in range(5):
        g = rng.normal(size=(2, 200))  # nearly orthogonal gradients: a step can lower mu_r
        gram = g @ g.T
        costs = np.array([2.0, 0.5])  # label 1's relative cost is the larger: it must not rise
        res = step(s, first_memory(2), costs, gram)
        assert not res.fallback
        change = gram @ res.weights  # first-order decrease of each cost along -sum alpha_k g_k
        assert change[0] >= -1e-9
        # the non-uniformity mu_r falls at first order: d mu_r / d l = a / (r . l), and the costs change by -change
        rl = pref * costs
        l_hat = rl / rl.sum()
        a = pref * (np.log(2 * l_hat) - np.sum(l_hat * np.log(2 * l_hat)))
        assert a @ change > 0


def test_epo_falls_back_to_the_vertex_of_the_largest_relative_cost_when_balance_is_infeasible():
    from customobj.multi.solvers import solve_simplex_lp

    assert solve_simplex_lp(np.ones(2), np.eye(2), np.array([0.8, 0.8])) is None  # x1, x2 >= .8 on the simplex
    s = settings("epo", 2, preference=[0.5, 0.5])
    res = step(s, first_memory(2), np.array([0.0, 0.0]), np.eye(2))
    assert not res.fallback and res.weights == pytest.approx([0.5, 0.5])  # nothing to balance


def epo_rounds_two(rng, kind, trials):
    """EPO's LPs for two labels (balance and descent, with and without the ray's row) on gradients of
    ``kind``: random, parallel, identical, opposite, zero (one or both), orthogonal, one tiny."""
    from customobj.multi.solvers import epo_lp

    for trial in range(trials):
        g = rng.normal(size=(2, 30))
        if kind == "parallel":
            g[1] = rng.uniform(0.1, 3) * g[0]
        elif kind == "identical":
            g[1] = g[0]
        elif kind == "opposite":
            g[1] = -rng.uniform(0.1, 3) * g[0]
        elif kind == "zero":
            g[1] = 0.0
        elif kind == "both_zero":
            g[:] = 0.0
        elif kind == "orthogonal":
            g[1] -= (g[1] @ g[0]) / (g[0] @ g[0]) * g[0]
        elif kind == "tiny":
            g[1] *= 1e-9
        pref = rng.uniform(0.05, 1, 2)
        pref /= pref.sum()
        # balance off the ray; descent near it (mu below EPO_BALANCED) and on it
        near = [None, 1e-3, 1e-7][trial % 3]
        costs = rng.uniform(0.1, 3, 2) if near is None else (1.3 / pref) * (1 + rng.normal(scale=near, size=2))
        lp = epo_lp(costs, g @ g.T, pref)
        yield lp, (lp.lhs, lp.rhs)
        yield lp, lp.relaxed


TWO_KINDS = ["random", "parallel", "identical", "opposite", "zero", "both_zero", "orthogonal", "tiny"]


@pytest.mark.parametrize("kind", TWO_KINDS)
def test_epo_two_label_lp_in_closed_form_equals_highs(kind):
    """The closed form gives linprog's weights (1e-9) wherever the LP's optimum is unique and well posed:
    the objective not flat, and no row so small (all entries below HiGHS' 1e-7 feasibility tolerance)
    that HiGHS may take it or leave it. Elsewhere its point is feasible within that tolerance and at
    least as good as linprog's."""
    from customobj.multi.solvers import LP_FEASIBILITY, LP_SMALL_ENTRY, simplex_lp_highs, simplex_lp_two

    rng = np.random.default_rng(TWO_KINDS.index(kind))
    modes, compared = set(), 0
    for lp, (lhs, rhs) in epo_rounds_two(rng, kind, 150):
        ours, highs = simplex_lp_two(lp.objective, lhs, rhs), simplex_lp_highs(lp.objective, lhs, rhs)
        kept = np.where(np.abs(lhs) < LP_SMALL_ENTRY, 0.0, lhs)
        row_size = np.abs(kept).max(axis=1, initial=0.0)
        flat = abs(lp.objective[0] - lp.objective[1]) <= 1e-9
        if not flat and not np.any((row_size > 0) & (row_size < LP_FEASIBILITY)):
            compared += 1
            modes.add(lp.balance)
            assert (ours is None) == (highs is None), (ours, highs)
            if ours is not None:
                np.testing.assert_allclose(ours, highs, rtol=0, atol=1e-9)
        elif ours is not None:
            assert ours.min() >= 0 and ours.sum() == pytest.approx(1.0, abs=1e-15)
            assert np.all(kept @ ours >= rhs - LP_FEASIBILITY)
            if highs is not None:
                assert lp.objective @ ours >= lp.objective @ highs - 1e-9
    if kind not in ("identical", "both_zero"):  # these are flat: every point of the interval is optimal
        assert modes == {True, False} and compared >= 200


def test_epo_two_label_lp_cases():
    from customobj.multi.solvers import simplex_lp_two

    up = np.array([1.0, 0.0])
    assert simplex_lp_two(up, np.zeros((0, 2)), np.zeros(0)).tolist() == [1.0, 0.0]  # no rows: a vertex
    assert simplex_lp_two(-up, np.zeros((0, 2)), np.zeros(0)).tolist() == [0.0, 1.0]
    assert simplex_lp_two(np.ones(2), np.zeros((0, 2)), np.zeros(0)).tolist() == [0.0, 1.0]  # flat: lower end
    assert simplex_lp_two(up, np.array([[1.0, 1.0]]), np.array([1.5])) is None  # x1 + x2 >= 1.5
    assert simplex_lp_two(up, np.array([[1.0, 1.0]]), np.array([1.0 + 1e-8])).tolist() == [1.0, 0.0]  # within tol
    two = np.array([[1.0, -1.0], [-1.0, 1.0]])  # t >= 0.5 + 0.5 b1, t <= 0.5 - 0.5 b2
    assert simplex_lp_two(up, two, np.array([-0.2, -0.4])) == pytest.approx([0.7, 0.3], abs=1e-15)
    assert simplex_lp_two(-up, two, np.array([-0.2, -0.4])) == pytest.approx([0.4, 0.6], abs=1e-15)
    assert simplex_lp_two(up, two, np.array([0.2, 0.2])) is None  # t >= 0.6 and t <= 0.4
    crossed = simplex_lp_two(up, two, np.array([2e-8, 2e-8]))  # crossed by 2e-8: the middle, within tolerance
    assert crossed == pytest.approx([0.5, 0.5], abs=1e-15)
    assert simplex_lp_two(-up, np.array([[1e-10, 0.0]]), np.array([5e-11])).tolist() == [0.0, 1.0]  # 1e-10 is 0


@pytest.mark.parametrize("m", [2, 3, 4])
def test_highs_through_milp_gives_linprogs_weights(m):
    """simplex_lp_highs asks HiGHS through milp (no integer variable), a third of linprog's time per call:
    the same weights as linprog(method="highs") on EPO's rounds, degenerate ones included."""
    from scipy.optimize import linprog

    from customobj.multi.solvers import epo_lp, simplex_lp_highs

    rng = np.random.default_rng(60 + m)
    for trial in range(40):
        g = gradients(KINDS[trial % 4], m, rng)
        pref = rng.uniform(0.2, 1, m)
        pref /= pref.sum()
        costs = rng.uniform(0.5, 2, m) if trial % 2 == 0 else (1.3 / pref) * (1 + rng.normal(scale=1e-3, size=m))
        lp = epo_lp(costs, g @ g.T, pref)
        for lhs, rhs in ((lp.lhs, lp.rhs), lp.relaxed):
            ours = simplex_lp_highs(lp.objective, lhs, rhs)
            res = linprog(-lp.objective, A_ub=-lhs if lhs.size else None, b_ub=-rhs if lhs.size else None,
                          A_eq=np.ones((1, m)), b_eq=[1.0], bounds=[(0.0, 1.0)] * m, method="highs")
            assert (ours is None) == (res.status != 0)
            if ours is not None:
                np.testing.assert_allclose(ours, res.x / res.x.sum(), rtol=0, atol=1e-12)


def test_solve_simplex_lp_takes_the_closed_form_for_two_weights(monkeypatch):
    import customobj.multi.solvers as S

    def refuse(*args):
        raise AssertionError("linprog called")

    import customobj.multi.highs_lp as H

    monkeypatch.setattr(S, "simplex_lp_highs", refuse)
    monkeypatch.setattr(H, "model_for", refuse)
    assert S.solve_simplex_lp(np.array([1.0, 0.0]), np.eye(2), np.zeros(2)).tolist() == [1.0, 0.0]
    with pytest.raises(AssertionError):  # three weights: HiGHS' kept model (highs_lp)
        S.solve_simplex_lp(np.ones(3), np.eye(3), np.zeros(3))
    with pytest.raises(AssertionError):  # non-finite entries go to HiGHS, which judges them as before
        S.solve_simplex_lp(np.array([np.nan, 0.0]), np.eye(2), np.zeros(2))


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
