"""The paper example scripts (examples/*.py) run end to end on tiny settings (--quick: one fold,
a few rounds, the first queries of MQ2008) and write tables / CSV / PNG with the expected shape
and sane values. The scripts are imported and their ``main(argv)`` called in-process (shares the
numba caches, keeps the share of the suite small)."""
import csv
import math
import sys
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))


def run(script, data_dir, out, *extra):
    import importlib

    mod = importlib.import_module(script)
    argv = ["--quick", "--datasets", "mq2008", "--data-dir", str(data_dir), "--out", str(out), *extra]
    return mod.main(argv)


def read_csv(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def floats(rows, col):
    vals = [float(r[col]) for r in rows]
    assert all(math.isfinite(v) for v in vals), (col, vals)
    return np.array(vals)


def in_unit(rows, *cols):
    for c in cols:
        v = floats(rows, c)
        assert np.all((v >= 0) & (v <= 1)), (c, v)


def check_png(path):
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 10_000  # a real plot, not an empty canvas


@pytest.fixture
def figures(monkeypatch):
    """The figures the scripts save, kept for inspection (``save_figure`` still writes them)."""
    import _common

    kept, save = [], _common.save_figure

    def keep(fig, args, name):
        kept.append(fig)
        return save(fig, args, name)

    monkeypatch.setattr(_common, "save_figure", keep)
    return kept


def check_figure(fig, data_name):
    """A title names the data; no legend covers a plot area; no curve hides under another."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)  # saved and closed: give it a canvas again
    canvas.draw()
    renderer = canvas.get_renderer()
    assert fig._suptitle is not None and data_name in fig._suptitle.get_text(), fig._suptitle
    for ax in fig.axes:
        legend = ax.get_legend()
        assert legend is not None
        box, area = legend.get_window_extent(renderer), ax.get_window_extent(renderer)
        assert not box.overlaps(area), (ax.get_title(), "legend covers the curves")
        lines = [ln for ln in ax.get_lines() if ln.get_label() and not ln.get_label().startswith("_")]
        ys = [np.asarray(ln.get_ydata(), float) for ln in lines]
        span = max((float(np.nanmax(y) - np.nanmin(y)) for y in ys if y.size), default=0.0) or 1.0
        for i in range(len(lines)):
            for j in range(i):
                xi, xj = np.asarray(lines[i].get_xdata(), float), np.asarray(lines[j].get_xdata(), float)
                if xi.shape == xj.shape and np.array_equal(xi, xj):
                    assert np.max(np.abs(ys[i] - ys[j])) > 0.004 * span, (
                        ax.get_title(), lines[i].get_label(), "hides under", lines[j].get_label())


def legend_looks(ax):
    """label -> (line style, marker, marker face colour) of each legend entry, as drawn."""
    return {h.get_label(): (h.get_linestyle(), h.get_marker(), str(h.get_markerfacecolor()))
            for h in ax.get_legend().legend_handles}


def test_qbrank(data_dir, tmp_path, figures):
    table = run("qbrank", data_dir, tmp_path)
    check_figure(figures[-1], "MQ2008")
    rows = read_csv(tmp_path / "qbrank_table.csv")
    assert len(rows) == len(table) == 11  # GBT + 2 QBRank x 2 hessians, each LS on/off; RankSVM
    assert {r["method"] for r in rows} == {"GBT", "QBRank P2", "QBRank P2+L1", "RankSVM (linear)"}
    assert {(r["hessian"], r["line_search"]) for r in rows if r["method"] == "QBRank P2"} == {
        ("exact", "on"), ("exact", "off"), ("upper_bound", "on"), ("upper_bound", "off")}
    in_unit(rows, *[f"P@{k}%" for k in range(10, 101, 10)])
    assert np.all(floats(rows, "DCG@5") >= 0)
    # precision@100% = 1 - mis-ordered fraction: the rankers beat chance on MQ2008's pairs
    assert np.median(floats(rows, "P@100%")) > 0.5
    assert (tmp_path / "qbrank_folds.csv").is_file() and (tmp_path / "qbrank_table.txt").is_file()
    check_png(tmp_path / "qbrank.png")


def test_mpboost(data_dir, tmp_path, figures):
    run("mpboost", data_dir, tmp_path)
    check_figure(figures[-1], "MQ2008")
    # issue 30: one panel of rounds overlapped all 8 series; now one panel per learner, 4 series each
    for ax in figures[-1].axes[1:]:
        assert len(ax.get_legend().legend_handles) <= 4, ax.get_title()
    for ax in figures[-1].axes:  # a stumps entry never looks like the trees entry of its DDF
        looks = legend_looks(ax)
        stumps = {lab.split()[0]: v for lab, v in looks.items() if "stumps" in lab and "=" not in lab}
        trees = {lab.split()[0]: v for lab, v in looks.items() if "trees" in lab and "=" not in lab}
        assert all(stumps[d] != trees[d] for d in stumps.keys() & trees.keys()), looks
    rows = read_csv(tmp_path / "mpboost_table.csv")
    assert [(r["learner"], r["ddf"]) for r in rows] == [
        (lr, d) for lr in ("stumps", "trees") for d in ("BINARY", "LDD", "LOGDD", "LOGITDD")]
    in_unit(rows, "vali@5", *[f"@{k}" for k in range(1, 11)], "misordered")
    T = floats(rows, "T")
    assert np.all((T >= 1) & (T <= 8))
    check_png(tmp_path / "mpboost.png")


def test_chapelle(data_dir, tmp_path, figures):
    run("chapelle", data_dir, tmp_path)
    check_figure(figures[-1], "MQ2008")
    rows = read_csv(tmp_path / "chapelle_ranking.csv")
    assert len(rows) == 9  # 4 objectives x 2 libraries + linear RankSVM
    assert {r["library"] for r in rows} == {"lightgbm", "xgboost", "scipy"}
    assert {r["method"] for r in rows if r["library"] == "xgboost"} == {
        "regression", "RankSVM (sq. hinge)", "StructuredDCG@10", "LambdaRank"}
    in_unit(rows, "ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10")
    spam = read_csv(tmp_path / "chapelle_webspam.csv")
    assert [(r["model"], float(r["lambda"])) for r in spam] == [
        (m, lam) for m in ("linear", "trees") for lam in (0.0, 0.03, 0.1, 0.3, 1.0)]
    in_unit(spam, "AUC", "accuracy")
    assert all(float(r["AUC gain vs lambda=0"]) == 0.0 for r in spam if float(r["lambda"]) == 0.0)
    check_png(tmp_path / "chapelle.png")


def test_lambdamart(data_dir, tmp_path, figures):
    run("lambdamart", data_dir, tmp_path)
    check_figure(figures[-1], "fold 1")  # issue 30: no title named the data and fold; curves hid each other
    rankers = read_csv(tmp_path / "lambdamart_rankers.csv")
    assert [r["method"] for r in rankers] == [
        "RankNet", "LambdaRank-NDCG", "LambdaRank-ERR", "LambdaRank-MAP", "native lambdarank"]
    in_unit(rankers, "ndcg@1", "ndcg@3", "ndcg@10", "err@10", "map")
    adapt = read_csv(tmp_path / "lambdamart_adaptation.csv")
    assert [r["model"] for r in adapt] == ["base (A)", "B only", "adapted: base (A) + B", "A and B together"]
    in_unit(adapt, "ndcg@10", "err@10")
    comb = read_csv(tmp_path / "lambdamart_combination.csv")
    assert len(comb) == 4
    in_unit(comb, "alpha", "vali s1", "vali s2", "vali combined", "test combined")
    # alpha = 0 and 1 are candidates, so the combination is never worse on the fold it was fitted on
    assert np.all(floats(comb, "vali combined") >= np.maximum(floats(comb, "vali s1"), floats(comb, "vali s2")) - 1e-12)
    check_png(tmp_path / "lambdamart.png")


def test_ole(data_dir, tmp_path, figures):
    table, summary = run("ole", data_dir, tmp_path)
    check_figure(figures[-1], "fold 1")  # issue 30: no title named the data and fold
    rows = read_csv(tmp_path / "ole_table.csv")
    assert [(r["system"], r["criterion"]) for r in rows] == [
        (s, c) for s in ("LambdaMART", "McRank") for c in ("SE", "WSE", "OLE")]
    in_unit(rows, "ndcg@1", "ndcg@3", "ndcg@10", "err")
    assert np.all(floats(rows, "train loss") > 0) and np.all(floats(rows, "seconds") > 0)
    # McRank is pointwise: OLE and WSE grow the same trees (Xia et al., Theorem 1)
    mc = {r["criterion"]: r for r in rows if r["system"] == "McRank"}
    for m in ("ndcg@1", "ndcg@3", "ndcg@10", "err", "train loss"):
        assert float(mc["OLE"][m]) == pytest.approx(float(mc["WSE"][m]), rel=1e-9, abs=1e-12)
    summ = read_csv(tmp_path / "ole_summary.csv")
    assert [r["system"] for r in summ] == ["LambdaMART", "McRank"]
    for r in summ:
        won, n = map(int, r["OLE > SE + 0.001"].split("/"))
        assert n == 4 and 0 <= won <= n
    check_png(tmp_path / "ole.png")


# --- the shared helpers ---------------------------------------------------------------------------
def test_linear_primal_matches_direct_minimisation():
    """Truncated Newton with the pair-coupling Hessian reaches the minimiser that a plain quasi-Newton
    on the same loss (numerical gradient, no Hessian) finds."""
    from scipy.optimize import minimize

    import _common as C
    import customobj as co

    rng = np.random.default_rng(0)
    sizes = np.array([6, 5, 7])
    X = rng.standard_normal((sizes.sum(), 3))
    y = rng.integers(0, 3, sizes.sum()).astype(float)
    lam = 0.5
    w = C.linear_ranksvm(C.Split(X, y, sizes), lam=lam)
    obj = co.RankSVM()
    f = lambda v: obj.loss(X @ v, y, sizes) + 0.5 * lam * v @ v  # noqa: E731
    ref = minimize(f, np.zeros(3), method="BFGS", options={"gtol": 1e-9}).x
    np.testing.assert_allclose(w, ref, atol=1e-4)


def test_split_queries_and_head():
    import _common as C

    X = np.arange(20, dtype=np.float32).reshape(10, 2)
    s = C.Split(X, np.arange(10.0), np.array([3, 4, 3]))
    sub = s.queries([2, 0])
    np.testing.assert_array_equal(sub.y, [7, 8, 9, 0, 1, 2])
    np.testing.assert_array_equal(sub.sizes, [3, 3])
    assert s.head(7).n_queries == 2 and s.head(1).n_queries == 1


def test_staged_scores_match_the_models():
    """Per-round scores summed tree by tree equal the libraries' own predictions after k rounds."""
    import lightgbm as lgb
    import xgboost as xgb

    import _common as C
    import customobj as co
    from customobj.data import synthetic

    d = synthetic(n_queries=30, docs_per_query=10, n_features=5, seed=1)
    tr = C.Split(np.asarray(d.X), d.y, np.asarray(d.group))
    args = C.make_parser("t", rounds=6).parse_args(["--threads", "1"])
    b = C.train_lightgbm(co.QBRank(), tr, 6, C.lgb_params(args), line_search=0.5)
    init = np.full(tr.y.size, 0.25)
    st = C.staged_lightgbm(b, tr.X, init)
    assert st.shape == (6, tr.y.size)
    np.testing.assert_allclose(st[2], init + b.predict(tr.X, num_iteration=3, raw_score=True), atol=1e-10)
    bx = C.train_xgboost(co.RankNet(), tr, 6, args)
    sx = C.staged_xgboost(bx, tr.X)
    np.testing.assert_allclose(sx[2], bx.predict(xgb.DMatrix(tr.X), iteration_range=(0, 3), output_margin=True),
                               atol=1e-5)
    assert isinstance(b, lgb.Booster)


def test_draw_curves_names_both_of_two_curves_that_would_hide_each_other():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import _common

    fig, ax = plt.subplots()
    _common.draw_curves(ax, [([1, 2, 3], [0.1, 0.5, 0.9], "a", {}), ([1, 2, 3], [0.1, 0.5, 0.9 + 1e-6], "b", {}),
                             ([1, 2, 3], [0.2, 0.4, 0.8], "c", {})])
    assert [ln.get_label() for ln in ax.get_lines()] == ["a = b", "c"]
    fig2, ax2 = plt.subplots()  # equal over part of their length: the earlier one drawn wide and pale beneath
    _common.draw_curves(ax2, [([1, 2, 3, 4], [0.1, 0.2, 0.3, 0.4], "a", {"lw": 1.0}),
                              ([1, 2, 3, 4], [0.1, 0.2, 0.3, 0.9], "b", {"lw": 1.0})])
    under, over = ax2.get_lines()
    assert under.get_linewidth() > 2 * over.get_linewidth() and under.get_zorder() < over.get_zorder()
    plt.close(fig)
    plt.close(fig2)
