"""customobj objectives: the losses of the five papers (see SPEC.md sections 1-3)."""
from .base import Objective, Prepared, Scaled, Sum
from .pointwise import SquaredError

__all__ = ["Objective", "Prepared", "Sum", "Scaled", "SquaredError"]
