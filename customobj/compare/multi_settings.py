"""``customobj compare --labels``' trade-off settings: ``--preferences`` (the preference vectors of the
preference-based methods) and ``--bounds`` (the constrained methods' bounds), parsed once into records.

``--preferences 0.1,0.5,0.9``: each entry ``w`` in (0, 1) is the secondary labels' share of one
preference vector, ``(1 - w, w / (m - 1), ...)`` (label 1, the primary, keeps ``1 - w``).

``--bounds w=0.3,w=0.7,1.2``: each entry is one model of each constrained method. ``w=S`` takes the
bound from the linear model of share ``S`` (its secondary labels' training costs after the last round,
so some model meets it; on the test part the bound counts as met when each secondary NDCG@k is at most
``NDCG_SLACK`` below that linear model's). A number ``C`` > 0 is the bound itself, the same upper limit
on every secondary label's training cost (mean LambdaRank loss per query); on the test part it counts as
met when each secondary label's test cost is at most ``C``.
"""
from __future__ import annotations

import argparse
import math
from typing import NamedTuple, Optional

import numpy as np

from .._cli_errors import UsageError

__all__ = ["RAYS", "BOUND_RAYS", "Bound", "parse_preferences", "parse_bounds", "preference_vectors",
           "add_arguments", "refuse_without_labels"]

#: The default shares of the secondary labels in each preference vector (label 1 keeps 1 - w).
RAYS = (0.1, 0.3, 0.5, 0.7, 0.9)
#: The default bounds: those reached by the linear models of these shares.
BOUND_RAYS = (0.3, 0.7)


class Bound(NamedTuple):
    """One bound setting: from the linear model of share ``ray``, or the cost ``value`` (the other None)."""

    ray: Optional[float]
    value: Optional[float]

    @property
    def name(self) -> str:
        return f"bound from w={self.ray:g}" if self.ray is not None else f"bound {self.value:g}"


def _share(tok: str, option: str) -> float:
    try:
        w = float(tok)
    except ValueError:
        raise UsageError(f"{option}: {tok!r} is not a number") from None
    if not 0.0 < w < 1.0:
        raise UsageError(f"{option}: a share must lie strictly between 0 and 1 (the secondary labels' part of the "
                         f"preference; label 1 keeps the rest), got {tok!r}")
    return w


def _tokens(text: str, option: str) -> list:
    toks = [t.strip() for t in str(text).split(",")]
    if not toks or any(not t for t in toks):
        raise UsageError(f"{option}: an empty entry in {text!r} (comma-separated values)")
    if len(set(toks)) != len(toks):
        raise UsageError(f"{option}: an entry is given twice in {text!r}")
    return toks


def parse_preferences(text: Optional[str]) -> tuple:
    """``"0.2,0.8"`` -> ``(0.2, 0.8)`` (default :data:`RAYS`); ``UsageError`` naming ``--preferences``.

    >>> parse_preferences("0.2,0.8")
    (0.2, 0.8)
    """
    if text is None:
        return RAYS
    return tuple(_share(t, "--preferences") for t in _tokens(text, "--preferences"))


def parse_bounds(text: Optional[str]) -> tuple:
    """``"w=0.3,1.5"`` -> ``(Bound(0.3, None), Bound(None, 1.5))`` (default: :data:`BOUND_RAYS`).

    >>> [b.name for b in parse_bounds("w=0.3,1.5")]
    ['bound from w=0.3', 'bound 1.5']
    """
    if text is None:
        return tuple(Bound(w, None) for w in BOUND_RAYS)
    out = []
    for tok in _tokens(text, "--bounds"):
        if tok.startswith("w="):
            out.append(Bound(_share(tok[2:], "--bounds"), None))
            continue
        try:
            value = float(tok)
        except ValueError:
            raise UsageError(f"--bounds: {tok!r} is neither w=SHARE (the bound of the linear model of that share) "
                             "nor a cost value") from None
        if not (math.isfinite(value) and value > 0):
            raise UsageError(f"--bounds: a cost bound must be a positive number (mean LambdaRank loss per query), "
                             f"got {tok!r}")
        out.append(Bound(None, value))
    return tuple(out)


def preference_vectors(rays: tuple, m: int) -> np.ndarray:
    """One preference vector per share: ``(1 - w, w / (m - 1), ...)``, all positive.

    >>> preference_vectors((0.1,), 3).round(2).tolist()
    [[0.9, 0.05, 0.05]]
    """
    w = np.asarray(rays, dtype=np.float64)
    return np.column_stack([1 - w] + [w / (m - 1)] * (m - 1))


def add_arguments(group: "argparse._ArgumentGroup") -> None:
    """``--preferences`` and ``--bounds``, beside ``--labels`` in compare's parser."""
    group.add_argument("--preferences", metavar="W[,W...]",
                       help="with --labels: the secondary labels' share of each preference vector, each in (0, 1) "
                            f"(default {','.join(map(str, RAYS))})")
    group.add_argument("--bounds", metavar="B[,B...]",
                       help="with --labels: the constrained methods' bounds, each w=SHARE (the secondary training "
                            "costs of the linear model of that share) or a cost value (mean LambdaRank loss per "
                            f"query) (default {','.join(f'w={w}' for w in BOUND_RAYS)})")


def refuse_without_labels(args: argparse.Namespace) -> None:
    """``--preferences`` / ``--bounds`` only mean something with ``--labels``."""
    for opt, value in (("--preferences", getattr(args, "preferences", None)), ("--bounds", getattr(args, "bounds", None))):
        if value is not None:
            raise UsageError(f"{opt} applies only with --labels (the multi-label comparison)")
