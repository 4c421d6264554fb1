"""customobj.ole.cuda.scores: a ``device="cuda"`` fit computes its gradients on the device when the
objective has GPU kernels, and its pair couplings there too when the criterion needs them and they
have a GPU kernel (LambdaRank); the grower then receives device arrays and grows the CPU's trees. It
says why they stay on the host otherwise. Without a GPU it runs on numba's CUDA simulator
(tests/conftest.py): tiny data."""
import numpy as np
import pytest

from customobj import LambdaRank, ListNet, McRank, QBRank, RankNet, RankSVM
from customobj._cuda_runtime import is_device_array
from customobj.objectives.base import DeviceRoute, Objective
from customobj.ole import TreeBooster
from customobj.ole.cuda import backend
from customobj.ole.cuda.scores import host_gradients_reason

from _cuda_cases import needs_gpu
from _ole_cases import QUIET, make_rank_data, tree_dicts

KW = dict(num_leaves=5, n_estimators=2, min_data_in_leaf=4, max_bin=12, **QUIET)


class _NoPairs(RankNet):
    """A user's pairwise loss whose GPU route has gradients but no coupling kernel (every built-in loss, the
    composites and Unbiased included, has one)."""

    def device_route(self):
        return DeviceRoute(RankNet().device_route().grad_hess)


def test_the_reason_names_what_keeps_the_gradients_on_the_host():
    assert host_gradients_reason(RankNet(), need_pairs=False, line_search=False) is None
    assert host_gradients_reason(RankNet(), need_pairs=True, line_search=False) is None
    assert host_gradients_reason(LambdaRank() + RankNet(), need_pairs=True, line_search=False) is None
    assert "couplings of Sum" in host_gradients_reason(LambdaRank() + _NoPairs(), need_pairs=True, line_search=False)
    assert host_gradients_reason(LambdaRank(), need_pairs=True, line_search=False) is None
    assert host_gradients_reason(LambdaRank(), True, False, pairs_on_host="joint") == "joint"
    assert host_gradients_reason(LambdaRank(), False, False, pairs_on_host="joint") is None  # no pairs needed
    assert "line_search" in host_gradients_reason(RankNet(), need_pairs=False, line_search=True)
    # every built-in loss has GPU kernels now (ListNet's came with the softmax losses' GPU routes)
    assert host_gradients_reason(ListNet(), need_pairs=False, line_search=False) is None
    assert "Objective has no GPU kernel" in host_gradients_reason(Objective(), need_pairs=False, line_search=False)


def _spy_row_sums(monkeypatch):
    seen = []
    real = backend.CUDABackend.begin_tree  # a tree's first call

    def spy(self, order, grad, hess, pairs, mask, **kw):
        seen.append(is_device_array(grad) and is_device_array(hess))
        return real(self, order, grad, hess, pairs, mask, **kw)

    monkeypatch.setattr(backend.CUDABackend, "begin_tree", spy)
    return seen


@needs_gpu
@pytest.mark.parametrize("obj, criterion", [(LambdaRank(), "wse"), (RankNet(), "se"), (McRank(), "wse")])
def test_device_gradients_grow_the_cpu_trees(obj, criterion, monkeypatch):
    X, y, group = make_rank_data(6, n_queries=6)
    kw = dict(KW, objective=obj, criterion=criterion, bagging_fraction=0.8, random_state=1)
    w = np.random.default_rng(2).uniform(0.5, 2.0, y.size)  # weights go up with the labels, once per fit
    cpu = TreeBooster(**kw).fit(X, y, group, sample_weight=w)
    seen = _spy_row_sums(monkeypatch)
    gpu = TreeBooster(device="cuda", **kw).fit(X, y, group, sample_weight=w)
    assert gpu.device_gradients_ == "device" and cpu.device_gradients_ is None
    assert seen and all(seen) and len(seen) == len(gpu.trees_)  # every tree's gradients were device arrays
    assert tree_dicts(gpu) == tree_dicts(cpu)
    np.testing.assert_array_equal(gpu.predict(X), cpu.predict(X))
    # the peak counts the bins (a byte each), the scores, gradients and hessians (float64, n x K each)
    assert gpu.device_memory_peak_ >= X.size + 3 * 8 * y.size * gpu.n_outputs_


