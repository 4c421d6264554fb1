"""The harness itself: crashes, hangs, wrong exceptions and bad outputs are detected and reported,
and the worker survives them (restarted for the next example)."""
from __future__ import annotations

import pytest

from .runner import Example, Worker


@pytest.fixture(scope="module")
def worker():
    w = Worker(timeout=2.0, light=True)
    yield w
    w.stop()


def test_ok_result_is_ok(worker):
    out = worker.run(Example("selftest.ok", {"value": 2.5}))
    assert out.kind == "ok" and out.detail == "2.5"


def test_segfault_is_a_crash_and_the_worker_comes_back(worker):
    out = worker.run(Example("selftest.segfault", {}))
    assert out.kind == "crash" and out.failed
    assert "SIGSEGV" in out.detail
    assert "_segfault" in out.stderr  # faulthandler's traceback names the crashing frame
    after = worker.run(Example("selftest.ok", {"value": 1.0}))
    assert after.kind == "ok"


def test_sleep_is_a_hang(worker):
    out = worker.run(Example("selftest.sleep", {"seconds": 60.0}))
    assert out.kind == "hang" and out.failed
    assert 2.0 <= out.seconds < 30.0
    assert "_sleep" in out.stderr  # SIGUSR1 made faulthandler print where it was stuck
    assert worker.run(Example("selftest.ok", {})).kind == "ok"


def test_busy_loop_is_a_hang(worker):
    out = worker.run(Example("selftest.spin", {}))
    assert out.kind == "hang"
    assert worker.run(Example("selftest.ok", {})).kind == "ok"


def test_exit_is_a_crash(worker):
    out = worker.run(Example("selftest.exit", {"code": 3}))
    assert out.kind == "crash" and "status 3" in out.detail


@pytest.mark.parametrize("kind,expected", [("KeyError", "wrong-exception"), ("ValueError", "raised"),
                                           ("TypeError", "raised"), ("MemoryError", "raised")])
def test_exception_types_are_classified(worker, kind, expected):
    out = worker.run(Example("selftest.raise", {"kind": kind, "message": "weight is too large"}))
    assert out.kind == expected
    assert out.exc_type.endswith(kind) and "weight is too large" in out.message


def test_allowed_error_must_name_the_hostile_argument(worker):
    ex = Example("selftest.raise", {"kind": "ValueError", "message": "Quantiles must be in [0, 1]"},
                 hostile=(("max_grade",),))
    out = worker.run(ex)
    assert out.kind == "unnamed-argument" and out.failed
    named = ex._replace(kwargs={"kind": "ValueError", "message": "max_grade must be <= 1023"})
    assert worker.run(named).kind == "raised"


def test_empty_message_and_numpy_allocation_failure_are_not_allowed(worker):
    assert worker.run(Example("selftest.raise", {"kind": "ValueError", "message": ""})).kind == "wrong-exception"
    out = worker.run(Example("selftest.alloc", {"gigabytes": 64}))
    assert out.kind == "wrong-exception" and "Unable to allocate" in out.message


def test_bad_output_is_reported(worker):
    out = worker.run(Example("selftest.nan", {}))
    assert out.kind == "bad-output" and "nan" in out.detail


def test_stdout_chatter_does_not_corrupt_the_channel(worker):
    assert worker.run(Example("selftest.noisy", {})).detail == "'quiet'"


def test_failed_warm_up_is_a_failure(worker):
    out = worker.run(Example("selftest.warmfail", {}))
    assert out.kind == "warmup-failed" and out.failed


def test_worker_imports_customobj_adapters_before_lightgbm_and_xgboost():
    full = Worker(timeout=60.0)
    try:
        out = full.run(Example("selftest.import_order", {}))
    finally:
        full.stop()
    assert out.kind == "ok", out
    assert out.detail == "'passive'"  # customobj.adapters set OMP_WAIT_POLICY before the libraries loaded
