"""GPU Affine (customobj/clicks/_affine_cuda.py, launched by customobj/clicks/_affine_route.py) against
its CPU twin under the simulator: gradients and hessians for every loss it corrects (sums and
scalings too), ``query_norm`` on and off, tied scores, weights; bit for bit on queries longer than the
simulator's block (a block per query, a thread per row), with weights and a session without clicks,
and one launch a leaf; the pair couplings the OLE criteria
take and ``TreeBooster(device="cuda", criterion="ole")``'s trees; ``xgboost_objective(device="cuda")``'s
float32 round; each query's loss (``grad_hess_loss``, MultiObjective's per-label GPU cost) the CPU's
bits; the refusal without parameters;
and the kernel typed and compiled to PTX for sm_80 (listed from the module, not counted by hand)."""
from __future__ import annotations

import numpy as np
import pytest

import customobj
from customobj import Affine, LambdaRank, MPBoost, RankNet, RankSVM, SquaredError
from customobj.clicks.simulation import trust_defaults
from customobj.objectives import devices
from customobj.clicks import _affine_kernels as AK
from _cuda_cases import (LONG_SIZES, STATUS, assert_kept_couplings_equal_cpu, assert_simulated_bits,
                         compile_listed_kernels, needs_gpu, query_order_sum, route_cost, to_device)

needs_simulator = pytest.mark.skipif(not STATUS.available or not STATUS.simulator,
                                     reason="reads the launches' grids through numba's CUDA simulator")


def _clicks(seed=0):
    d = customobj.data.synthetic(4, 6, 3, seed=seed)
    return customobj.data.simulate_clicks(d, ranker=d.X[:, 0], click_model="trust", sessions=1, seed=seed)


def _params(clicks):
    plus, minus = trust_defaults(int(clicks.position.max()) + 1)
    theta = 1.0 / np.arange(1, plus.size + 1)
    return dict(alpha=theta * (plus - minus), beta=theta * minus, position=clicks.position)


def _tied_scores(clicks):
    return np.round(clicks.X[:, 0] * 2.0) / 2.0  # many ties: LambdaRank's ranks by row order


WRAPPED = {"LambdaRank": LambdaRank(), "LambdaRank(k=3,truncation=4,sigma=2)": LambdaRank(k=3, truncation=4, sigma=2.0),
           "LambdaRank(xgboost,norm=False)": LambdaRank(convention="xgboost", norm=False),
           "RankNet": RankNet(sigma=0.7), "RankSVM": RankSVM(margin=0.5), "MPBoost": MPBoost(),
           "RankNet+SquaredError": RankNet() + 0.5 * SquaredError(),
           "2(LambdaRank+RankSVM)": 2.0 * (LambdaRank() + RankSVM())}


def _assert_close(gpu, cpu, what):
    scale = max(1.0, float(np.abs(cpu).max(initial=0.0)))
    np.testing.assert_allclose(gpu, cpu, rtol=1e-9, atol=1e-9 * scale, err_msg=what)


@needs_gpu
@pytest.mark.parametrize("query_norm", [True, False], ids=["query_norm", "no_norm"])
@pytest.mark.parametrize("name", sorted(WRAPPED))
def test_gradients_equal_the_cpu(name, query_norm):
    clicks = _clicks()
    obj = Affine(WRAPPED[name], query_norm=query_norm, **_params(clicks))
    w = np.random.default_rng(1).uniform(0.5, 2.0, clicks.y.size) if "RankNet" in name else None
    s = _tied_scores(clicks)
    for r in range(2):  # a second round at other scores: the per-data-set uploads are reused
        g, h = obj.grad_hess(s, clicks.y, clicks.group, w)
        gd, hd = (a.copy_to_host() for a in obj.grad_hess(to_device(s), clicks.y, clicks.group, w))
        _assert_close(gd, g, f"{name} round {r} grad")
        _assert_close(hd, h, f"{name} round {r} hess")
        assert np.abs(g).max() > 0.0
        s = s - 0.5 * g / np.maximum(h, 1e-3)


@needs_gpu
@pytest.mark.parametrize("name", ["LambdaRank(k=3,truncation=4,sigma=2)", "RankSVM", "RankNet+SquaredError"])
def test_couplings_equal_the_cpus_kept_pairs(name):
    clicks = _clicks(1)
    obj = Affine(WRAPPED[name], **_params(clicks))
    i, c = assert_kept_couplings_equal_cpu(obj, _tied_scores(clicks), clicks.y, clicks.group)
    assert i.size > 0 and (c > 0).all()


def _long_clicks(seed):
    """Clicks on :data:`LONG_SIZES` (19 rows: over two of the simulator's 8-thread blocks' widths) plus a
    session of 9 rows without a click, each row at its place in its query; random scores and weights."""
    rng = np.random.default_rng(seed)
    sizes = LONG_SIZES + [9]
    n = int(sum(sizes))
    y = (rng.uniform(size=n) < 0.4).astype(np.float64)
    y[-9:] = 0.0
    return rng.normal(size=n), y, sizes, rng.uniform(0.5, 2.0, n)


