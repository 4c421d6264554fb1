"""Tests of customobj/clicks/_pairs.py: how Unbiased takes each wrapped loss's pairs (the loss's own
``pair_source``, inherited by subclasses) and their debiased terms (LambdaRank's own pass with the
propensities in its pair function)."""
from __future__ import annotations

import numpy as np
import pytest

import customobj
from customobj import LambdaRank, QBRank, RankNet, Unbiased
from customobj.objectives.base import PairSource


@pytest.fixture(scope="module")
def log():
    d = customobj.data.synthetic(30, 14, 5, seed=3)
    return customobj.data.simulate_clicks(d, ranker=d.X[:, 0], sessions=3, seed=4)


def test_a_subclass_is_debiased_through_its_parents_pair_source(log):
    """Issue 31 item 3: Unbiased asks the loss for its pairs (``pair_source``), no isinstance on LambdaRank."""
    class MyRank(LambdaRank):
        pass

    class MyQB(QBRank):
        pass

    s = np.random.default_rng(5).normal(size=log.y.size)
    for base, sub in ((LambdaRank(norm=True), MyRank(norm=True)), (QBRank(w=0.7), MyQB(w=0.7))):
        want = Unbiased(base).grad_hess(s, log.y, log.group)
        got = Unbiased(sub).grad_hess(s, log.y, log.group)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])

    class NoPairs(RankNet):
        def pair_source(self):
            return PairSource.NONE

    with pytest.raises(TypeError, match="cannot debias"):
        Unbiased(NoPairs())


def test_widely_misordered_pairs_keep_their_lambdas(log):
    """Regression: LambdaRank's raw lambdas were recovered from its couplings, whose ``rho (1 - rho)``
    is exactly 0 once a clicked row sits ``sigma d < -37`` below, so those pairs, the most misordered,
    lost their lambdas; the propensities now go into LambdaRank's pair function (TERMS pass)."""
    s = np.where(log.y > 0, -25.0, 25.0)
    for base in (LambdaRank(), LambdaRank(norm=True, metric="err")):
        g0, h0 = base.grad_hess(s, log.y, log.group)
        g1, h1 = Unbiased(base, propensity=np.ones(10), query_norm=False).grad_hess(s, log.y, log.group)
        assert np.abs(g0).max() > 0.01
        np.testing.assert_allclose(g1, g0, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(h1, h0, rtol=1e-10, atol=1e-12)
