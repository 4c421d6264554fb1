"""LambdaLoss (customobj/objectives/lambdaloss.py) through customobj/objectives/_sampled_pairs_kernels.py:
a slow reference of the three weightings (Wang et al. 2018), finite differences, the coupled
hessian, ``ndcg2++`` with ``mu = 0`` as LambdaRank, degenerate queries, bad options, and a short
LightGBM / XGBoost training run."""
import math

import numpy as np
import pytest

from _peer_cases import LABELS, SIZES, check_degenerate_queries, check_derivatives, scores, training_improves

from customobj import LambdaLoss, LambdaRank


def D(r):
    return 1.0 / math.log2(2.0 + r)


def reference(s, y, sizes, weighting, mu=1.0, sigma=1.0, weight=None):
    """The loss, pair by pair, from the paper's definitions (1-based ranks written out)."""
    w = np.ones(s.size) if weight is None else np.asarray(weight, float)
    total = 0.0
    lo = 0
    for n in sizes:
        idx = list(range(lo, lo + n))
        lo += n
        rank = {row: r + 1 for r, row in enumerate(sorted(idx, key=lambda t: (-s[t], t)))}
        gain = {t: 2.0 ** y[t] - 1 for t in idx}
        ideal = sorted(gain.values(), reverse=True)
        idcg = sum(g / math.log2(1 + r) for r, g in enumerate(ideal, start=1))
        if idcg == 0:
            continue
        for i in idx:
            for j in idx:
                if y[i] <= y[j]:
                    continue
                gap = abs(rank[i] - rank[j])
                delta = abs(1 / math.log2(1 + gap) - 1 / math.log2(2 + gap))
                rho = abs(1 / math.log2(1 + rank[i]) - 1 / math.log2(1 + rank[j]))
                if weighting == "ndcg1":
                    W = gain[i] / math.log2(1 + rank[i])
                elif weighting == "ndcg2":
                    W = abs(gain[i] - gain[j]) * delta
                else:
                    W = abs(gain[i] - gain[j]) * (rho + mu * delta)
                d = s[i] - s[j]
                total += (w[i] + w[j]) / 2 * W / idcg * math.log1p(math.exp(-sigma * d))
    return total


@pytest.mark.parametrize("weighting", ["ndcg1", "ndcg2", "ndcg2++"])
@pytest.mark.parametrize("weighted", [False, True])
def test_matches_reference_and_finite_differences(weighting, weighted):
    s = scores(7)
    w = np.linspace(0.5, 2.0, s.size) if weighted else None
    obj = LambdaLoss(weighting=weighting, mu=2.5, sigma=1.5)
    np.testing.assert_allclose(obj.loss(s, LABELS, SIZES, w),
                               reference(s, LABELS, SIZES, weighting, 2.5, 1.5, w), rtol=1e-12)
    check_derivatives(obj, s, weight=w)


def test_ndcg2pp_without_mu_is_lambdarank():
    s = scores(8)
    for part in (0, 1):
        np.testing.assert_allclose(LambdaLoss(weighting="ndcg2++", mu=0.0).grad_hess(s, LABELS, SIZES)[part],
                                   LambdaRank().grad_hess(s, LABELS, SIZES)[part], rtol=1e-12, atol=1e-15)


def test_degenerate_queries():
    for weighting in ("ndcg1", "ndcg2", "ndcg2++"):
        check_degenerate_queries(LambdaLoss(weighting=weighting))


def test_bad_options():
    with pytest.raises(ValueError, match="weighting"):
        LambdaLoss(weighting="ndcg3")
    with pytest.raises(ValueError, match="mu"):
        LambdaLoss(mu=-1.0)
    with pytest.raises(ValueError, match="sigma"):
        LambdaLoss(sigma=0.0)
    with pytest.raises(ValueError, match="labels"):
        LambdaLoss().grad_hess([0.0, 1.0], [701.0, 0.0], [2])
    from customobj.objectives import _sampled_pairs_kernels as LLK

    one = np.zeros(1, dtype=np.int64)
    with pytest.raises(ValueError, match="unknown weighting"):  # an unknown code never falls through
        LLK.lambdaloss_pair_weights(one, one, one, np.ones(1), np.ones(1), 7, 1.0, np.empty(1))


@pytest.mark.parametrize("library", ["lightgbm", "xgboost", "ole"])
def test_training_improves_ranking(library):
    training_improves(LambdaLoss(), library)


@pytest.mark.parametrize("call", ["grad_hess", "loss", "pair_couplings"])
def test_pair_budget_refusal_does_not_promise_gradients(monkeypatch, call):
    """Issue 30: refused from a gradient call, the message said "gradients ... still work"."""
    from customobj import _validation as V

    monkeypatch.setattr(V, "MAX_PAIRS", 3)
    s, y = np.array([0.3, 0.1, -0.2, 0.5]), np.array([2.0, 1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match=r"LambdaLoss would materialise 5 row pairs.*gradients, losses and couplings") as exc:
        getattr(LambdaLoss(), call)(s, y, [4])
    assert "still work" not in str(exc.value)
