"""The objective device seam (customobj/objectives/devices.py) and the routes of the label-pair, LambdaRank,
pointwise, structured and composite losses (customobj/objectives/_launch.py, customobj/objectives/_pairwise_route.py,
customobj/objectives/_lambdarank_route.py, customobj/objectives/_pointwise_route.py,
customobj/objectives/_structured_route.py, customobj/objectives/_composite_route.py): the device follows the data, each
objective's own GPU route (``device_route``; a subclass inherits it), Sum / Scaled on the device, the per-data-set device cache (a changed label is
noticed), and the errors: no GPU kernel, no GPU, no numba-cuda, bad device arrays."""
from __future__ import annotations

import numpy as np
import pytest

import customobj
from customobj import LambdaRank, McRank, RankNet, SquaredError, StructuredDCG
from customobj.objectives import devices
from _cuda_cases import assert_gpu_equals_cpu, compile_listed_kernels, data, needs_gpu, to_device
from _isolated import run_isolated


def test_host_scores_keep_the_cpu_path_and_numpy_outputs():
    s, y, sizes, _ = data(20)
    g, h = RankNet().grad_hess(s, y, sizes)
    assert type(g) is np.ndarray and type(h) is np.ndarray
    assert devices.device_of(s) is devices.Device.CPU


def test_kernels_for_the_cpu_is_the_objectives_own_kernel():
    obj = SquaredError()
    assert devices.kernels_for(obj, devices.Device.CPU) == obj._grad_hess
    assert devices.kernels_for(obj, "cpu") == obj._grad_hess  # a name goes through the one parser
    with pytest.raises(TypeError, match="device must be 'cpu', 'cuda' or 'cuda:N'"):
        devices.kernels_for(obj, 7)
    with pytest.raises(ValueError, match="device must be 'cpu', 'cuda' or 'cuda:N'"):
        devices.kernels_for(obj, "gpu")


#: The exported losses without a GPU route, each needing a measured reason: none (issue 31 item 6).
CPU_ONLY: set = set()


def test_every_objective_names_its_gpu_route_or_is_cpu_only():
    exported = {getattr(customobj, n) for n in customobj.objectives.__all__}
    classes = {c for c in exported if isinstance(c, type) and issubclass(c, customobj.Objective)} - {customobj.Objective}
    routed = {c for c in classes if c.device_route is not customobj.Objective.device_route}
    assert classes and routed and routed | CPU_ONLY == classes and not routed & CPU_ONLY


def test_the_route_is_the_objectives_own_and_a_subclass_inherits_it():
    class MyRankNet(RankNet):
        pass

    assert MyRankNet().device_route() == RankNet().device_route()
    assert devices.kernels_for(MyRankNet(), devices.Device.CUDA).__name__ == "label_pair_loss"
    assert (SquaredError() + MyRankNet()).device_route().couplings is None  # a sum's couplings stay on the host


def test_every_exported_loss_runs_on_the_gpu():
    # Issue 31 item 6: no loss is left CPU-only (an entry would need a measured reason).
    assert not CPU_ONLY


@needs_gpu
def test_device_scores_give_device_arrays():
    s, y, sizes, _ = data(21)
    g, h = RankNet().grad_hess(to_device(s), y, sizes)
    assert devices.device_of(g) is devices.Device.CUDA and devices.device_of(h) is devices.Device.CUDA


@needs_gpu
@pytest.mark.parametrize("make", [
    lambda: LambdaRank() + 0.5 * SquaredError(),
    lambda: 2.0 * (RankNet() + 3.0 * LambdaRank(metric="map")),
    lambda: customobj.QBRank() + customobj.MPBoost(ddf="ldd"),
    lambda: StructuredDCG(k=3) + 0.1 * LambdaRank(),
], ids=["sum", "scaled-sum", "pairwise-sum", "structured-sum"])
def test_sum_and_scaled_equal_cpu(make):
    s, y, sizes, w = data(22, weights=True)
    assert_gpu_equals_cpu(make(), s, y, sizes, w)


@needs_gpu
def test_mcrank_inside_a_sum_learns_k_from_labels():
    rng = np.random.default_rng(23)
    _, y, sizes, _ = data(23, grades=3)
    s = rng.normal(size=(y.size, 3))
    assert_gpu_equals_cpu(McRank() + 0.5 * McRank(), s, y, None)


