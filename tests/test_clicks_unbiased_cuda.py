"""GPU Unbiased (customobj/clicks/_unbiased_cuda.py, launched by customobj/clicks/_unbiased_route.py)
against its CPU twin under the simulator: gradients, hessians and the estimated propensities
(``position_bias_``, ``position_bias_unclicked_``) round after round, for every wrapped loss it
debiases, weights on and off, both costs, known propensities, no query normalisation; the refusals;
its pair couplings (``_unbiased_route.grad_hess_couplings``) bit for bit and ``TreeBooster(device="cuda",
criterion="ole")`` growing the CPU's trees with them; and the kernels typed and compiled to PTX for sm_80
(listed from the module, not counted by hand)."""
from __future__ import annotations

import numpy as np
import pytest

import customobj
from customobj import LambdaRank, MPBoost, PreferencePairs, QBRank, RankNet, RankSVM, SquaredError, Unbiased
from customobj.objectives import devices
from customobj.objectives._couplings_route import grad_hess_couplings_prepared
from customobj.objectives._launch import LaunchCount
from _ole_cases import QUIET, tree_dicts
from _cuda_cases import assert_simulated_bits, compile_listed_kernels, needs_gpu, query_order_sum, to_device

ROUNDS = 3


def _clicks(seed=0):
    d = customobj.data.synthetic(6, 6, 3, seed=seed)
    return customobj.data.simulate_clicks(d, ranker=d.X[:, 0], sessions=1, seed=seed)


def _weights(clicks, per_query):
    rng = np.random.default_rng(1)
    if per_query:  # LambdaRank.like_xgboost() takes one weight per query
        return np.repeat(rng.uniform(0.5, 2.0, len(clicks.group)), clicks.group)
    return rng.uniform(0.5, 2.0, clicks.y.size)


def _assert_close(gpu, cpu, what):
    scale = max(1.0, float(np.abs(cpu).max(initial=0.0)))
    np.testing.assert_allclose(gpu, cpu, rtol=1e-9, atol=1e-9 * scale, err_msg=what)


def assert_rounds_equal(obj, clicks, weight, rounds=ROUNDS, collective=None):
    """``rounds`` rounds on the CPU and on the device, each at the CPU's Newton step from the last:
    gradients, hessians and both propensity vectors equal after every round."""
    cpu = obj.prepare(clicks.y, clicks.group, weight, position=clicks.position)
    gpu = obj.prepare(clicks.y, clicks.group, weight, position=clicks.position)
    cpu.collective = gpu.collective = collective
    s = clicks.X[:, 0] * 0.3
    for r in range(rounds):
        g, h = obj.grad_hess_prepared(s, cpu)
        gd, hd = (a.copy_to_host() for a in obj.grad_hess_prepared(to_device(s), gpu))
        _assert_close(gd, g, f"{obj!r} round {r} grad")
        _assert_close(hd, h, f"{obj!r} round {r} hess")
        fc, fg = obj.fitted_attributes(cpu), obj.fitted_attributes(gpu)
        for name in ("position_bias_", "position_bias_unclicked_"):
            np.testing.assert_allclose(fg[name], fc[name], rtol=1e-9, atol=1e-12, err_msg=f"{obj!r} round {r} {name}")
        s = s - 0.5 * g / np.maximum(h, 1e-3)
    return obj.fitted_attributes(cpu)


WRAPPED = [
    Unbiased(LambdaRank()),
    Unbiased(LambdaRank(norm=False, metric="err"), cost="loss"),
    Unbiased(LambdaRank.like_xgboost()),
    Unbiased(RankNet(), cost="loss"),
    Unbiased(RankSVM()),
    Unbiased(MPBoost(ddf="ldd"), cost="loss", query_norm=False),
    Unbiased(QBRank(hessian="exact")),
    Unbiased(LambdaRank() + 0.5 * SquaredError(), bias_norm=0.5),
    Unbiased(2.0 * RankNet() + LambdaRank(metric="map"), cost="loss"),
]


@needs_gpu
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("obj", WRAPPED, ids=lambda o: repr(o.objective))
def test_rounds_equal_the_cpu(obj, weighted):
    clicks = _clicks()
    w = _weights(clicks, per_query=obj.objective == LambdaRank.like_xgboost()) if weighted else None
    fitted = assert_rounds_equal(obj, clicks, w)
    assert not np.array_equal(fitted["position_bias_"], np.ones_like(fitted["position_bias_"]))  # it estimated


@needs_gpu
def test_known_propensities_estimate_nothing_on_the_device():
    clicks = _clicks(2)
    k = int(clicks.position.max()) + 1
    obj = Unbiased(LambdaRank(), propensity=1.0 / (1.0 + np.arange(k)))
    fitted = assert_rounds_equal(obj, clicks, None, rounds=2)
    np.testing.assert_array_equal(fitted["position_bias_"], obj.propensity)


