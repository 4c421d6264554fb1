"""What every GPU route of the objectives shares: launches of ``THREADS`` per block, zeroed device
outputs, and pair buffers sized on the card (each segment's pairs counted, scanned, only the total
read back).

A GPU route is a pair of plain functions (``base.DeviceRoute``) that ``Objective.device_route()``
returns, one module per family (``_<family>_route.py``: ``_pointwise_route``, ``_pairwise_route``,
``_lambdarank_route``, ``_structured_route``, ``_listwise_route``, ``_composite_route``):
``grad_hess(obj, scores, prep, data, out_grad, out_hess)`` adds the objective's gradients at float64
device ``scores`` into the device outputs, and ``couplings(obj, scores, prep, data, pair_buffer)``
writes its pair couplings ``(i, j, c)`` after the gradient launches (``_couplings_route``). ``data``
is the prepared data's ``devices.DeviceData`` (device copies uploaded once per data set). A route
reads the objective only through its public methods (``pair_spec``, ``listed_pairs``,
``pass_inputs``, ``parts``) and its label-only state (``prep.state_for``), so every loss of a family
shares it, and a subclass of a loss inherits its parent's route with ``device_route``. No route
imports an objective class.

Kernel modules (``_<family>_cuda``, which need numba.cuda) are imported inside the routes: the CPU
path never loads them.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .._cuda_runtime import THREADS, blocks

#: ``m -> (i, j, c)``: device arrays of length ``m`` the pairs are written to.
PairBuffer = Callable[[int], tuple]
#: Listed pairs per block of the list kernels (the listed couplings, the in-bag compaction; their result does
#: not depend on it: stable, in order).
LIST_CHUNK = 1024


class LaunchCount:
    """The objectives' kernel launches and blocking reads so far, in this process (:func:`launch`,
    :func:`sized`'s scan and its one read of the pair total): Python integers bumped per event,
    nothing synchronised. ``TreeBooster`` reads them around its fit
    (``device_stats_.objective_launches``, ``objective_reads``).

    >>> before = LaunchCount.snapshot()
    >>> LaunchCount.since(before)
    (0, 0)
    """

    launches = 0
    reads = 0

    @classmethod
    def snapshot(cls) -> tuple:
        return cls.launches, cls.reads

    @classmethod
    def since(cls, snapshot: tuple) -> tuple:
        """``(launches, reads)`` since ``snapshot``."""
        return cls.launches - snapshot[0], cls.reads - snapshot[1]


def launch(kernel: Any, n: int, *args: Any) -> None:
    """``kernel`` over ``n`` work items (threads), :data:`THREADS` per block; a kernel that works a
    block per segment (a query, an upper position, a row or a chunk of a pair list: the
    ``BLOCK_PER_SEGMENT`` of ``_lambdarank_cuda``, ``_listwise_cuda``, ``_listwise_loss_cuda``,
    ``_pairwise_cuda``, ``_sampled_pairs_cuda``, ``_structured_cuda``) gets ``n``
    blocks of :func:`query_threads` (:func:`launch_per_segment`)."""
    if any(kernel is k for k in _block_per_segment()):
        launch_per_segment(kernel, n, *args)
        return
    LaunchCount.launches += 1
    kernel[blocks(n), THREADS](*args)


def launch_per_segment(kernel: Any, n: int, *args: Any) -> None:
    """``kernel`` as ``n`` blocks (at least 1) of :func:`query_threads`, a block per segment, counted as
    :func:`launch` counts. :func:`launch` calls it for the objectives' own block-per-segment kernels;
    the kernels of packages this one does not import (``clicks._affine_cuda.affine_queries``) are
    launched with it directly."""
    LaunchCount.launches += 1
    kernel[max(n, 1), query_threads()](*args)


def _block_per_segment() -> tuple:
    from . import _lambdarank_cuda as CL
    from . import _listwise_cuda as CQ
    from . import _listwise_loss_cuda as CQL
    from . import _pairwise_cuda as CP
    from . import _sampled_pairs_cuda as CS
    from . import _structured_cuda as CT

    return (CL.BLOCK_PER_SEGMENT + CQ.BLOCK_PER_SEGMENT + CQL.BLOCK_PER_SEGMENT + CP.BLOCK_PER_SEGMENT
            + CS.BLOCK_PER_SEGMENT + CT.BLOCK_PER_SEGMENT)


def query_threads() -> int:
    """Threads of a block-per-segment kernel: ``_block_cuda.QUERY_THREADS`` (a warp), 8 under the
    simulator (each a Python thread)."""
    from .._cuda_runtime import simulated
    from . import _block_cuda as CB

    return 8 if simulated() else CB.QUERY_THREADS


def scan_threads() -> int:
    """Threads of ``scan_pairs``' one block: ``_lambdarank_cuda.SCAN_THREADS``, 8 under the simulator."""
    from .._cuda_runtime import simulated
    from . import _lambdarank_cuda as CL

    return 8 if simulated() else CL.SCAN_THREADS


def flat(a: Any) -> Any:
    return a.reshape(a.size) if a.ndim != 1 else a


def zero(*arrays: Any) -> None:
    from . import _pointwise_cuda as CW

    for a in arrays:
        launch(CW.fill, a.size, flat(a), 0.0)


def query_pairs(data: Any, pair_buffer: PairBuffer, count: Any, fill: Any, *args: Any,
                per_position: bool = False) -> tuple:
    """The pairs a ``count`` / ``fill`` kernel pair writes (a thread or a block per query, ``args`` then
    the counts / the offsets and buffers), in query order; or, with ``per_position`` (a block per sorted
    position: ``_listwise_cuda.BLOCK_PER_SEGMENT``), one segment per row, in position order."""
    n_seg = data.n_rows if per_position else data.n_queries
    offsets, out = sized(segments(data, n_seg, "position_pair" if per_position else "pair"), pair_buffer,
                         count, n_seg, *args)
    if out[0].shape[0] > 0:
        launch(fill, n_seg, *args, offsets, *out)
    return out


def sized(scratch: tuple, pair_buffer: PairBuffer, count: Any, n_seg: int, *args: Any) -> tuple:
    """``(offsets, pair buffers)``: ``count`` (a thread or a block per segment, ``args`` then the counts)
    gives each segment's pairs, one block scans them into offsets; only the total comes back, to size the
    buffers. ``scratch``: the ``(counts, offsets)`` arrays, ``n_seg`` (at least 1) and ``n_seg + 1``."""
    from . import _lambdarank_cuda as CL

    counts, offsets = scratch
    launch(count, n_seg, *args, counts)
    LaunchCount.launches += 1
    CL.scan_pairs[1, scan_threads()](counts, n_seg, offsets)
    LaunchCount.reads += 1
    return offsets, pair_buffer(int(offsets[n_seg:n_seg + 1].copy_to_host()[0]))


def chunks(m: int, chunk: int) -> int:
    """Chunks of ``chunk`` pairs covering ``m`` pairs."""
    return (m + chunk - 1) // chunk


def segments(data: Any, n_seg: int, name: str = "pair") -> tuple:
    """The ``(counts, offsets)`` scratch of ``n_seg`` segments named ``name`` (``"pair"``: per query),
    reused every round (a fixed count per fit)."""
    return (data.scratch(f"{name}_counts", (max(n_seg, 1),), np.int64),
            data.scratch(f"{name}_offsets", (n_seg + 1,), np.int64))
