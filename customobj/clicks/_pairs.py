"""The raw pair terms of each pairwise customobj loss, for :class:`customobj.clicks.Unbiased`.

Debiasing divides each pair by the propensities of its rows' positions, so it needs the pairs one
by one: ``(i, j, lam, hess, cost, est)``, debiased, before pair weights and normalisation (see
``customobj.clicks._unbiased_kernels``). Pairwise losses give them from their pair lists and ``pair_terms``
(``loss_pair_terms``); LambdaRank from its own pass on the unweighted data, the propensities passed
into its pair function (``LambdaRank.debiased_pair_terms``, XGBoost's ``LambdaGrad<unbiased>``).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _unbiased_kernels as CK
from ..objectives._arrays import kernel_weights
from ..objectives._pair_sets import ListedPairs
from ..objectives._pointwise_kernels import squared_error_grad_hess, squared_error_loss
from ..objectives.base import Objective, PairSource
from ..objectives.composite import scaled_leaves

__all__ = ["PairTerms", "leaf_parts", "pair_terms_of"]

_EMPTY = np.zeros(0, dtype=np.float64)
_EMPTY_I = np.zeros(0, dtype=np.int64)
_DEBIASABLE = "LambdaRank, RankNet, RankSVM, MPBoost, QBRank(hessian='exact'), PreferencePairs"


class PairTerms(NamedTuple):
    """One loss's raw pair terms and how to weigh them (the kernels' records, ``_unbiased_kernels``)."""

    rows: CK.PairRows  # (i, j, qid): the clicked row i should rank above j
    terms: CK.DebiasedTerms  # (lam, hess, cost, est)
    weights: CK.PairWeights
    norm: bool  # LambdaRank's per-query log2(1 + S) / S on the debiased lambdas
    extra_loss: float  # loss of a part that is not pairs (QBRank's labelled rows)


def leaf_parts(objective: Objective, factor: float = 1.0) -> list:
    """``[(leaf objective, product of Scaled factors)]`` of a sum (``composite.scaled_leaves``); TypeError
    for a pairwise loss whose pairs cannot be debiased."""
    leaves = scaled_leaves(objective, factor)
    for leaf, _ in leaves:
        if not leaf.pairwise and leaf.needs_group:
            raise TypeError(f"Unbiased cannot debias {leaf!r}: a listwise loss without pairs; it debiases the "
                            f"pairs of {_DEBIASABLE} (pointwise parts of a sum are added unchanged)")
        if leaf.pairwise and leaf.pair_source() == PairSource.NONE:
            raise TypeError(f"Unbiased cannot debias {leaf!r}: it debiases the pairs of {_DEBIASABLE}")
    return leaves


def _own_pass(part, scores, prep, unweighted, row_query, props, swapped):
    i, j, h, t = part.debiased_pair_terms(scores, unweighted, props.pos, props.tplus, props.tminus, swapped)
    rows = CK.PairRows(i, j, row_query[i])
    terms = CK.DebiasedTerms(t.lam, h, t.cost, t.est)
    inp = part.pass_inputs(scores, prep)  # the row weights its own pass takes (a convention's, or the data's)
    return PairTerms(rows, terms, CK.PairWeights(inp.weights, inp.use_weights, _EMPTY, False), inp.norm,
                     0.0)


def pair_terms_of(part, scores, prep, unweighted, row_query, props, out_grad, out_hess, scale,
                  swapped) -> PairTerms:
    """The debiased pair terms of one pairwise leaf at ``scores`` (``props``: the
    ``_unbiased_kernels.Propensities`` of the rows' positions; ``swapped``: the estimate sums the swapped
    pairs' losses; ``row_query``: each row's query, from the once-per-data-set state); a QBRank's
    labelled-row term is added to ``out_grad`` / ``out_hess`` here (times ``scale``), undebiased."""
    source = part.pair_source()
    if source == PairSource.OWN_PASS:
        return _own_pass(part, scores, prep, unweighted, row_query, props, swapped)
    if source != PairSource.LISTED:  # leaf_parts refused it already; never fall through
        raise TypeError(f"Unbiased cannot debias {part!r}: pair source {source!r}")
    w, use_w = kernel_weights(prep.weight)
    extra = 0.0
    lp = part.listed_pairs(prep)
    if lp is None:  # a QBRank without pairs: its labelled rows only
        lp = ListedPairs(_EMPTY_I, _EMPTY_I, _EMPTY, _EMPTY, False, part.pair_spec())
    labeled_weight = part.squared_error_weight(prep)
    if labeled_weight is not None:  # QBRank's labelled rows, undebiased
        g, h = np.zeros_like(out_grad), np.zeros_like(out_hess)
        squared_error_grad_hess(scores, prep.labels, labeled_weight, True, g, h)
        out_grad += scale * g
        out_hess += scale * h
        extra = squared_error_loss(scores, prep.labels, labeled_weight, True)
    terms = CK.debiased_terms(lp.pi.size)
    CK.loss_pair_terms(scores, lp.pi, lp.pj, lp.theta, lp.spec.kind, lp.spec.scale, swapped, props, terms)
    return PairTerms(CK.PairRows(lp.pi, lp.pj, row_query[lp.pi]), terms,
                     CK.PairWeights(w, use_w, lp.pair_w, lp.use_pw), False, extra)
