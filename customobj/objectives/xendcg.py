"""XENDCG: the cross-entropy NDCG surrogate of Bruch, Zoghi, Bendersky, Najork (2019), as LightGBM's
``objective="rank_xendcg"`` (``src/objective/rank_xendcg_objective.hpp``)."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._validation import check_choice, check_exp_gain_labels, check_int
from ._arrays import kernel_weights
from ._noise import RoundCounter
from .base import DeviceRoute
from .prepared import Prepared
from ._query_arrays import query_weights
from .softmax import SoftmaxCrossEntropy, _Targets
from . import _listwise_kernels as QK

__all__ = ["XENDCG"]

#: LightGBM's default ``objective_seed``.
LIGHTGBM_SEED = 5
_CONVENTIONS = ("customobj", "lightgbm")
#: LightGBM's ``Config::Set`` draws data, bagging, drop, feature-fraction, objective seeds in turn.
_OBJECTIVE_SEED_DRAW = 5


class _XENDCGState(NamedTuple):
    qweight: np.ndarray  # mean row weight per query
    rounds: RoundCounter


class XENDCG(SoftmaxCrossEntropy):
    """Cross-entropy between ``softmax(s)`` and a noisy gain distribution (Bruch et al. 2019, sec. 4).

    Per query of two rows or more, in round ``r`` (one ``grad_hess`` call per round):

    .. math:: \\phi_i = 2^{y_i} - \\gamma_i, \\quad \\gamma_i \\sim U[0, 1), \\qquad
              L = \\sum_q w_q \\Big(-\\sum_i \\frac{\\phi_i}{\\sum_j \\phi_j} \\log \\rho_i\\Big), \\quad
              \\rho = \\mathrm{softmax}(s)

    ``gamma`` comes from LightGBM's generator, one per query seeded ``seed + q`` and drawn ``n`` times
    a round (``_noise.py``), so the noise equals LightGBM's for the same ``seed`` (its
    ``objective_seed``, default 5) and does not depend on the thread count. :meth:`loss` and
    :meth:`pair_couplings` use the noise of the latest ``grad_hess`` call (round 0 before any; the
    rounds count per prepared data set, and public calls on the same data go on counting:
    :mod:`customobj.objectives.base`):
    ``grad = rho - phi / sum phi`` (times ``w_q``) is the derivative of that loss. Its expected value
    over the noise is the paper's XE-NDCG.

    ``convention="lightgbm"`` returns LightGBM's gradients instead: the first-order term plus the
    second- and third-order terms of its inverse-hessian approximation, ``hess = rho (1 - rho)``,
    both times the row weight (labels must then be integer grades, as LightGBM truncates them).
    Those gradients are not the derivative of :meth:`loss` (still the cross-entropy above);
    through ``lightgbm_objective`` they train LightGBM's ``rank_xendcg`` model (docs/parity.md).

    Labels up to 700 (``2^y`` stays finite). One-row queries contribute nothing.

    Examples
    --------
    >>> import customobj
    >>> g, h = customobj.XENDCG().grad_hess([0.0, 0.0, 0.0], [2.0, 0.0, 0.0], group=[3])
    >>> bool(g[0] < 0 < g[1]), round(float(g.sum()), 12)
    (True, 0.0)
    """

    rounds_matter = True  # each round draws new noise

    def device_route(self) -> DeviceRoute:
        from . import _listwise_route as LR

        return DeviceRoute(LR.xendcg, LR.xendcg_couplings, LR.xendcg_loss)

    def __init__(self, *, seed: int = LIGHTGBM_SEED, convention: str = "customobj") -> None:
        self.seed = check_int(seed, "seed", minimum=0, maximum=2**31 - 1)
        self.convention = check_choice(convention, "convention", set(_CONVENTIONS))
        self._lightgbm = self.convention == "lightgbm"  # the one string comparison

    @classmethod
    def like_lightgbm(cls, *, objective_seed: int | None = None, seed: int | None = None) -> XENDCG:
        """The XENDCG that trains the same trees as LightGBM's ``objective="rank_xendcg"``.

        Parameters
        ----------
        objective_seed, seed
            LightGBM's parameters of those names. LightGBM derives ``objective_seed`` from ``seed``
            when only ``seed`` is given (``Config::Set``: the fifth ``NextShort(0, 32767)`` of
            ``Random(seed)``); an explicit ``objective_seed`` wins; with neither it is 5.

        Returns
        -------
        XENDCG
            ``convention="lightgbm"`` with LightGBM's seed.

        Examples
        --------
        >>> import customobj
        >>> customobj.XENDCG.like_lightgbm(seed=0)
        XENDCG(convention='lightgbm', seed=8855)
        """
        if objective_seed is None and seed is not None:
            x = check_int(seed, "seed", minimum=-(2**31), maximum=2**31 - 1) & 0xFFFFFFFF
            for _ in range(_OBJECTIVE_SEED_DRAW):
                x = (214013 * x + 2531011) & 0xFFFFFFFF
            objective_seed = ((x >> 16) & 0x7FFF) % 32767
        return cls(seed=LIGHTGBM_SEED if objective_seed is None else objective_seed, convention="lightgbm")

    @property
    def integer_labels(self) -> bool:  # type: ignore[override]  # depends on the options
        return self._lightgbm

    def check_prepared(self, prep: Prepared) -> None:
        check_exp_gain_labels(prep.labels)
        super().check_prepared(prep)

    def _state(self, prep):
        return _XENDCGState(qweight=query_weights(prep), rounds=RoundCounter())

    def _round(self, state, new_round):
        return state.rounds.advance() if new_round else state.rounds.current

    def _targets(self, scores, prep, state, new_round):
        mass = np.empty(prep.n_rows)
        QK.xendcg_mass(prep.labels, prep.ptr, state.qweight, self._round(state, new_round), self.seed, mass)
        return _Targets(mass=mass, vw=np.zeros(0), use_vw=False, beta=1.0)

    def _grad_hess(self, scores, prep, state, out_grad, out_hess):
        if not self._lightgbm:
            super()._grad_hess(scores, prep, state, out_grad, out_hess)
            return
        w, use_w = kernel_weights(prep.weight)
        QK.xendcg_lightgbm_grad_hess(scores, prep.labels, prep.ptr, self._round(state, True), self.seed,
                                     w, use_w, out_grad, out_hess)
