"""Learning to rank from clicks, in one package.

- :class:`Unbiased` (``unbiased.py``): Unbiased LambdaMART's pairwise debiasing around any pairwise
  customobj loss, with its pair terms (``_pairs.py``) and numba kernels (``_unbiased_kernels.py``);
- :class:`Affine` (``affine.py``): the affine correction of trust bias (Vardasbi et al. 2020) around a
  pairwise customobj loss, its kernels in ``_affine_kernels.py``; :class:`TrustEM` (``trust_em.py``)
  estimates its parameters from a log (the trust-bias click model by regression EM),
  :func:`estimate_trust` (``trust_interventions.py``) from randomised / swap logs or several rankers' logs;
  :func:`anchor_trust` (``trust_anchor.py``) fixes their relevance scale with a few labelled queries;
- :class:`DoublyRobust` (``doubly_robust.py``): the doubly robust estimator (Oosterhuis 2023) for
  stochastic logging policies (``loggers.py``: the loggers of :func:`simulate_clicks`), and the
  click metrics under trust bias for validation without labels (``metrics.py``: affine and DR);
- :class:`RegressionEM` (``regression_em.py``): the position-based click model fitted by EM, relevance
  learned by LightGBM or XGBoost;
- :func:`simulate_clicks` (``simulation.py``, also :func:`customobj.data.simulate_clicks`): semi-synthetic
  click logs, by the click models of :data:`CLICK_MODELS`;
- :func:`harvest_propensities` (``harvest.py``): propensities from the logs of two or more rankers
  (intervention harvesting), for ``Unbiased(propensity=...)``;
- the input checks of positions, clicks and propensities (``_inputs.py``).

Positions are 0-based everywhere (0 = top of the page); see docs/clicks.md for a click log of one's own.
"""
from .affine import Affine
from .doubly_robust import DoublyRobust
from .harvest import harvest_propensities
from .regression_em import RegressionEM
from .simulation import CLICK_MODELS, ClickLog, simulate_clicks
from .trust_em import TrustEM
from .trust_anchor import anchor_trust
from .trust_interventions import estimate_trust
from .unbiased import Unbiased

__all__ = ["Unbiased", "Affine", "RegressionEM", "TrustEM", "simulate_clicks", "ClickLog", "CLICK_MODELS", "harvest_propensities",
           "DoublyRobust", "estimate_trust", "anchor_trust"]
