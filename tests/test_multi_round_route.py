"""customobj/multi/_round_route.py (MultiObjective's GPU round for every method but "linear") and its
kernels, customobj/multi/_combine_cuda.py, under the CUDA simulator (tests/conftest.py): for every
method, with 2 and 3 labels, the GPU route's combined gradients and hessians and its recorded weights,
costs and duals equal the CPU route's; one blocking read a round; Unbiased and Affine on a click label,
YetiRank, StructuredDCG and the composites with their GPU costs; a per-label loss without a GPU cost
refused by name; the route reached through xgboost_objective(device="cuda")."""
import numpy as np
import pytest

from customobj import adapters  # before xgboost: sets the OpenMP wait policy

import customobj
from customobj import (XENDCG, LambdaRank, ListNet, PreferencePairs, QBRank, QueryRMSE, QuerySoftMax, RankNet,
                       SquaredError, StructuredDCG, Unbiased, YetiRank)
from customobj.multi import MultiObjective
from customobj.objectives._launch import LaunchCount
from _cuda_cases import assert_simulated_bits, compile_listed_kernels, needs_gpu, needs_real_gpu, to_device

pytestmark = needs_gpu

#: A one-row query (no pairs) among small ones: few rows, as the simulator runs a thread per row.
SIZES = [3, 1, 5, 4]

#: method -> its options for m labels (bounds that bind on these data, smoothing where the method reads it).
OPTIONS = {
    "chebyshev": lambda m: {"smoothing": 0.5},
    "epo": lambda m: {"smoothing": 0.3, "preference": np.arange(1.0, m + 1)},
    "wc_mgda": lambda m: {},
    "epsilon_constraint": lambda m: {"bounds": [0.3] * (m - 1), "dual_interval": 1},
    "ec_mgda": lambda m: {"bounds": [0.3] * (m - 1), "smoothing": 0.5},
}


def labels(m, seed=0):
    rng = np.random.default_rng(seed)
    n = sum(SIZES)
    cols = [rng.integers(0, 4, n).astype(float) for _ in range(m)]
    return cols[0], [None] + cols[1:]


def twins(method, m, **extra):
    """``(cpu, gpu, y)``: two equal objectives (their rounds kept apart) and the data set's label."""
    y, cols = labels(m)
    make = lambda: MultiObjective([LambdaRank() for _ in range(m)], labels=cols, method=method, **extra)  # noqa: E731
    return make(), make(), y


def run_rounds(cpu, gpu, y, rounds, seed=1):
    """Each round's CPU and GPU gradients and hessians at the same random scores; the GPU's reads per round."""
    rng = np.random.default_rng(seed)
    pc, pg = cpu.prepare(y, SIZES), gpu.prepare(y, SIZES)
    reads = []
    for _ in range(rounds):
        s = rng.normal(size=y.size)
        g, h = cpu.grad_hess_prepared(s, pc)
        before = LaunchCount.snapshot()
        gd, hd = gpu.grad_hess_prepared(to_device(s), pg)
        gd, hd = gd.copy_to_host(), hd.copy_to_host()
        reads.append(LaunchCount.since(before)[1])
        for cpu_out, gpu_out in ((g, gd), (h, hd)):
            np.testing.assert_allclose(gpu_out, cpu_out, rtol=1e-10, atol=1e-13 * np.abs(cpu_out).max())
        assert np.abs(g).max() > 0
    return cpu.fitted_attributes(pc), gpu.fitted_attributes(pg), reads


@pytest.mark.filterwarnings("ignore:bounds\\[")  # a bound not met after two rounds: said, and not the point here
@pytest.mark.parametrize("m", [2, 3])
@pytest.mark.parametrize("method", sorted(OPTIONS))
def test_every_cost_reading_method_equals_the_cpu_with_one_read_a_round(method, m):
    cpu, gpu, y = twins(method, m, **OPTIONS[method](m))
    rounds = 2 if m == 2 else 1  # the second round: smoothing, the duals' update (the simulator is slow)
    want, got, reads = run_rounds(cpu, gpu, y, rounds=rounds)
    assert reads == [1] * rounds  # the m^2 + m sums, nothing else comes back
    assert set(got) == set(want) and "label_costs_" in got
    # the costs: each query's the CPU's bits, summed in the CPU's order (fewer queries than a chunk)
    assert_simulated_bits(got["label_costs_"], want["label_costs_"])
    np.testing.assert_allclose(got["label_weights_"], want["label_weights_"], rtol=1e-10, atol=1e-13)
    assert got["label_weights_"].shape == (rounds, m) and np.array_equal(got["label_fallbacks_"], want["label_fallbacks_"])
    if "label_duals_" in want:
        np.testing.assert_allclose(got["label_duals_"], want["label_duals_"], rtol=1e-10, atol=1e-13)
        assert got["label_duals_"].shape == (rounds, m - 1)


