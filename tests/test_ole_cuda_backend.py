"""customobj.ole.cuda.backend: ``TreeBooster(device="cuda")`` grows the CPU's trees (every criterion,
NaN, bagging, McRank), refuses a machine without a GPU naming what is missing, and refuses a fit that
does not fit the card's free memory, with the numbers. On a machine without NVIDIA's driver the GPU
kernels run on numba's CUDA simulator (tests/conftest.py): the data stay small."""
import numpy as np
import pytest

import customobj._cuda_runtime as runtime
from customobj import McRank
from customobj.ole import TreeBooster
from customobj.ole.cuda import backend, partitions
from customobj.ole.cuda.backend import DeviceMemoryError, check_device_memory, device_memory_needed
from customobj.objectives.devices import GPUUnavailableError

from _cuda_cases import needs_gpu
from _ole_cases import QUIET, make_rank_data, tree_dicts

KW = dict(num_leaves=6, n_estimators=2, min_data_in_leaf=4, max_bin=16, lambda_l2=0.5, **QUIET)


def _pair(criterion, X, y, group, **kw):
    cpu = TreeBooster(criterion=criterion, **KW, **kw).fit(X, y, group)
    gpu = TreeBooster(criterion=criterion, device="cuda", **KW, **kw).fit(X, y, group)
    return cpu, gpu


@needs_gpu
@pytest.mark.parametrize("criterion", ["se", "wse", "ole", "ole_fast", "ole_float64"])
def test_the_gpu_grows_the_cpu_trees_for_every_criterion(criterion):
    X, y, group = make_rank_data(3, n_queries=8)  # 200 rows, 4 features, NaN, few distinct values (ties)
    cpu, gpu = _pair(criterion, X, y, group, ole_fast_features=2)
    assert tree_dicts(gpu) == tree_dicts(cpu)  # splits, thresholds, gains and leaf values, exactly
    assert sum(len(t.nodes) for t in cpu.trees_) >= 2 * 3  # real trees, not stumps
    np.testing.assert_array_equal(gpu.predict(X), cpu.predict(X))


@needs_gpu
def test_bagging_feature_sampling_weights_and_breadth_first_match_too():
    X, y, group = make_rank_data(5, n_queries=6)  # 150 rows
    w = np.random.default_rng(0).uniform(0.5, 2.0, y.size)
    kw = dict(bagging_fraction=0.7, feature_fraction=0.75, growth="breadth_first", random_state=4)
    cpu = TreeBooster(criterion="ole", **KW, **kw).fit(X, y, group, sample_weight=w)
    gpu = TreeBooster(criterion="ole", device="cuda", **KW, **kw).fit(X, y, group, sample_weight=w)
    assert tree_dicts(gpu) == tree_dicts(cpu)


@needs_gpu
def test_mcrank_grows_one_gpu_tree_per_grade_equal_to_the_cpu_ones():
    X, y, group = make_rank_data(7, n_queries=6)
    cpu, gpu = _pair("wse", X, y, group, objective=McRank())
    assert len(gpu.trees_) == len(cpu.trees_) == 2 * cpu.n_outputs_
    assert tree_dicts(gpu) == tree_dicts(cpu)


def test_device_is_validated_where_it_is_written_and_in_fit():
    for bad in ("gpu", "CUDA", "cuda:-1", "cuda:"):
        with pytest.raises(ValueError, match="device must be 'cpu', 'cuda' or 'cuda:N'"):
            TreeBooster(device=bad)
    for bad in (1, None):
        with pytest.raises(TypeError, match="device must be 'cpu', 'cuda' or 'cuda:N'"):
            TreeBooster(device=bad)
    assert TreeBooster(device="cuda:0").get_params()["device"] == "cuda:0"  # stored as given (scikit-learn)
    model = TreeBooster(**KW)
    model.set_params(device="tpu")
    X, y, group = make_rank_data(1, n_queries=2)
    with pytest.raises(ValueError, match="device must be 'cpu', 'cuda' or 'cuda:N'"):
        model.fit(X, y, group)


