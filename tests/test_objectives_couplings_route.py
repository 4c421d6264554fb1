"""GPU pair couplings (customobj/objectives/_couplings_route.py; kernels in _lambdarank_cuda.py and
_pairwise_cuda.py) against the CPU's ``grad_hess_couplings_prepared``: the same pairs in the same order,
couplings and gradients to 1e-9 relative (bit for bit under the simulator, where the device's exp is the
host's); every LambdaRank metric and convention and every listed-pair loss (LambdaLoss too), on random and
degenerate data (one-row queries, equal labels, tied scores, weights), and the bagged pairs against the
CPU's compaction; the composites (``Sum``, ``Scaled``: each part's pairs, scaled, in the CPU's order; nested,
with pointwise parts) against the CPU's couplings and through ``TreeBooster(device="cuda")``, their launches
and reads counted. Runs on the simulator where no GPU is present."""
from __future__ import annotations

import numpy as np
import pytest

from customobj import (LambdaLoss, LambdaRank, ListNet, MPBoost, PreferencePairs, QBRank, RankNet, RankSVM,
                       SquaredError, TreeBooster)
from customobj.objectives import devices
from customobj.objectives._couplings_route import couplings_reason, grad_hess_couplings_prepared, in_bag_pairs
from customobj.objectives._launch import LaunchCount
from customobj.objectives.base import DeviceRoute
from customobj.objectives.composite import Scaled, Sum
from customobj.ole.pair_partition import compact_pairs
from _cuda_cases import STATUS, data, degenerate_cases, long_query_cases, needs_gpu, to_device
from _ole_cases import QUIET, tree_dicts


class _NoPairs(RankNet):
    """A user's pairwise loss whose GPU route has gradients but no coupling kernel."""

    def device_route(self):
        return DeviceRoute(RankNet().device_route().grad_hess)


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
    assert couplings_reason(LambdaRank() + 2.0 * (RankNet() + SquaredError())) is None  # the parts' pairs
    assert couplings_reason(_NoPairs()) == "the pair couplings of _NoPairs have no GPU kernel"
    # a composite has pairs on the card when every pairwise part has
    assert couplings_reason(LambdaRank() + _NoPairs()) == "the pair couplings of Sum have no GPU kernel"
    assert couplings_reason(2.0 * (_NoPairs() + SquaredError())) == "the pair couplings of Scaled have no GPU kernel"
    assert couplings_reason(_NoPairs() + SquaredError()) == "the pair couplings of Sum have no GPU kernel"


@needs_gpu
def test_objectives_without_a_kernel_are_refused():
    s, y, sizes, _ = data(0)
    obj = 2.0 * _NoPairs()
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


def kept_cpu_pairs(obj, s, prep):
    """The reference: the CPU's couplings of ``obj`` as its leaves' GPU routes keep them (a listed-pair leaf's
    of coupling > 0, which the CPU booster keeps too), a Sum's parts concatenated in part order, a Scaled's
    times its factor (nested factors in the CPU's order: ``2 * (3 * c)``, not ``6 * c``)."""
    if isinstance(obj, Sum):
        pieces = [kept_cpu_pairs(p, s, prep) for p in obj.parts if p.pairwise]
        return tuple(np.concatenate(a) for a in zip(*pieces))
    if isinstance(obj, Scaled):
        i, j, c = kept_cpu_pairs(obj.objective, s, prep)
        return i, j, obj.factor * c
    i, j, c = obj.pair_couplings_prepared(s, prep)
    if not obj.writes_pair_buffer:
        keep = c > 0
        i, j, c = i[keep], j[keep], c[keep]
    return i, j, c


def extra_launches(obj, with_pairs=True):
    """What a composite adds to its leaves' own launches: a Scaled zeroes two scratch buffers and adds them
    scaled (4), then scales its pairs in place (1, with pairs); a Sum of two or more pairwise parts copies
    each part's pairs into the round's buffer (1 a part)."""
    if isinstance(obj, Scaled):
        return 4 + int(with_pairs and obj.pairwise) + extra_launches(obj.objective, with_pairs and obj.pairwise)
    if isinstance(obj, Sum):
        copies = sum(p.pairwise for p in obj.parts) if with_pairs and obj.pairwise else 0
        return (copies if copies > 1 else 0) + sum(extra_launches(p, with_pairs and p.pairwise) for p in obj.parts)
    return 0


def leaves(obj):
    if isinstance(obj, Sum):
        return [leaf for p in obj.parts for leaf in leaves(p)]
    return leaves(obj.objective) if isinstance(obj, Scaled) else [obj]


def launches_reads(call):
    before = LaunchCount.snapshot()
    call()
    return LaunchCount.since(before)


