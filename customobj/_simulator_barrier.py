"""A ``cuda.syncthreads()`` for numba's CUDA simulator whose waiting threads sleep instead of being polled.

The simulator (``numba.cuda.simulator.kernel``) runs a block's threads as Python threads, and its
``BlockManager.run`` finds out when all of them wait at a barrier, and when all have finished, by
busy-polling them: a loop over every live thread that never sleeps, so the launching thread holds the
GIL for a whole switch interval each time it gets it, while the block's threads have the work to do.
A tiny OLE fit (``TreeBooster(device="cuda", criterion="ole_fast")``, 100 rows, 3 trees) took 17-20 s
of CPU that way and 7 s with this barrier, the same trees bit for bit (the launch count per kernel
and the predictions compared): most of the simulated GPU tests' time.

:func:`sleep_at_simulator_barriers` makes a block's threads count themselves in and out under one
condition variable: the last one to reach a barrier, or to finish while all the others wait at one,
wakes them; the launching thread sleeps in ``join``. What a kernel sees is the simulator's: a barrier
waits for every thread of its block that is still running (a finished thread no longer counts), and
an exception in a thread makes the others raise at their next barrier while the launch raises the
first one, naming the thread and the block (``tid=[x, y, z] ctaid=[x, y, z]: ...``) as the simulator
does. ``cuda_module`` installs it beside the shared arrays' lock in every process that simulates
customobj's kernels; tests/conftest.py installs it for the tests' own kernels too.

Examples
--------
>>> from numba.cuda.simulator.kernel import BlockManager
>>> sleep_at_simulator_barriers() and BlockManager.run.__wrapped__ is not BlockManager.run
True
"""
from __future__ import annotations

import sys
import threading
from typing import Any

__all__ = ["sleep_at_simulator_barriers"]

#: How an aborted thread's error ends: these threads only follow the one that raised first.
_ABORTED = "abort flag set on syncthreads"


def _syncthreads(self: Any) -> None:
    # BlockThread.syncthreads: count in; the last live thread to arrive opens the barrier for all
    block = self._manager
    with block._barrier:
        if block._aborted:
            self._followed = True
            raise RuntimeError(f"{_ABORTED} call")
        block._waiting += 1
        if block._waiting == block._running:
            _open(block)
        else:
            generation = block._generation
            while block._generation == generation and not block._aborted:
                block._barrier.wait()
        if block._aborted:
            self._followed = True
            raise RuntimeError(f"{_ABORTED} clear")


def _open(block: Any) -> None:
    block._waiting = 0
    block._generation += 1
    block._barrier.notify_all()


def _thread_run(self: Any) -> None:
    # BlockThread.run: the simulator's error message, then count out (a barrier may now be complete)
    block = self._manager
    try:
        threading.Thread.run(self)
    except Exception as e:
        where = "tid=%s ctaid=%s" % (list(self.threadIdx), list(self.blockIdx))
        self.exception = (type(e)(f"{where}: {e}" if str(e) else where), sys.exc_info()[2])
    finally:
        with block._barrier:
            block._running -= 1
            if self.exception is not None:
                block._aborted = True
                block._barrier.notify_all()
            elif block._running and block._waiting == block._running:
                _open(block)


def _block_run(self: Any, grid_point: Any, *args: Any) -> None:
    # BlockManager.run: start the block's threads, sleep until they end, raise the first real error
    import numpy as np
    from numba.cuda.simulator.kernel import BlockThread

    points = list(np.ndindex(*self._block_dim))
    self._barrier = threading.Condition()
    self._running, self._waiting, self._generation, self._aborted = len(points), 0, 0, False

    def target() -> None:
        self._f(*args)

    threads = [BlockThread(target, self, grid_point, p, self._debug) for p in points]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    failed = [t for t in threads if t.exception is not None]
    first = [t for t in failed if not getattr(t, "_followed", False)] or failed
    if first:
        raise first[0].exception[0].with_traceback(first[0].exception[1])


def sleep_at_simulator_barriers() -> bool:
    """Replace the CUDA simulator's polling block manager by sleeping barriers (module docstring).

    Once per process; True when installed (or already), False when this numba-cuda runs its blocks
    otherwise (left as it is). The simulator's own methods stay reachable as ``__wrapped__``. Call it
    once ``numba.cuda`` imports (``customobj._cuda_runtime.cuda_module`` gives numpy what it needs).
    """
    from numba.cuda.simulator import kernel

    manager, thread = getattr(kernel, "BlockManager", None), getattr(kernel, "BlockThread", None)
    if manager is None or thread is None or not hasattr(thread, "syncthreads"):
        return False
    if getattr(manager.run, "__wrapped__", None) is not None:
        return True
    replacements: tuple[tuple[Any, str, Any], ...] = (
        (manager, "run", _block_run), (thread, "run", _thread_run), (thread, "syncthreads", _syncthreads))
    for owner, name, new in replacements:
        new.__wrapped__ = getattr(owner, name)
        setattr(owner, name, new)
    return True