@needs_gpu
def test_unsupported_objectives_say_so_and_never_fall_back():
    s, y, sizes, _ = data(24)

    class MyLoss(customobj.Objective):  # a loss of its own, with CPU kernels only
        def _grad_hess(self, scores, prep, state, out_grad, out_hess):
            out_grad += scores

    with pytest.raises(NotImplementedError, match="MyLoss has no GPU kernel"):
        MyLoss().grad_hess(to_device(s), y, sizes)
    with pytest.raises(NotImplementedError, match="MyLoss"):  # inside a sum too, before any launch
        (StructuredDCG() + 2.0 * MyLoss()).grad_hess(to_device(s), y, sizes)


@needs_gpu
def test_a_subclass_runs_its_parents_gpu_route():
    s, y, sizes, w = data(26, weights=True)

    class MyRankNet(RankNet):
        pass

    assert_gpu_equals_cpu(MyRankNet(sigma=1.5), s, y, sizes, w)


@needs_gpu
def test_data_goes_to_the_device_once_and_a_changed_label_is_noticed():
    s, y, sizes, _ = data(25)
    obj = RankNet(sigma=1.7)
    obj.grad_hess(to_device(s), y, sizes)
    prep = devices._LAST[obj][3]
    uploaded = prep.device_data
    obj.grad_hess(to_device(s), y.copy(), list(sizes))
    assert devices._LAST[obj][3] is prep and prep.device_data is uploaded
    y[2] = y[2] + 1.0  # the same array, changed in place
    g, _ = assert_gpu_equals_cpu(obj, s, y, sizes)
    assert devices._LAST[obj][3] is not prep
    np.testing.assert_allclose(obj.grad_hess(to_device(s), y, sizes)[0].copy_to_host(), g, rtol=1e-12)


@needs_gpu
def test_prepared_form_writes_given_device_outputs():
    from numba import cuda

    s, y, sizes, _ = data(26)
    obj = LambdaRank(k=3)
    prep = obj.prepare(y, sizes)
    out_g = cuda.to_device(np.full(s.size, 7.0))
    out_h = cuda.device_array(s.size, dtype=np.float64)
    g, h = obj.grad_hess_prepared(to_device(s), prep, out_g, out_h)
    assert g is out_g and h is out_h
    np.testing.assert_allclose(g.copy_to_host(), obj.grad_hess_prepared(s, prep)[0], rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="out_grad must be a float64 device array"):
        obj.grad_hess_prepared(to_device(s), prep, cuda.device_array(3), out_h)


@needs_gpu
def test_device_scores_of_the_wrong_shape_or_dtype_are_refused():
    s, y, sizes, _ = data(27)
    with pytest.raises(ValueError, match="shape"):
        RankNet().grad_hess(to_device(s[:-1]), y, sizes)
    with pytest.raises(TypeError, match="real numbers"):
        RankNet().grad_hess(to_device(s.astype(np.complex128)), y, sizes)


@needs_gpu
def test_bad_labels_are_refused_as_on_the_cpu():
    s, y, sizes, _ = data(28)
    y[0] = -1.0
    with pytest.raises(ValueError, match="non-negative"):
        RankNet().grad_hess(to_device(s), y, sizes)


_FAKE_DEVICE_ARRAY = """
import numpy as np
class Fake:  # what CuPy or PyTorch hands over: only the interface
    __cuda_array_interface__ = {"shape": (3,), "typestr": "<f8", "data": (0, False), "version": 3}
"""


def test_without_a_driver_device_scores_raise_naming_the_driver():
    out = run_isolated(_FAKE_DEVICE_ARRAY + """
import os, ctypes.util
if ctypes.util.find_library("cuda"):
    print("HAS-DRIVER")
else:
    import customobj
    from customobj._cuda_runtime import GPUUnavailableError
    try:
        customobj.RankNet().grad_hess(Fake(), np.array([1.0, 0.0, 2.0]), [3])
    except GPUUnavailableError as exc:
        print("ERR", exc)
""".replace("import os,", "import os; os.environ['NUMBA_ENABLE_CUDASIM'] = '0'; import"))
    if "HAS-DRIVER" in out:
        pytest.skip("this machine has NVIDIA's driver: the no-driver error cannot be shown here")
    assert "ERR RankNet.grad_hess with scores on the GPU needs a CUDA GPU" in out
    assert "driver" in out


def test_without_numba_cuda_device_scores_raise_naming_the_package():
    out = run_isolated(_FAKE_DEVICE_ARRAY + """
import sys
sys.modules["numba.cuda"] = None  # as if the numba-cuda package were not installed
import customobj
from customobj._cuda_runtime import GPUUnavailableError
try:
    customobj.RankNet().grad_hess(Fake(), np.array([1.0, 0.0, 2.0]), [3])
except GPUUnavailableError as exc:
    print("ERR", exc)
""")
    assert "ERR" in out and "'.[cuda]'" in out and "numba-cuda" in out