def test_the_gram_matrix_is_summed_on_the_card():
    """Parallel per-label gradients (the same label twice) make EPO's Gram matrix singular: the GPU's
    matrix equals the CPU's (the weights come out equal), and it is symmetric bit for bit."""
    y, _ = labels(2)
    cols = [None, y.copy()]
    cpu, gpu = (MultiObjective([LambdaRank(), LambdaRank()], labels=cols, method="epo", preference=[1, 3])
                for _ in range(2))
    want, got, _ = run_rounds(cpu, gpu, y, rounds=1)
    np.testing.assert_allclose(got["label_weights_"], want["label_weights_"], rtol=1e-10, atol=1e-13)
    data = gpu.prepare(y, SIZES)
    gpu.grad_hess_prepared(to_device(np.linspace(-1, 1, y.size)), data)
    sums = data.device_data.scratch("multi_sums", (6,), np.float64).copy_to_host()
    assert sums[1] == sums[2] and np.isclose(sums[0], sums[1], rtol=1e-12) and sums[0] > 0  # G = [[a, a], [a, a]]


@pytest.mark.filterwarnings("ignore:bounds\\[")
@pytest.mark.parametrize("method, loss", [("epo", RankNet()), ("epsilon_constraint", SquaredError())], ids=str)
def test_other_losses_with_a_gpu_cost_beside_lambdarank(method, loss):
    """RankNet's and SquaredError's GPU costs (``_pairwise_cuda.label_pairs_loss_rows``,
    ``_pointwise_cuda.pointwise_loss_rows``): a query's terms summed by row, so the costs equal the CPU's
    to rounding."""
    y, cols = labels(2)
    cpu, gpu = (MultiObjective([loss, LambdaRank()], labels=cols, method=method, **OPTIONS[method](2))
                for _ in range(2))
    want, got, reads = run_rounds(cpu, gpu, y, rounds=2)
    assert reads == [1, 1]
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-12, atol=1e-14)


def click_data():
    """``(clicks, graded)``: a simulated click log (labels, sessions, positions) and a graded label on its rows."""
    d = customobj.data.synthetic(4, 5, 3, seed=0)
    clicks = customobj.data.simulate_clicks(d, ranker=d.X[:, 0], sessions=1, seed=0)
    return clicks, np.random.default_rng(2).integers(0, 4, clicks.y.size).astype(float)


def run_click_rounds(make, clicks, rounds=2):
    """:func:`run_rounds` on the click log (positions given): the fitted values and the GPU's reads per round."""
    rng = np.random.default_rng(1)
    cpu, gpu = make(), make()
    pc, pg = (o.prepare(clicks.y, clicks.group, position=clicks.position) for o in (cpu, gpu))
    reads = []
    for _ in range(rounds):
        s = rng.normal(size=clicks.y.size)
        g, h = cpu.grad_hess_prepared(s, pc)
        before = LaunchCount.snapshot()
        gd, hd = (a.copy_to_host() for a in gpu.grad_hess_prepared(to_device(s), pg))
        reads.append(LaunchCount.since(before)[1])
        for cpu_out, gpu_out in ((g, gd), (h, hd)):
            np.testing.assert_allclose(gpu_out, cpu_out, rtol=1e-10, atol=1e-13 * np.abs(cpu_out).max())
    fitted = []
    for obj, prep in ((cpu, pc), (gpu, pg)):  # the click label's propensities beside the round's record
        click = obj.objectives[1].fitted_attributes(prep.state_for(obj).preps[1])
        fitted.append({**obj.fitted_attributes(prep), **click})
    return fitted[0], fitted[1], reads


def own_reads(obj, clicks):
    """The blocking reads of ``obj``'s own GPU round (Unbiased(LambdaRank()): its pair count)."""
    prep = obj.prepare(clicks.y, clicks.group, position=clicks.position)
    before = LaunchCount.snapshot()
    obj.grad_hess_prepared(to_device(np.zeros(clicks.y.size)), prep)
    return LaunchCount.since(before)[1]


@pytest.mark.filterwarnings("ignore:bounds\\[")
@pytest.mark.parametrize("click_loss", [Unbiased(LambdaRank()), Unbiased(RankNet(), cost="loss")],
                         ids=["lambdarank", "ranknet"])
