"""The counterfactual click metrics of customobj/metrics.py (``ips_dcg``, ``ips_ndcg``, ``click_metric``)
and their boundary helpers in customobj/_metric_inputs.py: against a slow reference, unbiased with the
true propensities on simulated clicks (a seeded statistical test), clipping's bias, bad input."""
import math

import numpy as np
import pytest

import customobj
from customobj.metrics import IPS_CLIP, Metric, click_metric, dcg, ips_dcg, ips_ndcg


def _slow(scores, clicks, sizes, k, rho, clip, normalize):
    """Per session: the weighed clicks' DCG@k by the scores (stable); normalised, over the mean of the
    sessions' best DCG@k."""
    out, best, lo = [], [], 0
    for n in sizes:
        s, c = scores[lo:lo + n], clicks[lo:lo + n]
        w = [c[i] / max(rho[i], clip) for i in range(n)]  # row i of a session is shown at position i
        order = sorted(range(n), key=lambda i: -s[i])  # Python's sort is stable
        top = min(k, n)
        out.append(sum(w[order[r]] / math.log2(r + 2) for r in range(top)))
        best.append(sum(v / math.log2(r + 2) for r, v in enumerate(sorted(w, reverse=True)[:top])))
        lo += n
    return np.array(out) / (np.mean(best) if normalize else 1.0)


@pytest.mark.parametrize("seed", range(4))
def test_against_a_slow_reference(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 9, size=30)
    n = int(sizes.sum())
    scores = rng.integers(0, 4, size=n).astype(float)  # ties on purpose
    clicks = (rng.random(n) < 0.3).astype(float)
    rho = rng.uniform(0.0, 1.0, size=9)
    rho[3] = 0.0  # an unreached position: clipping keeps it finite
    clip, k = [0.05, 0.3, 1.0][seed % 3], [1, 3, 10, 100][seed]
    for normalize, fn in ((False, ips_dcg), (True, ips_ndcg)):
        got = fn(scores, clicks, sizes, k, propensity=rho, clip=clip, per_query=True)
        want = _slow(scores, clicks, sizes, k, rho, clip, normalize)
        np.testing.assert_allclose(got, want, rtol=1e-12)
        assert fn(scores, clicks, sizes, k, propensity=rho, clip=clip) == pytest.approx(want.mean())


def test_hand_computed_and_the_naive_metric():
    # one session, the click shown at position 2 (propensity 0.25): weight 4; the ranker puts it first
    assert ips_dcg([0.0, 1.0, 2.0], [0, 0, 1], [3], propensity=[1.0, 0.5, 0.25]) == 4.0
    assert ips_dcg([2.0, 1.0, 0.0], [0, 0, 1], [3], propensity=[1.0, 0.5, 0.25]) == 4.0 / math.log2(4)
    # propensity ones: the naive click DCG = DCG with the clicks as gains (2**1 - 1 = 1)
    s, c = [0.3, 0.1, 0.2, 0.9], [1, 0, 1, 0]
    assert ips_dcg(s, c, [4], propensity=np.ones(4)) == pytest.approx(dcg(s, c, [4]))
    # clipped: 0.001 counts as IPS_CLIP
    assert ips_dcg([1.0, 0.0], [0, 1], [2], propensity=[1.0, 0.001], k=1, ties="stable") == 0.0
    assert ips_dcg([0.0, 1.0], [0, 1], [2], propensity=[1.0, 0.001]) == pytest.approx(1.0 / IPS_CLIP)


def test_sessions_without_a_click_count_zero_and_a_log_without_any_is_refused():
    s, c, g = [1.0, 0.0, 1.0, 0.0], [0, 0, 1, 0], [2, 2]
    assert ips_dcg(s, c, g, propensity=[1, 1], per_query=True).tolist() == [0.0, 1.0]
    assert ips_ndcg(s, c, g, propensity=[1, 1], per_query=True).tolist() == [0.0, 2.0]  # over the mean best, 0.5
    assert ips_ndcg(s, c, g, propensity=[1, 1]) == 1.0
    with pytest.raises(ValueError, match="no click"):
        ips_ndcg(s, [0, 0, 0, 0], g, propensity=[1, 1])


def test_the_normalisation_keeps_the_propensities():
    """One click per session: a per-session ratio would score both sessions D(r) / D(0) whatever
    their propensities (the debiasing gone); normalised over the log, the rarely seen click weighs more."""
    s, c, g = [0.0, 1.0, 1.0, 0.0], [1, 0, 0, 1], [2, 2]  # clicks at position 0, then at position 1
    a = ips_ndcg(s, c, g, propensity=[1.0, 0.1], per_query=True)
    assert a[1] == pytest.approx(10 * a[0])  # the click seen by one user in ten counts ten times
    top_first, rare_first = [1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0]  # the two rankers' scores
    assert ips_ndcg(top_first, c, g, propensity=[1.0, 0.1]) < ips_ndcg(rare_first, c, g, propensity=[1.0, 0.1])
    assert ips_ndcg(top_first, c, g, propensity=[1.0, 1.0]) == \
        ips_ndcg(rare_first, c, g, propensity=[1.0, 1.0])  # naive: a tie