_PTX_CHECK = """
OWN_PTX_TESTS = ("_listwise_cuda", "_listwise_loss_cuda", "_sampled_pairs_cuda")
import types as pytypes
from numba import cuda, types as T
import numba.cuda.dispatcher as dispatcher
# No GPU here: device functions ask the current device for its compute capability; type them for sm_80.
dispatcher.get_current_device = lambda: pytypes.SimpleNamespace(compute_capability=(8, 0))
from customobj.objectives import _lambdarank_cuda as CL, _pairwise_cuda as CP, _pointwise_cuda as CW
from customobj.objectives import _structured_cuda as CS
from customobj.objectives import _lambdarank_loss_cuda as CC
f1, i1, f2, i2, b, i, f = T.float64[::1], T.int64[::1], T.float64[:, ::1], T.int64[:, ::1], T.boolean, T.int64, T.float64
j1 = T.int32[::1]
from customobj.objectives._pairwise_kernels import PairSpec
from customobj.objectives._lambdarank_records import Debias
# The records the routes (customobj/objectives/_<family>_route.py) pass, typed as numba types them.
LR = T.NamedTuple([i1, i1, f1, f1, f1, f1, b, i, i, i, f, b], CL.Inputs)
LROWS = T.NamedTuple([f1, i1, i1, i1, i1, i1, i1, f1, b], CP.LabelRows)
PL = T.NamedTuple([i1, i1, f1, f1, b, f1, b], CP.PairList)
SPEC = T.NamedTuple([i, i, f, f, f], PairSpec)
SROWS = T.NamedTuple([f1, i1, f1, b, i1], CS.Rows)
DEB = T.NamedTuple([i1, f1, f1, b, f1, f1, f1], Debias)
# The argument types the seam (customobj/objectives/devices.py) and adapters/_cuda.py launch them with.
SIGNATURES = [
    (CL.rank_rows, (f1, i1, i1, i1, i1)),
    (CL.setup_queries, (f1, LR, i1, f2, i2)),
    (CL.pair_rows, (LR, i1, f2, i2)),
    (CL.finish_queries, (LR, f, f2, i2, f2)),
    (CL.write_rows, (i1, i1, i1, f2, i2, f2, f1, f1)),
    # LambdaRank's per-query cost (customobj/objectives/_lambdarank_route.py: lambdarank_loss), a row of (m, n) buffers
    (CC.loss_rows, (LR, i1, f2, i2, f1)),
    (CC.loss_queries, (LR, i2, f2, f1, f1)),
    (CP.label_pairs_rows, (f1, LROWS, SPEC, f1, f1)),
    (CP.pair_list_rows, (f1, PL, i1, i1, i1, SPEC, f1, f1)),
    (CP.pair_list_loss_rows, (f1, PL, i1, i1, i1, SPEC, f1)),
    # the label pair losses' per-query cost (customobj/objectives/_pairwise_route.py: label_pair_loss_with_cost)
    (CP.label_pairs_loss_rows, (f1, LROWS, SPEC, f1)),
    (CW.query_sums, (i1, f1, f1)),
    (CW.pointwise_loss_rows, (i, f1, f1, f1, b, f, f1)),
    (CW.pointwise_rows, (i, f1, f1, f1, b, f, f1, f1)),
    (CW.mcrank_rows, (f2, f1, f1, b, f2, f2)),
    (CW.to_float64, (T.float32[::1], f1, f, i1)),
    (CW.to_float64, (i1, f1, f, i1)),
    (CW.add_scaled, (f1, f1, f)),
    # pairs times a factor from an offset (multi/_round_route.py; the composites' and Unbiased's couplings),
    # into the booster's int32 rows and in place (Scaled: int64 or int32 rows)
    (CW.place_scaled, (i1, i1, f1, f, i, j1, j1, f1)),
    (CW.place_scaled, (i1, i1, f1, f, i, i1, i1, f1)),
    (CW.place_scaled, (j1, j1, f1, f, i, j1, j1, f1)),
    (CW.fill, (f1, f)),
    (CW.fill, (i1, i)),
    (CW.to_float32, (f1, T.float32[::1], f, i1)),
    (CS.ideal_rank_rows, (f1, f1, i1, i1, i1)),
    (CS.structured_queries, (f1, SROWS, i, f, f2, i2, f1, f1, i1, f1)),
    # the pair couplings (customobj/objectives/_couplings_route.py), rows as int32 (the booster's) and int64
    (CL.count_pairs, (LR, f2, i2, i1)),
    (CL.scan_pairs, (i1, i, i1)),
    (CL.query_offsets, (i1, i1, i1)),
    # with the Debias record of device arrays of Unbiased's LambdaRank terms (customobj/clicks/_unbiased_route.py)
    (CL.fill_pairs, (LR, i1, f2, i2, f2, i1, b, DEB, j1, j1, f1)),
    (CL.fill_pairs, (LR, i1, f2, i2, f2, i1, b, DEB, i1, i1, f1)),
    (CP.count_kept_pairs, (f1, PL, SPEC, i, i1)),
    (CP.fill_kept_pairs, (f1, PL, SPEC, i, i1, j1, j1, f1)),
    (CP.count_in_bag, (j1, j1, f1, T.boolean[::1], i, i1)),
    (CP.place_in_bag, (j1, j1, f1, T.boolean[::1], i, i1, j1, j1, f1)),
]
for kernel, sig in SIGNATURES:
    cuda.compile_ptx(kernel.py_func, T.void(*sig), cc=(8, 0))
print("COMPILED", len(SIGNATURES))
# the query-level losses' kernel modules list and compile every kernel in their own tests
# (tests/test_objectives_listwise_cuda.py, test_objectives_sampled_pairs_cuda.py: assert_kernels_compile)
check_listed(SIGNATURES, "customobj.objectives", own=OWN_PTX_TESTS)
"""


