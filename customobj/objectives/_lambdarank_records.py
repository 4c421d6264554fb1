"""The one home of the LambdaRank kernels' codes, records and scratch channels.

``_lambdarank_pass`` (one query) and ``_lambdarank_kernels`` (the drivers over all queries) read
everything through the names defined here: the metric and pass-mode codes (``IntEnum``; Python
turns them into plain ints with ``customobj._kernel_status.as_code``), the input / output records
(``NamedTuple`` of arrays and scalars: numba passes a tuple as its fields), and the rows of the
scratch of one block of queries, each read by its channel (``F[Channel.SCORE]``) instead of its
row number. The kernels pass the scratch down as the two arrays ``F`` and ``I`` and take the
views they need: every array inside a record passed to a call is reference-counted, so a record
of all fifteen views would add that cost to every call of every query.

Examples
--------
>>> F, I = block_scratch_arrays(4)
>>> F.shape == (N_CHANNELS + LOSS_TERMS * LOSS_ROWS, 4 + LOSS_LANES) and I.shape == (N_INT_CHANNELS, 4)
True
>>> int(Channel.SCORE), int(IntChannel.ORDER), int(Metric.ERR), int(Mode.GRAD_FILL)
(1, 0, 1, 4)
"""
from __future__ import annotations

from enum import IntEnum
from typing import NamedTuple

import numpy as np
from numba import njit


class Metric(IntEnum):
    """The metric whose change ``|dZ|`` weighs each pair (Burges 2010, section 3)."""

    NDCG = 0
    ERR = 1
    MAP = 2
    MRR = 3


class Mode(IntEnum):
    """What one pass over a query does (``_lambdarank_pass``): gradients and hessians, the loss,
    the count of pairs with nonzero ``|dZ|``, the pairs themselves, gradients and pairs at once, or
    the pairs with their debiased terms (TERMS, for ``customobj.clicks.Unbiased``: see :class:`Debias`),
    or the gradients and the loss in one pair pass (GRAD_LOSS, for ``MultiObjective``'s per-label costs; its
    loss within a stated bound of LOSS's, ``_lambdarank_terms.softplus_tabled``)."""

    GRAD = 0
    LOSS = 1
    COUNT = 2
    FILL = 3
    GRAD_FILL = 4
    TERMS = 5
    GRAD_LOSS = 6


class Channel(IntEnum):
    """Rows of the float scratch ``F`` of one block of queries (positions of the sorted query)."""

    GAIN = 0  # g: row_gain of the row at each sorted position
    SCORE = 1  # s: its score
    WEIGHT = 2  # w: its weight (1 without weights)
    P = 3  # ERR: prod_{m<r} T_m / (r + 1); MAP: hits_r / (r + 1)  (0 beyond the cutoff); NDCG's GRAD_LOSS: D
    A = 4  # ERR: ERR summed up to r; MAP: (hits_r + 1) / (r + 1); MRR: 1 / (r + 1)
    C = 5  # ERR: 1 / T_r
    S = 6  # MAP: sum of 1 / (m + 1) over relevant m <= r within the cutoff
    EXP = 7  # e: exp(sigma (s_r - s_0)), the table of rho
    LAMBDA_G = 8  # lg: the query's gradient per sorted position
    LAMBDA_H = 9  # lh: its hessian
    LOCAL_C = 10  # lc: FILL's couplings of one upper row (branch-free NDCG loop)
    NEG = 11  # the negated scores the sort reads


class IntChannel(IntEnum):
    """Rows of the int scratch ``I`` of one block of queries."""

    ORDER = 0  # rows of the query by descending score (GRAD and LOSS sort here)
    LOCAL_I = 1  # FILL's upper rows of one upper position (branch-free NDCG loop)
    LOCAL_J = 2  # their lower rows
    # NDCG's grade walk (``_lambdarank_grades``): per position, its grade (the index of its gain among the
    # query's distinct gains) and the positions above it of the same gain; per grade (rows of at most
    # MAX_GRADES entries), its first position and its number of positions; then MAX_GRADES rows, one a
    # grade: the positions of every other gain, in order (the lower rows whose pairs have a nonzero ``|dZ|``).
    GRADE = 3
    SAME_ABOVE = 4
    GRADE_FIRST = 5
    GRADE_COUNT = 6
    OTHERS = 7  # the first of MAX_GRADES rows


