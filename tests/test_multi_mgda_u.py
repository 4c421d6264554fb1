"""customobj/multi/mgda_u.py: WC-MGDA's and EC-MGDA's automatic ``u`` (``mgda_u="auto"``) against a slow
reference (the least ``u`` whose round value ``V(u)`` is at most the target, by bisection over a dense grid
of the method's weights, on random and degenerate Gram matrices: parallel, opposite and zero gradients),
the fork's branches (first rounds, clamps, trivial, failure), bad input, and a run of rounds of MO-LightGBM's
``uOptimizeLoop`` transcribed with its cone program (``getUTunedAlpha``) written out over its own variables."""
import numpy as np
import pytest

from _oracles import gradients

from customobj.multi import mgda_u as MU
from customobj.multi import solvers
from customobj.multi.methods import METHODS, check_settings
from customobj.multi.solvers import first_memory, step

KINDS = ["random", "parallel", "opposite", "zero"]


def settings(name, m, **kw):
    opts = dict(preference=None, bounds=None, reference_point=None, smoothing=None, mgda_u="auto", penalty=None,
                secondary_cap=None, random_state=None, dual_interval=None)
    opts.update(kw)
    return check_settings(METHODS[name], m, **opts)


def simplex_grid(m, n):
    if m == 2:
        t = np.linspace(0, 1, n + 1)
        return np.stack([t, 1 - t], axis=1)
    return np.array([(i / n, j / n, 1 - (i + j) / n) for i in range(n + 1) for j in range(n + 1 - i)])


class Reference:
    """``V(u) = max over the points P of gains.P - u sqrt(P' K P)``, the points a dense grid of the method's
    weights plus where ``K``'s null space meets them (the degenerate Gram matrices' kinks)."""

    def __init__(self, gains, k, points, feasible):
        w, v = np.linalg.eigh(k)
        extra = []
        for j in np.flatnonzero(w <= 1e-12 * max(w[-1], 1e-300)):
            z = feasible(v[:, j])
            if z is not None:
                extra.append(z)
        self.points = np.concatenate([points] + [np.array(extra)] * bool(extra))
        self.gain = self.points @ gains
        self.norm = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", self.points, k, self.points), 0.0))

    def value(self, u):
        return float(np.max(self.gain - u * self.norm))

    def slope(self, u):
        return float(self.norm[np.argmax(self.gain - u * self.norm)])

    def least_u(self, target, hi=1e3):
        """The least ``u`` with ``V(u) <= target``: 0 if already at 1e-6, inf past ``hi``, else bisection."""
        tol = 1e-12 * max(1.0, abs(target))
        if self.value(MU.TRIVIAL_U) <= target + tol:
            return 0.0
        if self.value(hi) > target + tol:
            return np.inf
        lo = MU.TRIVIAL_U
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if self.value(mid) > target + tol else (lo, mid)
        return hi


def wc_round(rng, kind, m):
    """A WC-MGDA round after its first: ``(settings, memory, costs, gram, reference)``."""
    g = gradients(kind, m, rng)
    pref = rng.uniform(0.2, 1, m)
    s = settings("wc_mgda", m, preference=pref)
    first_costs, costs = rng.uniform(0.5, 2, m), rng.uniform(0.5, 2, m)
    r_hat = s.preference / np.linalg.norm(s.preference * first_costs)  # formed here, as the fork's r_pref
    g0 = rng.normal(size=(m, 30))
    top = np.linalg.eigvalsh(g0 @ g0.T * np.outer(r_hat, r_hat))[-1]  # ||K_0||_2^2
    k = g @ g.T * np.outer(r_hat, r_hat) / top
    mem = first_memory(m)._replace(rounds=4, scales=r_hat, gram_scale=top, u=0.37)
    return s, mem, costs, g @ g.T, Reference(r_hat * costs, k, simplex_grid(m, 20000 if m == 2 else 400), on_simplex)


def on_simplex(z):
    """A null direction of K as a point of the simplex, or None."""
    return z / z.sum() if np.all(z >= -1e-15) or np.all(z <= 1e-15) else None


