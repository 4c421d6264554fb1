"""customobj._device: the one Device record and the one parser of ``device=`` strings, used by the
adapters, TreeBooster, ``customobj compare --device`` and the objectives."""
from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from customobj._device import Device, DeviceKind, as_device, device_of, is_device_array


@pytest.mark.parametrize("text, kind, ordinal", [("cpu", DeviceKind.CPU, None), ("cuda", DeviceKind.CUDA, None),
                                                 ("cuda:0", DeviceKind.CUDA, 0), ("cuda:3", DeviceKind.CUDA, 3)])
def test_every_accepted_name_parses_and_prints_back(text, kind, ordinal):
    device = as_device(text)
    assert device == Device(kind, ordinal) and str(device) == text
    assert ordinal is not None or device is (Device.CPU if kind is DeviceKind.CPU else Device.CUDA)
    assert device.is_cuda == (kind is DeviceKind.CUDA)
    assert as_device(device) is device  # a record passes through
    assert pickle.loads(pickle.dumps(device)) == device and hash(device) == hash(Device(kind, ordinal))


def test_the_named_devices_are_the_parsed_ones():
    assert as_device("cpu") == Device.CPU and as_device("cuda") == Device.CUDA
    assert as_device("cuda:0") != Device.CUDA  # an explicit ordinal is kept


@pytest.mark.parametrize("bad", ["gpu", "CUDA", "cuda:", "cuda:-1", "cuda:+1", "cuda: 1", " cuda", "cuda:1:2",
                                 "cuda:1.0", "cuda:x", "", "cuda:1234567", "cpu:0"])
def test_bad_names_are_value_errors_naming_the_argument(bad):
    with pytest.raises(ValueError, match=r"^device must be 'cpu', 'cuda' or 'cuda:N' .*got"):
        as_device(bad)
    with pytest.raises(ValueError, match=r"^params\['device'\] must be"):
        as_device(bad, "params['device']")


@pytest.mark.parametrize("bad", [None, 1, 0.0, True, b"cuda", ["cuda"]])
def test_non_strings_are_type_errors_naming_the_argument(bad):
    with pytest.raises(TypeError, match=r"^device must be 'cpu', 'cuda' or 'cuda:N'"):
        as_device(bad)


def test_host_arrays_are_on_the_cpu():
    assert device_of(np.zeros(3)) is Device.CPU and device_of([1.0]) is Device.CPU
    assert not is_device_array(np.zeros(2)) and not is_device_array(None)

    class Interface:
        __cuda_array_interface__: dict = {}

    assert device_of(Interface()) is Device.CUDA


def test_the_module_is_a_leaf_that_imports_only_the_standard_library():
    import ast
    import customobj._device as module

    tree = ast.parse(Path(module.__file__).read_text())
    imported = {a.name.split(".")[0] for st in ast.walk(tree) if isinstance(st, ast.Import) for a in st.names}
    imported |= {st.module.split(".")[0] for st in ast.walk(tree) if isinstance(st, ast.ImportFrom) and st.module}
    assert imported <= {"__future__", "enum", "re", "dataclasses", "typing"}, imported
    assert not any(isinstance(st, ast.ImportFrom) and st.level for st in ast.walk(tree))  # nothing of customobj
