"""Learning to rank from clicks under trust bias: the affine correction around a pairwise objective.

Vardasbi, Oosterhuis, de Rijke, "When Inverse Propensity Scoring does not Work: Affine Corrections
for Unbiased Learning to Rank", CIKM 2020 (arXiv:2008.10242): the affine estimator; the click model of Agarwal, Wang, Li,
Bendersky, Najork, "Addressing Trust Bias for Unbiased Learning-to-Rank", WWW 2019. The parameters
are given or estimated from the log by :class:`customobj.clicks.TrustEM`; input checks come from
:mod:`customobj.clicks._inputs`, the kernels from :mod:`customobj.clicks._affine_kernels`.
"""
from __future__ import annotations

from typing import Any, NamedTuple, Optional

import numpy as np
import numpy.typing as npt

from . import _affine_kernels as AK
from . import _affine_route
from .unbiased import add_unchanged
from ._inputs import MAX_POSITION, as_position, as_propensity, check_clicks, data_positions
from .._validation import _to_numpy, check_bool, check_int
from ..objectives._arrays import kernel_weights
from ..objectives.base import DeviceRoute, Objective, Prepared
from ..objectives.composite import scaled_leaves

__all__ = ["Affine", "AffineFit"]

#: "No cutoff" for the kernels' rank limits (LambdaRank's ``k=None`` / ``truncation=None``).
_NO_LIMIT = np.iinfo(np.int64).max // 4
_SUPPORTED = "LambdaRank(metric='ndcg'), RankNet, RankSVM, MPBoost"


def _pair_loss(part: Objective, scale: float, query_norm: bool) -> AK.AffinePairLoss:
    """The kernel record of one pairwise leaf, from the loss's own :meth:`relevance_pairs`; its
    TypeError (saying why) for a loss without an affine form."""
    try:
        form = part.relevance_pairs()
    except TypeError as exc:
        raise TypeError(f"Affine cannot correct {exc}") from None
    return AK.AffinePairLoss(form.kind, form.theta, scale * form.scale, form.hmul, form.dcg_weighted,
                             form.k or _NO_LIMIT, form.truncation or _NO_LIMIT, form.norm or query_norm)


def _leaves(objective: Objective, query_norm: bool) -> list:
    """``[(leaf, kernel record or None for a pointwise leaf, factor)]`` of a sum of scalings."""
    out = []
    for leaf, factor in scaled_leaves(objective):
        if not leaf.pairwise and leaf.needs_group:
            raise TypeError(f"Affine cannot correct {leaf!r}: a listwise loss without pairs; it corrects {_SUPPORTED}")
        out.append((leaf, _pair_loss(leaf, factor, query_norm) if leaf.pairwise else None, factor))
    return out


def _as_beta(beta: Any) -> np.ndarray:
    arr = _to_numpy(beta, "beta")
    if arr.dtype.kind == "b" or arr.dtype.kind not in "iuf":
        raise TypeError(f"beta must be real numbers, got dtype {arr.dtype}")
    if arr.ndim != 1 or arr.size == 0 or arr.size > MAX_POSITION:
        raise ValueError(f"beta must be a non-empty 1-D array of at most {MAX_POSITION} entries (one per position), "
                         f"got shape {arr.shape}")
    arr = np.array(arr, dtype=np.float64)
    bad = np.flatnonzero(~(np.isfinite(arr) & (arr >= 0.0)))
    if bad.size:
        raise ValueError(f"beta must be finite and >= 0 (a click rate); found {arr[bad[0]]} at position {int(bad[0])}")
    arr.setflags(write=False)
    return arr


def _require_parameters(state: Optional["_AffineState"]) -> "_AffineState":
    """``state``, or the ValueError of an ``Affine`` without its parameters (CPU and GPU route alike)."""
    if state is None:
        raise ValueError("Affine needs its trust-bias parameters: Affine(objective, alpha=..., beta=...), or "
                         "Affine.from_log(objective, X, clicks, position=...) to estimate them (TrustEM)")
    return state


class _AffineState:
    """Per-data-set state: each row's display position and corrected relevance."""

    __slots__ = ("position", "rhat")

    def __init__(self, position, rhat):
        self.position = position
        self.rhat = rhat


