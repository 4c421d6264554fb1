"""benchmarks/clicks.py (issue 22's click protocol) end to end on MQ2008 Fold1 at a tiny size,
in-process: the per-log scores, the paired differences, the propensities and the PNG it writes."""
import re

import numpy as np
import pytest

from conftest import import_benchmark

bench = import_benchmark("clicks")

METHODS = "naive LambdaRank(),Unbiased(LambdaRank()),IPS LambdaRank (true propensities)"


@pytest.fixture(scope="module")
def run(data_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("clicks")
    argv = ["--data", str(data_dir / "mq2008" / "Fold1"), "--seeds", "2", "--rounds", "2", "--only", METHODS,
            "--plot", str(out / "p.png")]
    return out, argv


def test_scores_paired_differences_propensities_and_plot(run, capsys):
    out, argv = run
    assert bench.main(argv) == 0
    text = capsys.readouterr().out
    scores = {m.group(1).strip(): [float(v) for v in m.group(3).split(", ")]
              for m in re.finditer(r"^  (.+?)  (0\.\d{4})  \((.*)\)$", text, re.M)}
    assert set(scores) == set(METHODS.split(","))
    for vals in scores.values():
        assert len(vals) == 2 and all(0.0 < v <= 1.0 for v in vals)
    for name in ("Unbiased(LambdaRank())", "IPS LambdaRank (true propensities)"):  # paired to the naive run
        m = re.search(re.escape(name) + r"\s+([+-]\d\.\d{4})  se", text)
        diff = np.mean(scores[name]) - np.mean(scores["naive LambdaRank()"])
        assert float(m.group(1)) == pytest.approx(diff, abs=1.5e-4)
    ips = re.search(r"^  IPS LambdaRank \(true propensities\)\s+(\[.*\])$", text, re.M).group(1)
    np.testing.assert_allclose(eval(ips), np.round(1.0 / np.arange(1, 11), 3))
    png = out / "p.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in out.iterdir()] == ["p.png"]  # written atomically: no temporary file left


def test_only_with_an_unknown_name_is_refused_before_training(run):
    _, argv = run
    with pytest.raises(SystemExit, match="no method named"):
        bench.main([*argv[:6], "--only", "no such method", "--seeds", "1"])


def test_only_splits_at_commas_outside_parentheses():
    assert bench._split_top("naive LambdaRank(),Unbiased(LambdaRank(), query_norm=False), x") == [
        "naive LambdaRank()", "Unbiased(LambdaRank(), query_norm=False)", " x"]


def test_speed_mode_times_each_loss_and_its_unbiased(run, capsys):
    _, argv = run
    assert bench.main([*argv[:2], "--speed", "1", "--rounds", "2"]) == 0
    text = capsys.readouterr().out
    ratios = [float(x) for x in re.findall(r"ratio (\d+\.\d+)", text)]
    assert len(ratios) == 4 and all(r > 0 for r in ratios)  # three losses, then the training run
    assert "Unbiased(LambdaRank()) " in text and "rows," in text
