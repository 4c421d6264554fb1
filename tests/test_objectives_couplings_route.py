"""GPU pair couplings (customobj/objectives/_couplings_route.py; kernels in _lambdarank_cuda.py and
_pairwise_cuda.py) against the CPU's ``grad_hess_couplings_prepared``: the same pairs in the same order,
couplings and gradients to 1e-9 relative (bit for bit under the simulator, where the device's exp is the
host's); every LambdaRank metric and convention and every listed-pair loss (LambdaLoss too), on random and
degenerate data (one-row queries, equal labels, tied scores, weights), and the bagged pairs against the
CPU's compaction. Runs on the simulator where no GPU is present."""
from __future__ import annotations

import numpy as np
import pytest

from customobj import LambdaLoss, LambdaRank, MPBoost, PreferencePairs, QBRank, RankNet, RankSVM
from customobj.objectives._couplings_route import couplings_reason, grad_hess_couplings_prepared, in_bag_pairs
from customobj.ole.pair_partition import compact_pairs
from _cuda_cases import STATUS, data, degenerate_cases, long_query_cases, needs_gpu, to_device


def assert_couplings_equal_cpu(obj, s, y, sizes, w=None, index_dtype=np.int64):
    prep = obj.prepare(y, sizes, w)
    g, h, (i, j, c) = obj.grad_hess_couplings_prepared(s, prep)
    if not obj.writes_pair_buffer:  # the CPU booster keeps the listed pairs of coupling > 0 (compact_pairs)
        keep = c > 0
        i, j, c = i[keep], j[keep], c[keep]
    gd, hd, (id_, jd, cd) = grad_hess_couplings_prepared(obj, to_device(s), prep, index_dtype=index_dtype)
    id_, jd, cd = id_.copy_to_host(), jd.copy_to_host(), cd.copy_to_host()
    assert id_.dtype == np.dtype(index_dtype) and cd.dtype == np.float64
    np.testing.assert_array_equal(id_, i, err_msg=repr(obj))  # the CPU's pairs, in the CPU's order
    np.testing.assert_array_equal(jd, j, err_msg=repr(obj))
    for cpu, gpu in ((g, gd.copy_to_host()), (h, hd.copy_to_host()), (c, cd)):
        np.testing.assert_allclose(gpu, cpu, rtol=1e-9, atol=1e-9 * max(1.0, float(np.abs(cpu).max(initial=0.0))))
        if STATUS.simulator:  # the same float64 operations in the same order (norm's sum too): the same bits
            np.testing.assert_array_equal(gpu, cpu, err_msg=repr(obj))
    return i, j, c


def test_the_reason_names_objectives_without_a_coupling_kernel():
    assert couplings_reason(LambdaRank.like_lightgbm()) is None
    assert couplings_reason(RankNet()) is None and couplings_reason(QBRank()) is None
    assert couplings_reason(LambdaRank() + RankNet()) == "the pair couplings of Sum have no GPU kernel"


@needs_gpu
def test_objectives_without_a_kernel_are_refused():
    s, y, sizes, _ = data(0)
    obj = 2.0 * RankNet()
    with pytest.raises(NotImplementedError, match="couplings of Scaled"):
        grad_hess_couplings_prepared(obj, to_device(s), obj.prepare(y, sizes))


@needs_gpu
@pytest.mark.parametrize("obj", [RankNet(), RankNet(sigma=3.0), RankSVM(), MPBoost(), MPBoost(ddf="logdd"), QBRank(),
                                 QBRank(pairs=[[0, 2], [3, 1], [2, 1]], margin=0.5),
                                 PreferencePairs([[0, 2], [3, 1], [2, 1], [2, 0]], margin=1.0,
                                                 weight=[1.0, 2.0, 0.5, 3.0]),
                                 LambdaLoss(), LambdaLoss(weighting="ndcg1", sigma=2.0)],
                         ids=["ranknet", "ranknet-s3", "ranksvm", "mpboost", "mpboost-logdd", "qbrank",
                              "qbrank-pairs", "preference-pairs", "lambdaloss", "lambdaloss-ndcg1"])
# 20: a block's threads take runs of 2-3 pairs (the simulator's 8 lanes), the last run and chunk partial, lanes idle
@pytest.mark.parametrize("chunk", [1024, 20], ids=["one-chunk", "chunks-of-20"])
def test_listed_pair_losses_keep_the_cpu_pairs_of_positive_coupling(obj, chunk, monkeypatch):
    from customobj.objectives import _launch

    monkeypatch.setattr(_launch, "LIST_CHUNK", chunk)  # the result never depends on the chunk
    s, y, sizes, w = data(6, weights=True)
    i, _, c = assert_couplings_equal_cpu(obj, s, y, sizes, w, index_dtype=np.int32)
    assert i.size > 0 and np.all(c > 0)
    for _, s2, y2, sizes2, w2 in degenerate_cases():
        assert_couplings_equal_cpu(obj, s2, y2, sizes2, w2)
    # RankSVM's hinge is flat beyond the margin: pairs ranked far apart have no coupling and are dropped
    far = np.array([10.0, 0.0, -10.0, 0.1, 0.0])
    i, _, _ = assert_couplings_equal_cpu(obj, far, np.array([2.0, 1.0, 0.0, 1.0, 0.0]), [3, 2])
    if isinstance(obj, RankSVM):
        assert i.size < 4


@needs_gpu
def test_qbrank_upper_bound_hessian_has_no_pairs():
    s, y, sizes, _ = data(8)
    obj = QBRank(hessian="upper_bound")
    i, _, _ = assert_couplings_equal_cpu(obj, s, y, sizes)
    assert i.size == 0