@pytest.fixture(scope="module")
def pbm_log():
    d = customobj.data.synthetic(30, 12, 5, seed=4, max_grade=2)
    eta, table = 1.0, (0.1, 0.5, 1.0)
    log = customobj.data.simulate_clicks(d, ranker=d.X[:, 0], eta=eta, click_prob=table, sessions=400, seed=7)
    rho = (1.0 / np.arange(1, 11)) ** eta  # the true examination of simulate_clicks' PBM
    scores = log.X[:, 1] + 0.5 * log.X[:, 2]  # another ranker than the logging one
    return log, rho, table, scores


def _z(a, b):
    d = a - b
    return d.mean() / (d.std(ddof=1) / math.sqrt(d.size))


def test_with_the_true_propensities_the_click_dcg_is_unbiased(pbm_log):
    """E[ips_dcg] = the DCG with gains P(click | examined) over the shown rows (12,000 sessions)."""
    log, rho, table, scores = pbm_log
    analogue = dcg(scores, log.true_label, log.group, 5, gain=table, per_query=True)
    ips = ips_dcg(scores, log.y, log.group, 5, propensity=rho, per_query=True)
    assert abs(_z(ips, analogue)) < 4.0
    naive = ips_dcg(scores, log.y, log.group, 5, propensity=np.ones(10), per_query=True)
    assert _z(naive, analogue) < -20.0  # the test has power: the naive metric is far below


def test_clipping_biases_down_by_rho_over_tau(pbm_log):
    log, rho, table, scores = pbm_log
    tau = 0.3  # binds at positions 3.. (rho = 1/4, 1/5, ...)
    gain = np.asarray(table)[log.true_label.astype(int)] * rho[log.position] / np.maximum(rho[log.position], tau)
    expected = _slow(scores, gain, log.group, 5, np.ones(10), 1.0, False)  # gains as weights
    clipped = ips_dcg(scores, log.y, log.group, 5, propensity=rho, clip=tau, per_query=True)
    assert abs(_z(clipped, expected)) < 4.0
    assert clipped.mean() < ips_dcg(scores, log.y, log.group, 5, propensity=rho)


def test_click_metric_is_a_metric_with_its_arguments():
    m = click_metric("IPS_NDCG@5", propensity=[1.0, 0.5], clip=0.2)
    assert isinstance(m, Metric) and m.name == "ips_ndcg@5" and m.higher_is_better
    assert m.func([0.0, 1.0], [0, 1], [2]) == ips_ndcg([0.0, 1.0], [0, 1], [2], 5, propensity=[1.0, 0.5], clip=0.2)
    assert click_metric("ips_dcg", propensity=[1.0]).name == "ips_dcg"


@pytest.mark.parametrize("call, exc, match", [
    (lambda: ips_dcg([0, 1], [0, 2], [2], propensity=[1, 1]), ValueError, "clicks"),
    (lambda: ips_dcg([0, 1], [0, 1], [2], propensity=[1, -1]), ValueError, "propensity"),
    (lambda: ips_dcg([0, 1], [0, 1], [2], propensity=[]), ValueError, "propensity"),
    (lambda: ips_dcg([0, 1], [0, 1], [2], propensity=[1, np.nan]), ValueError, "propensity"),
    (lambda: ips_dcg([0, 1], [0, 1], [2], propensity=[True, True]), TypeError, "propensity"),
    (lambda: ips_dcg([0, 1], [0, 1], [2], propensity=[1]), ValueError, "shows 2 rows but propensity has 1"),
    (lambda: ips_dcg([0, 1], [0, 1], [2], propensity=[1, 1], clip=0.0), ValueError, "clip"),
    (lambda: ips_dcg([0, 1], [0, 1], [2], propensity=[1, 1], clip=1.5), ValueError, "clip"),
    (lambda: ips_dcg([0, 1], [0, 1], [2], propensity=[1, 1], clip=True), TypeError, "clip"),
    (lambda: ips_dcg([0, 1], [0, 1], [3], propensity=[1, 1]), ValueError, "group"),
    (lambda: click_metric("ips_err@3", propensity=[1]), ValueError, "unknown click metric"),
    (lambda: click_metric("ips_ndcg@0", propensity=[1]), ValueError, "cut-off"),
    (lambda: click_metric(3, propensity=[1]), TypeError, "name"),
    (lambda: click_metric("ips_ndcg@3", propensity=[1], clip=2), ValueError, "clip"),
])
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
