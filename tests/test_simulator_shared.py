"""The lock around numba's CUDA simulator's shared arrays (``customobj._cuda_runtime.
lock_simulator_shared_arrays``, installed by ``cuda_module`` and by tests/conftest.py): every thread
of a block that reaches one ``cuda.shared.array`` line gets the same array, even when two of them look
it up at once (the simulator's own look-up and store have no lock between them; a row partition's
block scan then wrote out of bounds, and LambdaRank's pair count in a benchmark subprocess read an
unwritten lane). The race is forced: the look-up is made slow, so both threads miss. A process
without tests/conftest.py (a benchmark, the CLI) gets the lock from customobj itself."""
import os
import threading
import time

import numpy as np
import pytest

from _isolated import run_isolated

pytestmark = pytest.mark.skipif(os.environ.get("NUMBA_ENABLE_CUDASIM") != "1",
                                reason="numba's CUDA simulator is off: a GPU has one shared memory per block")


class _SlowMisses(dict):
    """A look-up that takes long enough for another thread to look up the same line meanwhile."""

    def get(self, key, default=None):
        got = super().get(key, default)
        time.sleep(0.02)
        return got


class _MeetingMisses(dict):
    """A look-up where both threads have looked before either goes on: the race forced, not timed (a
    sleep-based window lost the race once on loaded cores). Only for the unlocked method: under the lock
    the second thread cannot reach the meeting, and the barrier's timeout breaks it (no hang)."""

    def __init__(self):
        super().__init__()
        self.meet = threading.Barrier(2, timeout=30)

    def get(self, key, default=None):
        got = super().get(key, default)
        self.meet.wait()
        return got


def _two_threads_at_one_line(shared):
    got = []

    def run():
        got.append(shared.array(4, np.int64))  # one source line for both threads, as in a kernel

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return got


def test_two_threads_at_one_line_share_one_array():
    from numba.cuda.simulator.kernelapi import FakeCUDAShared
    shared = FakeCUDAShared(0)
    shared._allocations = _SlowMisses()
    a, b = _two_threads_at_one_line(shared)
    assert a is b


def test_without_the_lock_the_race_is_real(monkeypatch):
    # the simulator's own method: two arrays for one line (what the lock prevents)
    from numba.cuda.simulator.kernelapi import FakeCUDAShared
    monkeypatch.setattr(FakeCUDAShared, "array", FakeCUDAShared.array.__wrapped__)
    shared = FakeCUDAShared(0)
    shared._allocations = _MeetingMisses()
    a, b = _two_threads_at_one_line(shared)
    assert a is not b


def test_different_lines_still_get_different_arrays():
    from numba.cuda.simulator.kernelapi import FakeCUDAShared
    shared = FakeCUDAShared(0)
    a = shared.array(3, np.float64)
    b = shared.array(3, np.float64)
    assert a is not b and a.shape == b.shape == (3,)


def test_a_process_without_conftest_gets_the_lock_from_customobj():
    # benchmarks/gpu_suite.py --simulator runs in a subprocess, where tests/conftest.py never runs: there
    # the unlocked look-up once gave LambdaRank's count_pairs an unwritten lane (a pair total of 4.2e14)
    out = run_isolated("""
import os, sys, threading, time
os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
import numpy as np
from customobj.objectives import _lambdarank_cuda  # any kernel module: its import goes through cuda_module
from numba.cuda.simulator.kernelapi import FakeCUDAShared

class SlowMisses(dict):
    def get(self, key, default=None):
        got = super().get(key, default)
        time.sleep(0.02)
        return got

shared = FakeCUDAShared(0)
shared._allocations = SlowMisses()
got = []
threads = [threading.Thread(target=lambda: got.append(shared.array(4, np.int64))) for _ in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("SAME", got[0] is got[1], "conftest" in sys.modules)
""")
    assert "SAME True False" in out


def test_the_locked_look_up_keeps_numba_cudas_key_and_dtype_mapping():
    # at one line, the simulator's own method and the locked one find the same array (one key), and a
    # numba type (as kernels pass ``int64``) maps to its numpy dtype
    from numba import int64
    from numba.cuda.simulator.kernelapi import FakeCUDAShared
    shared = FakeCUDAShared(0)
    made = [shared.array(5, int64) if k == 0 else FakeCUDAShared.array.__wrapped__(shared, 5, int64) for k in range(2)]
    assert made[0] is made[1] and made[0].dtype == np.int64 and made[0].shape == (5,)
    assert len(shared._allocations) == 1