N_CHANNELS = len(Channel)
#: NDCG's GRAD_LOSS computes the pair losses of ``LOSS_ROWS`` upper rows at a time, each row's in whole
#: vectors of ``LOSS_LANES`` (``_lambdarank_pass._rows_losses``): the block scratch has four sets of
#: ``LOSS_ROWS`` rows past the channels for them (``TERM_*`` below) and ``LOSS_LANES`` columns past its
#: largest query.
LOSS_ROWS = 8
LOSS_LANES = 8
#: The first of each set of ``LOSS_ROWS`` rows past the channels (``_rows_losses`` writes them,
#: ``_ndcg_row_loss`` sums them in order): the pair's cost, ``2 lambda`` (the norm's sum), the signed
#: weighted lambda and the weighted hessian.
LOSS_TERMS = 4
TERM_COST, TERM_LAMBDA2, TERM_LAMBDA, TERM_HESS = (k * LOSS_ROWS for k in range(LOSS_TERMS))
#: The most distinct gains a query may have for NDCG's grade walk (``_lambdarank_grades``; LETOR's and
#: MSLR's labels have 3 to 5): a query with more walks every pair.
MAX_GRADES = 8
N_INT_CHANNELS = len(IntChannel) + MAX_GRADES - 1  # OTHERS is the first of MAX_GRADES rows


class PassInputs(NamedTuple):
    """What every query's pass reads: the data set's arrays and the objective's options."""

    scores: np.ndarray  # current scores, one per row
    ptr: np.ndarray  # int64 query offsets
    row_gain: np.ndarray  # per row: NDCG gain, ERR probability, MAP/MRR relevance
    qnorm: np.ndarray  # per query: 1/IDCG@k (NDCG), 1/#relevant (MAP), 1 (ERR, MRR); 0 = no contribution
    disc: np.ndarray  # the pair loop's position discount D (NDCG)
    weights: np.ndarray  # row weights (read only when use_weights)
    use_weights: bool
    metric: int  # a Metric code
    k: int  # the metric's cutoff
    trunc: int  # the cutoff of upper rows (LightGBM's lambdarank_truncation_level)
    sigma: float
    norm: bool  # LightGBM's lambdarank_norm
    hess_scale: float  # 1, or XGBoost's convention factor


class PassOutputs(NamedTuple):
    """Where a pass writes: gradients and hessians (GRAD) and pairs (FILL), zero-length if unused."""

    grad: np.ndarray
    hess: np.ndarray
    pair_i: np.ndarray  # upper (better) row of each pair; any integer dtype
    pair_j: np.ndarray
    pair_c: np.ndarray  # coupling h_ij


class Debias(NamedTuple):
    """What the TERMS pass reads and writes beside :class:`PassOutputs` (Unbiased LambdaMART, Hu et
    al. WWW 2019; XGBoost's ``LambdaGrad<unbiased>``): the propensities it divides each pair by and
    the pair's terms (``PassOutputs.pair_c`` gets its debiased hessian). Zero-length in every other mode.

    A pair counts as tracked when both rows' positions are below ``tplus.size``; untracked pairs are
    not debiased. Terms are unweighted and unnormalised: ``customobj.clicks`` weighs them and
    applies the per-query normalisation to the debiased sums."""

    pos: np.ndarray  # each row's display position, 0-based
    tplus: np.ndarray  # t+ per tracked position: the clicked (better) row's propensity
    tminus: np.ndarray  # t- per tracked position: the other row's
    swapped: bool  # est: the swapped pair's loss (else the pair's own)
    lam: np.ndarray  # out: each pair's debiased lambda (grad_i -= lam, grad_j += lam)
    cost: np.ndarray  # out: its debiased loss
    est: np.ndarray  # out: the undebiased cost the propensity estimate sums


class Query(NamedTuple):
    """One query's cuts: ``n`` rows, ``qn`` its ``qnorm``, ``kk`` its cutoff, ``lim`` the cutoff of
    upper rows (truncation), ``at`` the offset of its first pair in the pair outputs (FILL)."""

    n: int
    qn: float
    kk: int
    lim: int
    at: int


class FusedCut(NamedTuple):
    """One sorted query's options for the fused pass of several labels (``_lambdarank_fused``): ``n`` rows,
    ``sigma`` and its square, ``damp`` (``norm`` and the scores spread), ``norm``, ``zscale = sigma /
    SOFTPLUS_STEP``, ``loss`` (GRAD_LOSS: the costs too)."""

    n: int
    sigma: float
    sig2: float
    damp: bool
    norm: bool
    zscale: float
    loss: bool


@njit(cache=True)
def block_scratch_arrays(size):
    """Float and int scratch for queries of at most ``size`` rows (``N_CHANNELS + LOSS_TERMS LOSS_ROWS``
    rows of ``size + LOSS_LANES`` / ``N_INT_CHANNELS`` rows of ``size``)."""
    rows = N_CHANNELS + LOSS_TERMS * LOSS_ROWS
    return np.empty((rows, size + LOSS_LANES)), np.empty((N_INT_CHANNELS, size), dtype=np.int64)
