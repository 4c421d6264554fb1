r"""EPO's round LP for ``m >= 3`` weights on one HiGHS model kept from round to round (highspy).

The LP of every round (:func:`customobj.multi.solvers.epo_lp`) has the same shape: ``m`` columns in
``[0, 1]``, the simplex row :math:`1^\top x = 1` and at most ``m + 1`` rows :math:`A x \ge b`.

.. math::

    \max_{x} \; c^\top x \quad \text{s.t.} \quad 1^\top x = 1, \; A x \ge b, \; 0 \le x \le 1

scipy's ``milp`` / ``linprog`` build a new HiGHS model and run scipy's Python wrapper on every call,
which is most of a call's 1.7-2.5 ms (docs/multi-objective.md). :class:`SimplexLP` builds the columns
and the simplex row once; a solve replaces the costs and the ``A x >= b`` rows (``changeColsCost``,
``deleteRows``/``addRows``), clears the solver's basis (so the weights are those of that round's LP
alone, never a warm start's vertex from the rounds before it) and
runs HiGHS. The weights equal scipy's HiGHS (``milp``) to 1e-12 on EPO's rounds wherever the optimum is a
point; a flat objective (identical gradients: every weight gives the same gradient) may get another
vertex (tests/test_multi_highs_lp.py). After other rounds an LP's weights may differ from a fresh
model's in the last bits (1e-17 seen: ``deleteRows`` leaves the rows stored otherwise).

References
----------
Huangfu & Hall (2018), "Parallelizing the dual revised simplex method", Math. Prog. Comp. (HiGHS);
Mahapatra & Rajan (2020), ICML, section 4 (EPO's LP).

Examples
--------
>>> lp = SimplexLP(3)
>>> x = lp.solve(np.array([1.0, 2.0, 0.0]), np.array([[1.0, 0.0, 0.0]]), np.array([0.25]))  # x1 >= 1/4
>>> np.round(x, 12).tolist()
[0.25, 0.75, 0.0]
"""
from __future__ import annotations

import os
import sys
import threading
from typing import Any, Optional

import numpy as np

__all__ = ["SimplexLP", "model_for"]

_LOCAL = threading.local()  # one model per thread and per m: a HiGHS model is not shared across threads
_BANNER = {"hidden": False}
_BANNER_LOCK = threading.Lock()


def _new_highs(highspy: Any) -> Any:
    """A ``highspy.Highs()``, without the banner HiGHS' first model in a process prints ("Running HiGHS
    ... Copyright") to the C-level standard output before any option can be set: a user's EPO run would
    print it in the middle of training. That construction runs with file descriptor 1 on ``os.devnull``
    (Python's own buffer flushed first, restored after); later models print nothing."""
    with _BANNER_LOCK:
        if _BANNER["hidden"]:
            return highspy.Highs()
        _BANNER["hidden"] = True
        sys.stdout.flush()
        try:
            saved = os.dup(1)
        except OSError:  # no descriptor 1 (a detached process): nothing to hide
            return highspy.Highs()
        try:
            with open(os.devnull, "w") as null:
                os.dup2(null.fileno(), 1)
                try:
                    return highspy.Highs()
                finally:
                    os.dup2(saved, 1)
        finally:
            os.close(saved)


class SimplexLP:
    """``argmax objective @ x`` over the simplex with ``lhs @ x >= rhs`` on a HiGHS model of ``m``
    columns built once (see the module's docstring); :meth:`solve` returns ``None`` when HiGHS does not
    report an optimum (infeasible rows)."""

    def __init__(self, m: int) -> None:
        import highspy  # on first use: ``import customobj`` does not load HiGHS

        if not isinstance(m, int) or m < 1:
            raise ValueError(f"m must be a positive int, got {m!r}")
        self.m = m
        self._inf = highspy.kHighsInf
        self._optimal = highspy.HighsModelStatus.kOptimal
        self._cols = np.arange(m, dtype=np.int32)
        h = _new_highs(highspy)
        h.setOptionValue("output_flag", False)
        # One thread: an LP of a few weights gains nothing from HiGHS' worker pool, which would otherwise
        # start beside the booster's own threads every training.
        h.setOptionValue("threads", 1)
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = m, 1
        lp.col_cost_, lp.col_lower_, lp.col_upper_ = np.zeros(m), np.zeros(m), np.ones(m)
        lp.row_lower_, lp.row_upper_ = np.ones(1), np.ones(1)
        lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
        lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = m, 1
        lp.a_matrix_.start_ = np.array([0, m], dtype=np.int32)
        lp.a_matrix_.index_ = self._cols
        lp.a_matrix_.value_ = np.ones(m)
        if h.passModel(lp) != highspy.HighsStatus.kOk:
            raise RuntimeError("HiGHS refused the simplex LP's model")
        self._highs = h
        self._rows = 0  # rows A x >= b in the model now (after the simplex row)

    def solve(self, objective: np.ndarray, lhs: np.ndarray, rhs: np.ndarray) -> Optional[np.ndarray]:
        """The weights (clipped to ``[0, 1]``, summing to 1), or ``None``; ``lhs`` is ``(k, m)``,
        ``rhs`` ``(k,)``, all finite (non-finite LPs stay with scipy, :func:`~customobj.multi.solvers.solve_simplex_lp`)."""
        m, h = self.m, self._highs
        objective = np.asarray(objective, dtype=np.float64)
        lhs = np.asarray(lhs, dtype=np.float64).reshape(-1, m)
        rhs = np.asarray(rhs, dtype=np.float64).reshape(-1)
        if objective.shape != (m,) or rhs.shape != (lhs.shape[0],):
            raise ValueError(f"objective must be ({m},) and rhs one entry per row of lhs, got {objective.shape}, "
                             f"{lhs.shape}, {rhs.shape}")
        h.clearSolver()  # no basis from an earlier round: this round's LP alone decides the weights
        h.changeColsCost(m, self._cols, -objective)  # HiGHS minimises
        if self._rows:
            h.deleteRows(self._rows, np.arange(1, 1 + self._rows, dtype=np.int32))
        k = lhs.shape[0]
        if k:
            h.addRows(k, rhs, np.full(k, self._inf), k * m, np.arange(0, k * m, m, dtype=np.int32),
                      np.tile(self._cols, k), np.ascontiguousarray(lhs).ravel())
        self._rows = k
        h.run()
        if h.getModelStatus() != self._optimal:
            return None
        x = np.clip(np.asarray(h.getSolution().col_value, dtype=np.float64), 0.0, 1.0)
        total = x.sum()
        return x / total if np.isfinite(total) and total > 0 else None


def model_for(m: int) -> SimplexLP:
    """This thread's :class:`SimplexLP` of ``m`` weights (built on first use, then kept)."""
    models = getattr(_LOCAL, "models", None)
    if models is None:
        models = _LOCAL.models = {}
    if m not in models:
        models[m] = SimplexLP(m)
    return models[m]
