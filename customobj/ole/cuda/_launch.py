"""Launch shapes of the OLE grower's GPU kernels: how many blocks and threads a kernel over ``n`` items
takes. No result depends on them (every kernel is exact on the grid of :mod:`.fixed_point`, or
writes each output from one thread), so they are chosen for the card's occupancy alone.

>>> pow2_threads(1), pow2_threads(5), pow2_threads(10**6) == (SIMULATOR_THREADS if simulated() else THREADS)
(1, 8, True)
>>> grid_launch(0)
(1, 1)
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from ..._cuda_runtime import THREADS, simulated

__all__ = ["pow2_threads", "simulator_threads", "grid_launch", "feature_launch", "MAX_GRID_BLOCKS", "SIMULATOR_THREADS", "SIMULATOR_BLOCKS",
           "WARP"]

#: Most blocks of a grid-stride kernel (:mod:`._reduce_kernels`): a few per SM of a large card.
MAX_GRID_BLOCKS = 1024
#: Most threads of a block and blocks of a grid-stride kernel under numba's CUDA simulator, where
#: every thread is a Python thread started per block (the kernel tests run other counts:
#: tests/test_ole_cuda_histograms_kernels.py, test_ole_cuda_reduce_kernels.py).
SIMULATOR_THREADS = 8
SIMULATOR_BLOCKS = 2
#: Threads of a warp: the split search's block per feature (:func:`feature_launch`).
WARP = 32


@contextmanager
def simulator_threads(lanes: int) -> Iterator[None]:
    """:data:`SIMULATOR_THREADS` set to ``lanes`` inside the ``with`` block (0: left as it is), then restored:
    the step counts of ``benchmarks/partition_steps.py``, ``pruning_steps.py`` and ``search_steps.py`` run a
    block of ``lanes`` threads, as a card's warp would be."""
    global SIMULATOR_THREADS
    saved = SIMULATOR_THREADS
    if lanes:
        SIMULATOR_THREADS = int(lanes)
    try:
        yield
    finally:
        SIMULATOR_THREADS = saved


def pow2_threads(n_items: int) -> int:
    """Threads of one block for ``n_items`` items: the smallest power of two covering them, at most
    ``THREADS`` (``SIMULATOR_THREADS`` under the simulator); a power of two because the block-wide
    tree reductions and scans halve it."""
    top = SIMULATOR_THREADS if simulated() else THREADS
    t = 1
    while t < min(top, n_items):
        t *= 2
    return t


def grid_launch(n_items: int) -> tuple:
    """``(blocks, threads)`` of a grid-stride kernel over ``n_items``: at most ``MAX_GRID_BLOCKS`` blocks
    (the loop covers the rest)."""
    per = pow2_threads(n_items)
    top = SIMULATOR_BLOCKS if simulated() else MAX_GRID_BLOCKS
    return (int(max(1, min(top, -(-int(n_items) // per)))), per)


def feature_launch(n_features: int, n_nodes: int) -> tuple:
    """``((features, nodes), threads)`` of the split search (``_split_kernels.node_bests``): a block of
    one warp per feature and node (``SIMULATOR_THREADS`` under the simulator), its lanes over the
    feature's bins."""
    return (max(1, int(n_features)), int(n_nodes)), pow2_threads(WARP)
