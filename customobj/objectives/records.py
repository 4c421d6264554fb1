"""The records of the objective protocol (``base.Objective``): its GPU drivers (:class:`DeviceRoute`), where
position debiasing takes its pairs from (:class:`PairSource`, :func:`listed_source`) and a loss's relevance
pair form (:class:`RelevancePairs`). Apart from ``base.py`` so the protocol's class stays one screen of
methods; ``base`` re-exports them (their home for every import)."""
from __future__ import annotations

from enum import IntEnum
from typing import Any, Callable, NamedTuple, Optional

__all__ = ["DeviceRoute", "PairSource", "RelevancePairs", "listed_source"]


class DeviceRoute(NamedTuple):
    """An objective's GPU drivers (:meth:`Objective.device_route`), plain functions of
    a family's route module (``customobj.objectives._<family>_route``) or of the loss's own GPU module.

    ``grad_hess(objective, scores, prep, device_data, out_grad, out_hess)`` adds the gradients and
    hessians at float64 device ``scores`` into the device outputs; ``couplings(objective, scores,
    prep, device_data, pair_buffer) -> (i, j, c)`` writes the pair couplings after the gradient
    launches (``None``: the loss has no coupling kernel, so ``TreeBooster(device="cuda")`` takes
    its pairs on the host); ``grad_hess_loss(objective, scores, prep, device_data, out_grad, out_hess,
    per_query)`` adds what ``grad_hess`` adds and writes each query's loss into the float64 device array
    ``per_query`` (one entry per query), whose sum in query order is the CPU's ``_grad_hess_loss``
    (``None``: no GPU cost, which ``MultiObjective``'s cost-reading methods need; LambdaRank's:
    ``_lambdarank_loss_cuda``; a composite, ``Unbiased`` or ``Affine`` has one when each of its parts has).
    ``grad_hess_couplings(objective, scores, prep, device_data, out_grad, out_hess, pair_buffer) -> (i, j, c)``:
    gradients, hessians and couplings in one call, for a route whose pairs cannot follow its gradient
    launches (``MultiObjective``: each label's pairs weighted by the round's solve, which needs every
    label's gradients first); ``_couplings_route`` runs it instead of ``grad_hess`` then ``couplings``.
    """

    grad_hess: Callable
    couplings: Optional[Callable] = None
    grad_hess_loss: Optional[Callable] = None
    grad_hess_couplings: Optional[Callable] = None


class PairSource(IntEnum):
    """Where position debiasing (``customobj.clicks.Unbiased``) takes a loss's pairs from, one by one
    (:meth:`Objective.pair_source`)."""

    NONE = 0  # no pairs it can debias (pointwise and listwise losses, a diagonal hessian bound)
    OWN_PASS = 1  # the loss's own pass with the propensities in its pair function: debiased_pair_terms (LambdaRank)
    LISTED = 2  # its listed_pairs(prep), their terms debiased by customobj.clicks (the pair losses)


class RelevancePairs(NamedTuple):
    """A loss as a sum over the label pairs ``y_i > y_j`` of every query of ``m_ij psi(s_i - s_j)``,
    ``psi`` its pair loss for a unit label difference, each pair weighed linearly by the relevance of
    the row that should rank higher: the form the affine correction of trust bias corrects
    (``customobj.clicks.Affine``; Vardasbi, Oosterhuis, de Rijke, CIKM 2020). :meth:`Objective.relevance_pairs`."""

    kind: int  # a PairKind code of objectives._pairwise_terms (psi)
    theta: float  # psi's theta for a unit label difference
    scale: float  # the loss's own scale
    hmul: float  # multiplies the pair hessian coupling (LambdaRank's convention)
    dcg_weighted: bool  # m_ij = |D(rank_i) - D(rank_j)| at the current ranks (LambdaRank NDCG), else 1
    k: Optional[int]  # DCG cutoff (None: none)
    truncation: Optional[int]  # pairs whose rows both rank here or lower are skipped (None: none)
    norm: bool  # the loss normalises each query by log2(1 + S) / S itself


def listed_source(spec: Any) -> PairSource:
    """A pair loss's :class:`PairSource` from its ``PairSpec``: ``LISTED``, or ``NONE`` when a hessian
    multiplier (QBRank(hessian="upper_bound")'s 2) bounds each pair's hessian block by a diagonal, so
    there are no pair couplings to debias."""
    return PairSource.LISTED if spec.hmul == 1.0 else PairSource.NONE