def ec_round(rng, kind, m):
    g = gradients(kind, m, rng)
    cap = np.full(m - 1, 0.6)
    bounds = rng.uniform(0.3, 1.5, m - 1)
    s = settings("ec_mgda", m, bounds=bounds, secondary_cap=cap)
    scales = rng.uniform(0.5, 2, m)
    g0 = rng.normal(size=(m, 30))
    top = np.linalg.eigvalsh(g0 @ g0.T)[-1]
    costs = rng.uniform(0.5, 2, m)
    wp = 1 - cap.mean()
    gains = np.concatenate([[costs[0] / scales[0]], (costs[1:] - bounds) / scales[1:]])  # L = gains . (wp, alpha_s)
    n = 20000 if m == 2 else 300
    ticks = [np.linspace(0, c, n + 1) for c in cap]
    box = np.stack(np.meshgrid(*ticks, indexing="ij"), -1).reshape(-1, m - 1)
    points = np.column_stack([np.full(len(box), wp), box])
    mem = first_memory(m)._replace(rounds=4, scales=scales, gram_scale=top, u=0.17)
    def in_box(z):  # a null direction of G as (wp, alpha_s) with 0 <= alpha_s <= cap, or None
        if abs(z[0]) < 1e-12:
            return None
        b = wp * z / z[0]
        return b if np.all(b[1:] >= -1e-15) and np.all(b[1:] <= cap + 1e-15) else None
    return s, mem, costs, g @ g.T, Reference(gains, g @ g.T / top, points, in_box)


def expected(ref, target, last_u, min_u, max_u):
    u_star = ref.least_u(target)
    if u_star < MU.TRIVIAL_U:
        return last_u
    return min_u if u_star < min_u else min(u_star, max_u)


@pytest.mark.parametrize("m", [2, 3])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("method", ["wc_mgda", "ec_mgda"])
def test_tuned_u_is_the_least_u_that_holds_the_round_value_to_the_target(method, kind, m):
    rng = np.random.default_rng(KINDS.index(kind) * 10 + m + (100 if method == "ec_mgda" else 0))
    make = wc_round if method == "wc_mgda" else ec_round
    max_u = MU.MAX_U[METHODS[method].method]
    checked = 0
    for _ in range(3):
        s, mem, costs, gram, ref = make(rng, kind, m)
        for u_true in (0.03, 0.3 * max_u, 0.8 * max_u, 3 * max_u):
            target = ref.value(u_true)
            if ref.slope(u_true) < 1e-3:  # V flat (a null direction of K): the least u is ill-posed
                continue
            res = step(s, mem._replace(target=target), costs, gram)
            want = expected(ref, target, mem.u, s.u, max_u)
            assert res.memory.u == pytest.approx(want, rel=1e-4 if m == 3 else 1e-6)
            assert res.memory.target == target  # kept: only the first rounds and a trivial tuning set it
            checked += 1
        # a target the round's value is already below: the previous u, and the target reset to V(previous u)
        res = step(s, mem._replace(target=ref.value(0.0) + 1.0), costs, gram)
        assert res.memory.u == mem.u
        assert res.memory.target == pytest.approx(ref.value(mem.u), abs=1e-6)
    assert checked >= 1


def test_the_branches_and_the_clamp():
    rng = np.random.default_rng(7)
    s, mem, costs, gram, ref = wc_round(rng, "random", 2)
    seen = {}
    for u_true in (0.0, 0.05, 2.0, 25.0):
        target = ref.value(u_true) + (1e-3 if u_true == 0 else 0.0)
        pick = MU.choose_u(_solver(s, mem, costs, gram), s, 4, 0.37, target, False)
        seen[pick.status] = pick.u
    assert seen[MU.Status.TRIVIAL] == 0.37
    assert seen[MU.Status.AT_MIN] == 0.1
    assert seen[MU.Status.TUNED] == pytest.approx(2.0, rel=1e-6)
    assert seen[MU.Status.AT_MAX] == 10.0
    # the first two rounds: min_u, the target the second round's value at min_u
    mem0 = first_memory(2)
    r0 = step(s, mem0, costs, gram)
    r1 = step(s, r0.memory, costs * 0.9, gram)
    assert (r0.memory.u, r1.memory.u) == (0.1, 0.1)
    assert r1.memory.target != r0.memory.target and np.isfinite(r1.memory.target)
    # a fixed u is never tuned and sets no target
    fixed = settings("wc_mgda", 2, mgda_u=0.2)
    assert step(fixed, mem._replace(target=1.0), costs, gram).memory.u == 0.2


