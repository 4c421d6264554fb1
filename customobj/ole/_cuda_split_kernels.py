"""numba.cuda kernels of the OLE grower's split search and histogram arithmetic: the GPU twins of
:func:`customobj.ole.splitting.find_best_split_parallel` and ``feature_gains``.

The search is the CPU's own code: :func:`feature_bests` runs one thread per feature, and each calls
``splitting._best_in_feature`` (numba's CUDA target compiles a ``@njit`` function called from a
kernel as a device function), so a feature's thresholds, NaN directions, constraints and gains are
evaluated by the same source in the same order. :func:`._cuda_reduce_kernels.pick_best` then takes, by a block
reduction, the first feature whose gain is strictly larger than every earlier one: the CPU's tie-breaking (lower
feature, then lower bin, then NaN right before NaN left). Only the chosen split, a
``float64[SPLIT_SIZE]`` record (:mod:`.common`), goes back to the host; the histograms stay.

Under numba's CUDA simulator a kernel's arrays are Python objects that ``@njit`` code cannot take,
so there the kernels call the function's Python source (``py_func``), whose helpers
(``node_hessian``, ``_score``) still run compiled on the same scalars: the same arithmetic.

The arithmetic kernel: :func:`subtract` (``parent -= child``, elementwise, as numpy does on the
host; exact on the grid of :mod:`.fixed_point`).
"""
from .._cuda_runtime import cuda_module, device_function
from .splitting import _best_in_feature

cuda = cuda_module()

__all__ = ["feature_bests", "subtract"]

_best = device_function(_best_in_feature)


@cuda.jit(cache=True)
def feature_bests(hist, ph, use_pairs, bins, mask, node, rules, parent, per, gains):
    """Thread ``f``: ``gains[f]`` = feature ``f``'s best gain > 0 (0 outside ``mask``), ``per[f]`` its
    split record (written only when its gain > 0). ``bins``, ``node``, ``rules``: the records of
    ``splitting.find_best_split`` (with ``rules.score`` WSE and no pairs: ``feature_gains``'s gains)."""
    f = cuda.grid(1)
    if f >= bins.n_bins.shape[0]:
        return
    gains[f] = 0.0
    if mask[f]:
        gains[f] = _best(f, hist, ph, use_pairs, bins, node, rules, parent, per[f])


@cuda.jit(cache=True)
def subtract(a, b):
    """``a -= b`` over flat arrays of one size (one thread per entry)."""
    i = cuda.grid(1)
    if i < a.shape[0]:
        a[i] -= b[i]
