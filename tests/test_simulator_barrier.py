"""customobj._simulator_barrier: numba's CUDA simulator with barriers whose threads sleep (installed by
``cuda_module`` and tests/conftest.py) keeps the simulator's semantics: a barrier holds every thread of
its block until all that still run reach it, a finished thread no longer counts, ``syncthreads_count``
and its kin count the block, blocks never see each other's shared memory, and an error in one thread
ends the launch (no hang) naming the thread and the block, whether the others wait at a barrier or not.
A kernel that needs the barrier reads unwritten memory without it (the check can fail)."""
import os
import threading

import numpy as np
import pytest
from numba import cuda  # a global of the kernels below: the simulator swaps its own module in at launch

from _isolated import run_isolated

pytestmark = pytest.mark.skipif(os.environ.get("NUMBA_ENABLE_CUDASIM") != "1",
                                reason="numba's CUDA simulator is off: a GPU has its own barriers")

N = 16  # threads per block: two warps' worth, few enough for the simulator


@pytest.fixture(scope="module")
def installed():
    from customobj._cuda_runtime import cuda_module
    return cuda_module()  # installs the barrier (conftest did too)


def _rotate(barrier=True):
    """Each thread writes its shared slot, waits at the barrier, then reads its neighbour's slot, in
    several rounds; thread 0 sleeps first, so without a barrier the others read before it writes."""
    from numba import int64
    import time

    @cuda.jit
    def rotate(out, rounds):
        sh = cuda.shared.array(N, int64)
        t, b = cuda.threadIdx.x, cuda.blockIdx.x
        acc = 0
        for r in range(rounds):
            if t == 0:
                time.sleep(0.002)
            sh[t] = 1000 * b + 10 * r + t
            if barrier:
                cuda.syncthreads()
            acc += sh[(t + 1) % N]
            if barrier:
                cuda.syncthreads()
            sh[t] = -1
        out[b, t] = acc

    return rotate


def _expected(n_blocks, rounds):
    t = np.arange(N)
    return np.array([[sum(1000 * b + 10 * r + (k + 1) % N for r in range(rounds)) for k in t]
                     for b in range(n_blocks)])


def test_it_is_installed_and_keeps_the_simulators_methods(installed):
    from numba.cuda.simulator.kernel import BlockManager, BlockThread

    from customobj._simulator_barrier import sleep_at_simulator_barriers
    assert BlockManager.run.__name__ == "_block_run" and BlockThread.syncthreads.__name__ == "_syncthreads"
    assert BlockManager.run.__wrapped__.__module__ == "numba.cuda.simulator.kernel"
    run = BlockManager.run
    assert sleep_at_simulator_barriers() and BlockManager.run is run  # once: not wrapped twice


def test_a_barrier_holds_the_block_until_every_thread_reaches_it(installed):
    out = np.zeros((3, N), np.int64)
    _rotate()[3, N](out, 4)
    np.testing.assert_array_equal(out, _expected(3, 4))


def test_without_the_barrier_the_neighbours_slot_is_read_unwritten(installed):
    # the kernel above needs its barrier: the check can fail
    out = np.zeros((1, N), np.int64)
    _rotate(barrier=False)[1, N](out, 4)
    assert not np.array_equal(out, _expected(1, 4))


def test_finished_threads_no_longer_count_and_the_counts_are_the_blocks(installed):
    @cuda.jit
    def early(out, n_stay):
        t = cuda.threadIdx.x
        if t >= n_stay:
            return  # these threads finish before the others' barriers
        alive = cuda.syncthreads_count(1)
        anyone = cuda.syncthreads_or(1 if t == 0 else 0)
        every = cuda.syncthreads_and(1 if t < n_stay - 1 else 0)
        cuda.syncthreads()
        out[t, 0], out[t, 1], out[t, 2] = alive, anyone, every

    out = np.full((N, 3), -1, np.int64)
    early[1, N](out, 5)
    np.testing.assert_array_equal(out[:5], np.tile([5, 1, 0], (5, 1)))
    assert (out[5:] == -1).all()


def _raises_in_one_thread(at_barrier):
    @cuda.jit
    def bad(out):
        t = cuda.threadIdx.x
        if t == 3:
            out[N + 100] = 1  # out of bounds: IndexError in this thread only
        cuda.syncthreads()
        if at_barrier:
            cuda.syncthreads()
        out[t] = t

    return bad


@pytest.mark.parametrize("at_barrier", [True, False])
def test_an_error_in_one_thread_ends_the_launch_naming_it(installed, at_barrier):
    # in a thread of its own, so a hang fails the test instead of stalling the suite
    caught = []

    def launch():
        try:
            _raises_in_one_thread(at_barrier)[2, N](np.zeros(N, np.int64))
        except Exception as e:  # noqa: BLE001 - the test looks at what came out
            caught.append(e)

    th = threading.Thread(target=launch, daemon=True)
    th.start()
    th.join(timeout=60)
    assert not th.is_alive(), "the launch hangs after an error in one thread"
    assert len(caught) == 1 and isinstance(caught[0], IndexError), caught
    assert "tid=[3, 0, 0] ctaid=[0, 0, 0]" in str(caught[0])
    # the next launch runs normally: nothing is left of the failed one
    out = np.zeros((1, N), np.int64)
    _rotate()[1, N](out, 2)
    np.testing.assert_array_equal(out, _expected(1, 2))


def test_a_process_without_conftest_gets_it_from_customobj():
    out = run_isolated("""
import os, sys
os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
from customobj.objectives import _lambdarank_cuda  # any kernel module: its import goes through cuda_module
from numba.cuda.simulator.kernel import BlockManager
print("BARRIER", BlockManager.run.__name__, "conftest" in sys.modules)
""")
    assert "BARRIER _block_run False" in out
