r"""EPO's round terms, compiled (:func:`customobj.multi.solvers.epo_lp`): the Gram matrix scaled to a unit
diagonal, the relative costs, their non-uniformity and the adjustment, and the adjustment through the Gram.

.. math::

    C = G / \max_k G_{kk}, \quad \hat l = \frac{r \odot l}{\sum r \odot l}, \quad
    \mu_r(l) = \sum_k \hat l_k \log(m \hat l_k), \quad a = r \odot (\log(m \hat l) - \mu_r(l)), \quad Ca

These are a few dozen flops on ``m x m`` numbers, but as numpy calls they were two dozen calls of about a
microsecond each, EPO's largest cost per round after the gradients (``python benchmarks/multi_objective.py
rounds``, docs/multi-objective.md); one compiled call takes about one. The terms are
:func:`customobj.multi.solvers.epo_adjustments`' (the numpy reference, to rounding:
tests/test_multi_epo_terms.py).

References
----------
Mahapatra & Rajan (2020), "Multi-Task Learning with User Preferences: Gradient Descent with Controlled Ascent
in Pareto Optimization", ICML, section 4 (eqs. 5, 9 and 11).
"""
import numpy as np
from numba import njit

__all__ = ["epo_terms"]


@njit(cache=True)
def epo_terms(costs, gram, pref, tiny):  # pragma: no cover - numba
    """``(c, rl, mu, a, ca)`` of one EPO round: ``C`` (zeros when the largest diagonal entry is not positive),
    ``r l`` (costs floored at 0), :math:`\\mu_r(l)`, the adjustment ``a`` (the normalised relative costs floored
    at ``tiny``: a zero one's log would be minus infinity; uniform when every relative cost is 0) and ``C a``.

    >>> c, rl, mu, a, ca = epo_terms(np.array([1.0, 1.0]), np.eye(2) * 4.0, np.array([0.5, 0.5]), 1e-12)
    >>> c.tolist(), rl.tolist(), mu, a.tolist(), ca.tolist()
    ([[1.0, 0.0], [0.0, 1.0]], [0.5, 0.5], 0.0, [0.0, 0.0], [0.0, 0.0])
    """
    m = pref.size
    top = np.diag(gram).max() if gram.size else 0.0
    c = gram / top if top > 0 else np.zeros_like(gram)
    rl = pref * np.maximum(costs, 0.0)
    total = rl.sum()
    l_hat = np.maximum(rl / total, tiny) if total > 0 else np.full(m, 1.0 / m)
    log_ml = np.log(m * l_hat)
    mu = (l_hat * log_ml).sum()
    a = pref * (log_ml - mu)
    ca = np.zeros(m)
    for j in range(m):
        acc = 0.0
        for k in range(m):
            acc += c[j, k] * a[k]
        ca[j] = acc
    return c, rl, mu, a, ca
