"""numba.cuda kernels of the GPU backend's orchestration (:mod:`.cuda_backend`): what a node's split
search hands back beside the chosen split, so the grower reads it in the same copy.

:func:`split_nan_count`: the chosen feature's NaN-slot row count in the node's histogram, written in
the result record's slot ``SPLIT_SIZE`` (the grower sends NaN to the search's side only where the node
saw NaN: :meth:`customobj.ole.grower.TreeGrower._nan_side`), instead of a read of its own per split.
"""
from .._cuda_runtime import cuda_module
from .common import HIST_COUNT, SPLIT_FEATURE, SPLIT_SIZE

cuda = cuda_module()

__all__ = ["split_nan_count"]


@cuda.jit(cache=True)
def split_nan_count(hist, offsets, n_bins, res):
    """One thread: ``res[SPLIT_SIZE]`` = ``hist``'s row count at the NaN slot of the feature
    ``res[SPLIT_FEATURE]`` (0 when no split was found)."""
    if cuda.grid(1) != 0:
        return
    f = int(res[SPLIT_FEATURE])
    res[SPLIT_SIZE] = 0.0
    if 0 <= f < n_bins.shape[0]:
        res[SPLIT_SIZE] = hist[offsets[f] + n_bins[f], HIST_COUNT]
