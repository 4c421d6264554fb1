"""Logging policies of :func:`customobj.clicks.simulate_clicks`: which rows each simulated session shows,
in which order, and the probability that the policy put each shown document where it is.

- ``"deterministic"``: the production ranker's top ``shown`` rows in its order, every session alike
  (the hardest log to identify trust bias from: a document is only ever seen at one position).
- ``"randomised"``: a share ``explore`` of the sessions shows the same rows uniformly shuffled
  (RandTop-n, Joachims, Swaminathan, Schnabel, WSDM 2017, sec. 5), marked ``randomised``.
- ``"swap"``: a share ``explore`` of the sessions swaps one uniformly drawn pair of its shown positions
  (the swap interventions of Agarwal, Wang, Li, Bendersky, Najork, WWW 2019, drawn over all pairs).
- ``"stochastic"``: every session draws a ranking of all of the query's rows from the Plackett-Luce
  policy ``P(d first) = exp(s_d / T) / sum exp(s / T)`` over the production scores with temperature
  ``T`` and shows its top ``shown`` (Oosterhuis, ACM TOIS 2023, sec. 7's stochastic logging policy).

The logging probability of a row (``ClickLog.logging_prob``) is ``P(document at its position)`` under
the logger: exact for the first three, a Monte Carlo estimate for the stochastic one, from ``samples``
Plackett-Luce draws (:func:`plackett_luce_marginals`) and the sessions' own draws.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import as_1d_float, check_int, check_positive
from ..groups import as_groups

__all__ = ["LOGGERS", "DETERMINISTIC", "RANDOMISED", "SWAP", "STOCHASTIC", "plackett_luce_marginals",
           "DEFAULT_SAMPLES"]

#: The logging policies, as codes once the option is read (nothing below compares strings).
DETERMINISTIC, RANDOMISED, SWAP, STOCHASTIC = 0, 1, 2, 3
#: ``logger`` names -> codes: the one list.
LOGGERS = {"deterministic": DETERMINISTIC, "randomised": RANDOMISED, "swap": SWAP, "stochastic": STOCHASTIC}
#: Plackett-Luce draws per query for the marginal position probabilities (standard error <= 0.5 / sqrt(samples)).
DEFAULT_SAMPLES = 2000


def _gumbel_rankings(scores: np.ndarray, temperature: float, draws: int, rng: Any) -> np.ndarray:
    """``draws`` Plackett-Luce rankings of one query's rows (``draws x n`` row indices, best first): the
    Gumbel-max trick, ``argsort`` of ``s / T + Gumbel`` (Yellott 1977), exactly Plackett-Luce."""
    keys = scores[None, :] / temperature + rng.gumbel(size=(draws, scores.size))
    return np.argsort(-keys, axis=1, kind="stable")


def plackett_luce_marginals(scores: Any, group: Any, *, temperature: float, shown: int,
                            samples: int = DEFAULT_SAMPLES, seed: int = 0) -> np.ndarray:
    """``P(row r at position k)`` under the Plackett-Luce policy over ``scores`` with ``temperature``,
    for every row and the positions ``0 .. shown - 1`` (``n_rows x shown``; a row's probabilities
    sum to its probability of being shown), each a Monte Carlo estimate from ``samples`` rankings
    per query (exact expectations have no closed form beyond the first position).

    Examples
    --------
    >>> m = plackett_luce_marginals([2.0, 1.0, 0.0], [3], temperature=1.0, shown=2, samples=4000, seed=0)
    >>> m.shape, bool(abs(m[:, 0].sum() - 1.0) < 1e-12), bool(m[0, 0] > m[1, 0] > m[2, 0])
    ((3, 2), True, True)
    """
    s = as_1d_float(scores, "scores", allow_bool=False)
    g = as_groups(group, s.size, name="group")
    temperature = check_positive(temperature, "temperature")
    shown = check_int(shown, "shown", minimum=1)
    samples = check_int(samples, "samples", minimum=1, maximum=10**6)
    rng = np.random.default_rng([check_int(seed, "seed", minimum=0), 2])
    out = np.zeros((s.size, shown))
    for q in range(g.n_groups):
        a, b = int(g.ptr[q]), int(g.ptr[q + 1])
        if b == a:
            continue
        top = _gumbel_rankings(s[a:b], temperature, samples, rng)[:, :shown]
        for k in range(top.shape[1]):
            out[a:b, k] = np.bincount(top[:, k], minlength=b - a) / samples
    return out


def log_order(code: int, scores: np.ndarray, ptr: np.ndarray, shown: int, sessions: int, explore: float,
              temperature: float, samples: int, seed: int) -> tuple:
    """``(rows, sizes, position, randomised, logging_prob)`` of every session, queries in order and
    their ``sessions`` sessions one after the other, rows in display order. ``ptr`` delimits the
    queries' rows; ``scores`` is the production ranker's."""
    rng = np.random.default_rng([seed, 1])  # the logger's own stream: the click draws stay as they were
    rows, pos, rand, prob, sizes = [], [], [], [], []
    for q in range(ptr.size - 1):
        a, b = int(ptr[q]), int(ptr[q + 1])
        n_q = b - a
        if n_q == 0:
            continue
        n = min(shown, n_q)
        base = np.lexsort((np.arange(n_q), -scores[a:b]))[:n]  # production order, ties by row
        flag = np.zeros(sessions, dtype=bool)
        if code == STOCHASTIC:
            order = _gumbel_rankings(scores[a:b], temperature, sessions, rng)[:, :n]
            marg = plackett_luce_marginals(scores[a:b], [n_q], temperature=temperature, shown=n, samples=samples,
                                           seed=seed + q) * samples
            for k in range(n):  # the sessions' own draws join the sample: a shown row never gets probability 0
                marg[:, k] += np.bincount(order[:, k], minlength=n_q)
            p = marg[order, np.arange(n)[None, :]] / (samples + sessions)
        else:
            order = np.tile(base, (sessions, 1))
            p = np.ones((sessions, n))
            if code != DETERMINISTIC and n > 1:
                flag = rng.random(sessions) < explore
                if code == RANDOMISED:
                    perm = np.argsort(rng.random((sessions, n)), axis=1)
                    order[flag] = base[perm[flag]]
                    stay, move = 1.0 - explore + explore / n, explore / n
                else:
                    pair = np.sort(np.argsort(rng.random((sessions, n)), axis=1)[:, :2], axis=1)
                    t = np.flatnonzero(flag)
                    i, j = pair[t, 0], pair[t, 1]
                    order[t, i], order[t, j] = order[t, j], order[t, i].copy()
                    stay, move = 1.0 - explore * 2.0 / n, explore * 2.0 / (n * (n - 1))
                home = np.empty(n_q, dtype=np.int64)
                home[base] = np.arange(n)  # each shown row's production position
                p = np.where(home[order] == np.arange(n)[None, :], stay, move)
        rows.append((a + order).reshape(-1))
        pos.append(np.tile(np.arange(n), sessions))
        rand.append(np.repeat(flag, n))
        prob.append(p.reshape(-1))
        sizes.append(np.full(sessions, n))
    if not rows:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, np.zeros(0, dtype=bool), np.zeros(0)
    return (np.concatenate(rows).astype(np.int64), np.concatenate(sizes).astype(np.int64),
            np.concatenate(pos).astype(np.int64), np.concatenate(rand), np.concatenate(prob))