#: Composites: two pairwise parts; a scaling; a pointwise part (no couplings); nested sums and scalings with a
#: pointwise part inside; listed-pair parts with dropped couplings (RankSVM's hinge) and zero factors.
COMPOSITES = [LambdaRank() + RankNet(), 2.0 * LambdaRank(), RankNet() + 0.5 * SquaredError(),
              0.5 * (LambdaRank() + 3.0 * ListNet()) + LambdaRank(sigma=2.0) + SquaredError(),
              2.0 * (RankSVM() + 3.0 * (MPBoost() + 0.25 * SquaredError())) + 0.0 * RankNet()]
COMPOSITE_IDS = ["lambdarank+ranknet", "2*lambdarank", "ranknet+0.5*se", "nested", "nested-listed"]


@needs_gpu
@pytest.mark.parametrize("obj", COMPOSITES, ids=COMPOSITE_IDS)
def test_composites_write_each_parts_pairs_in_the_cpus_order(obj):
    s, y, sizes, w = data(4, weights=True, per_query=True)
    s[:3] = [30.0, 0.0, -30.0]  # far apart: RankSVM's couplings there are 0, which its GPU pairs leave out
    for index_dtype in (np.int64, np.int32):
        prep = obj.prepare(y, sizes, w)
        g, h, (i, j, c) = obj.grad_hess_couplings_prepared(s, prep)
        want = kept_cpu_pairs(obj, s, prep)
        if all(leaf.writes_pair_buffer for leaf in leaves(obj) if leaf.pairwise):
            for a, b in zip(want, (i, j, c)):  # no leaf drops pairs: the reference is the CPU's output itself
                np.testing.assert_array_equal(a, b)
        else:  # the CPU booster keeps the pairs of coupling > 0: the same ones
            for a, b in zip(want, (i[c > 0], j[c > 0], c[c > 0])):
                np.testing.assert_array_equal(a[want[2] > 0], b)
        calls = []
        launches, reads = launches_reads(lambda: calls.append(
            grad_hess_couplings_prepared(obj, to_device(s), prep, index_dtype=index_dtype)))
        gd, hd, (id_, jd, cd) = calls[0]
        assert id_.dtype == np.dtype(index_dtype)
        for a, b in zip(want, (id_, jd, cd)):
            np.testing.assert_array_equal(b.copy_to_host(), a, err_msg=repr(obj))  # rows, order, values: bit for bit
        for cpu, gpu in ((g, gd.copy_to_host()), (h, hd.copy_to_host())):  # a Sum adds each part's rows: to rounding
            np.testing.assert_allclose(gpu, cpu, rtol=1e-12, atol=1e-12 * max(1.0, float(np.abs(cpu).max())))
    # each pairwise leaf reads its own pair count, nothing more; the launches are the leaves' own plus the composite's
    own = 0
    plumbing, _ = launches_reads(lambda: devices.grad_hess_scores(obj, to_device(s), prep, None, None,
                                                                  lambda *args: None))
    for leaf in leaves(obj):
        lp = leaf.prepare(y, sizes, w)
        run = ((lambda: grad_hess_couplings_prepared(leaf, to_device(s), lp)) if leaf.pairwise
               else (lambda: leaf.grad_hess_prepared(to_device(s), lp)))
        own += launches_reads(run)[0] - plumbing
    assert reads == sum(leaf.pairwise for leaf in leaves(obj))
    assert launches == plumbing + own + extra_launches(obj)


@needs_gpu
@pytest.mark.parametrize("obj, criterion", [(COMPOSITES[0], "ole"), (COMPOSITES[2], "ole"), (COMPOSITES[3], "ole_fast")],
                         ids=["lambdarank+ranknet-ole", "ranknet+0.5*se-ole", "nested-ole_fast"])
def test_tree_booster_grows_the_cpus_trees_with_a_composites_pairs_on_the_card(obj, criterion):
    rng = np.random.default_rng(0)
    sizes = [6] * 6
    X = np.round(rng.normal(size=(36, 3)) * 4) / 4  # few distinct values: exact bins
    y = rng.integers(0, 3, 36).astype(float)
    kw = dict(objective=obj, criterion=criterion, num_leaves=3, n_estimators=2, min_data_in_leaf=3, max_bin=8,
              ole_fast_features=2, **QUIET)
    cpu = TreeBooster(**kw).fit(X, y, sizes)
    gpu = TreeBooster(device="cuda", **kw).fit(X, y, sizes)
    assert gpu.device_gradients_ == "device"  # gradients and pairs made on the card (was: the host, each round)
    assert tree_dicts(gpu) == tree_dicts(cpu)  # splits, thresholds, gains and leaf values, exactly
    np.testing.assert_array_equal(gpu.predict(X), cpu.predict(X))
    # a round: the composite's launches at the round's scores (measured alone), one read per pairwise leaf
    prep = obj.prepare(y, sizes)
    launches, reads = launches_reads(lambda: grad_hess_couplings_prepared(obj, to_device(np.zeros(36)), prep))
    assert gpu.device_stats_.objective_reads == 2 * reads == 2 * sum(leaf.pairwise for leaf in leaves(obj))
    assert gpu.device_stats_.objective_launches == 2 * launches
