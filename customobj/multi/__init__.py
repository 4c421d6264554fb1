"""Multi-label learning to rank: :class:`MultiObjective` trains one model for several labels at once
(docs/multi-objective.md)."""
from .methods import METHODS, Method
from .objective import MultiObjective

__all__ = ["MultiObjective", "Method", "METHODS"]
