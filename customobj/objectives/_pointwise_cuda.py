"""numba.cuda kernels of the pointwise losses and of the device plumbing: the GPU drivers of
``_pointwise_kernels`` (SquaredError, Logistic, SquaredHinge through one kernel and their
``RowKind``, McRank's softmax), one thread per row, calling the CPU's own row math (``_pointwise_terms``); plus the checked score conversion, ``Scaled``'s
``out += f x`` (and its pairs', ``place_scaled``), the float32 copy handed to XGBoost, and each query's sum of per-row values (the
per-query costs ``MultiObjective`` reads: ``DeviceRoute.grad_hess_loss``).
"""
from .._cuda_runtime import cuda_module, device_function
from . import _pointwise_terms as R
from ._block_cuda import grid_item

cuda = cuda_module()

_weight = device_function(R.row_weight)
_pointwise_terms = device_function(R.row_terms)
_row_loss = device_function(R.row_loss)
_top_z, _p, _mcrank = device_function(R.softmax_top_z), device_function(R.softmax_p), device_function(R.mcrank_row_class)

#: Flags raised by ``to_float64`` (``bad[0]``) and ``to_float32`` (``bad[0]``).
NOT_FINITE_OR_TOO_LARGE = 1


@cuda.jit(cache=True)
def pointwise_rows(kind, scores, labels, weights, use_weights, param, out_grad, out_hess):
    """One thread per row: the row's terms of the loss ``kind`` (a ``_pointwise_terms.RowKind`` code,
    ``param`` its parameter: ``_pointwise_terms.row_terms``) added into the outputs."""
    i = cuda.grid(1)
    if i >= scores.shape[0]:
        return
    adds, g, h = _pointwise_terms(kind, scores[i], labels[i], _weight(weights, use_weights, i), param)
    if adds:
        out_grad[i] += g
        out_hess[i] += h


@cuda.jit(cache=True)
def pointwise_loss_rows(kind, scores, labels, weights, use_weights, param, out):
    """One thread per row: ``out[i]`` = the row's loss of ``kind`` (``_pointwise_terms.row_loss``)."""
    i = cuda.grid(1)
    if i < scores.shape[0]:
        out[i] = _row_loss(kind, scores[i], labels[i], _weight(weights, use_weights, i), param)


@cuda.jit(cache=True)
def query_sums(ptr, values, out):
    """One thread per query ``q``: ``out[q]`` = ``values[ptr[q]:ptr[q + 1]]`` added in order."""
    q = cuda.grid(1)
    if q >= ptr.shape[0] - 1:
        return
    acc = 0.0
    for a in range(ptr[q], ptr[q + 1]):
        acc += values[a]
    out[q] = acc


@cuda.jit(cache=True)
def mcrank_rows(scores, labels, weights, use_weights, out_grad, out_hess):
    """Softmax over the row's K outputs (``_softmax_row``: max-shifted, normalised after the sum)."""
    i = cuda.grid(1)
    if i >= scores.shape[0]:
        return
    f = scores[i]
    w = _weight(weights, use_weights, i)
    top, z = _top_z(f)
    y = int(labels[i])
    for k in range(f.shape[0]):
        g, h = _mcrank(_p(f, k, top, z), k, y, w)
        out_grad[i, k] += g
        out_hess[i, k] += h


@cuda.jit(cache=True)
def to_float64(src, dst, limit, bad):
    """``dst = float64(src)`` (1-D views); ``bad[0]`` set when a value is NaN, inf or beyond ``limit``."""
    i = cuda.grid(1)
    if i >= src.shape[0]:
        return
    v = float(src[i])
    if not abs(v) <= limit:
        bad[0] = NOT_FINITE_OR_TOO_LARGE
    dst[i] = v


@cuda.jit(cache=True)
def add_scaled(dst, src, factor):
    """``dst += factor * src`` (1-D views): ``Scaled``'s contribution."""
    i = cuda.grid(1)
    if i < dst.shape[0]:
        dst[i] += factor * src[i]


@cuda.jit(cache=True)
def place_scaled(pi, pj, pc, weight, base, out_i, out_j, out_c):
    """``out[base + t] = (pi[t], pj[t], weight * pc[t])``: pairs times a factor, from an offset (the CPU's
    ``weight * c``; ``weight = 1.0`` copies ``c``'s bits). ``MultiObjective``'s weighted labels, a ``Sum``'s
    parts concatenated, a ``Scaled``'s in place (``out`` the input itself: each thread reads then writes
    its own pair), ``Unbiased``'s debiased leaves."""
    t = grid_item(pc.shape[0])
    if t >= 0:
        out_i[base + t] = pi[t]
        out_j[base + t] = pj[t]
        out_c[base + t] = weight * pc[t]


@cuda.jit(cache=True)
def fill(dst, value):
    i = cuda.grid(1)
    if i < dst.shape[0]:
        dst[i] = value


@cuda.jit(cache=True)
def to_float32(src, dst, limit, bad):
    """``dst = float32(src)`` (1-D views); ``bad[0]`` set when a value is beyond float32's range."""
    i = cuda.grid(1)
    if i >= src.shape[0]:
        return
    v = src[i]
    if abs(v) <= limit:
        dst[i] = v
    else:  # the caller raises; nothing out of range is written
        bad[0] = NOT_FINITE_OR_TOO_LARGE
        dst[i] = 0.0