class _OtherWorker:
    """A ``Prepared.collective`` whose other worker adds fixed sums (what Dask training pools, one process)."""

    def __init__(self, k):
        self.other = np.random.default_rng(5).uniform(0.5, 2.0, 2 * k)

    def sum(self, values):
        return values + self.other

    def max(self, values):
        return values


@needs_gpu
def test_the_device_estimate_pools_the_workers_sums_as_the_cpu_does():
    clicks = _clicks(4)
    obj = Unbiased(LambdaRank())
    alone = assert_rounds_equal(obj, clicks, None, rounds=2)
    k = alone["position_bias_"].size
    pooled = assert_rounds_equal(obj, clicks, None, rounds=2, collective=_OtherWorker(k))
    assert not np.allclose(pooled["position_bias_"], alone["position_bias_"])  # the other worker's sums count


@needs_gpu
def test_preference_pairs_within_queries_and_the_refusal_across_them():
    clicks = _clicks(3)
    ptr = np.concatenate([[0], np.cumsum(clicks.group)])
    within = np.array([[ptr[0], ptr[0] + 2], [ptr[1] + 1, ptr[1]], [ptr[0] + 1, ptr[0]]])
    assert_rounds_equal(Unbiased(PreferencePairs(within)), clicks, None, rounds=2)
    across = Unbiased(PreferencePairs(np.array([[ptr[0], ptr[1]]])))
    prep = across.prepare(clicks.y, clicks.group, position=clicks.position)
    with pytest.raises(NotImplementedError, match="join rows of two queries"):
        across.grad_hess_prepared(to_device(clicks.X[:, 0]), prep)