def _solver(s, mem, costs, gram):
    """The round's problem at u as ``_wc_mgda`` poses it (the solvers' objective and SLSQP call), to drive
    ``choose_u`` directly and read its branch."""
    r_hat = mem.scales
    k = gram * np.outer(r_hat, r_hat) / mem.gram_scale
    gains = r_hat * costs

    def solve_at(u):
        fun, jac = solvers.mgda_objective(gains, k, u)
        x, ok = solvers.solve_box(fun, jac, np.zeros(s.m), np.ones(s.m), np.full(s.m, 1 / s.m),
                                  [{"type": "eq", "fun": lambda a: np.array([a.sum() - 1])}])
        return MU.Solve(x, ok, float(gains @ x), float(np.sqrt(x @ k @ x + 1e-18)))
    return solve_at


def test_a_failed_tuning_keeps_the_previous_u_and_the_target(monkeypatch):
    rng = np.random.default_rng(8)
    s, mem, costs, gram, ref = wc_round(rng, "random", 2)
    target = ref.value(2.0)
    real = solvers.solve_box
    calls = []

    def failing(*a, **kw):  # the tuning's solves fail, then the round's own solve succeeds
        calls.append(1)
        x, ok = real(*a, **kw)
        return x, ok and len(calls) > 1
    monkeypatch.setattr(solvers, "solve_box", failing)
    res = step(s, mem._replace(target=target), costs, gram)
    assert res.memory.u == mem.u and res.memory.target == target and not res.fallback
    # every gradient zero: K is zero, V does not fall with u, the fork's program is infeasible
    monkeypatch.setattr(solvers, "solve_box", real)
    res = step(s, mem._replace(target=ref.value(0.0) - 1.0), costs, np.zeros((2, 2)))
    assert res.memory.u == mem.u and np.all(np.isfinite(res.weights))


def test_ec_mgda_smooths_u_as_the_fork_does():
    rng = np.random.default_rng(9)
    s, mem, costs, gram, ref = ec_round(rng, "random", 2)
    target = ref.value(0.2)
    plain = step(s, mem._replace(target=target), costs, gram).memory.u
    smooth = step(s._replace(smoothing=0.25), mem._replace(target=target), costs, gram).memory.u
    assert plain == pytest.approx(0.2, rel=1e-6)
    assert smooth == pytest.approx(0.75 * plain + 0.25 * mem.u, rel=1e-12)
    wc = wc_round(rng, "random", 2)  # WC-MGDA's get_EMA_u is commented out in the fork: not smoothed
    t = wc[4].value(2.0)
    assert step(wc[0]._replace(smoothing=0.25), wc[1]._replace(target=t), *wc[2:4]).memory.u == pytest.approx(
        2.0, rel=1e-6)


def test_bad_mgda_u():
    with pytest.raises(ValueError, match=r"mgda_u must be one of \['auto'\], got 'Auto'"):
        settings("wc_mgda", 2, mgda_u="Auto")
    with pytest.raises(ValueError, match=r"mgda_u is not read by method='epo'"):
        settings("epo", 2, mgda_u="auto")
    with pytest.raises(TypeError, match=r"mgda_u"):
        settings("ec_mgda", 2, bounds=[1.0], mgda_u=[0.1])
    assert settings("wc_mgda", 2).tune_u and not settings("wc_mgda", 2, mgda_u=0.1).tune_u


