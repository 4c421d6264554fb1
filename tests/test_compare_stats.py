"""Holm's correction of the paired tests (customobj/compare/stats.py) and how the report uses it."""
import math

import numpy as np
import pytest

from customobj.compare.report import PAIRED_COLUMNS, format_paired, paired_comparison
from customobj.compare.stats import ALPHA, holm


def test_holm_against_a_hand_computed_example():
    # sorted: 0.005 (x4 = 0.02), 0.01 (x3 = 0.03), 0.03 (x2 = 0.06), 0.04 (x1 = 0.04 -> running max 0.06)
    adjusted = holm([0.01, 0.04, 0.03, 0.005])
    np.testing.assert_allclose(adjusted, [0.03, 0.06, 0.06, 0.02], rtol=0, atol=1e-15)


def test_holm_caps_at_one_keeps_nan_out_of_the_count_and_keeps_the_order():
    np.testing.assert_allclose(holm([0.5, 0.6]), [1.0, 1.0])
    # NaN (no test possible) is not a hypothesis: m = 2 here, not 3
    out = holm([0.02, math.nan, 0.04])
    assert math.isnan(out[1])
    np.testing.assert_allclose(out[[0, 2]], [0.04, 0.04])
    assert holm([]).shape == (0,) and np.isnan(holm([math.nan])).all()
    # equal p-values: both get m * p
    np.testing.assert_allclose(holm([0.01, 0.01]), [0.02, 0.02])


def test_holm_is_never_below_the_raw_p_and_never_above_bonferroni():
    p = np.random.default_rng(0).uniform(0, 0.2, size=12)
    a = holm(p)
    assert np.all(a >= p) and np.all(a <= np.minimum(1, p * p.size) + 1e-15)


@pytest.mark.parametrize("bad", [[1.5], [-0.1], [[0.1, 0.2]]])
def test_holm_rejects_what_is_not_a_p_value(bad):
    with pytest.raises(ValueError, match="p_values"):
        holm(bad)


def _per_query():
    rng = np.random.default_rng(1)
    base = rng.uniform(0.3, 0.7, 60)
    return {"base": base, "much_better": base + 0.2 + rng.normal(0, 0.01, 60),
            "noise": base + rng.normal(0, 0.05, 60), "same": base.copy()}


def test_paired_comparison_reports_raw_and_holm_p_values():
    per_query = _per_query()
    paired = paired_comparison(per_query, list(per_query), "base")
    assert [p["method"] for p in paired] == ["much_better", "noise", "same"]
    assert {"wilcoxon_p_holm", "ttest_p_holm"} <= set(PAIRED_COLUMNS)
    for test in ("wilcoxon_p", "ttest_p"):
        np.testing.assert_array_equal([p[f"{test}_holm"] for p in paired], holm([p[test] for p in paired]))
    assert math.isnan(paired[2]["wilcoxon_p_holm"])  # identical rankings: no test, not counted
    assert paired[0]["wilcoxon_p_holm"] == pytest.approx(2 * paired[0]["wilcoxon_p"])  # m = 2 finite


def test_the_terminal_table_marks_what_survives_the_correction():
    rows = [{"method": m, "baseline": "b", "n_queries": 10, "mean_diff_ndcg@10": 0.01, "wins": 5, "losses": 5,
             "ties": 0, "wilcoxon_p": raw, "wilcoxon_p_holm": adj, "ttest_p": raw, "ttest_p_holm": adj}
            for m, raw, adj in [("kept", 0.001, 0.003), ("lost", 0.03, 0.06), ("none", math.nan, math.nan)]]
    text = format_paired(rows)
    lines = {line.split()[0]: line for line in text.splitlines()[3:6]}
    assert lines["kept"].rstrip().endswith("*")
    assert not lines["lost"].rstrip().endswith("*") and not lines["none"].rstrip().endswith("*")
    assert f"significant at {ALPHA:g} after Holm's correction over the 3 methods" in text
    assert text.rstrip().endswith("1 of 3")


def test_paired_difference_is_the_paired_t_test_with_its_interval():
    from scipy import stats

    from customobj.compare.stats import paired_difference

    d = [0.02, 0.01, 0.03, 0.00, 0.04]
    r = paired_difference(d)
    # by hand: mean 0.02, sd 0.0158114, se 0.00707107, t = 2.828427 on 4 df, t_{4, 0.975} = 2.776445
    assert r["mean"] == pytest.approx(0.02) and (r["n"], r["wins"], r["losses"]) == (5, 4, 0)
    assert r["ci_low"] == pytest.approx(0.02 - 2.776445 * 0.00707107, abs=1e-7)
    assert r["ci_high"] == pytest.approx(0.02 + 2.776445 * 0.00707107, abs=1e-7)
    assert r["p"] == pytest.approx(stats.ttest_1samp(d, 0.0).pvalue, rel=1e-12)
    wide = paired_difference(d, level=0.99)
    assert wide["ci_low"] < r["ci_low"] and wide["ci_high"] > r["ci_high"]


def test_paired_difference_without_spread_runs_no_test_and_refuses_bad_input():
    from customobj.compare.stats import paired_difference

    zero = paired_difference([0.0, 0.0, 0.0])
    assert (zero["ci_low"], zero["ci_high"]) == (0.0, 0.0) and math.isnan(zero["p"])
    one = paired_difference([0.1])
    assert one["mean"] == 0.1 and math.isnan(one["p"]) and math.isnan(one["ci_low"])
    for bad, match in (([], "diff"), ([0.1, math.nan], "finite"), ([[0.1]], "diff")):
        with pytest.raises(ValueError, match=match):
            paired_difference(bad)
    with pytest.raises(ValueError, match="level"):
        paired_difference([0.1, 0.2], level=1.0)