def test_unbiased_on_a_click_label_has_the_cpus_costs(click_loss):
    """``Unbiased`` on the click label (the main label graded): its GPU cost (``_unbiased_route.grad_hess_loss``,
    each query's debiased loss) is the CPU's to the bit; weights, duals and both propensity vectors equal; the
    round reads the ``m^2 + m`` sums once beyond what the click loss's own route reads."""
    clicks, graded = click_data()
    make = lambda: MultiObjective([LambdaRank(), click_loss], labels=[graded, clicks.y], method="epsilon_constraint",  # noqa: E731
                                  bounds=[0.3], dual_interval=1)
    want, got, reads = run_click_rounds(make, clicks)
    assert reads == [own_reads(click_loss, clicks) + 1] * 2
    assert_simulated_bits(got["label_costs_"], want["label_costs_"])
    assert (want["label_costs_"] > 0).all() and not np.allclose(want["position_bias_"], 1.0)  # it estimated
    for name in ("label_weights_", "label_duals_", "position_bias_", "position_bias_unclicked_"):
        np.testing.assert_allclose(got[name], want[name], rtol=1e-10, atol=1e-13, err_msg=name)


@pytest.mark.parametrize("method", ["epo", "chebyshev"])
def test_composites_have_their_parts_costs(method):
    """``a + b`` and ``c * a`` (``_composite_route.sum_parts_loss``, ``scaled_loss``): each query's cost the
    parts' combined. The CPU combines the parts' totals, so the costs are equal to rounding (bound: 4 ulps
    of the cost on these data); one read a round."""
    y, cols = labels(2)
    make = lambda: MultiObjective([LambdaRank() + 0.5 * RankNet(), 2.0 * (LambdaRank() + SquaredError())],  # noqa: E731
                                  labels=cols, method=method, **OPTIONS[method](2))
    cpu, gpu = make(), make()
    want, got, reads = run_rounds(cpu, gpu, y, rounds=2)
    assert reads == [1, 1]
    np.testing.assert_allclose(got["label_costs_"], want["label_costs_"], rtol=4 * np.finfo(float).eps, atol=0)
    np.testing.assert_allclose(got["label_weights_"], want["label_weights_"], rtol=1e-10, atol=1e-13)


@pytest.mark.filterwarnings("ignore:bounds\\[")
@pytest.mark.parametrize("method, losses", [
    ("wc_mgda", (ListNet(), QueryRMSE())),
    ("epo", (XENDCG(seed=2), QuerySoftMax(beta=2.0))),
    ("ec_mgda", (QBRank(pairs=np.array([[0, 2], [9, 4], [5, 8]])), PreferencePairs(np.array([[3, 4], [8, 7]])))),
], ids=["listwise", "xendcg", "explicit-pairs"])
def test_listwise_and_explicit_pair_costs(method, losses):
    """ListNet's, QueryRMSE's, XENDCG's and QuerySoftMax's GPU costs (``_listwise_loss_cuda``: each query's the
    CPU's bits; XENDCG's at each round's noise, drawn alike on both), QBRank's
    and PreferencePairs' (``pair_list_loss_rows``: each pair at its first row's query, equal to rounding):
    the recorded costs and weights equal the CPU's, one read a round."""
    y, cols = labels(2)
    cpu, gpu = (MultiObjective(list(losses), labels=cols, method=method, **OPTIONS[method](2)) for _ in range(2))
    want, got, reads = run_rounds(cpu, gpu, y, rounds=2)
    assert reads == [1, 1] and (want["label_costs_"] > 0).all()
    if method != "ec_mgda":
        assert_simulated_bits(got["label_costs_"], want["label_costs_"])
    np.testing.assert_allclose(got["label_costs_"], want["label_costs_"], rtol=1e-13, atol=0)
    np.testing.assert_allclose(got["label_weights_"], want["label_weights_"], rtol=1e-10, atol=1e-13)


def test_stochastic_draws_the_cpu_labels_and_reads_nothing():
    cpu, gpu, y = twins("stochastic", 3, random_state=4, preference=[1, 2, 3])
    want, got, reads = run_rounds(cpu, gpu, y, rounds=2)
    assert reads == [0, 0]
    np.testing.assert_array_equal(got["label_weights_"], want["label_weights_"])


