"""numba.cuda kernels of the GPU backend's orchestration (:mod:`.cuda_backend`): a split's children's
chosen splits picked in one launch, each with what the grower needs beside it, so the grower reads
them all in one copy.

:func:`pick_splits`: block ``b`` picks node ``b``'s split from its per-feature records
(:func:`._cuda_reduce_kernels.best_feature`, the CPU's tie-breaking) into ``res[b, :SPLIT_SIZE]``, and
writes the chosen feature's NaN-slot row count in the node's histogram into ``res[b, SPLIT_SIZE]``
(the grower sends NaN to the search's side only where the node saw NaN:
:meth:`customobj.ole.grower.TreeGrower._nan_side`): one launch and no read of its own per split,
where a ``pick_best`` per node and a NaN count per node took four.
"""
from numba import float64, int64

from .._cuda_runtime import THREADS, cuda_module
from ._cuda_reduce_kernels import best_feature
from .common import HIST_COUNT, SPLIT_SIZE

cuda = cuda_module()

__all__ = ["pick_splits"]


@cuda.jit(cache=True)
def pick_splits(per, gains, res, hist_a, hist_b, offsets, n_bins, with_nan):
    """Block ``b`` (one per node, at most two): ``res[b, :SPLIT_SIZE]`` = the split of the first
    feature with the strictly largest ``gains[b]`` > 0 (record ``per[b, f]``; none: feature -1), and
    ``res[b, SPLIT_SIZE]`` = that feature's NaN-slot row count in node ``b``'s histogram (``hist_a``,
    ``hist_b``), 0 without ``with_nan`` or a split."""
    shg = cuda.shared.array(THREADS, dtype=float64)
    shi = cuda.shared.array(THREADS, dtype=int64)
    b = cuda.blockIdx.x
    out = res[b]
    f = best_feature(per[b], gains[b], out, shg, shi)
    if cuda.threadIdx.x == 0:
        out[SPLIT_SIZE] = 0.0
        if with_nan and 0 <= f < n_bins.shape[0]:
            hist = hist_a if b == 0 else hist_b
            out[SPLIT_SIZE] = hist[offsets[f] + n_bins[f], HIST_COUNT]