def test_no_gpu_is_a_clear_error_naming_what_is_missing(monkeypatch):
    why = "no usable NVIDIA driver or device: CUDA_ERROR_NO_DEVICE"
    monkeypatch.setattr(runtime, "gpu_status", lambda: runtime.GPUStatus(False, why))
    runtime._usable_cuda.cache_clear()  # a GPU found earlier in this process is cached
    try:
        X, y, group = make_rank_data(1, n_queries=2)
        with pytest.raises(GPUUnavailableError, match='TreeBooster.device="cuda". needs a CUDA GPU: no usable NVIDIA'):
            TreeBooster(device="cuda", **KW).fit(X, y, group)
        TreeBooster(**KW).fit(X, y, group)  # the CPU path never needs one
    finally:
        runtime._usable_cuda.cache_clear()


def test_no_gpu_is_said_before_the_data_are_prepared_or_binned(monkeypatch):
    # It once came after the objective's preparation and the binning (their numba compilation: ~10 s).
    from customobj.ole import booster

    monkeypatch.setattr(runtime, "gpu_status", lambda: runtime.GPUStatus(False, "no CUDA device found"))
    runtime._usable_cuda.cache_clear()
    prepared = []
    monkeypatch.setattr(booster, "training_targets", lambda *a, **k: prepared.append(1) or pytest.fail("prepared"))
    try:
        X, y, group = make_rank_data(1, n_queries=2)
        with pytest.raises(GPUUnavailableError, match=r'TreeBooster\(device="cuda:0"\) needs a CUDA GPU'):
            TreeBooster(device="cuda:0", **KW).fit(X, y, group)
        assert not prepared
    finally:
        runtime._usable_cuda.cache_clear()


@needs_gpu
def test_an_ordinal_grows_the_same_trees_and_a_missing_one_is_refused():
    n = len(runtime.cuda_module().gpus)
    X, y, group = make_rank_data(3, n_queries=4)
    cpu = TreeBooster(criterion="wse", **KW).fit(X, y, group)
    gpu = TreeBooster(criterion="wse", device=f"cuda:{n - 1}", **KW).fit(X, y, group)
    assert tree_dicts(gpu) == tree_dicts(cpu)
    with pytest.raises(GPUUnavailableError, match=rf"asks for device='cuda:{n}', but .* {n} CUDA device"):
        TreeBooster(device=f"cuda:{n}", **KW).fit(X, y, group)


def test_the_memory_estimate_counts_every_item():
    need = device_memory_needed(n_rows=1000, n_features=10, bin_itemsize=2, n_slots=500, n_pairs=300,
                                index_itemsize=4)
    # the bins twice (feature-major for partitions, row-major for the histograms), g and h and their grids
    assert need["bins"] == 2 * 1000 * 10 * 2 and need["gradients"] == 4 * 1000 * 8
    assert need["rows"] == 1000 * (8 + 8 + 8 + 8 + 1)  # order, start rows, scratch, coupling sums; side
    assert need["pairs"] == 2 * 300 * (4 + 4 + 8)  # the two buffers the pairs ping-pong between
    assert need["histograms"] == 500 * 3 * 8  # one histogram: the blocks add into it (no partials)
    check_device_memory(need, free=sum(need.values()))  # exactly enough: accepted
    refusal = r"needs 0\.00\d+ GiB of GPU memory \(bins 3\.73e-05, .*\), but the device has 0\.00\d+ GiB free"
    with pytest.raises(DeviceMemoryError, match=refusal):
        check_device_memory(need, free=sum(need.values()) - 1)


@needs_gpu
def test_a_fit_that_does_not_fit_the_card_is_refused_before_it_starts(monkeypatch):
    X, y, group = make_rank_data(2)
    monkeypatch.setattr(backend, "free_device_memory", lambda: 4096.0)  # a tiny card
    model = TreeBooster(device="cuda", **KW)
    with pytest.raises(DeviceMemoryError, match="GiB free"):
        model.fit(X, y, group)
    assert not hasattr(model, "trees_") or model.trees_ == []  # nothing was grown