# YetiRank's seeded streams run as Python under the simulator, where numpy warns on their uint64 wraparound
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@pytest.mark.parametrize("loss", [YetiRank(permutations=3, seed=5), StructuredDCG(k=3)], ids=repr)
def test_yetirank_and_structured_dcg_have_the_cpus_costs(loss):
    """YetiRank's GPU cost (the loss at the round's sampled pairs, ``_sampled_pairs_cuda.yetirank_query_losses``)
    and StructuredDCG's (each query's from its gradient's assignment, ``structured_queries``): EPO's recorded
    costs the CPU's bits, weights equal, 2 rounds (YetiRank: new permutations each), one read a round."""
    y, cols = labels(2)
    cpu, gpu = (MultiObjective([LambdaRank(), loss], labels=cols, method="epo", **OPTIONS["epo"](2)) for _ in range(2))
    want, got, reads = run_rounds(cpu, gpu, y, rounds=2)
    assert reads == [1, 1] and (want["label_costs_"] > 0).all()
    assert_simulated_bits(got["label_costs_"], want["label_costs_"])
    np.testing.assert_allclose(got["label_weights_"], want["label_weights_"], rtol=1e-10, atol=1e-13)


def test_affine_on_a_click_label_has_the_cpus_costs():
    """``Affine`` on the click label: its GPU cost (``_affine_route.grad_hess_loss``: each query's loss from the
    gradients' launch) is the CPU's to the bit; EPO's weights equal, 2 rounds, one read a round (Affine's own
    route reads nothing)."""
    from customobj.clicks.simulation import trust_defaults

    clicks, graded = click_data()
    plus, minus = trust_defaults(int(clicks.position.max()) + 1)
    click_loss = customobj.Affine(LambdaRank(), alpha=0.9 * (plus - minus), beta=0.9 * minus)
    make = lambda: MultiObjective([LambdaRank(), click_loss], labels=[graded, clicks.y], method="epo",  # noqa: E731
                                  **OPTIONS["epo"](2))
    want, got, reads = run_click_rounds(make, clicks)
    assert reads == [1, 1] and (want["label_costs_"] != 0).all()
    assert_simulated_bits(got["label_costs_"], want["label_costs_"])
    np.testing.assert_allclose(got["label_weights_"], want["label_weights_"], rtol=1e-10, atol=1e-13)


class NoCostRankNet(RankNet):
    """A user's loss with a GPU route but no GPU cost (its ``device_route`` gives no ``grad_hess_loss``)."""

    def device_route(self):
        return super().device_route()._replace(grad_hess_loss=None)


class NoCostSquaredError(SquaredError):
    def device_route(self):
        return super().device_route()._replace(grad_hess_loss=None)


def test_a_per_label_loss_without_a_gpu_cost_is_refused_by_name():
    """Every customobj loss of one score a row has a GPU cost; a loss without one (a user's route, or a
    composite or click estimator holding one) is refused before round 1, naming the label."""
    y, cols = labels(2)
    for method in OPTIONS:
        obj = MultiObjective([LambdaRank(), NoCostRankNet()], labels=cols, method=method, **OPTIONS[method](2))
        with pytest.raises(NotImplementedError,
                           match=rf"method='{method}'.*objectives\[1\] \(NoCostRankNet\) has no GPU cost"):
            obj.device_route()
    with pytest.raises(NotImplementedError, match=r"NoCostRankNet\) has no GPU cost"):
        obj.grad_hess(to_device(np.zeros(y.size)), y, SIZES)
    assert np.isfinite(obj.grad_hess(np.zeros(y.size), y, SIZES)[0]).all()  # host scores: the CPU route
    # the methods that read no costs take any loss with a GPU route
    obj = MultiObjective([LambdaRank(), NoCostRankNet()], labels=cols, method="stochastic")
    assert obj.grad_hess(to_device(np.zeros(y.size)), y, SIZES)[0].copy_to_host().shape == (y.size,)
    # a composite or click estimator has a cost when every part has one
    with pytest.raises(NotImplementedError, match=r"objectives\[0\] \(Sum\) has no GPU cost"):
        MultiObjective([LambdaRank() + NoCostRankNet(), LambdaRank()], method="epo").device_route()
    with pytest.raises(NotImplementedError, match=r"objectives\[1\] \(Scaled\) has no GPU cost"):
        MultiObjective([LambdaRank(), 2.0 * NoCostRankNet()], method="epo").device_route()
    for click in (Unbiased, customobj.Affine):
        with pytest.raises(NotImplementedError, match=rf"objectives\[1\] \({click.__name__}\) has no GPU cost"):
            MultiObjective([LambdaRank(), click(RankNet() + NoCostSquaredError())], method="epo").device_route()
    for loss in (LambdaRank() + RankNet(), 2.0 * YetiRank(), customobj.StructuredDCG(),
                 customobj.Affine(RankNet() + SquaredError())):  # each has one
        MultiObjective([LambdaRank(), loss], method="epo").device_route()


