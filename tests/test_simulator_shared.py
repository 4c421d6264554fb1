"""tests/conftest.py's lock around numba's CUDA simulator's shared arrays: every thread of a block that
reaches one ``cuda.shared.array`` line gets the same array, even when two of them look it up at once
(the simulator's own look-up and store have no lock between them; a row partition's block scan then
wrote out of bounds). The race is forced: the look-up is made slow, so both threads miss."""
import os
import threading
import time

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(os.environ.get("NUMBA_ENABLE_CUDASIM") != "1",
                                reason="numba's CUDA simulator is off: a GPU has one shared memory per block")


class _SlowMisses(dict):
    """A look-up that takes long enough for another thread to look up the same line meanwhile."""

    def get(self, key, default=None):
        got = super().get(key, default)
        time.sleep(0.02)
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
    # the simulator's own method, as conftest found it: two arrays for one line (what the lock prevents)
    import conftest
    from numba.cuda.simulator.kernelapi import FakeCUDAShared
    monkeypatch.setattr(FakeCUDAShared, "array", conftest._unlocked_shared_array)
    shared = FakeCUDAShared(0)
    shared._allocations = _SlowMisses()
    a, b = _two_threads_at_one_line(shared)
    assert a is not b


def test_different_lines_still_get_different_arrays():
    from numba.cuda.simulator.kernelapi import FakeCUDAShared
    shared = FakeCUDAShared(0)
    a = shared.array(3, np.float64)
    b = shared.array(3, np.float64)
    assert a is not b and a.shape == b.shape == (3,)
