"""benchmarks/trust_interventions.py (estimate_trust against the simulation's alpha / beta, with query
bootstrap intervals) on MQ2008 Fold1 at a tiny size, in-process: the JSON's errors are the estimates'
own, the intervals are the draws' quantiles, a progress line per resample, the figure written."""
import json

import numpy as np
import pytest

from conftest import import_benchmark

bench = import_benchmark("trust_interventions")


def test_tiny_run_reports_errors_intervals_and_the_sweep(data_dir, tmp_path, capsys):
    out, png = tmp_path / "t.json", tmp_path / "t.png"
    argv = ["--data", str(data_dir), "--folds", "1", "--sessions", "4", "--bootstrap", "3", "--n-iter", "15",
            "--sweep", "2", "--logs", "swap,rankers", "--rankers", "0,5", "--out", str(out), "--plot", str(png)]
    assert bench.main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert sum("bootstrap" in line for line in lines) == 6  # every resample of both logs (step 1 at 3 resamples)
    doc = json.loads(out.read_text())
    alpha, beta = bench.truth()
    assert doc["truth"]["alpha"] == pytest.approx(alpha.tolist()) and alpha[0] == pytest.approx(0.33)
    for kind in ("swap", "rankers"):
        rec = doc["folds"]["1"][kind]
        ea, eb = np.abs(np.array(rec["alpha"]) - alpha), np.abs(np.array(rec["beta"]) - beta)
        assert rec["alpha_error"] == pytest.approx(ea.max()) and rec["beta_error"] == pytest.approx(eb.max())
        assert rec["alpha_worst_position"] == ea.argmax() + 1
        for name, true in (("alpha", alpha), ("beta", beta)):
            lo, hi = np.array(rec["bootstrap"][name]["interval"])
            assert np.all(lo <= hi) and np.isfinite(lo).all()
            assert rec["bootstrap"][name]["truth_inside"] == int(((lo <= true) & (true <= hi)).sum())
        assert set(rec["sweep"]) == {"2"}
    assert doc["holds_from_sessions"]["swap"] in (None, 2, 4)
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_holds_from_takes_the_smallest_size_after_which_every_fold_holds():
    rec = lambda e: {"alpha_error": e, "beta_error": 0.0}  # noqa: E731
    results = {"1": {"swap": {**rec(0.03), "sweep": {"6": rec(0.2), "12": rec(0.04), "24": rec(0.06)}}},
               "2": {"swap": {**rec(0.01), "sweep": {"6": rec(0.01), "12": rec(0.01), "24": rec(0.01)}}}}
    assert bench.holds_from(results, "swap", 48) == 48  # 24 fails on fold 1, so 12 does not count
    results["1"]["swap"]["sweep"]["24"] = rec(0.02)
    assert bench.holds_from(results, "swap", 48) == 12
    results["2"]["swap"]["alpha_error"] = 0.07
    assert bench.holds_from(results, "swap", 48) is None


@pytest.mark.parametrize("argv", [["--logs", "deterministic"], ["--folds", "1,x"], ["--sweep", "-3"]])
def test_bad_options_are_refused(argv, capsys):
    with pytest.raises(SystemExit):
        bench.main(argv)
    assert "--" in capsys.readouterr().err