@needs_gpu
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weights"])
@pytest.mark.parametrize("query_norm", [True, False], ids=["query_norm", "no_norm"])
@pytest.mark.parametrize("name", ["LambdaRank", "LambdaRank(k=3,truncation=4,sigma=2)", "RankNet", "MPBoost",
                                  "2(LambdaRank+RankSVM)"])
def test_long_queries_equal_the_cpu_bit_for_bit(name, query_norm, weighted):
    from customobj.objectives._couplings_route import grad_hess_couplings_prepared

    s, y, sizes, w = _long_clicks(4)
    if name == "LambdaRank":
        s = np.round(s)  # ties: ranked by row order on both
    plus, minus = trust_defaults(max(sizes))
    obj = Affine(WRAPPED[name], alpha=0.9 * (plus - minus), beta=0.9 * minus, query_norm=query_norm)
    w = w if weighted else None
    g, h, (i, j, c) = obj.grad_hess_couplings_prepared(s, obj.prepare(y, sizes, w))
    gd, hd, (id_, jd, cd) = grad_hess_couplings_prepared(obj, to_device(s), obj.prepare(y, sizes, w))
    keep = c > 0
    np.testing.assert_array_equal(gd.copy_to_host(), g)
    np.testing.assert_array_equal(hd.copy_to_host(), h)
    np.testing.assert_array_equal(id_.copy_to_host(), i[keep])
    np.testing.assert_array_equal(jd.copy_to_host(), j[keep])
    np.testing.assert_array_equal(cd.copy_to_host(), c[keep])
    click_free = slice(sum(sizes[:-1]), None)
    assert (g[click_free] != 0.0).any() and keep.sum() > 19 * 18 // 4  # the session without clicks has terms too


@needs_simulator
def test_one_launch_a_pairwise_leaf_a_block_per_query():
    from customobj.objectives._launch import LaunchCount, query_threads
    from numba.cuda.simulator import kernel as K

    s, y, sizes, _ = _long_clicks(5)
    plus, minus = trust_defaults(max(sizes))
    obj = Affine(RankNet() + SquaredError(), alpha=plus - minus, beta=minus)
    prep = obj.prepare(y, sizes)
    d = to_device(s)
    devices.grad_hess_prepared(obj, d, prep)  # uploads and scratch first
    grids = []
    call = K.FakeCUDAKernel.__call__

    def record(self, *args):
        if not self._device and K._kernel_context is None:
            grids.append((self.fn.__name__, self.grid_dim[0], self.block_dim[0]))
        return call(self, *args)

    before = LaunchCount.snapshot()
    K.FakeCUDAKernel.__call__ = record
    try:
        devices.grad_hess_prepared(obj, d, prep)
    finally:
        K.FakeCUDAKernel.__call__ = call
    assert LaunchCount.since(before)[0] == len(grids)  # every launch counted
    assert [k for k in grids if k[0] == "affine_queries"] == [("affine_queries", len(sizes), query_threads())]


def _cpu_query_losses(obj, s, prep):
    """Each query's loss by the CPU's own kernel (``affine_pairs`` on that query alone), the pairwise leaves'
    added in leaf order: what the GPU's ``grad_hess_loss`` writes for an ``Affine`` of pairwise leaves."""
    rhat = prep.state_for(obj).rhat
    out = np.zeros(prep.groups.n_groups)
    for q in range(out.size):
        lo, hi = prep.ptr[q], prep.ptr[q + 1]
        w, use_w = (prep.weight[lo:hi], True) if prep.weight is not None else (np.ones(1), False)
        for _, record, _ in obj._leaf_records():
            m = (hi - lo) * (hi - lo - 1) // 2
            z = np.zeros(hi - lo)
            out[q] += AK.affine_pairs(s[lo:hi], np.array([0, hi - lo]), rhat[lo:hi], w, use_w, record, z, z.copy(),
                                      np.zeros(m))
    return out


@needs_gpu
@pytest.mark.parametrize("name, weighted", [("LambdaRank", False), ("RankNet", True), ("2(LambdaRank+RankSVM)", False),
                                            ("RankNet+SquaredError", True)])
def test_each_querys_cost_is_the_cpus(name, weighted):
    """``device_route().grad_hess_loss`` (MultiObjective's per-label GPU cost): each query's loss from the
    gradients' launch, on queries longer than the simulator's block. One pairwise leaf: each query the CPU's
    bits and their sum in query order ``_grad_hess_loss``'s total; a sum of pairwise leaves: each query the
    CPU kernel's per leaf, added in leaf order; a sum's total equal to rounding (the CPU adds the leaves' totals)."""
    for seed in (6, 7):
        s, y, sizes, w = _long_clicks(seed)
        if name == "LambdaRank":
            s = np.round(s)  # ties: ranked by row order on both
        plus, minus = trust_defaults(max(sizes))
        obj = Affine(WRAPPED[name], alpha=0.9 * (plus - minus), beta=0.9 * minus)
        w = w if weighted else None
        want, per_query = route_cost(obj, s, y, sizes, w)
        assert np.isfinite(per_query).all() and abs(want) > 0.0
        if len(obj._leaf_records()) > 1:  # the CPU adds the leaves' totals: equal to rounding (bound measured: 1 ulp)
            np.testing.assert_allclose(query_order_sum(per_query), want, rtol=4 * np.finfo(float).eps, atol=0)
        if name != "RankNet+SquaredError":  # pairwise leaves only: each query the CPU kernel's, leaf by leaf
            assert_simulated_bits(per_query, _cpu_query_losses(obj, s, obj.prepare(y, sizes, w)))
        if len(obj._leaf_records()) == 1:
            assert_simulated_bits(query_order_sum(per_query), want)


