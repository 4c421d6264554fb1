"""Where a computation runs: the one :class:`Device` record and the one parser of ``device=`` strings.

Every public ``device=`` option (``xgboost_objective``, ``xgboost_params``, the Dask adapter,
``TreeBooster``, ``customobj compare --device``) goes through :func:`as_device` once, at the
boundary; below it only the record travels (nothing compares device strings). The names are
XGBoost's: ``"cpu"``, ``"cuda"`` (the current CUDA device) and ``"cuda:N"`` (CUDA device ``N``,
as numba numbers them: ``numba.cuda.gpus[N]``).

This module is a leaf: it imports nothing (not even numpy, nor ever numba.cuda), so the CPU path
pays nothing for it; ``_cuda_runtime`` (the door to numba.cuda) takes its records.

Examples
--------
>>> as_device("cuda:1")
Device(kind=<DeviceKind.CUDA: 'cuda'>, ordinal=1)
>>> str(as_device("cuda")), as_device("cpu").is_cuda
('cuda', False)
>>> as_device("gpu")
Traceback (most recent call last):
...
ValueError: device must be 'cpu', 'cuda' or 'cuda:N' (N a CUDA device ordinal, e.g. 'cuda:0'), got 'gpu'
"""
from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import ClassVar, Optional

__all__ = ["DeviceKind", "Device", "as_device", "device_of", "is_device_array", "DEVICE_NAMES"]


class DeviceKind(enum.Enum):
    """The kinds of device; each value is the name ``device=`` takes (the one list of them)."""

    CPU = "cpu"
    CUDA = "cuda"


#: What ``device=`` accepts, for messages and ``--help``.
DEVICE_NAMES = "'cpu', 'cuda' or 'cuda:N' (N a CUDA device ordinal, e.g. 'cuda:0')"
# "cuda:N": XGBoost's form; digits only (no sign, no space), at most 6 of them (no machine has more).
_CUDA_N = re.compile(r"cuda:([0-9]{1,6})")


@dataclass(frozen=True)
class Device:
    """A device: its kind and, for CUDA, an ordinal (``None``: the current device, numba's default).

    ``Device.CPU`` and ``Device.CUDA`` are the two devices without an ordinal.
    """

    kind: DeviceKind
    ordinal: Optional[int] = None

    CPU: ClassVar["Device"]
    CUDA: ClassVar["Device"]

    @property
    def is_cuda(self) -> bool:
        """True for a CUDA device (any ordinal)."""
        return self.kind is DeviceKind.CUDA

    def __str__(self) -> str:
        """The name ``device=`` takes for this device (``"cuda:1"``), as XGBoost spells it."""
        return self.kind.value if self.ordinal is None else f"{self.kind.value}:{self.ordinal}"


Device.CPU = Device(DeviceKind.CPU)
Device.CUDA = Device(DeviceKind.CUDA)
#: Each kind's name -> its device without an ordinal (the same record every time).
_BY_NAME = {str(d): d for d in (Device.CPU, Device.CUDA)}


def as_device(value: object, name: str = "device") -> Device:
    """``value`` (a name or a :class:`Device`) as a :class:`Device`; the one parser of device names.

    Raises
    ------
    TypeError
        ``value`` is neither a string nor a :class:`Device` (the message names ``name``).
    ValueError
        An unknown name (the message names ``name`` and lists the accepted forms).
    """
    if isinstance(value, Device):
        return value
    if not isinstance(value, str):
        raise TypeError(f"{name} must be {DEVICE_NAMES}, got {type(value).__name__} {value!r}")
    if value in _BY_NAME:
        return _BY_NAME[value]
    match = _CUDA_N.fullmatch(value)
    if match is None:
        raise ValueError(f"{name} must be {DEVICE_NAMES}, got {value!r}")
    return Device(DeviceKind.CUDA, int(match.group(1)))


def is_device_array(x: object) -> bool:
    """True for arrays in GPU memory: anything with ``__cuda_array_interface__`` (CuPy, PyTorch,
    numba) and numba's device arrays, simulated ones included (under numba's CUDA simulator they
    have no ``__cuda_array_interface__``). Cheap: imports nothing."""
    if hasattr(x, "__cuda_array_interface__"):
        return True
    module = type(x).__module__ or ""
    return module.startswith("numba") and hasattr(x, "copy_to_host")


def device_of(scores: object) -> Device:
    """``Device.CUDA`` (the current device) for arrays in GPU memory (:func:`is_device_array`),
    else ``Device.CPU``: the device follows the data.

    Examples
    --------
    >>> import numpy as np
    >>> device_of(np.zeros(3)) is Device.CPU
    True
    """
    return Device.CUDA if is_device_array(scores) else Device.CPU