# --- MO-LightGBM's loop, transcribed ---------------------------------------------------------------------------
def fork_tuned_u_wc(h, K, p0):
    """``WCMGDA::getUTunedAlpha`` over its own variables ``(u, rho, z, d)`` (lb = 0), ``h = wb - wc``:
    ``min u`` s.t. ``||d|| <= u``, ``z >= 0``, ``rho <= p0``, ``z + K d - rho <= h``; scipy's SLSQP from a few
    starts (the fork: ECOS). ``(solved, u)``."""
    from scipy.optimize import minimize

    m = K.shape[0]
    cons = [{"type": "ineq", "fun": lambda v: np.array([v[0] ** 2 - v[2 + m:] @ v[2 + m:]])},
            {"type": "ineq", "fun": lambda v: np.array([p0 - v[1]])},
            {"type": "ineq", "fun": lambda v: h - v[2:2 + m] - K @ v[2 + m:] + v[1]}]
    best = None
    for u0 in (1.0, 10.0, 100.0):
        res = minimize(lambda v: v[0], np.concatenate([[u0, p0], np.zeros(2 * m)]),
                       jac=lambda v: np.eye(1, 2 + 2 * m)[0], method="SLSQP", constraints=cons,
                       bounds=[(0, None), (None, None)] + [(0, None)] * m + [(None, None)] * m,
                       options={"maxiter": 1000, "ftol": 1e-14})
        if res.success and (best is None or res.x[0] < best):
            best = float(res.x[0])
    return best is not None, best


def psd_sqrt(a):
    w, v = np.linalg.eigh(a)
    return (v * np.sqrt(np.clip(w, 0, None))) @ v.T


def test_wc_mgda_rounds_equal_the_forks_loop_transcribed():
    """Seven rounds of ``WCMGDA::GetCoefficients`` with ``mo_mgda_use_fix_u = false``, two labels: the
    fork's state (``n_iter``, ``p0``, ``prev_u_value``), its ``r_pref`` and ``K`` from the first round, its
    branches; its ``getAlpha`` by a dense grid over the simplex, its ``getUTunedAlpha`` as above."""
    rng = np.random.default_rng(11)
    m, pref = 2, np.array([0.4, 0.6])
    s = settings("wc_mgda", m, preference=pref)
    mem = first_memory(m)
    grid = simplex_grid(m, 200000)
    n_iter, p0, prev_u = 0, None, None
    us = []
    costs = np.array([1.0, 1.4])
    g = rng.normal(size=(m, 40))
    for r in range(7):
        costs = costs * (np.array([0.97, 0.95]) if r < 2 else np.array([1.04, 1.03]))  # costs rise: u moves up
        g = g + 0.3 * rng.normal(size=g.shape)
        gram = g @ g.T
        if n_iter == 0:
            r_pref = pref / np.linalg.norm(pref * costs)
        G2 = gram * np.outer(r_pref, r_pref)
        if n_iter == 0:
            init_k = np.linalg.norm(psd_sqrt(G2), 2)
        K = psd_sqrt(G2) / init_k
        wc = r_pref * costs
        kk = np.einsum("ij,jk,ik->i", grid, K @ K, grid)

        def get_alpha(u):
            vals = grid @ wc - u * np.sqrt(np.maximum(kk, 0))
            return grid[np.argmax(vals)], float(vals.max())  # alpha and -c.x (the fork's p0)
        if n_iter > 1:
            solved, u = fork_tuned_u_wc(-wc, K, p0)
            if not solved:
                use = prev_u
            elif u < 1e-6:
                use = prev_u
                p0 = get_alpha(prev_u)[1]
            else:
                use = max(u, 0.1) if u < 0.1 else min(10.0, u)
        else:
            use = 0.1
            p0 = get_alpha(0.1)[1]
        alpha = get_alpha(use)[0]
        prev_u = use
        want = r_pref * alpha / (r_pref * alpha).sum()
        res = step(s, mem, costs, gram)
        mem = res.memory
        us.append(use)
        assert mem.u == pytest.approx(use, rel=1e-6), r
        assert res.weights == pytest.approx(want, abs=2e-5), r
        n_iter += 1
    assert len(set(np.round(us, 6))) >= 2  # the loop did tune: u moved off min_u
