"""benchmarks/harvest.py (intervention harvesting against the true PBM curve) on MQ2008 Fold1 at a
tiny size, in-process: one line per ranker set and eta, each estimator's error or why it has none."""
import re

import pytest

from conftest import import_benchmark

bench = import_benchmark("harvest")


def test_tiny_run_prints_each_estimators_error(data_dir, capsys):
    argv = ["--data", str(data_dir / "mq2008" / "Fold1"), "--rankers", "1,40;1,5", "--etas", "1", "--sessions", "5"]
    assert bench.main(argv) == 0
    lines = capsys.readouterr().out.splitlines()[1:]
    assert [line.split()[1] for line in lines] == ["1,40", "1,5"]
    for line in lines:
        error = float(re.search(r"all_pairs (\d\.\d{3})", line).group(1))
        assert 0.0 <= error < 1.0
        assert re.search(r"top_ratio( \d\.\d{3}|: no estimate \(logs: )", line)


def test_bad_rankers_are_refused(capsys):
    with pytest.raises(SystemExit):
        bench.main(["--rankers", "1,x"])
    assert "--rankers" in capsys.readouterr().err
