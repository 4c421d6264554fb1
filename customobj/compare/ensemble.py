"""Ensembles of two methods, ``ens:A+B`` (Burges 2010, "From RankNet to LambdaRank to LambdaMART:
An Overview", section 7.1; Wu, Burges, Svore & Gao 2007).

``ens:A+B`` trains the methods ``A`` and ``B`` (any two method names of :mod:`.methods`), finds on
the validation part the exact optimal linear combination

.. math:: s(\\alpha) = \\alpha\\, s_A + (1 - \\alpha)\\, s_B,\\qquad
          \\alpha^* = \\arg\\max_{\\alpha \\in [0, 1]} \\mathrm{NDCG@10}_{\\mathrm{valid}}(s(\\alpha))

with :func:`customobj.best_linear_combination`, and ranks the test part by :math:`s(\\alpha^*)`.
The members are trained exactly as the methods of the same name (same settings, seeds and, with
``--tune``, their own tuned parameters), so an ensemble of listed methods costs no extra training.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass

import numpy as np

from .methods import MethodSpec, _error, _split_top, parse_method
from .trainers import Split, TrainResult

__all__ = ["ENS_PREFIX", "EnsembleSpec", "is_ensemble_name", "parse_ensemble", "member_specs", "combine"]

ENS_PREFIX = "ens"
_ENS = re.compile(r"\s*ens\s*:")
#: The cut-off of the NDCG the combination maximises on validation (the curves' metric, NDCG@10).
ENSEMBLE_K = 10


@dataclass(frozen=True)
class EnsembleSpec:
    """A parsed ``ens:A+B``: the two member methods, in the order given."""

    members: tuple[MethodSpec, MethodSpec]

    backend = ENS_PREFIX
    native = False
    criterion = None
    options = ()

    @property
    def label(self) -> str:
        return f"{ENS_PREFIX}:" + "+".join(m.label for m in self.members)

    def __str__(self) -> str:
        return self.label


def is_ensemble_name(text: str) -> bool:
    """Whether ``text`` is spelled as an ensemble (``ens:...``), right or wrong."""
    return bool(_ENS.match(text))


def parse_ensemble(text: str) -> EnsembleSpec:
    """Parse ``ens:A+B``; a ``ValueError`` (first line: what is wrong) for anything else.

    ``+`` separates the members outside parentheses, brackets and quotes, so options such as
    ``lam=1e+3`` inside a member's parentheses are kept whole. Ensembles do not nest.
    """
    if not isinstance(text, str):
        raise TypeError(f"method name must be a string, got {type(text).__name__}")
    if not is_ensemble_name(text):
        raise _error(text, f"an ensemble is spelled {ENS_PREFIX}:A+B")
    body = text.split(":", 1)[1]
    try:
        parts = _split_top(body, "+", "ensemble")
    except ValueError as exc:
        raise _error(text, str(exc)) from None
    if len(parts) != 2:
        raise _error(text, f"an ensemble combines exactly two methods, ens:A+B (got {len(parts)} part(s))")
    members = []
    for part in parts:
        if not part.strip():
            raise _error(text, "empty member; ens:A+B needs two method names")
        if is_ensemble_name(part):
            raise _error(text, "ensembles do not nest; a member must be a single method")
        try:
            members.append(parse_method(part))
        except ValueError as exc:
            first = str(exc).splitlines()[0]
            first = re.sub(r"\Ainvalid method '.*?': ", "", first)  # the member is named just before
            raise _error(text, f"member {part.strip()!r}: {first}") from None
    if members[0].label == members[1].label:
        raise _error(text, f"both members are {members[0].label}; an ensemble combines two different methods")
    return EnsembleSpec(tuple(members))


def member_specs(specs: list) -> list[MethodSpec]:
    """The single methods to train for ``specs``: every listed one, then the ensembles' members not
    listed themselves, each once, in order of first appearance."""
    out, seen = [], set()
    for s in specs:
        for m in (s.members if isinstance(s, EnsembleSpec) else (s,)):
            if m.label not in seen:
                seen.add(m.label)
                out.append(m)
    return out


def combine(a: TrainResult, b: TrainResult, valid: Split) -> tuple[TrainResult, float]:
    """The ensemble of two trained members: ``alpha`` maximising validation NDCG@10 of
    ``alpha*a + (1-alpha)*b`` (exact, :func:`customobj.best_linear_combination`), applied to the
    test scores. Time and rounds are the sums of the members' (the ensemble holds both models).

    Examples
    --------
    >>> import numpy as np
    >>> from customobj.compare.trainers import Split, TrainResult
    >>> v = Split(np.zeros((4, 1)), np.array([0., 1., 0., 2.]), np.array([2, 2]))
    >>> r = lambda s: TrainResult(np.array(s, float), np.array(s, float), np.zeros(0), 1, 1, 0.0)
    >>> res, alpha = combine(r([0, 1, 0, 1]), r([1, 0, 1, 0]), v)  # a ranks right whenever alpha > 0.5
    >>> alpha, res.test_scores.tolist()
    (0.75, [0.25, 0.75, 0.25, 0.75])
    """
    from ..combine import best_linear_combination

    start = time.perf_counter()
    alpha, _ = best_linear_combination(a.valid_scores, b.valid_scores, valid.y, valid.sizes, k=ENSEMBLE_K)
    elapsed = time.perf_counter() - start

    def mix(s, t):
        return alpha * np.asarray(s, dtype=np.float64) + (1.0 - alpha) * np.asarray(t, dtype=np.float64)

    result = TrainResult(mix(a.test_scores, b.test_scores), mix(a.valid_scores, b.valid_scores),
                         np.zeros(0), a.best_round + b.best_round, a.rounds_trained + b.rounds_trained,
                         a.train_time + b.train_time + elapsed)
    return result, float(alpha)
