"""numba.cuda kernels of the pointwise losses and of the device plumbing: the GPU twins of
``_pointwise_kernels`` (SquaredError, Logistic, SquaredHinge, McRank's softmax) with the same float64
arithmetic, one thread per row; plus the checked score conversion, ``Scaled``'s ``out += f x`` and
the float32 copy handed to XGBoost.
"""
import math

from .._cuda_runtime import cuda_module

cuda = cuda_module()

#: Flags raised by ``to_float64`` (``bad[0]``) and ``to_float32`` (``bad[0]``).
NOT_FINITE_OR_TOO_LARGE = 1


@cuda.jit(cache=True)
def squared_error_rows(scores, labels, weights, use_weights, out_grad, out_hess):
    i = cuda.grid(1)
    if i >= scores.shape[0]:
        return
    w = weights[i] if use_weights else 1.0
    out_grad[i] += w * (scores[i] - labels[i])
    out_hess[i] += w


@cuda.jit(cache=True)
def logistic_rows(scores, labels, weights, use_weights, sigma, out_grad, out_hess):
    i = cuda.grid(1)
    if i >= scores.shape[0]:
        return
    w = weights[i] if use_weights else 1.0
    t = 2.0 * labels[i] - 1.0
    z = 2.0 * t * sigma * scores[i]
    e = math.exp(-abs(z))
    inv = 1.0 / (1.0 + e)
    p = e * inv if z >= 0.0 else inv
    u = 2.0 * t * sigma * p
    out_grad[i] += -w * u
    out_hess[i] += w * 4.0 * sigma * sigma * e * inv * inv


@cuda.jit(cache=True)
def squared_hinge_rows(scores, labels, weights, use_weights, c, out_grad, out_hess):
    i = cuda.grid(1)
    if i >= scores.shape[0]:
        return
    t = 2.0 * labels[i] - 1.0
    m = 1.0 - t * scores[i]
    if m > 0.0:
        w = weights[i] if use_weights else 1.0
        out_grad[i] += -2.0 * c * w * t * m
        out_hess[i] += 2.0 * c * w


@cuda.jit(cache=True)
def mcrank_rows(scores, labels, weights, use_weights, out_grad, out_hess):
    """Softmax over the row's K outputs (``_softmax_row``: max-shifted, normalised after the sum)."""
    i = cuda.grid(1)
    if i >= scores.shape[0]:
        return
    kk = scores.shape[1]
    w = weights[i] if use_weights else 1.0
    top = scores[i, 0]
    for k in range(1, kk):
        top = max(top, scores[i, k])
    z = 0.0
    for k in range(kk):
        z += math.exp(scores[i, k] - top)
    y = int(labels[i])
    for k in range(kk):
        p = math.exp(scores[i, k] - top) / z
        out_grad[i, k] += w * (p - (1.0 if k == y else 0.0))
        out_hess[i, k] += w * p * (1.0 - p)


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