@needs_gpu
def test_tree_booster_on_the_device_grows_the_cpus_trees():
    # Regression: eq. 30-31's sums added per query then over queries differed from the CPU's running sum in
    # the last bits; the propensities, then the leaf values, carried them, and LambdaRank's sort of tied
    # scores made the third round's gradients differ by 0.3. Summed in the CPU's order, the fits are equal.
    clicks = _clicks()
    fits = {}
    for device in ("cpu", "cuda"):
        model = customobj.TreeBooster(objective=Unbiased(LambdaRank(), position=clicks.position), n_estimators=3,
                                      device=device, min_data_in_leaf=2, criterion="wse", verbose=False)
        model.fit(clicks.X, clicks.y, group=clicks.group)
        fits[device] = (model.predict(clicks.X), model.position_bias_)
    np.testing.assert_allclose(fits["cuda"][0], fits["cpu"][0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fits["cuda"][1], fits["cpu"][1], rtol=1e-9, atol=1e-12)


#: The wrapped losses whose debiased cost is one pairwise leaf's: the GPU's per-query costs are the CPU's bits.
ONE_LEAF = {repr(o.objective) for o in WRAPPED[:6]}


@needs_gpu
@pytest.mark.parametrize("obj", WRAPPED, ids=lambda o: repr(o.objective))
def test_each_querys_debiased_cost_is_the_cpus(obj):
    """``grad_hess_loss`` (``MultiObjective``'s per-label GPU cost), two rounds: the gradients, and the
    per-query costs added in query order equal ``Unbiased._grad_hess_loss`` (the loss at the propensities the
    round's gradients take): the same bits for one pairwise leaf; a wrapped sum's parts (and QBRank's labelled
    rows) added query by query, where the CPU adds their totals: within 4 ulps of the total's scale."""
    clicks = _clicks(1)
    cpu, gpu = (obj.prepare(clicks.y, clicks.group, position=clicks.position) for _ in range(2))
    route = obj.device_route().grad_hess_loss
    nq = len(clicks.group)
    s = clicks.X[:, 0].astype(np.float64) * 0.3  # the float64 scores the boundary hands the kernels
    for r in range(2):
        g, h = np.zeros_like(s), np.zeros_like(s)
        want = obj._grad_hess_loss(s, cpu, cpu.state_for(obj), g, h)
        from numba import cuda

        data = devices.device_data(gpu, cuda)
        gd, hd, pq = to_device(np.zeros(s.size)), to_device(np.zeros(s.size)), to_device(np.full(nq, np.nan))
        route(obj, to_device(s), gpu, data, gd, hd, pq)
        per_query = pq.copy_to_host()
        got = query_order_sum(per_query)  # as MultiObjective's GPU round adds them (one chunk of queries)
        _assert_close(gd.copy_to_host(), g, f"{obj!r} round {r} grad")
        _assert_close(hd.copy_to_host(), h, f"{obj!r} round {r} hess")
        assert want > 0 and np.count_nonzero(per_query) > 1 and np.isfinite(per_query).all()
        if repr(obj.objective) in ONE_LEAF:
            assert_simulated_bits(got, want)
        else:
            assert abs(got - want) <= 4 * np.spacing(want), (got, want)
        fc, fg = obj.fitted_attributes(cpu), obj.fitted_attributes(gpu)
        np.testing.assert_allclose(fg["position_bias_"], fc["position_bias_"], rtol=1e-9, atol=1e-12)
        s = s - 0.5 * g / np.maximum(h, 1e-3)


def test_the_cpu_cost_is_the_loss_before_the_rounds_estimate():
    """``Unbiased._grad_hess_loss`` (``MultiObjective``'s per-label cost): the round's gradients and, from the same
    pass, the loss at the propensities they take (what ``loss`` gave before the round); the estimate still moves."""
    clicks = _clicks(1)
    obj = Unbiased(RankNet())
    prep = obj.prepare(clicks.y, clicks.group, position=clicks.position)
    s = clicks.X[:, 0].astype(np.float64) * 0.3
    obj.grad_hess_prepared(s, prep)  # a first round: the propensities move off 1
    before = obj.loss_prepared(s, prep)
    g, h = np.zeros_like(s), np.zeros_like(s)
    cost = obj._grad_hess_loss(s, prep, prep.state_for(obj), g, h)
    assert cost == before and obj.loss_prepared(s, prep) != before  # the estimate moved after the cost
    other = obj.prepare(clicks.y, clicks.group, position=clicks.position)
    obj.grad_hess_prepared(s, other)
    np.testing.assert_array_equal(g, obj.grad_hess_prepared(s, other)[0])


def test_the_cost_beside_the_pairs_is_the_cost_without_them():
    """``Unbiased._grad_hess_couplings_loss`` (``MultiObjective``'s cost of an Unbiased label with
    ``criterion="ole"``): the loss at the propensities the round's gradients take, from the pass that gives the
    pairs, as ``_grad_hess_loss`` gives it (``_loss`` after the round, what it read before, is at the estimate)."""
    clicks = _clicks(1)
    obj = Unbiased(LambdaRank() + RankNet())
    preps = [obj.prepare(clicks.y, clicks.group, position=clicks.position) for _ in range(3)]
    s = clicks.X[:, 0].astype(np.float64) * 0.3
    for p in preps:
        obj.grad_hess_prepared(s, p)  # a first round: the propensities move off 1
    with_pairs, without, fused = preps
    g, h = np.zeros_like(s), np.zeros_like(s)
    pairs, cost = obj._grad_hess_couplings_loss(s, with_pairs, with_pairs.state_for(obj), g, h)
    assert cost == obj._grad_hess_loss(s, without, without.state_for(obj), np.zeros_like(s), np.zeros_like(s))
    assert obj.loss_prepared(s, with_pairs) != cost  # the estimate moved after the cost
    # the round's gradients and pairs are those of _grad_hess_couplings at the same state
    gf, hf, pf = obj.grad_hess_couplings_prepared(s, fused)
    for got, want in zip((g, h) + pairs, (gf, hf) + pf):
        np.testing.assert_array_equal(got, want)


def test_the_route_is_unbiaseds_own():
    obj = Unbiased(RankNet() + SquaredError())
    assert devices.kernels_for(obj, devices.Device.CUDA).__module__ == "customobj.clicks._unbiased_route"
    # its pairs come from the round's own pass (the estimate follows it): a fused driver, no couplings after it
    assert obj.device_route().couplings is None
    assert obj.device_route().grad_hess_couplings.__name__ == "grad_hess_couplings"
    assert obj.device_route().grad_hess_loss.__name__ == "grad_hess_loss"


def _pairwise_leaves(obj):
    from customobj.clicks._pairs import leaf_parts

    return [leaf for leaf, _ in leaf_parts(obj.objective) if leaf.pairwise]


def _leaf_pairs_read(obj):
    """Reads of the round's pairs: LambdaRank's own pass counts its pairs (one read each); the listed losses'
    counts are their lists' (known on the host)."""
    from customobj.objectives.base import PairSource

    return sum(leaf.pair_source() == PairSource.OWN_PASS for leaf in _pairwise_leaves(obj))


@needs_gpu
@pytest.mark.parametrize("obj", WRAPPED, ids=lambda o: repr(o.objective))
def test_the_couplings_are_the_cpus_bit_for_bit(obj):
    """``grad_hess_couplings``, two rounds (the second at the first round's estimate): every leaf's debiased
    pairs in its list order, the leaves in order, as ``Unbiased._grad_hess_couplings`` returns them; the
    gradients as ``grad_hess``'s; the only reads each LambdaRank leaf's pair count."""
    clicks = _clicks(1)
    w = _weights(clicks, per_query=obj.objective == LambdaRank.like_xgboost())
    cpu = obj.prepare(clicks.y, clicks.group, w, position=clicks.position)
    gpu = obj.prepare(clicks.y, clicks.group, w, position=clicks.position)
    plain = obj.prepare(clicks.y, clicks.group, w, position=clicks.position)  # the same rounds without pairs
    s = clicks.X[:, 0] * 0.3
    for r in range(2):
        g, h, pairs = obj.grad_hess_couplings_prepared(s, cpu)
        before = LaunchCount.snapshot()
        obj.grad_hess_prepared(to_device(s), plain)
        without = LaunchCount.since(before)
        before = LaunchCount.snapshot()
        gd, hd, dpairs = grad_hess_couplings_prepared(obj, to_device(s), gpu, index_dtype=np.int32)
        launches, reads = LaunchCount.since(before)
        assert reads == without[1] == _leaf_pairs_read(obj)
        # the pairs cost one launch a pairwise leaf (its couplings copied into the round's buffer)
        assert launches == without[0] + len(_pairwise_leaves(obj))
        assert pairs[0].size > 0 and dpairs[0].dtype == np.int32
        for name, want, got in zip("ijc", pairs, dpairs):
            np.testing.assert_array_equal(got.copy_to_host(), want, err_msg=f"{obj!r} round {r} {name}")
        _assert_close(gd.copy_to_host(), g, f"{obj!r} round {r} grad")
        _assert_close(hd.copy_to_host(), h, f"{obj!r} round {r} hess")
        s = s - 0.5 * g / np.maximum(h, 1e-3)
    np.testing.assert_array_equal(obj.fitted_attributes(gpu)["position_bias_"], obj.fitted_attributes(cpu)["position_bias_"])


@needs_gpu
@pytest.mark.parametrize("obj", [WRAPPED[0], WRAPPED[7]], ids=["lambdarank", "lambdarank+0.5*se"])
def test_tree_booster_with_ole_grows_the_cpus_trees_with_the_pairs_on_the_card(obj):
    clicks = _clicks()
    fits = {}
    for device in ("cpu", "cuda"):
        model = customobj.TreeBooster(objective=obj, n_estimators=2, device=device, min_data_in_leaf=2, num_leaves=3,
                                      criterion="ole", **QUIET)
        fits[device] = model.fit(clicks.X, clicks.y, group=clicks.group)
    cpu, gpu = fits["cpu"], fits["cuda"]
    assert gpu.device_gradients_ == "device"  # was: the host, the pairs of Unbiased having no GPU kernel
    assert tree_dicts(gpu) == tree_dicts(cpu)
    np.testing.assert_array_equal(gpu.predict(clicks.X), cpu.predict(clicks.X))
    np.testing.assert_array_equal(gpu.position_bias_, cpu.position_bias_)
    assert gpu.device_stats_.objective_reads == 2 * _leaf_pairs_read(obj)  # not counted: the estimate's 2k floats


_PTX_CHECK = """
import types as pytypes
from customobj._cuda_runtime import cuda_module
cuda = cuda_module()
from numba import types as T
import numba.cuda.dispatcher as dispatcher
dispatcher.get_current_device = lambda: pytypes.SimpleNamespace(compute_capability=(8, 0))  # no GPU: sm_80
from customobj.clicks import _unbiased_cuda as CU, _unbiased_kernels as CK
f1, i1, f2, i2, b, i, f = T.float64[::1], T.int64[::1], T.float64[:, ::1], T.int64[:, ::1], T.boolean, T.int64, T.float64
# The records customobj/clicks/_unbiased_route.py passes, typed as numba types them.
QP = T.NamedTuple([i1, i1, i1, b, i1], CU.QueryPairs)
TERMS = T.NamedTuple([f1, f1, f1, f1], CK.DebiasedTerms)
PW = T.NamedTuple([f1, b, f1, b], CK.PairWeights)
PROPS = T.NamedTuple([i1, f1, f1], CK.Propensities)
OUT = T.NamedTuple([f1, f1, f1, f2, i2, f1], CU.Outputs)
SIGNATURES = [
    (CU.loss_terms_pairs, (f1, i1, i1, f1, i, f, b, PROPS, TERMS)),
    (CU.debias_queries, (QP, TERMS, PW, PROPS, f, b, b, OUT)),
    (CU.position_sums, (f2, i2, i, f2)),
]
for kernel, sig in SIGNATURES:
    cuda.compile_ptx(kernel.py_func, T.void(*sig), cc=(8, 0))
print("COMPILED", len(SIGNATURES))
check_listed(SIGNATURES, "customobj.clicks", own=("_affine_cuda",))  # its own test lists it
"""


def test_every_kernel_compiles_for_a_real_gpu():
    # The simulator runs the kernels as Python; this types and compiles them as numba.cuda does for a GPU.
    assert compile_listed_kernels(_PTX_CHECK) >= 3
