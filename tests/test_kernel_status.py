"""customobj/_kernel_status.py: the boundary turns codes into plain ints and refuses the rest;
a kernel's status becomes a ValueError. The kernels' own signals: test_objectives_pairwise_kernels.py,
test_objectives_lambdarank_kernels.py, test_metric_kernels.py, test_objectives_parity.py."""
from enum import IntEnum

import numpy as np
import pytest

from customobj._kernel_status import KernelStatus, as_code, check_status


class _Codes(IntEnum):
    FIRST = 0
    SECOND = 1


@pytest.mark.parametrize("value", [_Codes.SECOND, 1, np.int64(1), np.int32(1)])
def test_as_code_gives_a_plain_int(value):
    code = as_code(value, _Codes, "mode")
    assert code == 1 and type(code) is int  # a plain int: one numba specialisation for every caller


@pytest.mark.parametrize("value, error", [(2, ValueError), (-1, ValueError), (True, TypeError), (1.0, TypeError),
                                          ("FIRST", TypeError), (None, TypeError)])
def test_as_code_names_the_argument_and_the_known_codes(value, error):
    with pytest.raises(error, match="mode must be a _Codes code"):
        as_code(value, _Codes, "mode")
    if error is ValueError:
        with pytest.raises(ValueError, match=r"FIRST=0, SECOND=1"):
            as_code(value, _Codes, "mode")


class _Other(IntEnum):
    ONLY = 0


def test_as_code_refuses_a_member_of_another_enum():
    with pytest.raises(TypeError, match="mode must be a _Codes code, got _Other"):
        as_code(_Other.ONLY, _Codes, "mode")


def test_check_status_raises_on_anything_but_ok():
    check_status(KernelStatus.OK, "k")
    check_status(0, "k")
    for bad in (KernelStatus.UNKNOWN_CODE, 1, 5):
        with pytest.raises(ValueError, match="k: the kernel met a dispatch code it does not know"):
            check_status(bad, "k")


def test_checked_value_returns_the_value_or_raises_on_a_bad_status():
    from customobj._kernel_status import checked_value

    assert checked_value((2.5, int(KernelStatus.OK)), "k") == 2.5
    with pytest.raises(ValueError, match="k:"):
        checked_value((2.5, int(KernelStatus.UNKNOWN_CODE)), "k")
