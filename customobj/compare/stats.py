"""Multiple-testing correction of the paired tests of ``customobj compare``.

Every method is tested against the same baseline, so with m methods a p-value below 0.05 turns up
by chance far more often than 5% of the time. Holm's step-down procedure (Holm 1979, "A simple
sequentially rejective multiple test procedure") controls the family-wise error rate at the
chosen level for any dependence between the tests, and rejects at least what Bonferroni rejects.
:func:`paired_difference` is the paired t-test over a few independent units (benchmarks/click_study.py:
the (fold, click log) units of a semi-synthetic study), with the confidence interval of the mean.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

__all__ = ["ALPHA", "holm", "paired_difference"]

#: Family-wise error rate at which the terminal table marks a difference as significant.
ALPHA = 0.05


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm-adjusted p-values, in the order given.

    With the m finite p-values sorted, :math:`p_{(1)} \\le \\dots \\le p_{(m)}`,

    .. math:: \\tilde p_{(i)} = \\min\\Bigl(1,\\ \\max_{j \\le i} (m - j + 1)\\, p_{(j)}\\Bigr)

    and a hypothesis is rejected at level :math:`\\alpha` when :math:`\\tilde p \\le \\alpha`. NaN
    entries (no test could be run, e.g. identical rankings) stay NaN and do not count in m.

    Examples
    --------
    >>> holm([0.01, 0.04, 0.03, float("nan")]).round(4).tolist()
    [0.03, 0.06, 0.06, nan]
    """
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError(f"p_values must be one-dimensional, got shape {p.shape}")
    finite = ~np.isnan(p)
    if np.any((p[finite] < 0) | (p[finite] > 1)):
        raise ValueError("p_values must lie in [0, 1] (or be NaN)")
    out = np.full(p.shape, math.nan)
    idx = np.flatnonzero(finite)
    m = idx.size
    if m == 0:
        return out
    order = idx[np.argsort(p[idx], kind="stable")]
    scaled = (m - np.arange(m)) * p[order]
    out[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return out


def paired_difference(diff: Sequence[float], *, level: float = 0.95) -> dict:
    """The paired t-test of differences ``diff`` (one per unit, e.g. per fold and click log).

    With :math:`n` differences of mean :math:`\\bar d` and standard deviation :math:`s` (``ddof=1``),

    .. math:: t = \\frac{\\bar d}{s / \\sqrt n}, \\qquad
              \\bar d \\pm t_{n-1,\\,(1 + \\text{level})/2}\\, \\frac{s}{\\sqrt n}

    and the two-sided p-value of :math:`t` on :math:`n - 1` degrees of freedom (Student 1908). The
    interval is not adjusted for multiplicity; adjust a family's p-values with :func:`holm`.

    Returns
    -------
    dict
        ``n``, ``mean``, ``ci_low``, ``ci_high``, ``p``, ``wins`` (differences > 0), ``losses`` (< 0).
        With fewer than two units, or all differences equal (no spread), the interval and ``p`` are
        NaN, except that all-zero differences give the interval [0, 0] and ``p`` NaN (no test to run).

    Examples
    --------
    >>> r = paired_difference([0.02, 0.01, 0.03, 0.00, 0.04])
    >>> round(r["mean"], 4), round(r["ci_low"], 4), round(r["ci_high"], 4), round(r["p"], 4)
    (0.02, 0.0004, 0.0396, 0.0474)
    """
    from scipy import stats

    d = np.asarray(diff, dtype=np.float64)
    if d.ndim != 1 or d.size == 0:
        raise ValueError(f"diff must be a non-empty one-dimensional sequence, got shape {d.shape}")
    if not np.all(np.isfinite(d)):
        raise ValueError("diff must be finite")
    if not (isinstance(level, float) and 0.0 < level < 1.0):
        raise ValueError(f"level must be a float in (0, 1), got {level!r}")
    out = {"n": int(d.size), "mean": float(d.mean()), "ci_low": math.nan, "ci_high": math.nan, "p": math.nan,
           "wins": int((d > 0).sum()), "losses": int((d < 0).sum())}
    sd = float(d.std(ddof=1)) if d.size > 1 else 0.0
    if d.size > 1 and np.all(d == 0):
        out["ci_low"] = out["ci_high"] = 0.0
    elif d.size > 1 and sd > 0:  # the test compare's report runs (report.paired_comparison), with its interval
        res = stats.ttest_1samp(d, 0.0)
        ci = res.confidence_interval(confidence_level=level)
        out["ci_low"], out["ci_high"], out["p"] = float(ci.low), float(ci.high), float(res.pvalue)
    return out