@needs_gpu
def test_one_row_queries_have_no_pairs_on_the_device():
    obj = Affine(LambdaRank(), alpha=[0.5], beta=[0.1])
    y, sizes = np.array([1.0, 0.0, 1.0]), [1, 1, 1]
    i, _ = assert_kept_couplings_equal_cpu(obj, np.array([0.3, -0.1, 0.0]), y, sizes)
    assert i.size == 0


@needs_gpu
def test_tree_booster_ole_on_the_device_grows_the_cpus_trees():
    from _ole_cases import QUIET, tree_dicts

    clicks = _clicks(2)
    kw = dict(objective=Affine(LambdaRank(), **_params(clicks)), criterion="ole", num_leaves=4, n_estimators=2,
              min_data_in_leaf=2, max_bin=8, bagging_fraction=0.8, random_state=1, **QUIET)
    cpu = customobj.TreeBooster(**kw).fit(clicks.X, clicks.y, group=clicks.group)
    gpu = customobj.TreeBooster(device="cuda", **kw).fit(clicks.X, clicks.y, group=clicks.group)
    assert gpu.device_gradients_ == "device"
    assert tree_dicts(gpu) == tree_dicts(cpu)


@needs_gpu
def test_xgboost_objective_on_the_device_equals_the_cpu_round():
    from customobj.adapters import _cuda as C

    clicks = _clicks(3)
    obj = Affine(LambdaRank() + RankNet(), **_params(clicks))
    C.check_gpu_objective(obj, "xgboost_objective")  # xgboost_objective(device="cuda") accepts it up front
    prep = obj.prepare(clicks.y, clicks.group)
    margins = (clicks.X[:, 0] * 0.3).astype(np.float32)
    g, h = obj.grad_hess_prepared(margins.astype(np.float64), prep)
    gd, hd = C.device_round(obj, prep, margins, (clicks.y.size,), "XGBoost")
    np.testing.assert_allclose(gd.copy_to_host(), g.astype(np.float32), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(hd.copy_to_host(), h.astype(np.float32), rtol=1e-6, atol=1e-7)


@needs_gpu
def test_without_parameters_the_device_refuses_as_the_cpu():
    clicks = _clicks()
    with pytest.raises(ValueError, match="trust-bias parameters"):
        Affine(RankNet()).grad_hess(to_device(clicks.X[:, 0]), clicks.y, clicks.group)


def test_the_route_is_affines_own_with_couplings():
    obj = Affine(RankNet() + SquaredError(), alpha=[0.5], beta=[0.1])
    assert devices.kernels_for(obj, devices.Device.CUDA).__module__ == "customobj.clicks._affine_route"
    assert obj.device_route().couplings is not None  # TreeBooster(device="cuda") with OLE keeps its pairs there
    assert obj.device_route().grad_hess_loss is not None  # MultiObjective's cost: its pointwise part has one too


_PTX_CHECK = """
import types as pytypes
from customobj._cuda_runtime import cuda_module
cuda = cuda_module()
from numba import types as T
import numba.cuda.dispatcher as dispatcher
dispatcher.get_current_device = lambda: pytypes.SimpleNamespace(compute_capability=(8, 0))  # no GPU: sm_80
from customobj.clicks import _affine_cuda as CA, _affine_kernels as AK
f1, i1, b, i, f = T.float64[::1], T.int64[::1], T.boolean, T.int64, T.float64
# The record customobj/clicks/_affine_route.py passes, typed as numba types it.
LOSS = T.NamedTuple([i, f, f, f, b, i, i, b], AK.AffinePairLoss)
ROWS = T.NamedTuple([f1, f1, f1, b], AK.AffineRows)
OUT = T.NamedTuple([f1, f1, f1], AK.PairOutputs)
SIGNATURES = [(CA.affine_queries, (ROWS, i1, i1, LOSS, i1, OUT, b, f1))]
for kernel, sig in SIGNATURES:
    cuda.compile_ptx(kernel.py_func, T.void(*sig), cc=(8, 0))
print("COMPILED", len(SIGNATURES))
check_listed(SIGNATURES, "customobj.clicks", own=("_unbiased_cuda",))
"""


def test_every_kernel_compiles_for_a_real_gpu():
    # The simulator runs the kernel as Python; this types and compiles it as numba.cuda does for a GPU.
    assert compile_listed_kernels(_PTX_CHECK) >= 1
