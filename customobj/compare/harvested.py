"""Intervention harvesting as a ``compare --clicks`` method: ``lgb:Unbiased(objective=LambdaRank,propensity=harvest)``.

A team without randomised result pages has the logs of several production rankers (versions, A/B
arms). compare simulates that per fold: beside the production ranker whose log every method trains
on, :data:`N_RANKERS` - 1 more weak rankers (the same recipe, ``customobj.compare.clicks.WEAK_SHARE`` of the
training queries and ``WEAK_ROUNDS`` trees, each on its own seeded sample of queries) order the same
training queries, and the same users (``--clicks``, seeded per ranker) click on each ranker's top
rows. :func:`customobj.clicks.harvest_propensities` (AllPairs, Agarwal et al. WSDM 2019) estimates
the examination per position from the query-documents the rankers showed at different positions,
and the method trains ``Unbiased(objective, propensity=<that estimate>)``: inverse propensity
scoring with fixed propensities, on the production ranker's log only (the other logs inform the
propensities, not the relevance). Its ``position_bias_`` is the harvested curve, reported against
the true one (position_bias.csv / .png). On MQ2008 Fold1 (12 sessions, PBM) the harvested curve was
within 0.014 (eta 1) and 0.022 (eta 2) of the truth over two seeds.

Examples
--------
>>> from customobj.compare.methods import parse_method
>>> spec = parse_method("lgb:Unbiased(objective=LambdaRank,propensity=harvest)")
>>> wants_harvest(spec), with_harvest(spec, [1.0, 0.5]).kwargs["propensity"]
(True, (1.0, 0.5))
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

import numpy as np

__all__ = ["HARVEST", "N_RANKERS", "RANKER_SEED_STEP", "wants_harvest", "with_harvest", "checkable", "harvest_folds"]

#: The value of ``Unbiased``'s ``propensity`` option, in a method name, that asks for the harvested curve.
HARVEST = "harvest"
#: Production rankers whose logs are harvested: the one every method trains on and N_RANKERS - 1 more.
N_RANKERS = 3
#: Ranker k's seed (its query sample, its users' draws) is the fold's seed + k * RANKER_SEED_STEP.
RANKER_SEED_STEP = 1000
#: A stand-in curve for the checks before training (options, labels): the real one is harvested per fold.
_CHECK_CURVE = (1.0, 0.5)


def wants_harvest(spec: Any) -> bool:
    """Whether a method asks for the harvested propensities (``Unbiased(..., propensity=harvest)``)."""
    from .clicks import CLICK_TARGETS

    return getattr(spec, "target", None) in CLICK_TARGETS and spec.kwargs.get("propensity") == HARVEST


def with_harvest(spec: Any, propensity: Sequence[float]) -> Any:
    """``spec`` with its ``propensity=harvest`` replaced by the curve (a tuple: the spec stays hashable)."""
    curve = tuple(float(v) for v in propensity)
    return replace(spec, options=tuple((k, curve if k == "propensity" else v) for k, v in spec.options))


def checkable(spec: Any) -> Any:
    """What the checks before training build: a harvest method with a stand-in curve, others as they are."""
    return with_harvest(spec, _CHECK_CURVE) if wants_harvest(spec) else spec


def harvest_folds(labelled: list, clicked: list, click_spec: Any, seed: int, jobs: int) -> list:
    """``clicked`` (``click_folds``' result) with each training Split's ``propensity`` set to the curve
    harvested from the logs of the fold's production ranker and ``N_RANKERS - 1`` more (module doc);
    ``labelled`` are the same folds before the clicks (their graded training labels)."""
    from ..clicks import harvest_propensities
    from ..data import simulate_clicks
    from .clicks import _weak_ranker

    out = []
    for (fold, train, _, _), (_, log_train, valid, test) in zip(labelled, clicked):
        logs = []
        for k in range(N_RANKERS):
            s = seed + fold + k * RANKER_SEED_STEP  # k = 0: click_folds' production ranker and users
            logs.append(simulate_clicks((train.X, train.y, train.sizes), ranker=_weak_ranker(train, s, jobs),
                                        click_model=click_spec.model, eta=click_spec.eta, shown=click_spec.shown,
                                        sessions=click_spec.sessions, seed=s, **click_spec.simulation_options()))
        if not np.array_equal(logs[0].y, log_train.y):  # the training log is ranker 0's: the recipe is shared
            raise AssertionError("harvest_folds: ranker 0's log differs from the training log")
        out.append((fold, replace(log_train, propensity=np.asarray(harvest_propensities(logs))), valid, test))
    return out
