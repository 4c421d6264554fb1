"""Seeded noise of the stochastic objectives (XENDCG, YetiRank), the same whatever the thread count.

Each query draws from its own generator, seeded from ``(seed, round, query)`` alone, so the noise
does not depend on which thread runs the query or on how many threads there are:

- ``lightgbm_uniform``: LightGBM's ``Random`` (``utils/random.h``): the 32-bit linear congruential
  generator ``x <- 214013 x + 2531011 (mod 2^32)`` seeded with ``seed + query`` and read as
  ``((x >> 16) & 0x7FFF) / 32768``. LightGBM's ``rank_xendcg`` keeps one per query and draws ``n``
  numbers per round, so round ``r`` starts ``r n`` steps in (``lcg_skip`` jumps there in O(log)).
- ``splitmix_uniform``: SplitMix64 (Steele, Lea, Flood 2014) seeded by mixing ``(seed, round,
  query)``; uniform in the open interval (0, 1). YetiRank's permutations use it.

:class:`RoundCounter` numbers the rounds: an objective's ``grad_hess`` call starts a new round,
and ``loss`` and ``pair_couplings`` use the noise of the latest round (round 0 before any), so
``grad`` is the derivative of ``loss`` at every round.
"""
import numpy as np
from numba import njit

__all__ = ["RoundCounter", "lcg_skip", "lcg_next", "lightgbm_uniform", "query_stream", "splitmix_uniform",
           "splitmix_at"]

_MASK32 = np.uint64(0xFFFFFFFF)
_LCG_A = np.uint64(214013)
_LCG_C = np.uint64(2531011)
_ONE = np.uint64(1)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


class RoundCounter:
    """The boosting round of a stochastic objective on one prepared data set (held in its state)."""

    __slots__ = ("current", "_next")

    def __init__(self) -> None:
        self.current = 0
        self._next = 0

    def advance(self) -> int:
        """Start the next round (a ``grad_hess`` call) and return its number."""
        self.current = self._next
        self._next += 1
        return self.current


@njit(cache=True)
def lcg_skip(x, k):
    """LightGBM's LCG state ``x`` (uint64 below 2^32) after ``k >= 0`` steps, in O(log k)."""
    a = _LCG_A
    c = _LCG_C
    acc_a = _ONE
    acc_c = np.uint64(0)
    while k > 0:
        if k & 1:
            acc_a = (acc_a * a) & _MASK32
            acc_c = (acc_c * a + c) & _MASK32
        c = ((a + _ONE) * c) & _MASK32  # the step applied twice: a^2 x + (a + 1) c
        a = (a * a) & _MASK32
        k >>= 1
    return (acc_a * x + acc_c) & _MASK32


@njit(cache=True)
def lcg_next(x):
    return (_LCG_A * x + _LCG_C) & _MASK32


@njit(cache=True)
def lightgbm_uniform(x):
    """LightGBM's ``NextFloat`` from the advanced state ``x``: a multiple of 1/32768 in [0, 1)."""
    return float((x >> np.uint64(16)) & np.uint64(0x7FFF)) / 32768.0


@njit(cache=True)
def _mix(z):
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


@njit(cache=True)
def query_stream(seed, rnd, q):
    """Starting SplitMix64 state of query ``q`` in round ``rnd`` (all three non-negative ints)."""
    z = _mix(np.uint64(seed) + _GOLDEN)
    z = _mix(z ^ (np.uint64(rnd) * _GOLDEN + _ONE))
    return _mix(z ^ (np.uint64(q) * _MIX1 + _GOLDEN))


@njit(cache=True)
def splitmix_uniform(state):
    """``(u, next_state)``: a uniform draw in (0, 1) (53 random bits, never 0 or 1)."""
    state = state + _GOLDEN
    bits = _mix(state) >> np.uint64(11)
    return (float(bits) + 0.5) / 9007199254740992.0, state


@njit(cache=True)
def splitmix_at(start, k):
    """The ``k``-th uniform (0-based) of the stream that starts at ``start``: what the ``k + 1``-th
    ``splitmix_uniform`` call returns, in O(1) (the state only adds the golden gamma each draw), so a
    GPU thread reads any draw of its query without walking the stream."""
    return splitmix_uniform(np.uint64(start) + np.uint64(k) * _GOLDEN)[0]  # uint64 whatever the caller passes
