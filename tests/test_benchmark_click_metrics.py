"""benchmarks/click_metrics.py (issue 33 item 4: choosing models without labels) end to end on MQ2008
Fold1 at a tiny size, in-process: the printed Spearman correlations agree with the JSON it writes,
which holds every model's scores per click log and the estimated propensities."""
import json
import re

import numpy as np
import pytest

from conftest import import_benchmark

bench = import_benchmark("click_metrics")


def test_tiny_run_prints_and_writes_the_same_results(data_dir, tmp_path, capsys):
    out = tmp_path / "r.json"
    argv = ["--data", str(data_dir / "mq2008" / "Fold1"), "--seeds", "1", "--sessions", "2", "--rounds", "2",
            "--model-rounds", "1,5", "--json", str(out)]
    assert bench.main(argv) == 0
    text = capsys.readouterr().out
    result = json.loads(out.read_text())
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # written atomically: no temporary file left
    assert result["options"]["model_rounds"] == [1, 5]
    (log,) = result["logs"]
    names = set(log["scores"])
    # 2 true-label LambdaRank models, 2 on a share of the queries, 4 features, 4 production-ranker variants
    assert len(names) == 12 and {"lambdarank, 1 rounds", "lambdarank, 5 rounds", "random scores"} <= names
    for row in log["scores"].values():
        assert set(row) == {"true NDCG@10", *bench.CLICK_METRICS}
        assert all(0.0 <= v <= 1.0 for v in row.values())
    rho = np.array(log["estimated_propensities"])
    assert rho.shape == (10,) and rho[0] == 1.0 and np.all(rho >= 0.0)
    assert 0.0 < log["click_rate"] < 1.0
    # the summary lines print the JSON's mean Spearman per click metric
    for m in bench.CLICK_METRICS:
        printed = re.search(rf"^  {re.escape(m)}\s+(-?\d\.\d{{3}})  \(", text, re.M)
        assert float(printed.group(1)) == pytest.approx(result["mean_spearman"][m], abs=5e-4)
        assert -1.0 <= log["spearman"][m] <= 1.0
    # a model's printed true NDCG@10 is the JSON's
    row = re.search(r"^  random scores\s+(\d\.\d{4})", text, re.M)
    assert float(row.group(1)) == pytest.approx(log["scores"]["random scores"]["true NDCG@10"], abs=5e-5)


@pytest.mark.parametrize("bad", ["0,3", "3,3", "x"])
def test_bad_model_rounds_are_refused(bad, capsys):
    with pytest.raises(SystemExit):
        bench.main(["--model-rounds", bad])
    assert "--model-rounds" in capsys.readouterr().err
