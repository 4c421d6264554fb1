"""numba.cuda kernels of the OLE grower's split search and histogram arithmetic: the GPU twins of
:func:`customobj.ole.splitting.find_best_split_parallel` and ``feature_gains``.

The search is the CPU's own code: :func:`feature_bests` runs one thread per feature, and each calls
``splitting._best_in_feature`` (numba's CUDA target compiles a ``@njit`` function called from a
kernel as a device function), so a feature's thresholds, NaN directions, constraints and gains are
evaluated by the same source in the same order. :func:`pick_best` then takes, in one thread, the
first feature whose gain is strictly larger than every earlier one: the CPU's tie-breaking (lower
feature, then lower bin, then NaN right before NaN left). Only the chosen split, a
``float64[SPLIT_SIZE]`` record (:mod:`.common`), goes back to the host; the histograms stay.

Under numba's CUDA simulator a kernel's arrays are Python objects that ``@njit`` code cannot take,
so there the kernels call the function's Python source (``py_func``), whose helpers
(``node_hessian``, ``_score``) still run compiled on the same scalars: the same arithmetic.

The arithmetic kernels: :func:`subtract` (``parent -= child``, elementwise, as numpy does on the
host) and :func:`block_sums` / :func:`ordered_sums` (a node's gradient and hessian sums: fixed
blocks of rows in order, then the blocks in order; one block adds the rows in the CPU's order).
"""
from .._cuda_runtime import cuda_module, device_function
from .common import SPLIT_FEATURE, SPLIT_SIZE
from .criterion import WSE
from .splitting import _best_in_feature

cuda = cuda_module()

__all__ = ["feature_bests", "pick_best", "feature_wse_gains", "subtract", "block_sums", "ordered_sums"]

_best = device_function(_best_in_feature)


@cuda.jit(cache=True)
def feature_bests(hist, ph, use_pairs, score, n_bins, offsets, mask, G, H, N, C, lam, min_data, min_hess, parent,
                  per, gains):
    """Thread ``f``: ``gains[f]`` = feature ``f``'s best gain > 0 (0 outside ``mask``), ``per[f]`` its
    split record (written only when its gain > 0)."""
    f = cuda.grid(1)
    if f >= n_bins.shape[0]:
        return
    gains[f] = 0.0
    if mask[f]:
        gains[f] = _best(f, hist, ph, use_pairs, score, n_bins, offsets, G, H, N, C, lam, min_data, min_hess,
                         parent, per[f])


@cuda.jit(cache=True)
def pick_best(per, gains, res):
    """One thread: ``res`` = the record of the first feature with the strictly largest gain > 0, as
    ``find_best_split_parallel`` picks; else zeros with feature -1 (no split)."""
    if cuda.grid(1) != 0:
        return
    for k in range(SPLIT_SIZE):
        res[k] = 0.0
    res[SPLIT_FEATURE] = -1.0
    best = 0.0
    for f in range(gains.shape[0]):
        if gains[f] > best:
            best = gains[f]
            for k in range(SPLIT_SIZE):
                res[k] = per[f, k]


@cuda.jit(cache=True)
def feature_wse_gains(hist, ph, n_bins, offsets, mask, G, H, N, lam, min_data, min_hess, parent, per, gains):
    """Thread ``f``: ``gains[f]`` = feature ``f``'s best WSE gain > 0, else 0 (``feature_gains``'s)."""
    f = cuda.grid(1)
    if f >= n_bins.shape[0]:
        return
    gains[f] = 0.0
    if mask[f]:
        gains[f] = _best(f, hist, ph, False, WSE, n_bins, offsets, G, H, N, 0.0, lam, min_data, min_hess, parent,
                         per[f])


@cuda.jit(cache=True)
def subtract(a, b):
    """``a -= b`` over flat arrays of one size (one thread per entry)."""
    i = cuda.grid(1)
    if i < a.shape[0]:
        a[i] -= b[i]


@cuda.jit(cache=True)
def block_sums(rows, n, nb, grad, hess, out):
    """Thread ``b``: ``out[b] = (sum g, sum h)`` of ``rows[lo:hi]``, block ``b`` of ``nb``, in order."""
    b = cuda.grid(1)
    if b >= nb:
        return
    g = 0.0
    h = 0.0
    for k in range((n * b) // nb, (n * (b + 1)) // nb):
        r = rows[k]
        g += grad[r]
        h += hess[r]
    out[b, 0] = g
    out[b, 1] = h


@cuda.jit(cache=True)
def ordered_sums(part, nb, out):
    """One thread: ``out = part[:nb]`` summed per column, blocks in order (starting from the first)."""
    if cuda.grid(1) != 0:
        return
    g = part[0, 0]
    h = part[0, 1]
    for b in range(1, nb):
        g += part[b, 0]
        h += part[b, 1]
    out[0] = g
    out[1] = h