@pytest.mark.filterwarnings("ignore:bounds\\[")
def test_xgboost_objective_on_cuda_reaches_the_route():
    """``xgboost_objective(obj, device="cuda")``'s round (what ``xgboost.train`` calls) runs the route: float32
    device outputs equal to the CPU objective's, and the same recorded rounds (a real GPU's
    ``xgboost.train(device="cuda")`` needs XGBoost to read device arrays, which the simulator's lack)."""
    import xgboost as xgb

    cpu, gpu, y = twins("epsilon_constraint", 2, bounds=[0.3])
    X = np.arange(y.size, dtype=float)[:, None]
    d = xgb.DMatrix(X, y, group=SIZES)
    f_cpu, f_gpu = adapters.xgboost_objective(cpu), adapters.xgboost_objective(gpu, device="cuda")
    rng = np.random.default_rng(3)
    for _ in range(2):
        preds = rng.normal(size=y.size).astype(np.float32)
        g, h = f_cpu(preds, d)
        gd, hd = f_gpu(preds, d)
        assert gd.dtype == np.float32
        np.testing.assert_allclose(gd.copy_to_host(), np.asarray(g, np.float32).ravel(), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(hd.copy_to_host(), np.asarray(h, np.float32).ravel(), rtol=1e-6, atol=1e-7)
    want, got = f_cpu.fitted_attributes(d), f_gpu.fitted_attributes(d)
    assert_simulated_bits(got["label_costs_"], want["label_costs_"])
    np.testing.assert_allclose(got["label_duals_"], want["label_duals_"], rtol=1e-10)


@needs_real_gpu
@pytest.mark.filterwarnings("ignore:bounds\\[")
def test_xgboost_train_on_a_card_records_the_cpus_first_round():
    """``xgboost.train(device="cuda")`` end to end (a real GPU only: XGBoost reads the outputs through
    ``__cuda_array_interface__``): the first round, at the same base scores on both devices, records the
    CPU training's weights and costs; later rounds follow trees grown on different devices."""
    import xgboost as xgb

    cpu, gpu, y = twins("epo", 2, preference=[1, 2])
    d = xgb.DMatrix(np.random.default_rng(5).normal(size=(y.size, 3)), y, group=SIZES)
    params = adapters.xgboost_params(cpu, {"max_depth": 2, "tree_method": "hist"})
    f_cpu, f_gpu = adapters.xgboost_objective(cpu), adapters.xgboost_objective(gpu, device="cuda")
    xgb.train(params, d, 3, obj=f_cpu)
    xgb.train({**params, "device": "cuda"}, d, 3, obj=f_gpu)
    want, got = f_cpu.fitted_attributes(d), f_gpu.fitted_attributes(d)
    assert got["label_weights_"].shape == (3, 2) and np.isfinite(got["label_costs_"]).all()
    for name in ("label_weights_", "label_costs_"):
        np.testing.assert_allclose(got[name][0], want[name][0], rtol=1e-9, atol=1e-12)


_PTX_CHECK = """
import types as pytypes
from numba import cuda, types as T
import numba.cuda.dispatcher as dispatcher
dispatcher.get_current_device = lambda: pytypes.SimpleNamespace(compute_capability=(8, 0))
from customobj.multi import _combine_cuda as CM, _pairs_cuda as CP
f1, i1, f2, b, i, f = T.float64[::1], T.int64[::1], T.float64[:, ::1], T.boolean, T.int64, T.float64
o1 = T.int32[::1]  # the booster's pair rows (its index dtype; int64 for more rows)
# the argument types customobj/multi/_round_route.py launches them with
SIGNATURES = [
    (CM.round_partials, (f2, f2, i, b, f2)),
    (CM.finish_sums, (f2, i, f1)),
    (CM.add_weighted_rows, (f2, f1, f1)),
    (CM.add_picked_rows, (f2, i1, i1, f1)),
    (CP.count_picked, (i1, i1, i1, i, i1)),
    (CP.place_picked, (i1, i1, f1, i1, i1, i, i1, o1, o1, f1)),
]
for kernel, sig in SIGNATURES:
    cuda.compile_ptx(kernel.py_func, T.void(*sig), cc=(8, 0))
print("COMPILED", len(SIGNATURES))
check_listed(SIGNATURES, "customobj.multi")
"""


def test_every_kernel_compiles_for_a_real_gpu():
    assert compile_listed_kernels(_PTX_CHECK) >= 6  # every kernel of multi/_combine_cuda.py and _pairs_cuda.py
    # (_round_route's place_scaled is objectives/_pointwise_cuda.py's: tests/test_objectives_devices.py)
