"""benchmarks/position_bias.py (issue 39: which position-bias estimate compare reports is closest to the
truth) at a tiny size, in-process: every estimator's curve and errors per log, the errors recomputed
from the written JSON's curves and truths."""
import json

import numpy as np
import pytest

from conftest import import_benchmark

bench = import_benchmark("position_bias")


def test_tiny_run_measures_every_estimator_against_the_truth(data_dir, tmp_path, capsys):
    out = tmp_path / "pb.json"
    argv = ["--data", str(data_dir / "mq2008" / "Fold1"), "--etas", "2", "--sessions", "1", "--rounds", "2",
            "--json", str(out)]
    assert bench.main(argv) == 0
    printed = capsys.readouterr().out
    results = json.loads(out.read_text())["results"]
    assert [(r["log"], r["estimator"]) for r in results] == [
        (log, est) for log in ("own (truth 1/r)", "mq2008 eta 2") for est in bench.ESTIMATORS]
    for r in results:
        curve, truth = np.array(r["curve"]), np.array(r["truth"])
        assert curve[0] == pytest.approx(1.0) and truth[0] == 1.0  # relative to the top
        rel = np.abs(curve[1:] / truth[1:] - 1.0)
        assert r["max_rel_error"] == pytest.approx(rel.max()) and r["mean_rel_error"] == pytest.approx(rel.mean())
        assert f"{r['estimator']:<32} max {r['max_rel_error']:.3f} mean {r['mean_rel_error']:.3f}" in printed
    own = [r for r in results if r["log"].startswith("own")]
    assert all(np.allclose(r["truth"], 1.0 / np.arange(1, 9)) for r in own)


def test_bad_etas_are_refused(capsys):
    with pytest.raises(SystemExit):
        bench.main(["--etas", "1,x"])
    assert "--etas" in capsys.readouterr().err
