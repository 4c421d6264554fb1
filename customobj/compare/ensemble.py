"""Ensembles of two methods, ``ens:A+B`` (Burges 2010, "From RankNet to LambdaRank to LambdaMART:
An Overview", section 7.1; Wu, Burges, Svore & Gao 2007).

``ens:A+B`` trains the methods ``A`` and ``B`` (any two method names of :mod:`.methods`), finds on
the validation part the exact optimal linear combination

.. math:: s(\\alpha) = \\alpha\\, s_A + (1 - \\alpha)\\, s_B,\\qquad
          \\alpha^* = \\arg\\max_{\\alpha \\in [0, 1]} \\mathrm{NDCG@10}_{\\mathrm{valid}}(s(\\alpha))

with :func:`customobj.best_linear_combination`, and ranks the test part by :math:`s(\\alpha^*)`.
Their names are parsed with the other method names (:func:`customobj.compare.methods.parse_ensemble`,
re-exported here). The members are trained exactly as the methods of the same name (same settings, seeds and, with
``--tune``, their own tuned parameters), so an ensemble of listed methods costs no extra training.
"""
from __future__ import annotations

import time

import numpy as np

from .methods import ENS_PREFIX, EnsembleSpec, is_ensemble_name, member_specs, parse_ensemble
from .trainers import Split, TrainResult

__all__ = ["ENS_PREFIX", "EnsembleSpec", "is_ensemble_name", "parse_ensemble", "member_specs", "combine"]

#: The cut-off of the NDCG the combination maximises on validation (the curves' metric, NDCG@10).
ENSEMBLE_K = 10


def combine(a: TrainResult, b: TrainResult, valid: Split) -> tuple[TrainResult, float]:
    """The ensemble of two trained members: ``alpha`` maximising validation NDCG@10 of
    ``alpha*a + (1-alpha)*b`` (exact, :func:`customobj.best_linear_combination`), applied to the
    test scores. Time and rounds are the sums of the members' (the ensemble holds both models).

    Examples
    --------
    >>> import numpy as np
    >>> from customobj.compare.trainers import Split, TrainResult
    >>> v = Split(np.zeros((4, 1)), np.array([0., 1., 0., 2.]), np.array([2, 2]))
    >>> r = lambda s: TrainResult(np.array(s, float), np.array(s, float), np.zeros(0), 1, 1, 0.0)
    >>> res, alpha = combine(r([0, 1, 0, 1]), r([1, 0, 1, 0]), v)  # a ranks right whenever alpha > 0.5
    >>> alpha, res.test_scores.tolist()
    (0.75, [0.25, 0.75, 0.25, 0.75])
    """
    from ..combine import best_linear_combination

    start = time.perf_counter()
    alpha, _ = best_linear_combination(a.valid_scores, b.valid_scores, valid.y, valid.sizes, k=ENSEMBLE_K)
    elapsed = time.perf_counter() - start

    def mix(s, t):
        return alpha * np.asarray(s, dtype=np.float64) + (1.0 - alpha) * np.asarray(t, dtype=np.float64)

    result = TrainResult(mix(a.test_scores, b.test_scores), mix(a.valid_scores, b.valid_scores),
                         np.zeros(0), a.best_round + b.best_round, a.rounds_trained + b.rounds_trained,
                         a.train_time + b.train_time + elapsed)
    return result, float(alpha)
