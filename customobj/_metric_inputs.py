"""The boundary helpers of :mod:`customobj.metrics` (argument checks, discounts, gains, the ``empty``
policy): one home for the graded metrics, the click metrics and :mod:`customobj.combine`."""
from __future__ import annotations

import numpy as np

from customobj import _metric_kernels as K
from customobj._validation import (
    MAX_PROPENSITY,
    MAX_ROWS,
    MIN_PROPENSITY,
    as_1d_float,
    as_gain_table,
    as_labels,
    as_scores,
    check_choice,
    check_exp_gain_labels,
    check_int,
    check_real,
)
from customobj.groups import as_groups

#: Default clipping of the click metrics' propensities: no click weighs more than ``1 / IPS_CLIP``.
IPS_CLIP = 0.01

_WHOLE_LIST = 2**62  # k=None: larger than any query
_TIES = ("stable", "pessimistic")


# ------------------------------------------------------------------------------------------------
# boundary helpers
# ------------------------------------------------------------------------------------------------
def _inputs(scores, labels, group, *, integer=False):
    s = as_scores(scores)
    y = as_labels(labels, s.shape[0], integer=integer)
    g = as_groups(group, s.shape[0])
    return s, y, g


def _k(k):
    k = check_int(k, "k", minimum=1, maximum=MAX_ROWS, allow_none=True, hint="k=None means the whole list")
    return _WHOLE_LIST if k is None else k


def _ties(ties):
    return check_choice(ties, "ties", _TIES) == "pessimistic"


def _empty(empty):
    if isinstance(empty, str):
        check_choice(empty, "empty", {"exclude"})
        return None
    if isinstance(empty, bool) or not isinstance(empty, (int, float, np.integer, np.floating)):
        raise TypeError(f"empty must be a number (e.g. 1.0 or 0.0) or 'exclude', got {type(empty).__name__}")
    return check_real(empty, "empty")


def _discounts(ptr, kind):
    """disc[r] for rank r = 0, 1, ...: 1/log2(r+2), or MPBoost's 1 then 1/log2(r+1)."""
    m = max(1, int(np.diff(ptr).max(initial=0)))
    r = np.arange(m, dtype=np.float64)
    if kind == "mpboost":
        disc = np.ones(m)
        disc[1:] = 1.0 / np.log2(r[1:] + 1.0)
        return disc
    return 1.0 / np.log2(r + 2.0)


def _row_gains(labels, gain):
    """Per-row gain: 2**y - 1 (labels <= EXP_GAIN_MAX_LABEL), or ``gain[y]`` for a gain table
    indexed by integer grade."""
    if gain is None:
        check_exp_gain_labels(labels)
        return np.exp2(labels) - 1.0
    table = as_gain_table(gain, "gain")
    if labels.size and np.any(labels != np.floor(labels)):
        raise ValueError("labels must be integer grades when a gain table is given")
    if labels.size and labels.max() >= table.size:
        raise ValueError(
            f"gain table has {table.size} entries (grades 0..{table.size - 1}) but labels reach {labels.max():g}"
        )
    return np.ascontiguousarray(table[labels.astype(np.int64)])


def _reduce(values, status, empty, per_query):
    """Apply the ``empty`` policy (a float, or None for "exclude"); return per-query values or the mean."""
    if empty is None:
        include = status == K.STATUS_OK
        values[~include] = np.nan
    else:
        include = status != K.STATUS_EMPTY_GROUP
        values[status != K.STATUS_OK] = empty
    if per_query:
        return values
    if not np.any(include):
        raise ValueError(
            "no query to average over (no non-empty query, or every query was excluded by empty='exclude')"
        )
    return float(values[include].mean())


def _ips_propensity(propensity, clip):
    """The click metrics' ``propensity`` (float64, each in ``[0, MAX_PROPENSITY]``, position 0 first) and
    ``clip`` (in ``[MIN_PROPENSITY, 1]``: a click weighs at most ``1 / clip = 1e16``, so a session's DCG
    stays finite; a denormal clip made it inf and NDCG NaN), checked."""
    rho = as_1d_float(propensity, "propensity", allow_bool=False)
    if rho.size == 0 or np.any(rho < 0.0) or np.any(rho > MAX_PROPENSITY):
        raise ValueError(f"propensity must be a non-empty array of examination propensities in [0, {MAX_PROPENSITY:g}] "
                         "(position 0 first)")
    if isinstance(clip, bool) or not isinstance(clip, (int, float, np.integer, np.floating)):
        raise TypeError(f"clip must be a number in [{MIN_PROPENSITY:g}, 1], got {type(clip).__name__}")
    if not MIN_PROPENSITY <= check_real(clip, "clip") <= 1.0:
        raise ValueError(f"clip must be in [{MIN_PROPENSITY:g}, 1] (the smallest propensity a click is divided by; "
                         f"customobj._validation.MIN_PROPENSITY), got {clip}")
    return rho, float(clip)


def _ips_gains(clicks, g, propensity, clip):
    """Each row's click weighed by its clipped inverse propensity, ``c_i / max(rho[p(i)], clip)``, the
    position ``p(i)`` its row within its session (rows in display order)."""
    bad = np.flatnonzero((clicks != 0.0) & (clicks != 1.0))
    if bad.size:
        raise ValueError(f"clicks must be 0 or 1; found {clicks[bad[0]]} at row {int(bad[0])}")
    rho, clip = _ips_propensity(propensity, clip)
    sizes = g.sizes
    if sizes.size and sizes.max() > rho.size:
        raise ValueError(f"a session shows {int(sizes.max())} rows but propensity has {rho.size} entries: give one "
                         "per display position shown")
    position = np.arange(g.n_rows) - np.repeat(g.ptr[:-1], sizes)  # rows are in display order
    return clicks / np.maximum(rho[position], clip)
