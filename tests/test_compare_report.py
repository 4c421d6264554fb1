"""Evaluation, summaries, the paired test and the results files of ``customobj compare``
(customobj/compare/report.py); Holm's correction of the paired test is in tests/test_compare_stats.py."""
import math

import numpy as np
import pytest

from customobj.compare.report import format_table, mean_curve, paired_comparison, read_results, summarize


def test_read_results_checks_the_schema(tmp_path):
    path = tmp_path / "results.json"
    for text, msg in [("[1]", "not a customobj compare results file"),
                      ('{"schema": "customobj-compare-results", "schema_version": 99}', "schema_version 99 is not supported"),
                      ('{"schema": "customobj-compare-results", "schema_version": 1, "methods": "x"}',
                       "field 'methods' must be a JSON array"),
                      ("{", "not valid JSON")]:
        path.write_text(text)
        with pytest.raises(ValueError, match=msg):
            read_results(path)


def test_mean_curve_and_paired_helpers():
    np.testing.assert_allclose(mean_curve([[0.1, 0.2, 0.3], [0.3, 0.4]]), [0.2, 0.3])
    per_query = {"a": np.array([0.5, 0.6, 0.7, 0.8]), "b": np.array([0.6, 0.7, 0.8, 0.95])}
    (p,) = paired_comparison(per_query, ["a", "b"], "a")
    assert p["mean_diff_ndcg@10"] == pytest.approx(0.1125)
    assert (p["wins"], p["losses"], p["ties"]) == (4, 0, 0)
    assert 0 < p["ttest_p"] < 0.05 and 0 < p["wilcoxon_p"] <= 0.2
    (same,) = paired_comparison({"a": per_query["a"], "c": per_query["a"].copy()}, ["a", "c"], "a")
    assert math.isnan(same["wilcoxon_p"]) and same["ties"] == 4


def test_summarize_reports_the_seed_spread_beside_the_fold_spread():
    rows = [{"method": "m", "fold": f, "seed": s, "ndcg@10": v}
            for f, s, v in [(1, 0, 0.5), (1, 1, 0.7), (2, 0, 0.2), (2, 1, 0.2)]]
    for r in rows:
        for c in ("ndcg@1", "ndcg@3", "ndcg@5", "err@10", "map", "precision@100%", "valid_ndcg@10",
                  "train_time_s", "best_round", "rounds_trained"):
            r[c] = 1.0
    (s,) = summarize(rows, ["m"])
    assert (s["n_folds"], s["n_seeds"]) == (2, 2)
    # fold means 0.6 and 0.2: mean 0.4, std 0.2; seed stds 0.1 and 0.0: mean 0.05
    assert s["ndcg@10_mean"] == pytest.approx(0.4) and s["ndcg@10_std"] == pytest.approx(0.2)
    assert s["ndcg@10_seed_std"] == pytest.approx(0.05)
    table = format_table([s])
    assert "NDCG@10 seed±" in table and "0.0500" in table and "mean over 2 seeds" in table
    one = summarize([r for r in rows if r["seed"] == 0], ["m"])[0]
    assert "n_seeds" not in one and "ndcg@10_seed_std" not in one and "seed±" not in format_table([one])


def test_one_fold_prints_no_spread():
    rows = [{"method": "m", "fold": 1, "seed": 0, "ndcg@10": 0.5}]
    for c in ("ndcg@1", "ndcg@3", "ndcg@5", "err@10", "map", "precision@100%", "valid_ndcg@10",
              "train_time_s", "best_round", "rounds_trained"):
        rows[0][c] = 1.0
    table = format_table(summarize(rows, ["m"]))
    assert "±" not in table.splitlines()[2] and "0.5000" in table
    assert "test metrics: one fold (no spread)" in table
    two = format_table(summarize(rows + [dict(rows[0], fold=2, **{"ndcg@10": 0.7})], ["m"]))
    assert "0.6000±0.100" in two and "mean±std over 2 folds" in two


def test_csv_text_leaves_non_finite_floats_empty_and_ignores_extra_keys():
    from customobj.compare.report import csv_text

    text = csv_text([{"a": 0.25, "b": float("nan"), "extra": 1}, {"a": float("inf"), "b": "x"}], ["a", "b"])
    assert text == "a,b\r\n0.25,\r\n,x\r\n"


def test_json_text_is_strict_json_that_read_results_reads_back(tmp_path):
    from customobj.compare.report import RESULTS_SCHEMA_VERSION, json_text

    payload = {"methods": ["m"], "folds": [1], "results": [{"v": np.float32(0.5), "n": np.int64(3)}],
               "summary": [{"s": float("nan")}], "paired": [], "curves": {"m": [np.array([0.1, np.inf])]},
               "settings": {"rounds": 2}, "seeds": [0], "tuning": None}
    text = json_text(payload)
    assert "NaN" not in text and "Infinity" not in text
    path = tmp_path / "results.json"
    path.write_text(text)
    doc = read_results(path)
    assert doc["schema_version"] == RESULTS_SCHEMA_VERSION
    assert doc["results"] == [{"v": 0.5, "n": 3}] and doc["summary"] == [{"s": None}]
    assert doc["curves"] == {"m": [[0.1, None]]}


