"""Small data and objective lists shared by the robustness tests of the objectives
(tests/test_robust_objectives_*.py), random queries shared by the listwise tests, and the queries
of the pairwise tests (tests/test_objectives_pairwise*.py).
Imported as ``from _objective_cases import ...``."""
import numpy as np

import customobj as co

Y = np.array([0.0, 1.0, 2.0, 0.0, 1.0])
S = np.array([0.5, -0.25, 1.0, 0.0, 0.375])  # exact in float32
G = [2, 3]
S10 = np.linspace(-1.0, 1.0, 10)
Y10 = np.array([0.0, 1.0, 2.0, 0.0, 1.0, 3.0, 0.0, 0.0, 1.0, 2.0])

# Pairwise tests' queries: sizes 5, 1 (one row), 4 (all labels equal), 6, 3.
SIZES = np.array([5, 1, 4, 6, 3])
LABELS = np.array([2, 0, 1, 0, 3,   1,   2, 2, 2, 2,   0, 1, 1, 3, 0, 2,   1, 0, 2], dtype=float)
N = LABELS.size
PTR = np.concatenate([[0], np.cumsum(SIZES)])


def ranknet(**kw):
    return co.RankNet(**kw)


def listwise_objectives():
    return [co.LambdaRank(sigma=100.0), co.LambdaRank(metric="err"), co.LambdaRank(metric="map", norm=True),
            co.LambdaRank(metric="mrr", k=3), co.StructuredDCG()]


def peer_objectives():
    """The peers' losses (issue 25), one of each with non-default options where they have some."""
    return [co.ListNet(), co.QuerySoftMax(beta=2.0), co.XENDCG(seed=3), co.XENDCG(convention="lightgbm"),
            co.QueryRMSE(), co.LambdaLoss(weighting="ndcg1"), co.LambdaLoss(mu=3.0), co.YetiRank(permutations=3)]


def ranking_objectives():
    return [co.RankNet(sigma=100.0), co.RankSVM(margin=100.0), co.MPBoost(), co.MPBoost(ddf="ldd", alpha=100.0),
            co.MPBoost(ddf="logdd", lam=100.0), co.MPBoost(ddf="logitdd", beta=100.0), co.QBRank(),
            co.QBRank(hessian="upper_bound", margin=5.0), co.QBRank(pairs=[[0, 1], [7, 30]], label_pairs=True),
            co.SquaredError() + co.RankNet(), 0.5 * co.RankSVM()] + listwise_objectives() + peer_objectives()


def random_queries(rng, n_queries=6, max_size=9, max_label=3, tie_scores=False):
    sizes = rng.integers(1, max_size + 1, size=n_queries)
    n = sizes.sum()
    y = rng.integers(0, max_label + 1, size=n).astype(float)
    if tie_scores:
        s = rng.integers(0, 3, size=n).astype(float)
    else:
        s = rng.permutation(n) * 0.37 + rng.uniform(-0.05, 0.05, size=n)  # distinct, well separated
        s = s - s.mean()
    return s, y, sizes