class Affine(Objective):
    """Trust-bias-corrected pairwise objective: the affine correction (Vardasbi et al., CIKM 2020)
    around a pairwise customobj loss.

    Labels are clicks (0 / 1). Under trust bias (Agarwal et al., WWW 2019) a row of relevance
    ``R`` shown at position ``k`` is clicked with probability ``alpha_k R + beta_k`` (``alpha_k =
    theta_k (eps+_k - eps-_k)``, ``beta_k = theta_k eps-_k``: examination times the click rates of
    relevant and non-relevant rows). Each row's click becomes the affine-corrected estimate of its
    relevance (the paper's affine estimator), unbiased whatever the position:

    .. math::

        \\hat r_i = \\frac{c_i - \\beta_{k_i}}{\\alpha_{k_i}}, \\qquad
        \\mathbb{E}[\\hat r_i] = R_i .

    Every unordered pair ``{i, j}`` of a query (session) enters the loss with both orientations,
    each weighted linearly by the estimate of the row that should rank higher, as the paper
    weights each row of an additive metric (DCG; Joachims et al.'s propensity-weighted rank
    bound does the same with ``1 / theta``):

    .. math::

        L(s) = \\sum_q \\sum_{i < j \\in q} m_{ij} \\bigl(\\hat r_i\\, \\psi(s_i - s_j)
               + \\hat r_j\\, \\psi(s_j - s_i)\\bigr),

    ``psi`` the wrapped loss's pair loss for a unit label difference (RankNet's ``log(1 +
    e^{-sigma d})``, RankSVM's squared hinge, MPBoost's exponential), and for LambdaRank
    ``psi = log(1 + e^{-sigma d})`` with ``m_ij = |D(rank_i) - D(rank_j)|`` at the current ranks
    (``D(r) = 1 / log2(2 + r)``, 0 from ``k`` on), the DCG change of swapping a relevant with a
    non-relevant row. ``m_ij`` never depends on the clicks, so the expected gradient is the
    gradient with the true relevances: a relevant row is pushed above every non-relevant one, and
    two relevant rows' terms ``R_i psi(d) + R_j psi(-d)`` only tie them (they change no order
    between relevant and non-relevant rows).

    **Negative estimates and variance.** A row clicked at ``k`` gets ``(1 - beta_k) / alpha_k``, an
    unclicked one ``-beta_k / alpha_k < 0``: the correction penalises rows shown where users click
    out of trust (the paper: it "both reweights clicks and penalizes items displayed on ranks with
    high trust bias"). They are not clipped: the paper's estimator is the unclipped one, and its
    variance grows as ``alpha_k`` shrinks (about ``1 / alpha_k`` per click). What bounds it here is
    the per-session normalisation ``query_norm`` (as :class:`Unbiased`'s): each query's terms are
    multiplied by ``log2(1 + S) / S``, ``S`` the sum of its lambdas with unit estimates
    ``m (|psi'(d)| + |psi'(-d)|)`` (for RankNet's and LambdaRank's logistic ``psi``, ``sigma sum m``).
    ``S`` depends on the scores and ranks only, never on the clicks, so the normalised gradient's
    expectation is still exactly the true-relevance gradient (times the same factor): one
    click-independent factor per query. Issue 43 replaced the earlier factor, which summed the
    corrected ``|r|`` into ``S`` and so depended on the clicks (biased: on single sessions the
    expected gradient's cosine with the true one fell to 0.73); measurements: docs/trust-bias.md.
    The hessian is not the loss's second derivative where an estimate is negative (that can be
    negative): each pair's coupling is ``m hmul (|r_i| psi''(d) + |r_j| psi''(-d))``, never negative.

    Parameters
    ----------
    objective : Objective
        ``LambdaRank`` (``metric="ndcg"``, any ``k``, ``truncation``, ``sigma``, convention,
        ``norm``), ``RankNet``, ``RankSVM``, ``MPBoost``, or sums and scalings of them; pointwise
        parts of a sum are added unchanged (on the clicks).
    alpha, beta : array of float, one per position (the top, position 0, first)
        The affine parameters: ``alpha >= 1e-16`` (``customobj._validation.MIN_PROPENSITY``: a
        click is divided by it, so gradients stay finite), ``beta >= 0``, ``alpha + beta <= 1``
        (the click rate of a relevant row). Estimate them from the log with :meth:`from_log`
        (:class:`TrustEM`); an ``Affine`` without them checks the data but refuses to train.
    position : array of int >= 0, optional
        Display position of each row, as for :class:`Unbiased` (default the data's own positions,
        else the row order within each query); every position must have an ``alpha``.
    first_position : int >= 0
        The number the positions give the top row (0, or 1 for a 1-based log).
    query_norm : bool
        Normalise each query's (session's) terms by the click-independent ``log2(1 + S) / S``
        (default ``True``; above). Either value keeps the estimator unbiased; a wrapped
        ``LambdaRank(norm=True)`` is normalised once, the same way.

    Notes
    -----
    Fitted values (:meth:`fitted_attributes`; ``TreeBooster`` sets them on the model):
    ``affine_alpha_``, ``affine_beta_`` and ``position_bias_ = alpha / alpha[0]``. GPU route
    (:meth:`device_route`): device scores, ``xgboost_objective(device="cuda")`` and
    ``TreeBooster(device="cuda")`` (its OLE criteria included) compute the corrected terms and the pair
    couplings on the device, equal to the CPU's.

    Examples
    --------
    >>> import numpy as np, customobj
    >>> d = customobj.data.synthetic(30, 10, 5, seed=0)
    >>> log = customobj.data.simulate_clicks(d, ranker=d.X[:, 0], click_model="trust", sessions=2, seed=0)
    >>> plus, minus = customobj.clicks.simulation.trust_defaults(10)
    >>> theta = 1.0 / np.arange(1, 11)
    >>> obj = customobj.Affine(customobj.LambdaRank(), alpha=theta * (plus - minus), beta=theta * minus)
    >>> g, h = obj.grad_hess(np.zeros(log.y.size), log.y, log.group)
    >>> bool((h >= 0).all()), round(float(obj.fitted_attributes()["position_bias_"][1]), 3)
    (True, 0.977)
    """

    pairwise = True
    needs_group = True
    corrects_clicks = True

    def __init__(self, objective: Objective, *, alpha: Optional[npt.ArrayLike] = None,
                 beta: Optional[npt.ArrayLike] = None, position: Optional[npt.ArrayLike] = None,
                 first_position: int = 0, query_norm: bool = True) -> None:
        if not isinstance(objective, Objective):
            raise TypeError(f"objective must be a customobj Objective, got {type(objective).__name__}")
        if objective.corrects_clicks:
            raise TypeError(f"objective is already {type(objective).__name__}: correct the clicks once")
        if not objective.pairwise:
            raise TypeError(f"objective must be a pairwise loss (it corrects pairs), got {objective!r}")
        _leaves(objective, False)  # TypeError for a loss it cannot correct
        self.objective = objective
        if (alpha is None) != (beta is None):
            raise ValueError("give both alpha and beta (one per position), or neither (then estimate them with "
                             "Affine.from_log)")
        self.alpha = None if alpha is None else as_propensity(alpha, "alpha")
        self.beta = None if beta is None else _as_beta(beta)
        if self.alpha is not None and self.beta is not None:
            if self.alpha.size != self.beta.size:
                raise ValueError(f"alpha has {self.alpha.size} entries but beta has {self.beta.size}: one each per "
                                 "position")
            over = np.flatnonzero(self.alpha + self.beta > 1.0 + 1e-12)
            if over.size:
                raise ValueError(f"alpha + beta is the click rate of a relevant row and must be <= 1; it is "
                                 f"{self.alpha[over[0]] + self.beta[over[0]]:g} at position {int(over[0])}")
        self.position = None if position is None else as_position(position)
        self.first_position = check_int(first_position, "first_position", minimum=0, maximum=MAX_POSITION - 1)
        self.integer_labels = objective.integer_labels
        self.query_norm = check_bool(query_norm, "query_norm")

    @classmethod
    def fit_log(cls, objective: Objective, X: Any, y: npt.ArrayLike, *, position: npt.ArrayLike,
                first_position: int = 0, em: Any = None, query_norm: bool = True) -> "AffineFit":
        """``(objective, em)``: ``Affine(objective, query_norm=query_norm)`` with ``alpha`` / ``beta``
        estimated from the click log ``(X, y, position)`` by ``em`` (default ``TrustEM()``: the
        trust-bias click model by regression EM), and the fitted ``em`` beside it (its relevance model
        and estimates: a booster's weight, which the objective does not carry). The objective reads the
        positions of the data it trains on, as any ``Affine``.

        Examples
        --------
        >>> import customobj
        >>> d = customobj.data.synthetic(30, 10, 5, seed=0)
        >>> log = customobj.data.simulate_clicks(d, ranker=d.X[:, 0], click_model="trust", sessions=4, seed=0)
        >>> em = customobj.clicks.TrustEM(n_iter=2, n_estimators=3)
        >>> obj, fitted = Affine.fit_log(customobj.RankNet(), log.X, log.y, position=log.position, em=em)
        >>> fitted is em, bool((obj.alpha == em.alpha_).all())
        (True, True)
        """
        from .trust_em import TrustEM

        em = TrustEM() if em is None else em
        if not isinstance(em, TrustEM):
            raise TypeError(f"em must be a customobj.clicks.TrustEM, got {type(em).__name__}")
        em.fit(X, y, position=position, first_position=first_position)
        return AffineFit(cls(objective, alpha=em.alpha_, beta=em.beta_, query_norm=query_norm), em)

    @classmethod
    def from_log(cls, objective: Objective, X: Any, y: npt.ArrayLike, *, position: npt.ArrayLike,
                 first_position: int = 0, em: Any = None, query_norm: bool = True) -> "Affine":
        """The objective of :meth:`fit_log` alone. For existing code its ``em_`` gives the fitted EM in
        this process (it travels with neither a pickle nor a copy); new code takes the pair from
        :meth:`fit_log`."""
        out, fitted = cls.fit_log(objective, X, y, position=position, first_position=first_position, em=em,
                                  query_norm=query_norm)
        out.__dict__["_em"] = fitted  # how the parameters were found; not an option (no part of equality)
        return out

    @property
    def em_(self) -> Any:
        """The fitted :class:`TrustEM` of :meth:`from_log` (not pickled or copied with the objective;
        :meth:`fit_log` returns it beside the objective instead)."""
        em = self.__dict__.get("_em")
        if em is None:
            raise AttributeError("this Affine has no em_: it was given its alpha and beta, or is a pickle or copy "
                                 "(Affine.from_log sets em_ on the objective it returns; keep the em you pass it)")
        return em

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        state.pop("_em", None)  # the fitted EM (a relevance booster) stays beside the objective, not inside it
        return state

    def _params(self):
        return (("alpha", self.alpha), ("beta", self.beta), ("first_position", self.first_position),
                ("objective", self.objective), ("position", self.position),
                ("query_norm", self.query_norm))

    def _convert_labels(self, labels):
        return self.objective._convert_labels(labels)

    def check_prepared(self, prep: Prepared) -> None:
        check_clicks(prep.labels, "labels")
        self.objective.check_prepared(prep)
        super().check_prepared(prep)

    def _state(self, prep):
        position = data_positions(self.position, prep, self.first_position, "Affine")
        if self.alpha is None or self.beta is None:
            return None  # the data are checked; training refuses (_run) until the parameters are given
        k = self.alpha.size
        if position.size and position.max() >= k:
            row = int(np.argmax(position))
            raise ValueError(f"position {int(position[row])} (row {row}) has no alpha / beta: they cover positions "
                             f"0..{k - 1}; give one per shown position")
        rhat = np.empty(prep.n_rows)
        AK.corrected_relevance(prep.labels, position, self.alpha, self.beta, rhat)
        return _AffineState(position, rhat)

    def fitted_attributes(self, prep: "Prepared | None" = None) -> dict:
        """``affine_alpha_``, ``affine_beta_`` and ``position_bias_ = alpha / alpha[0]``: the parameters
        the correction used, the same for every data set (``prep`` is accepted, not needed)."""
        if self.alpha is None or self.beta is None:
            return {}
        return {"position_bias_": self.alpha / self.alpha[0], "affine_alpha_": self.alpha.copy(),
                "affine_beta_": self.beta.copy()}

    def _run(self, scores, prep, state, out_grad, out_hess):
        """Add every part's terms into the outputs; returns ``(loss, (i, j, c))``."""
        _require_parameters(state)
        loss = 0.0
        w, use_w = kernel_weights(prep.weight)
        i, j = self._pair_rows(prep)
        couplings = np.zeros(i.size)
        for part, record, scale in self._leaf_records():
            if record is None:
                loss += add_unchanged(part, scale, scores, prep, out_grad, out_hess)
                continue
            c = np.zeros(i.size)
            loss += AK.affine_pairs(scores, prep.ptr, state.rhat, w, use_w, record, out_grad, out_hess, c)
            couplings += c
        return loss, (i, j, couplings)

    @staticmethod
    def _pair_rows(prep):
        sizes = prep.groups.sizes.astype(np.int64)
        m = int((sizes * (sizes - 1) // 2).sum())
        i, j = np.empty(m, dtype=np.int64), np.empty(m, dtype=np.int64)
        AK.pair_rows(prep.ptr, i, j)
        return i, j

    def device_route(self) -> DeviceRoute:
        """The GPU route (``customobj.clicks._affine_route``): the corrected pair terms a block per query
        and a thread per row (``_affine_cuda``), pointwise parts of a sum through their own routes, and
        the pair couplings the OLE criteria of ``TreeBooster(device="cuda")`` take. Its ``grad_hess_loss``
        (``MultiObjective``'s per-label GPU cost) writes each query's loss from the same launch, as
        :meth:`_grad_hess_loss` adds it; ``None`` when a pointwise part of the wrapped sum has no GPU cost.

        Examples
        --------
        >>> import customobj
        >>> customobj.Affine(customobj.RankNet()).device_route().grad_hess.__module__
        'customobj.clicks._affine_route'
        """
        with_cost = True
        for part, record, _ in self._leaf_records():
            if record is None:  # NotImplementedError naming a part without a route
                with_cost = with_cost and part.device_route().grad_hess_loss is not None
        return DeviceRoute(_affine_route.grad_hess, _affine_route.couplings,
                           _affine_route.grad_hess_loss if with_cost else None)

    def _leaf_records(self) -> list:
        """``[(leaf, AffinePairLoss or None for a pointwise leaf, factor)]``, in the order both routes add them."""
        return _leaves(self.objective, self.query_norm)

    def _trained_state(self, prep: Prepared) -> _AffineState:
        """The data set's state; the ValueError of an ``Affine`` without its parameters (the GPU route's check)."""
        return _require_parameters(prep.state_for(self))

    def _grad_hess(self, scores, prep, state, out_grad, out_hess):
        self._run(scores, prep, state, out_grad, out_hess)

    def _grad_hess_couplings(self, scores, prep, state, out_grad, out_hess):
        return self._run(scores, prep, state, out_grad, out_hess)[1]

    def _grad_hess_loss(self, scores, prep, state, out_grad, out_hess):
        """The round's gradients and its loss from the one pass (``MultiObjective``'s per-label cost): a
        pairwise leaf's losses summed row part by row part, then query by query (``_affine_kernels.query_pairs``),
        the order the GPU's ``_affine_route.grad_hess_loss`` writes each query's loss in."""
        return self._run(scores, prep, state, out_grad, out_hess)[0]

    def _loss(self, scores, prep, state):
        g = np.zeros(prep.n_rows)
        return self._run(scores, prep, state, g, np.zeros_like(g))[0]

    def _pair_couplings(self, scores, prep, state):
        g = np.zeros(prep.n_rows)
        return self._run(scores, prep, state, g, np.zeros_like(g))[1]


class AffineFit(NamedTuple):
    """What :meth:`Affine.fit_log` returns: the objective, and the fitted EM that estimated its parameters."""

    objective: Affine
    em: Any
