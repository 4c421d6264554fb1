"""customobj.combine.best_linear_combination: exact sweep vs brute force."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from customobj.combine import _candidate_curve, best_linear_combination
from customobj.groups import Groups
from customobj.metrics import _discounts, _row_gains, ndcg


def reference_best(s1, s2, y, sizes, k, empty=1.0):
    """Every pairwise crossing in (0, 1) enumerated in Python; NDCG evaluated at 0, 1 and all midpoints."""
    cross, start = [], 0
    for n in sizes:
        for i in range(start, start + n):
            for j in range(i + 1, start + n):
                d1, d2 = s1[i] - s1[j], s2[i] - s2[j]
                if d1 != d2 and 0 < d2 / (d2 - d1) < 1:
                    cross.append(d2 / (d2 - d1))
        start += n
    edges = np.unique(np.r_[0.0, cross, 1.0])
    cands = np.r_[0.0, 0.5 * (edges[:-1] + edges[1:]), 1.0]
    vals = [ndcg(a * s1 + (1 - a) * s2, y, sizes, k, empty=empty) for a in cands]
    return float(np.max(vals))


def random_data(seed, n_groups=8, max_size=9, n_levels=None):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, max_size + 1, n_groups)
    n = int(sizes.sum())
    y = rng.integers(0, 3, n).astype(float)
    if n_levels:  # few distinct score values: ties and simultaneous crossings
        s1, s2 = rng.integers(0, n_levels, n).astype(float), rng.integers(0, n_levels, n).astype(float)
    else:
        s1, s2 = rng.normal(size=n), rng.normal(size=n)
    return s1, s2, y, sizes


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("k", [1, 3, None])
def test_beats_dense_grid_and_matches_reference(seed, k):
    s1, s2, y, sizes = random_data(seed, n_levels=4 if seed % 2 else None)
    alpha, best = best_linear_combination(s1, s2, y, sizes, k=k)
    assert 0.0 <= alpha <= 1.0
    assert best == ndcg(alpha * s1 + (1 - alpha) * s2, y, sizes, k)
    # Grid (2i+1)/4000 plus both ends: it never lands exactly on a crossing of the small-integer
    # scores (denominators <= 6), where rows tie and row order - not the scores - decides NDCG.
    grid = np.r_[0.0, (np.arange(2000) + 0.5) / 2000, 1.0]
    grid_best = max(ndcg(a * s1 + (1 - a) * s2, y, sizes, k) for a in grid)
    assert best >= grid_best - 1e-12
    assert best == pytest.approx(reference_best(s1, s2, y, sizes, k), abs=1e-12)


def test_sweep_values_equal_direct_evaluation_at_every_candidate():
    # the incremental sweep (per-query step changes merged across queries) must reproduce the
    # metric at every candidate alpha, including alpha = 0 and 1 where ties break by row order
    for seed in range(3):
        s1, s2, y, sizes = random_data(seed, n_groups=10, n_levels=3 if seed else None)
        g = Groups.from_sizes(sizes)
        for k, empty in [(3, 1.0), (None, 0.0), (5, None)]:
            alphas, means = _candidate_curve(s1, s2, _row_gains(y, None), g, _discounts(g.ptr, "standard"),
                                             2**62 if k is None else k, empty)
            assert np.all(np.diff(alphas) > 0) and alphas[0] == 0.0 and alphas[-1] == 1.0
            e = "exclude" if empty is None else empty
            direct = [ndcg(a * s1 + (1 - a) * s2, y, sizes, k, empty=e) for a in alphas]
            np.testing.assert_allclose(means, direct, rtol=0, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), k=st.sampled_from([1, 2, 5, None]))
def test_hypothesis_matches_reference(seed, k):
    s1, s2, y, sizes = random_data(seed, n_groups=5, max_size=7, n_levels=5 if seed % 3 == 0 else None)
    if sizes.sum() == 0:
        return
    _, best = best_linear_combination(s1, s2, y, sizes, k=k)
    assert best == pytest.approx(reference_best(s1, s2, y, sizes, k), abs=1e-12)


def test_known_optimum_at_an_end():
    rng = np.random.default_rng(5)
    sizes = [6, 5, 7]
    y = rng.integers(0, 4, 18).astype(float)
    perfect = y + rng.uniform(0, 0.1, 18)  # ranks every query ideally
    noise = rng.normal(size=18)
    alpha, best = best_linear_combination(perfect, noise, y, sizes, k=None)
    assert best == 1.0
    assert ndcg(alpha * perfect + (1 - alpha) * noise, y, sizes, None) == 1.0
    alpha2, best2 = best_linear_combination(noise, perfect, y, sizes, k=None)
    assert best2 == 1.0 and alpha2 < 1.0


def test_constant_ranker_and_all_zero_queries():
    # s2 constant: at alpha = 0 every query keeps row order; crossing structure comes from s1 only
    y = np.array([0.0, 2.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0])
    s1 = np.array([0.1, 0.9, 0.5, 0.3, 0.2, 0.1, 0.8, 0.0])
    s2 = np.zeros(8)
    sizes = [3, 3, 2]  # middle query all zero: scores `empty` at every alpha
    alpha, best = best_linear_combination(s1, s2, y, sizes, k=2)
    assert best == 1.0 and alpha > 0
    alpha0, best0 = best_linear_combination(s2, s2, y, sizes, k=2)  # nothing ever crosses
    assert alpha0 == 0.0 and best0 == ndcg(s2, y, sizes, 2)
    _, best_ex = best_linear_combination(s1, s2, y, sizes, k=2, empty="exclude")
    assert best_ex == 1.0
    with pytest.raises(ValueError, match="no query to average"):
        best_linear_combination(s1, s2, np.zeros(8), sizes, empty="exclude")


def test_bad_inputs():
    s = np.zeros(4)
    with pytest.raises(ValueError, match="s2 has 3 rows but data has 4 rows"):
        best_linear_combination(s, s[:3], s, [4])
    with pytest.raises(ValueError, match="group sizes sum to 3 but data has 4 rows"):
        best_linear_combination(s, s, s, [3])
    with pytest.raises(ValueError, match="s1 must be finite"):
        best_linear_combination(np.r_[np.inf, s[1:]], s, s, [4])
    with pytest.raises(ValueError, match="k must be >= 1"):
        best_linear_combination(s, s, s, [4], k=0)


# --- issue 13 ---------------------------------------------------------------------------------------------
def test_hostile_options_and_labels_refused():
    s1, s2, y = np.array([0.3, 0.1, 0.2]), np.array([0.1, 0.3, 0.2]), np.array([0.0, 2.0, 1.0])
    for call, exc, msg in [
        (lambda: best_linear_combination(s1, s2, y, [3], k=2**63), ValueError, r"k must be <= 1099511627776"),
        (lambda: best_linear_combination(s1 > 0.15, s2, y, [3]), TypeError, r"s1 must be real numbers"),
        (lambda: best_linear_combination(s1, s2, [0, 1024, 1], [3]), ValueError, r"labels reach 1024 .* <= 700"),
        (lambda: best_linear_combination(s1, s2, y, [2**62] * 3 + [2**62 + 10]), ValueError, r"group sizes must be <="),
        (lambda: best_linear_combination(s1, s2, [0, 1, 2], [3], gain=[0, 1, 1e300]), ValueError, r"gain entries must be <="),
    ]:
        with pytest.raises(exc, match=msg):
            call()
    alpha, best = best_linear_combination(s1, s2, [0.0, 700.0, 1.0], [3])
    assert 0.0 <= alpha <= 1.0 and 0.0 <= best <= 1.0