@needs_gpu
def test_the_pairs_are_checked_once_their_count_is_known(monkeypatch):
    X, y, group = make_rank_data(2, n_queries=2)  # 4 fits: 50 rows (its trees have pairs: checked below)
    real = backend.device_memory_needed
    seen = []

    def needed(**kw):
        seen.append(kw)
        return real(**kw)

    from customobj.ole.cuda import inputs  # the tree's pairs are checked there
    for module in (backend, inputs):
        monkeypatch.setattr(module, "device_memory_needed", needed)
    TreeBooster(device="cuda", criterion="ole", **KW).fit(X, y, group)
    assert seen[0].get("n_pairs", 0) == 0 and max(kw.get("n_pairs", 0) for kw in seen) > 0
    # room for everything but the pairs: the fit starts (its bins and histograms then take their
    # share of the free memory), its first tree's pairs are refused
    need = real(**seen[0])
    room = float(sum(need.values()))
    calls = []

    def free():
        calls.append(1)
        return room if len(calls) == 1 else room - need["bins"] - need["histograms"]

    for module in (backend, inputs):
        monkeypatch.setattr(module, "free_device_memory", free)
    with pytest.raises(DeviceMemoryError, match=r"pairs \d"):
        TreeBooster(device="cuda", criterion="ole", **KW).fit(X, y, group)
    assert len(calls) == 2
    # what the fit already holds is not counted twice: room for the largest tree's pairs is enough
    most = max(kw.get("n_pairs", 0) for kw in seen)
    room += real(**{**seen[0], "n_pairs": most})["pairs"]
    calls.clear()
    TreeBooster(device="cuda", criterion="ole", **KW).fit(X, y, group)
    calls.clear()
    TreeBooster(device="cuda", criterion="wse", **KW).fit(X, y, group)  # no pairs: it fits


@needs_gpu
def test_wide_bins_joint_leaves_and_early_stopping_match_too():
    X, y, group = make_rank_data(9, n_values=4000)  # many distinct values: more than 255 bins, uint16
    X[:, 1:] = np.round(X[:, 1:] / 20)  # in feature 0 only: the other features' slots cost simulator threads
    Xv, yv, gv = make_rank_data(10, n_queries=4)
    kw = dict(KW, max_bin=300, n_estimators=4, leaf_solver="joint")
    fit = dict(eval_set=[(Xv, yv)], eval_group=[gv], early_stopping_rounds=1)
    cpu = TreeBooster(criterion="ole", **kw).fit(X, y, group, **fit)
    gpu = TreeBooster(criterion="ole", device="cuda", **kw).fit(X, y, group, **fit)
    assert cpu.bin_mapper_.bins_feature_major(X).dtype == np.uint16 and cpu.bin_mapper_.n_bins[0] > 255
    assert tree_dicts(gpu) == tree_dicts(cpu) and gpu.best_iteration_ == cpu.best_iteration_
    assert gpu.evals_result_ == cpu.evals_result_


@needs_gpu
def test_a_pointwise_objective_without_queries_matches():
    from customobj import SquaredError
    X, y, _ = make_rank_data(11, n_queries=8)
    cpu, gpu = _pair("se", X, y, None, objective=SquaredError())
    assert tree_dicts(gpu) == tree_dicts(cpu)


@needs_gpu
def test_partitions_in_many_blocks_still_grow_the_cpu_trees(monkeypatch):
    # a partition is stable, so its result does not depend on its block count: 16-row blocks here
    monkeypatch.setattr(partitions, "PARTITION_BLOCK", 16)
    X, y, group = make_rank_data(8, n_queries=8)
    cpu, gpu = _pair("ole_float64", X, y, group)
    assert tree_dicts(gpu) == tree_dicts(cpu)


