r"""Pre-rounding of a tree's gradients, hessians and pair couplings onto a power-of-two grid, so every
sum of them is exact: the same bits in any order, on the CPU and on the GPU.

Why (issue "the GPU OLE learner at the speed of the card", issue "customobj in a user's hands", point
5): a GPU histogram is built by thousands of threads whose order is not fixed, and the CPU's
chunked pair histograms add in yet another order; float sums in different orders differ in their
last bits, and at exact ties that chose different splits on the CPU and the GPU. The technique is
XGBoost's deterministic GPU histograms (``CreateRoundingFactor`` in src/common/deterministic.cuh,
``GradientQuantiser`` in src/tree/gpu_hist/histogram.cuh; Demmel and Nguyen's pre-rounding): round
each value once to a multiple of a step :math:`\delta` so small that no partial sum can leave
float64's 53-bit integer range; then every addition is exact, so every order gives the same result,
and the GPU can add with integer atomics (``q = x / \delta``, int64) in shared memory.

The grid of a set of values :math:`x_k` (one per tree: the in-bag rows' gradients, their hessians,
the tree's pair couplings) depends only on exact, order-free quantities: :math:`m = \max_k |x_k|`,
:math:`P` the smallest power of two :math:`\ge m`, and the integer
:math:`T = \sum_k \lceil 2^{20} |x_k| / P \rceil` (int64, exact), an upper bound of
:math:`2^{20} \sum_k |x_k| / P`. Then

.. math::

    R = 2^{\lceil \log_2 2T \rceil} \, P \, 2^{-20} \;\ge\; 2 \sum_k |x_k|, \qquad
    \delta = R \, 2^{-52}, \qquad \tilde x_k = \delta \, \lfloor x_k / \delta + 1/2 \rfloor .

Every partial sum of :math:`\tilde x` (and of the pair histograms' ``R`` channel, which holds each
coupling twice) is a multiple of :math:`\delta` of magnitude at most :math:`R = 2^{52}\delta`: exact
in float64. **Rounding bound:** :math:`|\tilde x_k - x_k| \le \delta / 2 = R\,2^{-53}`, and since
:math:`2^{20}\sum|x| / P \le T \le 2^{20}\sum|x| / P + n`, :math:`R < 4 (\sum_k |x_k| + n P 2^{-20})`,
so each value moves by less than :math:`2^{-51} (\sum_k |x_k| + n\,2^{-20} P)`, a sum of
:math:`n'` of them by less than :math:`n'` times that (the errors have random signs: typically
:math:`\sqrt{n'}` times); docs/kernel-notes.md works the bound out at a large data set's size.
A value below :math:`\delta/2` becomes 0; non-finite values leave the grid step at 0 (no
rounding; the sums are then not exact, and the GPU's are 0).

**Range** (issue 39): the grid exists while :math:`R` is finite: :math:`m \le 2^{1023}` (no larger
power of two exists; :func:`pow2_at_least` says 0 above it instead of doubling to ``inf`` and
halving ``inf`` for ever) and :math:`4 (\sum_k |x_k| + n P 2^{-20})` below float64's maximum;
otherwise the step is 0, as for non-finite values. ``TreeBooster`` keeps inside it: every gradient and hessian it grows a tree from
is finite with magnitude at most :data:`VALUE_LIMIT` (``2**900``, about 8.5e270;
:func:`check_tree_values` raises ``ValueError`` naming them otherwise, before any tree is grown
from them). With at most ``MAX_ROWS`` (``2**40``) rows, ``R < 2**943``: every grid exists.
customobj's own objectives stay below 1e183 by their input limits (docs/robustness.md), so the
check bounds only a user's own objective, whose gradients a GPU fit also takes on the host: the CPU
and the GPU refuse alike. Inside the range the trees stay finite: a criterion's ``G^2`` that
overflows (sums above ``2**511``) scores no split, and a tree whose leaf values or gains leave what
a model file holds is refused, naming the gradients and hessians (``training.check_finite_tree``).
Values this large are not scaled: leaf values ``-G / (D + lambda_l2)`` and ``lambda_l2`` itself
are not scale-free, so a silent rescaling would change the model.

Examples
--------
>>> import numpy as np
>>> x = np.array([0.1, 0.2, 0.3, 1e-3])
>>> step = grid_step_of(x, 0, 4)
>>> step == 2.0 ** -51  # R = 2: the smallest grid power >= 2 * 0.601
True
>>> xr = x.copy(); round_range(xr, 0, 4, step)
>>> float(abs(xr - x).max()) <= step / 2, float(xr[0] + xr[1] + xr[2]) == float(xr[2] + xr[1] + xr[0])
(True, True)
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["VALUE_LIMIT", "check_tree_values", "first_outside", "pow2_at_least", "fold_abs_max", "grid_step", "magnitude_units", "to_grid", "grid_step_of", "grid_step_of_rows",
           "round_range", "round_rows", "UNIT_BITS"]

#: Bits of the integer magnitudes behind ``T`` (``2**20`` units per ``P``): ``T`` bounds the sum of
#: ``n`` values from above by at most ``n`` units, a ``n 2**-20 P`` slack in ``R``.
UNIT_BITS = 20
_UNITS = float(2**UNIT_BITS)
_MANTISSA = 2.0**-52
_TINIEST = 5e-324  # the smallest subnormal: a grid step never rounds down to 0 for a finite m > 0
_LARGEST_POW2 = 2.0**1023  # no power of two lies between it and float64's maximum
#: Largest ``|gradient|`` and ``|hessian|`` a tree is grown from (module docstring, "Range").
VALUE_LIMIT = 2.0**900


@njit(cache=True)
def pow2_at_least(x):
    """The smallest power of two ``>= x`` for a finite ``x > 0`` (0.0 otherwise), by exact doublings
    and halvings (no ``log2``, whose last bit the CPU's and the GPU's libraries may round differently)."""
    if not (x > 0.0) or x > _LARGEST_POW2:  # above 2**1023 the doubling would reach inf and never halve back
        return 0.0
    p = 1.0
    while p < x:
        p *= 2.0
    while p * 0.5 >= x:
        p *= 0.5
    return p


@njit(cache=True)
def fold_abs_max(m, x):
    """``max(m, |x|)``, a NaN ``x`` counting as ``inf`` (so its grid step is 0): order-free."""
    a = abs(x)
    if a != a:
        return np.inf
    return a if a > m else m


@njit(cache=True)
def magnitude_units(x, p):
    """``ceil(2**20 |x| / p)`` as int64 (``p``: a power of two ``>=`` every ``|x|``; 0 for a non-finite ``x``)."""
    a = abs(x)
    if not (a <= p) or p == 0.0:  # a non-finite x, or no grid (every value 0)
        return np.int64(0)
    return np.int64(math.ceil(a / p * _UNITS))


@njit(cache=True)
def grid_step(m, total):
    """The grid step :math:`\\delta` of values with largest magnitude ``m`` and unit sum ``total``
    (module docstring); 0.0 when ``m`` is 0 or not finite."""
    p = pow2_at_least(m)
    if p == 0.0 or total <= 0:
        return 0.0
    r = pow2_at_least(2.0 * float(total)) * (p / _UNITS)
    if r > _LARGEST_POW2:  # R overflowed to inf: no grid (module docstring, "Range")
        return 0.0
    return max(r * _MANTISSA, _TINIEST)


@njit(cache=True)
def to_grid(x, step):
    """``x`` rounded to the nearest multiple of ``step`` (ties up); ``x`` itself when ``step`` is 0."""
    if step == 0.0:
        return x
    return math.floor(x / step + 0.5) * step


@njit(cache=True)
def grid_step_of(x, lo, hi):
    """The grid step of ``x[lo:hi]``."""
    m = 0.0
    for k in range(lo, hi):
        m = fold_abs_max(m, x[k])
    p = pow2_at_least(m)
    total = np.int64(0)
    for k in range(lo, hi):
        total += magnitude_units(x[k], p)
    return grid_step(m, total)


@njit(cache=True)
def grid_step_of_rows(order, x):
    """The grid step of ``x[order]``."""
    m = 0.0
    for k in range(order.shape[0]):
        m = fold_abs_max(m, x[order[k]])
    p = pow2_at_least(m)
    total = np.int64(0)
    for k in range(order.shape[0]):
        total += magnitude_units(x[order[k]], p)
    return grid_step(m, total)


@njit(cache=True)
def round_range(x, lo, hi, step):
    """``x[lo:hi]`` onto the grid, in place."""
    for k in range(lo, hi):
        x[k] = to_grid(x[k], step)


@njit(cache=True)
def round_rows(order, x, step, out):
    """``out[r] = to_grid(x[r])`` for the rows ``r`` of ``order``; returns their sum (exact)."""
    s = 0.0
    for k in range(order.shape[0]):
        r = order[k]
        v = to_grid(x[r], step)
        out[r] = v
        s += v
    return s


@njit(cache=True)
def first_outside(x, limit):
    """The first index ``k`` (C order) whose ``x`` is NaN, infinite or of magnitude above ``limit``;
    -1 when there is none. One pass, no temporary array."""
    flat = x.reshape(-1)
    for k in range(flat.shape[0]):
        if not (abs(flat[k]) <= limit):
            return k
    return -1


def check_tree_values(grad: np.ndarray, hess: np.ndarray) -> None:
    """Refuse gradients or hessians outside the grid's range (module docstring, "Range").

    Raises
    ------
    ValueError
        Naming ``gradients`` or ``hessians``, the first bad value and its position, and the limit.

    Examples
    --------
    >>> check_tree_values(np.array([1.0, -2.0]), np.array([0.5, 0.5]))
    >>> check_tree_values(np.array([1.0, np.nan]), np.array([0.5, 0.5]))
    Traceback (most recent call last):
    ...
    ValueError: the objective's gradients must be finite with magnitude at most 2**900 (about 8.5e+270: customobj.ole.fixed_point.VALUE_LIMIT); found nan at row 1
    """
    for name, a in (("gradients", grad), ("hessians", hess)):
        k = first_outside(np.ascontiguousarray(a), VALUE_LIMIT)
        if k >= 0:
            row = np.unravel_index(k, a.shape)
            where = f"row {row[0]}" if a.ndim == 1 else f"row {row[0]}, column {row[1]}"
            raise ValueError(f"the objective's {name} must be finite with magnitude at most 2**900 (about "
                             f"{VALUE_LIMIT:.2g}: customobj.ole.fixed_point.VALUE_LIMIT); found "
                             f"{float(a.reshape(-1)[k])!r} at {where}")
