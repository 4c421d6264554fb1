"""benchmarks/click_study.py (issue 33's semi-synthetic study): a tiny run end to end on MQ2008 Fold1
in-process (the table, JSON, CSV and PNG agree), the Holm step and the verdicts on hand-made units,
the default methods with and without ``customobj.Affine``, and the options refused at the boundary."""
import csv
import json
import re

import numpy as np
import pytest
from scipy import stats

from conftest import import_benchmark

bench = import_benchmark("click_study")

NAIVE, XGB, UNB, AFF = "lgb:LambdaRank", "xgb:rank:ndcg(lambdarank_unbiased=true)", \
    "lgb:Unbiased(objective=LambdaRank)", "lgb:Affine(objective=LambdaRank)"


def test_tiny_study_prints_and_writes_the_same_results(data_dir, tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["--data", str(data_dir), "--datasets", "mq2008", "--folds", "1", "--logs", "2", "--click-models", "trust",
            "--methods", f"{NAIVE},{UNB}", "--rounds", "3", "--sessions", "2", "--out", str(out)]
    assert bench.main(argv) == 0
    captured = capsys.readouterr()
    assert "[4/4 runs" in captured.err  # progress on stderr: 2 logs x 2 methods
    doc = json.loads((out / "click_study.json").read_text())
    assert sorted(p.name for p in out.iterdir()) == sorted(bench.FILES)  # atomic writes leave no temporary file
    units = doc["units"]
    assert [(u["log"], u["method"]) for u in units] == [(1, NAIVE), (1, UNB), (2, NAIVE), (2, UNB)]
    assert {u["log_seed"] for u in units} == {1, bench.LOG_STRIDE + 1}  # fold 1 of logs 1 and 2
    for u in units:
        assert 0.0 < u["ndcg@10"] <= 1.0 and 1 <= u["best_round"] <= u["rounds_trained"] <= 3
        assert u["ndcg@10"] <= u["ndcg@10_compare"]  # compare's convention adds the queries without a relevant row as 1.0
    with open(out / "click_study.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [float(r["ndcg@10"]) for r in rows] == [u["ndcg@10"] for u in units]
    (c,) = doc["contrasts"]  # one pair, the later method minus the earlier
    diff = [units[i + 1]["ndcg@10"] - units[i]["ndcg@10"] for i in (0, 2)]
    assert (c["method"], c["versus"], c["n"]) == (UNB, NAIVE, 2)
    assert c["mean"] == pytest.approx(np.mean(diff), abs=1e-12)
    assert c["p"] == pytest.approx(stats.ttest_1samp(diff, 0.0).pvalue, rel=1e-9) and c["p_holm"] == c["p"]
    text = captured.out
    printed = re.search(r"^  Unbiased\s+(\d\.\d{4}) ± ", text, re.M)
    assert float(printed.group(1)) == pytest.approx(np.mean([units[1]["ndcg@10"], units[3]["ndcg@10"]]), abs=5e-5)
    assert re.search(r"Unbiased - naive LambdaRank\s+" + re.escape(f"{c['mean']:+.4f} ["), text)
    assert "mq2008 trust: no verdict" in text and "Affine not among the methods" in text
    assert doc["verdicts"][0].startswith("mq2008 trust: no verdict")
    assert (out / "click_study.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _rows(dataset, model, scores):
    """Unit rows of one data set and click model: ``scores[method]`` per (fold, log) unit."""
    return [{"dataset": dataset, "click_model": model, "fold": 1 + k // 3, "log": 1 + k % 3, "method": m,
             "ndcg@10": float(v)} for m, vals in scores.items() for k, v in enumerate(vals)]


def test_holm_over_each_family_against_a_hand_computation():
    base = np.linspace(0.6, 0.7, 6)
    d_xgb = np.array([0.01, 0.02, 0.00, 0.03, 0.01, 0.02])
    d_unb = np.array([0.03, 0.01, 0.04, 0.00, 0.05, 0.02])
    scores = {NAIVE: base, XGB: base + d_xgb, UNB: base + d_unb}
    other = {NAIVE: base, XGB: base + d_unb, UNB: base + d_xgb}  # a second family, corrected on its own
    means, contrasts = bench.analyse(_rows("mq2008", "pbm", scores) + _rows("ohsumed", "pbm", other), [NAIVE, XGB, UNB])
    fam = [c for c in contrasts if c["dataset"] == "mq2008"]
    assert [(c["method"], c["versus"]) for c in fam] == [(XGB, NAIVE), (UNB, NAIVE), (UNB, XGB)]
    # by hand: t = mean / (sd / sqrt 6) = 0.015 / (0.0104881 / 2.44949) = 3.5032 -> p 0.017225 (5 df);
    # 0.025 / (0.0187083 / 2.44949) = 3.2733 -> p 0.022118; 0.01 / (0.0282843 / 2.44949) = 0.8660 -> p 0.42607
    np.testing.assert_allclose([c["p"] for c in fam], [0.017225, 0.022118, 0.42607], atol=2e-6)
    # Holm: sorted 0.017225 x 3 = 0.051674; 0.022118 x 2 = 0.044237, raised to the running maximum 0.051674;
    # 0.42607 x 1 (the same order in the second family, whose first two contrasts swap their p-values)
    np.testing.assert_allclose([c["p_holm"] for c in fam], [0.051674, 0.051674, 0.42607], atol=3e-6)
    np.testing.assert_allclose([c["p_holm"] for c in contrasts if c["dataset"] == "ohsumed"],
                               [0.051674, 0.051674, 0.42607], atol=3e-6)
    assert [m["mean"] for m in means[:3]] == pytest.approx([base.mean(), (base + d_xgb).mean(), (base + d_unb).mean()])


def test_verdicts_follow_the_issue_targets():
    rng = np.random.default_rng(0)
    base = rng.uniform(0.6, 0.7, 15)
    noise, other = rng.normal(0, 0.002, (2, 15))
    trust = {XGB: base, UNB: base + 0.001 + other, AFF: base + 0.02 + noise}  # Affine clearly above both
    pbm_ok = {XGB: base, UNB: base + 0.01, AFF: base + 0.01 + noise}  # Affine within noise of Unbiased
    pbm_bad = {XGB: base, UNB: base + 0.03, AFF: base + noise}  # Affine clearly below Unbiased
    rows = _rows("mq2008", "trust", trust) + _rows("mq2008", "pbm", pbm_ok) + _rows("ohsumed", "pbm", pbm_bad) \
        + _rows("ohsumed", "dcm", trust)
    _, contrasts = bench.analyse(rows, [XGB, UNB, AFF])
    lines = bench.verdicts(contrasts, ["mq2008", "ohsumed"], ["trust", "pbm", "dcm"])
    by = {line.split(":")[0]: line for line in lines}
    assert "target MET" in by["mq2008 trust"] and "Affine beats XGBoost unbiased: yes" in by["mq2008 trust"]
    assert "target MET" in by["mq2008 pbm"] and "Affine no worse than Unbiased: yes" in by["mq2008 pbm"]
    assert "target NOT met" in by["ohsumed pbm"] and "no worse than Unbiased: NO (-0.03" in by["ohsumed pbm"]
    assert by["ohsumed dcm"].endswith("no target (the table only)")
    assert "no verdict" in by["ohsumed trust"] and "not measured" in by["ohsumed trust"]  # no trust units there
    flipped = bench._contrast(contrasts, "mq2008", "trust", "Unbiased", "Affine")  # stored as Affine - Unbiased
    assert flipped["mean"] == pytest.approx(-np.mean(0.019 + noise - other), abs=1e-12)
    assert flipped["ci_high"] < 0 and flipped["losses"] == 15


def test_default_methods_include_affine_only_when_it_exists_and_compare_trains_it(monkeypatch):
    import customobj

    notes = []
    monkeypatch.delattr(customobj, "Affine", raising=False)
    assert bench.default_methods(notes.append) == ",".join(bench.BASE_METHODS)
    assert "not importable" in notes[-1] and "leave out" in notes[-1]
    monkeypatch.setattr(customobj, "Affine", object, raising=False)
    if bench._compare_refuses(bench.AFFINE_METHOD) is not None:  # the class alone: compare must parse it too
        assert bench.default_methods(notes.append) == ",".join(bench.BASE_METHODS)
        assert "compare cannot train" in notes[-1] and "leave it out" in notes[-1]
    assert bench._compare_refuses("lgb:LambdaRank") is None and "NoSuchLoss" in bench._compare_refuses("lgb:NoSuchLoss")
    monkeypatch.setattr(bench, "_compare_refuses", lambda name: None)  # as once compare trains Affine
    said = len(notes)
    assert bench.default_methods(notes.append).split(",")[-1] == bench.AFFINE_METHOD and len(notes) == said


@pytest.mark.parametrize("datasets, models", [(["mq2008", "ohsumed"], ["trust", "pbm", "dcm", "ubm"]),
                                              (["mq2008"], ["trust"])])
def test_every_title_and_label_of_the_figure_fits(datasets, models):
    import matplotlib.pyplot as plt

    base = np.random.default_rng(0).uniform(0.3, 0.7, 15)
    scores = {NAIVE: base, XGB: base + 0.01 * np.sin(np.arange(15)), UNB: base + 0.002 * np.arange(15),
              AFF: base + 0.01 * np.cos(np.arange(15))}
    rows = [r for d in datasets for m in models for r in _rows(d, m, scores)]
    fig = bench.draw(bench.analyse(rows, list(scores))[1], datasets, models, 15)
    try:
        fig.canvas.draw()
        renderer, box = fig.canvas.get_renderer(), fig.bbox
        texts = [fig._suptitle] + [t for ax in fig.axes for t in (ax.title, *ax.get_yticklabels(), ax.xaxis.label)]
        assert len(fig.axes) == len(datasets) * len(models)
        for t in texts:
            if t.get_text():
                e = t.get_window_extent(renderer)
                assert box.x0 <= e.x0 and e.x1 <= box.x1 and box.y0 <= e.y0 and e.y1 <= box.y1, t.get_text()
    finally:
        plt.close(fig)


#: A bad command line -> what its error message must name.
BAD_OPTIONS = {"--datasets mq2009": "--datasets", "--click-models pbm,pbm": "--click-models",
               "--click-models random": "--click-models", "--folds 0": "fold", "--logs 0": "--logs",
               "--logs 101": "--logs", "--rounds -3": "--rounds", "--jobs 0": "--jobs", "--eta -1": "eta",
               "--methods lgb:NoSuchLoss,lgb:LambdaRank": "NoSuchLoss", "--methods lgb:LambdaRank": "--methods",
               "--data /no/such/folder": "--data"}


@pytest.mark.parametrize("line", sorted(BAD_OPTIONS))
def test_bad_options_are_refused_before_any_training(line, capsys):
    with pytest.raises(SystemExit) as exc:
        bench.parse_args(line.split())
    assert exc.value.code == 2
    assert BAD_OPTIONS[line] in capsys.readouterr().err
