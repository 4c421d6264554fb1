"""GPU LambdaRank (customobj/objectives/_lambdarank_cuda.py) against its CPU twin: every metric,
``k``, ``truncation``, ``gain``, ``norm`` and the three conventions, on random and degenerate data
(one-row queries, equal labels, tied scores, weights). Runs on the simulator where no GPU is present."""
from __future__ import annotations

import numpy as np
import pytest

from customobj import LambdaRank
from _cuda_cases import assert_gpu_equals_cpu, data, degenerate_cases, long_query_cases, needs_gpu, to_device

pytestmark = needs_gpu

OPTIONS = [
    dict(),
    dict(k=3),
    dict(truncation=2),
    dict(norm=True),
    dict(sigma=2.5, k=4, truncation=3, norm=True),
    dict(gain=[0.0, 1.0, 3.0, 10.0]),
    dict(metric="err"),
    dict(metric="err", k=2, norm=True),
    dict(metric="err", gain=[0.0, 2.0, 5.0, 6.0]),
    dict(metric="map"),
    dict(metric="map", k=3, truncation=2),
    dict(metric="mrr"),
    dict(metric="mrr", k=2, norm=True),
]


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "default")
def test_every_metric_and_option_equals_cpu(options):
    s, y, sizes, w = data(4, weights=True)
    assert_gpu_equals_cpu(LambdaRank(**options), s, y, sizes, w)


@pytest.mark.parametrize("make", [LambdaRank.like_lightgbm, LambdaRank.like_xgboost,
                                  lambda: LambdaRank.like_xgboost(lambdarank_num_pair_per_sample=2),
                                  lambda: LambdaRank.like_lightgbm(lambdarank_truncation_level=3)],
                         ids=["lightgbm", "xgboost", "xgboost-k2", "lightgbm-t3"])
def test_conventions_equal_cpu(make):
    s, y, sizes, w = data(5, weights=True, per_query=True)  # the libraries' conventions weigh queries
    assert_gpu_equals_cpu(make(), s, y, sizes, w)
    assert_gpu_equals_cpu(make(), s, y, sizes)


@pytest.mark.parametrize("case", list(degenerate_cases()), ids=lambda c: c[0])
@pytest.mark.parametrize("options", [dict(), dict(metric="err", k=3), dict(metric="map"), dict(metric="mrr"),
                                     dict(norm=True, truncation=2)], ids=["ndcg", "err", "map", "mrr", "norm"])
def test_degenerate_data_equals_cpu(case, options):
    _, s, y, sizes, w = case
    g, h = assert_gpu_equals_cpu(LambdaRank(**options), s, y, sizes, w)
    assert np.all(np.isfinite(g)) and np.all(h >= 0)


@pytest.mark.parametrize("case", list(long_query_cases()), ids=lambda c: c[0])
@pytest.mark.parametrize("options", [dict(), dict(norm=True), dict(norm=True, truncation=5, metric="map")],
                         ids=["ndcg", "norm", "norm-t5-map"])
def test_queries_longer_than_a_warp_equal_cpu(case, options):
    # norm's S adds each upper row's part (pair_rows) in position order, as the CPU does: the same bits
    _, s, y, sizes, w = case
    obj = LambdaRank(**options)
    g, h = assert_gpu_equals_cpu(obj, s, y, sizes, w)
    gd, hd = obj.grad_hess(to_device(s), y, sizes, w)
    np.testing.assert_array_equal(gd.copy_to_host(), g)
    np.testing.assert_array_equal(hd.copy_to_host(), h)


def test_underflowing_exp_table_takes_the_direct_rho():
    # Scores 800 apart: exp(sigma (s_r - s_0)) underflows, so rho comes from exp(sigma d) directly.
    s = np.array([0.0, -400.0, -800.0, 1.0, -900.0])
    y = np.array([0.0, 2.0, 1.0, 1.0, 3.0])
    g, _ = assert_gpu_equals_cpu(LambdaRank(), s, y, [3, 2])
    assert np.any(g != 0.0)


def test_all_zero_labels_give_zero_gradients_on_the_gpu():
    s, y, sizes, _ = data(6)
    g, h = assert_gpu_equals_cpu(LambdaRank(), s, np.zeros_like(y), sizes)
    assert not g.any() and not h.any()


@pytest.mark.parametrize("metric", ["ndcg", "err", "map", "mrr"])
@pytest.mark.parametrize("sigma, gap", [(1000.0, 1.0), (1.0, 1000.0)], ids=["sigma-1000", "gap-1000"])
def test_scores_far_apart_give_the_cpus_values_not_an_overflow(metric, sigma, gap):
    # issue 30 point 8: the GPU's own rho evaluated an unclipped exp; the simulator (Python's
    # math.exp) raised OverflowError for valid scores. The shared rho gives 0 there, as the CPU does.
    s, y, sizes, w = data(11, weights=True)
    s = s * gap
    g, h = assert_gpu_equals_cpu(LambdaRank(metric=metric, sigma=sigma), s, y, sizes, w)
    assert np.isfinite(g).all() and np.isfinite(h).all()


def test_a_skipped_query_reads_no_stale_scratch():
    # Regression: setup_queries set only Q_LIM of a query it skips (no relevant row), and _cut then read
    # F[A, start + first] with whatever the reused scratch held in Q_FIRST (an out-of-bounds index; found by
    # Unbiased, whose click data has such queries). Fill the scratch with a bad index first.
    from numba import cuda

    from customobj.objectives import _lambdarank_cuda as CL
    from customobj.objectives.devices import device_data
    from _cuda_cases import to_device

    s, y, sizes, _ = data(11, sizes=[4, 3, 5])
    y[4:7] = 0.0  # the second query has no relevant row
    obj = LambdaRank()
    prep = obj.prepare(y, sizes)
    d = device_data(prep, cuda)
    Q = CL.scratch(d, prep.n_rows, len(sizes))[3]
    Q.copy_to_device(np.full(Q.shape, -10**15, dtype=np.int64))
    g, _ = obj.grad_hess_prepared(to_device(s), prep)
    np.testing.assert_allclose(g.copy_to_host(), obj.grad_hess_prepared(s, prep)[0], rtol=1e-9, atol=1e-12)