def test_every_kernel_compiles_for_a_real_gpu():
    # The simulator runs the kernels as Python; this types and compiles them as numba.cuda does for a
    # GPU (NVVM, PTX for sm_80), which needs NVIDIA's NVVM library but no GPU.
    assert compile_listed_kernels(_PTX_CHECK) >= 20  # every kernel of objectives/_*_cuda.py (but OWN_PTX_TESTS), found in the code


@needs_gpu
def test_only_grad_hess_runs_on_the_gpu_and_the_rest_says_so():
    s, y, sizes, _ = data(29)
    obj = LambdaRank()
    prep = obj.prepare(y, sizes)
    for call in (lambda d: obj.loss(d, y, sizes), lambda d: obj.pair_couplings(d, y, sizes),
                 lambda d: obj.grad_hess_couplings_prepared(d, prep)):
        with pytest.raises(TypeError, match="scores is in GPU memory, where only Objective.grad_hess computes"):
            call(to_device(s))


@needs_gpu
@pytest.mark.parametrize("obj", [RankNet(), LambdaRank(), SquaredError(), StructuredDCG(), customobj.QBRank()], ids=repr)
def test_empty_data_gives_empty_device_arrays(obj):
    g, h = obj.grad_hess(to_device(np.zeros(0)), np.zeros(0), [] if obj.needs_group else None)
    assert g.copy_to_host().shape == (0,) and h.copy_to_host().shape == (0,)


@needs_gpu
def test_device_data_counts_the_bytes_it_holds():
    s, y, sizes, w = data(31, weights=True)
    obj = LambdaRank()
    prep = obj.prepare(y, sizes, w)
    before = None
    for _ in range(2):  # the second round reuses every upload and scratch: the same bytes
        obj.grad_hess_prepared(to_device(s), prep)
        held = prep.device_data.nbytes()
        assert before is None or held == before
        before = held
    n, nq = y.size, len(sizes)
    # at least labels, weights, query offsets, each row's query and the float64 scores copy
    assert held >= 8 * (n + n + (nq + 1) + n + n)


@needs_gpu
def test_the_gpu_and_the_kernels_are_looked_for_once_per_data_set(monkeypatch):
    # They were asked again every round (require_gpu, kernels_for): now once per prepared data set.
    from customobj.adapters import _cuda as C

    calls = {"require_gpu": 0, "kernels_for": 0}

    def counted(name, fn):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return fn(*args, **kwargs)
        return wrapper

    for module in (devices, C):
        monkeypatch.setattr(module, "require_gpu", counted("require_gpu", module.require_gpu))
    monkeypatch.setattr(devices, "kernels_for", counted("kernels_for", devices.kernels_for))
    s, y, sizes, _ = data(33)
    obj = RankNet()
    prep = obj.prepare(y, sizes)
    for _ in range(3):
        obj.grad_hess_prepared(to_device(s), prep)
        C.device_round(obj, prep, s.astype(np.float32), (y.size,), "XGBoost")
    assert calls == {"require_gpu": 1, "kernels_for": 1}