def test_render_files_serialises_every_table_without_a_plot_when_asked():
    from customobj.compare.report import render_files

    rows = [{"method": "m", "fold": 1, "seed": 0, "ndcg@10": 0.5}]
    files = render_files(rows, [{"method": "m", "n_folds": 1, "ndcg@10_mean": 0.5}], [], {"methods": ["m"]},
                         curves=None)
    assert sorted(files) == ["paired.csv", "results.csv", "results.json", "summary.csv"]
    assert all(isinstance(v, bytes) for v in files.values())
    assert files["summary.csv"].decode().splitlines()[0] == "method,n_folds,ndcg@10_mean"
    assert files["results.csv"].decode().splitlines()[1].startswith("m,1,0,,,,0.5,")


def test_one_name_for_precision_at_100_percent():
    """Issue 30: compare's column "p@100%" (table "P@100%") named the metric "precision@100%"."""
    from customobj.compare.report import RESULT_COLUMNS, TEST_METRICS

    assert ("precision@100%", "precision@100%") in TEST_METRICS
    assert all(column == metric for column, metric in TEST_METRICS) and "p@100%" not in RESULT_COLUMNS


def test_a_long_title_fits_the_figure():
    """Issue 30: the --clicks run's curves.png title was cut off on both sides."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from customobj.compare import report

    title = ("Validation NDCG@10 — synthetic LETOR-like data (300 queries, about 40 rows each), trained on "
             "pbm:eta=1,sessions=12,shown=10 clicks, folds 1,2,3,4,5, seed 0 (the first of 3; the tables average them)")
    for width in (9, 7.5):
        fig, ax = report._new_axes((width, 5))
        report._figure_title(ax, title, width)
        fig.tight_layout()
        FigureCanvasAgg(fig).draw()
        box, frame = ax.title.get_window_extent(), fig.bbox
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and box.y1 <= frame.y1, (width, box, frame)
        assert ax.title.get_text().replace("\n", " ") == title
        import matplotlib.pyplot as plt
        plt.close(fig)


def test_position_bias_rows_and_figure():
    from customobj.compare.report import position_bias_png, position_bias_rows

    bias = {"lgb:Unbiased": [{"fold": 1, "seed": 0, "estimated": [1.0, 0.6, 0.4]},
                             {"fold": 2, "seed": 0, "estimated": [1.0, 0.5, 0.3]}]}
    rows = position_bias_rows(bias, {"examination": [1.0, 0.5]})
    assert [(r["fold"], r["position"], r["estimated"], r["true"]) for r in rows] == [
        (1, 1, 1.0, 1.0), (1, 2, 0.6, 0.5), (1, 3, 0.4, ""), (2, 1, 1.0, 1.0), (2, 2, 0.5, 0.5), (2, 3, 0.3, "")]
    assert {r["quantity"] for r in rows} == {"examination"}  # a record without "quantity" is the examination
    assert position_bias_png(bias, {"examination": [1.0, 0.5, 1 / 3]}, "Estimated position bias")[:8] == \
        b"\x89PNG\r\n\x1a\n"


def test_position_bias_of_other_quantities_against_their_own_truth():
    """Issue 33: a method reporting other per-position quantities (trust bias' click rates, an affine
    correction's alpha / beta) gets rows of that quantity, compared with that quantity's true curve,
    and a panel of its own in the figure, whose titles fit."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from customobj.compare import report

    bias = {"lgb:Affine": [{"fold": 1, "seed": 0, "quantity": "examination", "estimated": [1.0, 0.4]},
                           {"fold": 1, "seed": 0, "quantity": "epsilon_plus", "estimated": [0.9, 0.8]}]}
    true = {"examination": [1.0, 0.5], "epsilon_plus": [0.98, 0.97], "epsilon_minus": [0.65, 0.33]}
    rows = report.position_bias_rows(bias, true)
    assert [(r["quantity"], r["position"], r["estimated"], r["true"]) for r in rows] == [
        ("examination", 1, 1.0, 1.0), ("examination", 2, 0.4, 0.5), ("epsilon_plus", 1, 0.9, 0.98),
        ("epsilon_plus", 2, 0.8, 0.97)]
    assert report.csv_text(rows, report.POSITION_BIAS_COLUMNS).splitlines()[0] == \
        "method,fold,seed,quantity,position,estimated,true"
    title = ("Estimated position bias — synthetic LETOR-like data (300 queries), trained on "
             "trust:eta=1,sessions=12,shown=10,epsilon_plus=0.98/0.97/0.96/0.95 clicks, folds 1,2,3,4,5")
    seen = {}
    real_png = report._png

    def keep(fig):
        FigureCanvasAgg(fig).draw()
        seen["axes"] = [(ax.title.get_window_extent(), ax.title.get_text(), ax.get_legend()) for ax in fig.axes]
        seen["frame"] = fig.bbox
        return real_png(fig)

    report._png = keep
    try:
        assert report.position_bias_png(bias, true, title)[:4] == b"\x89PNG"
    finally:
        report._png = real_png
    frame = seen["frame"]
    # a panel per quantity estimated; epsilon_minus, which no method estimates, has its truth in the CSV only
    assert [t.replace("\n", " ") for _, t, _ in seen["axes"]] == [title, "epsilon_plus"]
    for box, _, legend in seen["axes"]:
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and box.y1 <= frame.y1, (box, frame)
        assert legend is not None
