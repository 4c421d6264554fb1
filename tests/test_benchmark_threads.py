"""benchmarks/threads.py (thread scaling, issue 23 "Many cores") at a tiny size, in subprocesses: the
scaling table (speedups, OLE / WSE, Amdahl fits) and the --stages breakdown are printed; the
Amdahl fit recovers known serial fractions; bad thread counts and sizes are refused."""
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "threads.py"


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=900)


@pytest.fixture
def bench(monkeypatch):
    monkeypatch.syspath_prepend(str(SCRIPT.parent))  # it imports its sibling benchmarks/ole.py
    # ... as the top-level module "ole", which would then shadow examples/ole.py for later tests
    # (tests/test_examples.py imports the examples by name): the import is undone afterwards
    monkeypatch.delitem(sys.modules, "ole", raising=False)
    spec = importlib.util.spec_from_file_location("bench_threads", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop("ole", None)


def test_amdahl_fit_recovers_the_serial_fraction(bench):
    threads = [1, 2, 4, 8, 16]
    s, p, frac = bench.amdahl(threads, [0.13 + 0.46 / n for n in threads])
    assert s == pytest.approx(0.13) and p == pytest.approx(0.46) and frac == pytest.approx(0.13 / 0.59)
    assert bench.amdahl([4], [1.0]) is None  # one thread count: no fit


def test_default_thread_counts_stop_at_the_usable_cpus(bench):
    counts = bench.thread_counts(None)
    assert counts[0] == 1 and counts == sorted(counts) and counts[-1] <= bench.usable_cpus()
    assert set(counts) - {1, 2, 4, 8, 16} <= {counts[-1]}


def test_scaling_table_with_ole_over_wse(two_threads):
    r = run("--queries", "25", "--rounds", "2", "--repeat", "1", "--threads", "1", str(two_threads))
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "CPUs usable" in out and "OLE / WSE" in out
    rows = [line.split() for line in out.splitlines() if re.match(r"\s+[12]\s+\d", line)]
    assert [row[0] for row in rows] == ["1", "2"]
    first = rows[0]
    assert first[2] == "(" and first[3] == "1.00x)"  # 1 thread is its own reference
    assert float(first[-1]) > 0  # OLE / WSE
    for label in ("LambdaRank grad_hess", "grad_hess_prepared", "prepared, reused out", "WSE s/tree", "OLE s/tree"):
        assert re.search(rf"  {re.escape(label)}\s+s = ", out), label


def test_stages_of_the_objective():
    r = run("--stages", "--only", "objective", "--queries", "25", "--repeat", "1", "--threads", "1")
    assert r.returncode == 0, r.stderr
    steps = dict(re.findall(r"^\s+(.+?)\s+([0-9.]+) ms\s+[0-9.]+%", r.stdout, flags=re.M))
    for step in ("whole call: grad_hess(scores, labels, group)", "of which ideal DCG (ideal_dcg)",
                 "block loop (_run_blocks), written outputs", "score checks (_check_scores)"):
        assert step in steps, step
    assert "ole_phases" not in r.stdout  # --only objective: no trees


@pytest.mark.parametrize("args,message", [
    (("--threads", "0"), "numba's pool"), (("--threads", "100000"), "numba's pool"),
    (("--queries", "5"), "--queries must be >= 21"), (("--rounds", "1"), "--rounds"),
])
def test_bad_arguments_are_refused(args, message):
    r = run(*args)
    assert r.returncode != 0 and message in r.stderr