@needs_gpu
@pytest.mark.parametrize("obj", [LambdaRank(), LambdaRank(k=3, truncation=2), LambdaRank(norm=True, sigma=2.0),
                                 LambdaRank(metric="err", k=3), LambdaRank(metric="map"), LambdaRank(metric="mrr"),
                                 LambdaRank.like_lightgbm(), LambdaRank.like_xgboost()],
                         ids=["ndcg", "k3-t2", "norm", "err", "map", "mrr", "lightgbm", "xgboost"])
def test_random_data_weights_and_index_dtype_equal_cpu(obj):
    s, y, sizes, w = data(4, weights=True, per_query=True)
    i, _, c = assert_couplings_equal_cpu(obj, s, y, sizes, w, index_dtype=np.int32)
    assert i.size > 0 and np.all(c >= 0)
    assert_couplings_equal_cpu(obj, s, y, sizes)


@needs_gpu
@pytest.mark.parametrize("case", list(degenerate_cases()), ids=lambda c: c[0])
@pytest.mark.parametrize("obj", [LambdaRank(), LambdaRank.like_lightgbm(), LambdaRank(metric="mrr")],
                         ids=["ndcg", "lightgbm", "mrr"])
def test_degenerate_data_equals_cpu(case, obj):
    name, s, y, sizes, w = case
    if w is not None and obj.convention != "customobj":  # the libraries' conventions weigh whole queries
        w = np.repeat(w[np.cumsum([0] + sizes[:-1])], sizes)
    i, _, _ = assert_couplings_equal_cpu(obj, s, y, sizes, w)
    if name in ("one-row queries", "all labels equal"):
        assert i.size == 0  # no pair changes the metric


@needs_gpu
@pytest.mark.parametrize("case", list(long_query_cases()), ids=lambda c: c[0])
@pytest.mark.parametrize("obj", [LambdaRank(), LambdaRank(norm=True, truncation=5), LambdaRank(metric="err", k=4),
                                 LambdaRank(metric="mrr")], ids=["ndcg", "norm-t5", "err-k4", "mrr"])
def test_queries_longer_than_a_warp_equal_cpu(case, obj):
    # a warp per upper row walks its lower rows a warp's width at a time: 19 rows take three steps from row 0
    name, s, y, sizes, w = case
    i, j, _ = assert_couplings_equal_cpu(obj, s, y, sizes, w)
    in_long = (i >= 1) & (i < 20)
    if "labels equal" in name or "no pairs" in name:
        assert not in_long.any()
    else:
        assert in_long.any() and (i[in_long] < 20).all() and (j[in_long] >= 1).all() and (j[in_long] < 20).all()
    if "no pairs" in name:
        assert i.size == 0


@needs_gpu
def test_underflowing_exp_table_and_given_buffers():
    # Scores 800 apart take the direct rho; the pairs go to the caller's buffers (sized by the count).
    from numba import cuda

    s = np.array([0.0, -400.0, -800.0, 1.0, -900.0])
    y = np.array([0.0, 2.0, 1.0, 1.0, 3.0])
    obj = LambdaRank()
    i, j, c = assert_couplings_equal_cpu(obj, s, y, [3, 2])
    asked = []

    def buffer(m):
        asked.append(m)
        return cuda.device_array(m, np.int64), cuda.device_array(m, np.int64), cuda.device_array(m, np.float64)

    _, _, (pi, _, pc) = grad_hess_couplings_prepared(obj, to_device(s), obj.prepare(y, [3, 2]), pair_buffer=buffer)
    assert asked == [i.size]
    np.testing.assert_array_equal(pi.copy_to_host(), i)
    np.testing.assert_allclose(pc.copy_to_host(), c, rtol=1e-9)


@needs_gpu
@pytest.mark.parametrize("obj", [LambdaRank.like_lightgbm(), RankSVM()], ids=["lambdarank", "ranksvm"])
# 20: a block's threads take runs of 2-3 pairs (the simulator's 8 lanes), the last run and chunk partial, lanes idle
@pytest.mark.parametrize("chunk", [1024, 20], ids=["one-chunk", "chunks-of-20"])
def test_in_bag_pairs_are_the_cpu_compaction(obj, chunk, monkeypatch):
    from numba import cuda
    from customobj.objectives import _launch

    monkeypatch.setattr(_launch, "LIST_CHUNK", chunk)  # the result never depends on the chunk

    s, y, sizes, w = data(7, weights=True, per_query=True)
    s[:3] = [30.0, 0.0, -30.0]  # far apart: RankSVM's couplings there are 0 and dropped
    prep = obj.prepare(y, sizes, w)
    _, _, (i, j, c) = obj.grad_hess_couplings_prepared(s, prep)
    bag = np.random.default_rng(1).random(y.size) < 0.6
    out = (np.empty(i.size, np.int32), np.empty(i.size, np.int32), np.empty(i.size))
    k = compact_pairs(i, j, c, bag, True, *out)
    _, _, pairs = grad_hess_couplings_prepared(obj, to_device(s), prep, index_dtype=np.int32)

    def buffer(m):
        return cuda.device_array(m, np.int32), cuda.device_array(m, np.int32), cuda.device_array(m, np.float64)

    kept = [a.copy_to_host() for a in in_bag_pairs(pairs, to_device(bag), buffer)]
    assert 0 < k < i.size and kept[0].size == k
    for got, want in zip(kept, out):
        np.testing.assert_array_equal(got, want[:k])
