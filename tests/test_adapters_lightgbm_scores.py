"""customobj.adapters._lightgbm_scores: each row's leaf read off the change of LightGBM's cached scores.

The end-to-end check (the same training as traversing the trees, DART left alone) is in
tests/test_adapters_exact_leaves.py, where ExactLeaves uses it.
"""
import numpy as np

from customobj.adapters._lightgbm_scores import leaves_from_score_change


def test_leaves_from_score_change_names_each_rows_leaf_or_refuses():
    """Exactly one leaf value within rounding of every row's change: its leaves; otherwise False."""
    rng = np.random.default_rng(12)
    for n_leaves in (1, 7, 31, 200):  # 200: the binary-search branch
        values = rng.normal(size=n_leaves) * 0.1
        leaf = rng.integers(0, n_leaves, 500)
        before = rng.normal(size=500) * 10.0 ** rng.integers(-3, 4, 500)
        after = before + values[leaf]
        order = np.argsort(values, kind="stable")
        out = np.empty(500, dtype=np.int64)
        assert leaves_from_score_change(after, before, values[order], order, out)
        np.testing.assert_array_equal(out, leaf)
    values = np.array([0.5, -0.25, 0.5])  # two leaves with one value: ambiguous
    order = np.argsort(values, kind="stable")
    out = np.empty(2, dtype=np.int64)
    assert not leaves_from_score_change(np.array([1.5, 0.75]), np.array([1.0, 1.0]), values[order], order, out)
    for bad in (1.0 + 1e-9, np.nan):  # a change that is no leaf value (e.g. DART's rescaled trees); NaN
        after = np.array([0.75, bad])
        assert not leaves_from_score_change(after, np.array([1.0, 1.0]), np.sort(values[:2]), np.array([1, 0]), out)