@needs_gpu
def test_a_steep_lambdarank_fits_on_the_gpu_as_on_the_cpu():
    # issue 30 point 8: TreeBooster(LambdaRank(sigma=50), device="cuda") died mid-fit with
    # "OverflowError: math range error" under the simulator (LambdaRank's rho on the device) once
    # sigma times a score gap passed exp's range; here the initial scores put it there at once.
    from customobj import LambdaRank

    rng = np.random.default_rng(0)
    X, y, group = rng.normal(size=(40, 3)), rng.integers(0, 3, 40).astype(float), [10, 10, 10, 10]
    init = np.linspace(-200.0, 200.0, 40)
    kw = dict(criterion="se", num_leaves=4, n_estimators=2, learning_rate=1.0, min_data_in_leaf=2, max_bin=8,
              lambda_l2=1.0, **QUIET)
    gpu = TreeBooster(LambdaRank(sigma=50.0), device="cuda", **kw).fit(X, y, group, init_score=init)
    cpu = TreeBooster(LambdaRank(sigma=50.0), **kw).fit(X, y, group, init_score=init)
    assert tree_dicts(gpu) == tree_dicts(cpu)


def _tiny_tie_data(seed):
    """Tiny fits where the GPU used to grow other trees than the CPU (issue "customobj in a user's
    hands", point 5: the CPU's float32 pair sums and the GPU's float64 ones chose different splits
    at exact ties; a search over seeds 0-29 of this generator found 11 that differed (1, 2, 4, 5, 8, 10,
    14, 23, 26, 28, 29), seed 2 in its predictions by 4e-4, the others in gains or leaf values)."""
    rng = np.random.default_rng(seed)
    kind, n = seed % 3, 48
    X = (rng.integers(0, 2, size=(n, 5)).astype(float) if kind == 0 else rng.normal(size=(n, 4)) if kind == 1
         else np.round(rng.random((n, 6)), 1))
    return X, rng.integers(0, 5, size=n), np.full(6, 8)


@needs_gpu
@pytest.mark.parametrize("seed", [1, 2])
def test_tiny_fits_with_exact_ties_grow_the_cpu_trees(seed):
    X, y, group = _tiny_tie_data(seed)
    kw = dict(num_leaves=8, n_estimators=5, min_data_in_leaf=1, max_bin=16, **QUIET)
    cpu = TreeBooster(criterion="ole", **kw).fit(X, y, group)
    gpu = TreeBooster(criterion="ole", device="cuda", **kw).fit(X, y, group)
    assert tree_dicts(gpu) == tree_dicts(cpu)  # the same splits, gains and leaf values, bit for bit
    np.testing.assert_array_equal(gpu.predict(X), cpu.predict(X))


@needs_gpu
@pytest.mark.parametrize("criterion, kw", [("ole_fast", dict(ole_fast_epsilon=0.05, ole_fast_features=2)),
                                           ("ole", dict(leaf_solver="joint"))])
def test_best_first_lookahead_grows_the_cpu_trees_in_fewer_reads(criterion, kw):
    # the GPU's best-first batches hold the tree's next split and up to BEST_FIRST_LOOKAHEAD - 1 more
    # (the CPU splits one leaf a batch); expansions the tree never used are given back whole: ole_fast's
    # dropped couplings from their rows, the joint solve's rows from the order read back
    X, y, group = make_rank_data(1, n_queries=6)
    params = dict(num_leaves=8, n_estimators=2, min_data_in_leaf=4, max_bin=16, **QUIET, **kw)
    cpu = TreeBooster(criterion=criterion, **params).fit(X, y, group)
    gpu = TreeBooster(criterion=criterion, device="cuda", **params).fit(X, y, group)
    assert tree_dicts(gpu) == tree_dicts(cpu)
    st = gpu.device_stats_.total()
    assert backend.BEST_FIRST_LOOKAHEAD > 1 and st.splits == sum(len(t.nodes) for t in cpu.trees_) == 2 * 7
    assert st.expansions > st.splits and st.reads < st.splits  # expanded ahead, some never used; fewer reads
