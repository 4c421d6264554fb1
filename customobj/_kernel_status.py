"""The one home of the integer-dispatch contract between Python and the numba kernels, and of the
statuses every kernel returns (the objectives', the metrics' and the OLE grower's split search).

Every integer that picks a case inside a kernel (a pair loss ``kind``, a LambdaRank metric, a
discount convention, ...) is a member of an ``IntEnum`` that lives next to its kernels. Python
turns it into a plain ``int`` once, at the boundary, with :func:`as_code` (which refuses anything
that is not a member: a kernel compiled for ``int64`` then serves every call, and an
``IntEnum`` argument never triggers a second compilation). A kernel that still meets a code it
does not know computes nothing and returns :attr:`KernelStatus.UNKNOWN_CODE`; the caller passes
the status to :func:`check_status`, which raises (a split search's to :func:`split_found`, which
also says whether it found a split). No kernel falls through to another case.

Examples
--------
>>> from enum import IntEnum
>>> class Shape(IntEnum):
...     ROUND = 0
...     SQUARE = 1
>>> as_code(Shape.SQUARE, Shape, "shape")
1
>>> as_code(7, Shape, "shape")
Traceback (most recent call last):
...
ValueError: shape must be a Shape code (ROUND=0, SQUARE=1), got 7
>>> check_status(KernelStatus.OK, "demo")
>>> check_status(KernelStatus.UNKNOWN_CODE, "demo")
Traceback (most recent call last):
...
ValueError: demo: the kernel met a dispatch code it does not know (status -1)
"""
from __future__ import annotations

import numbers
from enum import IntEnum
from typing import Any, Type

__all__ = ["KernelStatus", "as_code", "check_status", "checked_value", "split_found"]


class KernelStatus(IntEnum):
    """What a kernel that takes a dispatch code returns (alone, or as the first or last item of a tuple).

    The split searches of ``customobj.ole.splitting`` also say whether they found a split: they
    return ``SPLIT_FOUND`` or ``SPLIT_NONE`` (the same value as ``OK``: the search ran).
    """

    OK = 0
    #: The kernel ran and has nothing to report; for a split search: no split with gain > 0.
    SPLIT_NONE = 0
    #: A split search found a split with gain > 0.
    SPLIT_FOUND = 1
    #: The kernel met a dispatch code it does not know and computed nothing (its caller raises).
    UNKNOWN_CODE = -1


def as_code(value: Any, codes: Type[IntEnum], name: str) -> int:
    """``value`` as the plain ``int`` of a member of ``codes``; ``ValueError`` naming ``name`` if none.

    Booleans, non-integers and members of another enum are refused (``True`` is not a code even
    where ``1`` is, nor is a ``Theta`` member a ``PairKind``).
    """
    if (isinstance(value, bool) or not isinstance(value, numbers.Integral)
            or (isinstance(value, IntEnum) and not isinstance(value, codes))):
        raise TypeError(f"{name} must be a {codes.__name__} code, got {type(value).__name__} {value!r}")
    try:
        return int(codes(int(value)))
    except ValueError:
        known = ", ".join(f"{m.name}={int(m)}" for m in codes)
        raise ValueError(f"{name} must be a {codes.__name__} code ({known}), got {value!r}") from None


def check_status(status: int, kernel: str) -> None:
    """Raise ``ValueError`` unless a kernel's returned ``status`` is :attr:`KernelStatus.OK`."""
    if status != KernelStatus.OK:
        raise ValueError(f"{kernel}: the kernel met a dispatch code it does not know (status {int(status)})")


def checked_value(result: "tuple[Any, int]", kernel: str) -> Any:
    """The value of a ``(value, status)`` kernel result, after :func:`check_status` on its status."""
    value, status = result
    check_status(status, kernel)
    return value


def split_found(status: int, kernel: str, code: int, codes: Type[IntEnum], name: str) -> bool:
    """A split search's ``status`` read at the Python boundary: True for ``SPLIT_FOUND``, False for
    ``SPLIT_NONE``; ``ValueError`` naming the unknown ``name`` code ``code`` (the members of ``codes``)
    for ``UNKNOWN_CODE`` (the kernel computed nothing), or for any other status.

    Examples
    --------
    >>> Score = IntEnum("Score", {"SE": 0, "OLE": 2})
    >>> split_found(KernelStatus.SPLIT_FOUND, "find_best_split", 2, Score, "criterion")
    True
    >>> split_found(KernelStatus.UNKNOWN_CODE, "find_best_split", 7, Score, "criterion")
    Traceback (most recent call last):
    ...
    ValueError: find_best_split: unknown criterion code 7 (Score codes: SE=0, OLE=2)
    """
    if status == KernelStatus.UNKNOWN_CODE:
        known = ", ".join(f"{m.name}={int(m)}" for m in codes)
        raise ValueError(f"{kernel}: unknown {name} code {code} ({codes.__name__} codes: {known})")
    if status != KernelStatus.SPLIT_FOUND and status != KernelStatus.SPLIT_NONE:
        raise ValueError(f"{kernel}: a split search returned status {int(status)} (SPLIT_FOUND=1, SPLIT_NONE=0)")
    return status == KernelStatus.SPLIT_FOUND