@needs_gpu
def test_couplings_line_search_and_cpu_only_objectives_keep_host_gradients(monkeypatch):
    X, y, group = make_rank_data(2, n_queries=4)
    seen = _spy_row_sums(monkeypatch)
    cases = [(dict(criterion="ole", objective=LambdaRank() + _NoPairs()),
              "host: the pair couplings of Sum have no GPU kernel"),
             (dict(criterion="ole", leaf_solver="joint"), 'host: leaf_solver="joint"'),
             (dict(criterion="wse", line_search=True), "host: line_search")]
    for extra, why in cases:
        seen.clear()
        gpu = TreeBooster(device="cuda", **{**KW, **extra}).fit(X, y, group)
        assert gpu.device_gradients_.startswith(why) and seen and not any(seen)
        assert tree_dicts(gpu) == tree_dicts(TreeBooster(**{**KW, **extra}).fit(X, y, group))


def _spy_pairs(monkeypatch):
    seen = []
    real = backend.CUDABackend.begin_tree

    def spy(self, order, grad, hess, pairs, mask, **kw):
        if pairs is not None:
            seen.append(all(is_device_array(a) for a in pairs))
        return real(self, order, grad, hess, pairs, mask, **kw)

    monkeypatch.setattr(backend.CUDABackend, "begin_tree", spy)
    return seen


_COUPLED = {"default": LambdaRank(), "lightgbm": LambdaRank.like_lightgbm(), "err": LambdaRank(metric="err", k=3),
            "ranknet": RankNet(), "ranksvm": RankSVM(), "qbrank": QBRank()}
#: Every objective under "ole" (bagged: its out-of-bag pairs dropped on the device), and "ole_fast" and
#: "ole_float64" each with a LambdaRank pair route and a label-pair route: how a criterion uses the device
#: pairs does not depend on the loss that made them, and each loss's device couplings equal the CPU's
#: in tests/test_objectives_couplings_route.py (the full 6 x 3 grid cost ~2 simulator minutes).
_COUPLED_CASES = [*[(name, "ole") for name in _COUPLED], ("default", "ole_fast"), ("ranksvm", "ole_fast"),
                  ("lightgbm", "ole_float64"), ("qbrank", "ole_float64")]


@needs_gpu
@pytest.mark.parametrize("name, criterion", _COUPLED_CASES, ids=[f"{n}-{c}" for n, c in _COUPLED_CASES])
def test_device_couplings_grow_the_cpu_trees(name, criterion, monkeypatch):
    obj = _COUPLED[name]
    X, y, group = make_rank_data(6, n_queries=6)
    w = np.repeat(np.random.default_rng(3).uniform(0.5, 2.0, 6), np.diff(np.r_[0, np.cumsum(group)]))
    bag = dict(bagging_fraction=0.7, random_state=2) if criterion == "ole" else {}  # out-of-bag pairs dropped there
    kw = dict(KW, objective=obj, criterion=criterion, ole_fast_features=2, **bag)
    cpu = TreeBooster(**kw).fit(X, y, group, sample_weight=w)
    seen, pairs = _spy_row_sums(monkeypatch), _spy_pairs(monkeypatch)
    gpu = TreeBooster(device="cuda", **kw).fit(X, y, group, sample_weight=w)
    assert gpu.device_gradients_ == "device"
    assert seen and all(seen) and pairs and all(pairs)  # gradients and pairs came as device arrays
    assert tree_dicts(gpu) == tree_dicts(cpu)
    np.testing.assert_array_equal(gpu.predict(X), cpu.predict(X))
