"""Intervention harvesting: examination propensities from the click logs of two or more rankers,
without randomising any result page (Agarwal, Zaitsev, Wang, Li, Najork, Joachims, "Estimating
Position Bias without Intrusive Interventions", WSDM 2019).

The result is what ``Unbiased(objective, propensity=...)`` takes (inverse propensity scoring with
known propensities).
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from .._validation import as_1d_float, check_choice, check_int
from ._inputs import DEFAULT_POSITIONS, MAX_POSITION, as_position, check_clicks, check_position_groups
from .reader import ClickData
from .simulation import ClickLog
from ..groups import as_groups

__all__ = ["harvest_propensities", "HARVEST_ESTIMATORS", "ALL_PAIRS", "TOP_RATIO"]

#: The estimators, as codes once the option is read (nothing below compares strings).
ALL_PAIRS, TOP_RATIO = 0, 1
#: ``estimator`` names -> codes: the one list.
HARVEST_ESTIMATORS = {"all_pairs": ALL_PAIRS, "top_ratio": TOP_RATIO}
#: Bound of the log-propensities the extremum estimator searches (``exp(+-30)``: no overflow).
_LOG_BOUND = 30.0


def _id_class(ids: np.ndarray, arg: str) -> str:
    if ids.dtype.kind in "iuf":
        if ids.dtype.kind == "f" and not np.all(np.isfinite(ids)):
            raise ValueError(f"{arg} holds a non-finite id")
        return "numbers"
    if ids.dtype.kind in "US" or (ids.dtype.kind == "O" and all(isinstance(v, (str, bytes)) for v in ids)):
        return "strings"
    raise TypeError(f"{arg} must hold integer or string ids, got dtype {ids.dtype}")


def _one_log(log: Any, i: int) -> tuple:
    """``(clicks, group sizes, positions, query id per row, document id per row)`` of ``logs[i]``, checked."""
    arg = f"logs[{i}]"
    if isinstance(log, ClickLog):  # a simulated log: source query and source row identify a query-document
        query, document = np.asarray(log.qid), np.asarray(log.row)
    elif isinstance(log, ClickData):
        if log.document is None:
            raise ValueError(f"{arg} has no document ids: read it with read_click_log(..., document='<column>'), "
                             "the column identifying a document across logs")
        sizes = as_groups(log.group, int(np.asarray(log.y).shape[0]), name=f"{arg}.group").sizes
        query, document = np.repeat(np.asarray(log.query), sizes), np.asarray(log.document)
    else:
        raise TypeError(f"{arg} must be a ClickLog (simulate_clicks) or a ClickData (read_click_log), "
                        f"got {type(log).__name__}")
    y = as_1d_float(log.y, f"{arg}.y")
    check_clicks(y, f"{arg}.y")
    groups = as_groups(log.group, y.size, name=f"{arg}.group")
    position = as_position(log.position, f"{arg}.position")
    check_position_groups(position, groups.ptr, y.size, f"{arg}.position")
    for name, ids in (("query", query), ("document", document)):
        if ids.ndim != 1 or ids.shape[0] != y.size:
            raise ValueError(f"{arg}: {name} ids must be one per row ({y.size}), got shape {ids.shape}")
    return y, groups, position, query, document


def _codes(per_log: list, arg: str) -> list:
    """Integer codes of ids shared across logs (equal ids, equal codes); ids of mixed kinds refused:
    a string "3" and a number 3 would match silently otherwise."""
    kinds = [_id_class(ids, f"logs[{i}] {arg} ids") for i, ids in enumerate(per_log)]
    if len(set(kinds)) > 1:
        j = kinds.index(next(k for k in kinds if k != kinds[0]))
        raise ValueError(f"logs[{j}]: {arg} ids are {kinds[j]} but those of logs[0] are {kinds[0]}: no row "
                         "could match across the logs")
    _, code = np.unique(np.concatenate(per_log), return_inverse=True)
    code = code.reshape(-1).astype(np.int64)
    return np.split(code, np.cumsum([ids.size for ids in per_log])[:-1])


def _cells(logs: Sequence[Any], n_positions: Optional[int]) -> tuple:
    """Every (query, document, position) shown in any log, with its impressions ``N``, clicks ``C`` and
    exposure ``E`` (the paper's ``sum_i n_i 1[rank_i(q, d) = k]``), and the positions tracked."""
    parts = [_one_log(log, i) for i, log in enumerate(logs)]
    if len({type(log) for log in logs}) > 1:  # simulated rows and a table's ids are no common key
        raise TypeError("logs mixes ClickLog (simulated: source rows) and ClickData (a table's ids): give logs "
                        "of one kind")
    q_codes = _codes([p[3] for p in parts], "query")
    d_codes = _codes([p[4] for p in parts], "document")
    if isinstance(logs[0], ClickLog):  # rows of one data set: a row belongs to one query
        q_all, d_all = np.concatenate(q_codes), np.concatenate(d_codes)
        first = np.unique(d_all, return_index=True)[1]
        owner = np.empty(d_all.max(initial=-1) + 1, dtype=np.int64)
        owner[d_all[first]] = q_all[first]
        bad = np.flatnonzero(owner[d_all] != q_all)
        if bad.size:
            i = int(np.searchsorted(np.cumsum([q.size for q in q_codes]), bad[0], side="right"))
            raise ValueError(f"logs[{i}]: a source row appears under two queries across the logs: logs simulated "
                             "from different data sets (ClickLog.row identifies a document only within one)")
    k = n_positions
    if k is None:
        k = int(min(max(int(p[2].max(initial=-1)) for p in parts) + 1, DEFAULT_POSITIONS))
    cols = []
    for i, ((y, groups, position, _, _), qc, dc) in enumerate(zip(parts, q_codes, d_codes)):
        session_query = qc[groups.ptr[:-1]]
        if np.any(qc != np.repeat(session_query, groups.sizes)):
            raise ValueError(f"logs[{i}]: a session mixes query ids; each session is one query")
        session = np.repeat(np.arange(groups.n_groups), groups.sizes)
        order = np.lexsort((dc, session))
        twice = np.flatnonzero((dc[order][1:] == dc[order][:-1]) & (session[order][1:] == session[order][:-1]))
        if twice.size:
            raise ValueError(f"logs[{i}]: session {int(session[order][twice[0]])} shows one document twice (rows "
                             f"{int(order[twice[0]])} and {int(order[twice[0] + 1])}); a document has one position")
        per_query = np.bincount(session_query)  # s_i(q): sessions of each query in log i
        keep = position < k
        # each impression of log i adds n_i / s_i(q) to the exposure of its (q, d, k): summed over the
        # sessions of q that show d at k, sum_i n_i (share of q's sessions in log i showing d at k),
        # which is the paper's sum_i n_i 1[rank_i(q, d) = k] for a deterministic ranker
        cols.append((qc[keep], dc[keep], position[keep], y[keep], groups.n_groups / per_query[qc[keep]]))
    q, d, pos, click, expo = (np.concatenate(c) for c in zip(*cols))
    order = np.lexsort((pos, d, q))
    q, d, pos, click, expo = q[order], d[order], pos[order], click[order], expo[order]
    new = np.ones(q.size, dtype=bool)
    new[1:] = (q[1:] != q[:-1]) | (d[1:] != d[:-1]) | (pos[1:] != pos[:-1])
    start = np.flatnonzero(new)
    N = np.diff(np.append(start, q.size)).astype(np.float64)
    return q[start], d[start], pos[start], N, np.add.reduceat(click, start), np.add.reduceat(expo, start), k


def _interventional_sets(q, d, pos, N, C, E, k) -> tuple:
    """``(Cw, Rw)``, ``k x k``: ``Cw[a, b]`` the weighted clicks at position ``a`` of the query-documents
    shown both at ``a`` and at ``b`` (the paper's ``c~_a^{a,b}``), ``Rw[a, b]`` their weighted impressions."""
    cw, rw = C / E, N / E
    pair_start = np.flatnonzero(np.r_[True, (q[1:] != q[:-1]) | (d[1:] != d[:-1])])
    sizes = np.diff(np.append(pair_start, q.size))
    within = np.arange(q.size) - np.repeat(pair_start, sizes)
    left = np.repeat(sizes, sizes) - within  # cells after this one in its query-document, itself included
    Cw, Rw = np.zeros((k, k)), np.zeros((k, k))
    for t in range(1, int(sizes.max(initial=1))):  # every pair of positions of one query-document
        a = np.flatnonzero(left > t)
        b = a + t
        for x, y in ((a, b), (b, a)):
            np.add.at(Cw, (pos[x], pos[y]), cw[x])
            np.add.at(Rw, (pos[x], pos[y]), rw[x])
    return Cw, Rw


def _fewer_positions(k: int) -> str:
    """The advice to estimate the first ``k`` positions only: ``n_positions=k`` where it is accepted (at
    least 2), else what else to change (position 2 is already what fails)."""
    if k >= 2:
        return f"give n_positions={k} or"
    return "give"


def _check_estimable(Cw: np.ndarray, Rw: np.ndarray) -> None:
    from scipy.sparse.csgraph import connected_components

    if not np.any(Rw > 0):
        raise ValueError("logs: no query-document is shown at two different positions across the logs, so no "
                         "intervention can be harvested (logs of one ranker, or of rankers with no document in "
                         "common?)")
    _, label = connected_components(Rw > 0, directed=False)
    apart = np.flatnonzero(label != label[0])
    if apart.size:
        raise ValueError(f"logs: position {int(apart[0]) + 1} (1 = top) is linked to the top by no query-document "
                         f"shown at both; {_fewer_positions(int(apart[0]))} logs of rankers that differ more")
    silent = np.flatnonzero(Cw.sum(axis=1) <= 0)
    if silent.size:
        what = "the top's propensity, the reference of all others," if silent[0] == 0 else "its propensity"
        raise ValueError(f"logs: no click at position {int(silent[0]) + 1} (1 = top) on the query-documents it "
                         f"shares with other positions: {what} would be 0; {_fewer_positions(int(silent[0]))} "
                         "more sessions")


def _profile(x: np.ndarray, a, b, ca, ra, cb, rb) -> tuple:
    """The AllPairs objective with each pair's relevance ``q_ab`` at its optimum (a quadratic's
    smaller root), and its gradient in ``log p_2..p_k`` (``p_1 = 1``)."""
    from scipy.special import xlogy

    p = np.exp(np.concatenate(([0.0], x)))
    u, v = p[a], p[b]
    A, R = ca + cb, ra + rb
    B = (ra + cb) * u + (rb + ca) * v
    q = 2.0 * A / (B + np.sqrt(np.maximum(B * B - 4.0 * R * u * v * A, 0.0)))
    uq, vq = np.minimum(u * q, 1.0), np.minimum(v * q, 1.0)
    value = xlogy(ca, uq) + xlogy(ra - ca, 1.0 - uq) + xlogy(cb, vq) + xlogy(rb - cb, 1.0 - vq)
    # d/d log p of c log(p q) + (r - c) log(1 - p q) at fixed q (envelope theorem: q is at its optimum)
    ga = ca - np.where(ra > ca, (ra - ca) * uq / np.maximum(1.0 - uq, 1e-300), 0.0)
    gb = cb - np.where(rb > cb, (rb - cb) * vq / np.maximum(1.0 - vq, 1e-300), 0.0)
    grad = np.bincount(a, ga, p.size) + np.bincount(b, gb, p.size)
    return -float(value.sum()), -grad[1:]


def _all_pairs(Cw: np.ndarray, Rw: np.ndarray) -> np.ndarray:
    from scipy.optimize import minimize

    k = Cw.shape[0]
    a, b = np.nonzero(np.triu(Rw > 0, 1))
    scale = 1.0 / Rw[a, b].mean()  # counts of order one: the maximiser does not move, the tolerances fit
    args = (a, b, Cw[a, b] * scale, Rw[a, b] * scale, Cw[b, a] * scale, Rw[b, a] * scale)
    res = minimize(_profile, np.zeros(k - 1), args=args, jac=True, method="L-BFGS-B",
                   bounds=[(-_LOG_BOUND, _LOG_BOUND)] * (k - 1),
                   options={"maxiter": 10_000, "ftol": 1e-15, "gtol": 1e-10})
    if not np.all(np.isfinite(res.x)):
        raise ValueError(f"logs: the AllPairs estimate did not converge ({res.message})")
    return np.exp(np.concatenate(([0.0], res.x)))


def _top_ratio(Cw: np.ndarray, Rw: np.ndarray) -> np.ndarray:
    k = Cw.shape[0]
    missing = np.flatnonzero((Rw[0, 1:] <= 0) | (Cw[0, 1:] <= 0) | (Cw[1:, 0] <= 0))
    if missing.size:
        fewer = f" or n_positions={int(missing[0]) + 1}" if missing[0] >= 1 else ""
        raise ValueError(f"logs: estimator='top_ratio' needs clicked query-documents shown both at the top and at "
                         f"position {int(missing[0]) + 2}; use estimator='all_pairs' (it chains positions){fewer}")
    return np.concatenate(([1.0], Cw[1:k, 0] / Cw[0, 1:k]))


def harvest_propensities(logs: Sequence[Any], *, n_positions: Optional[int] = None,
                         estimator: str = "all_pairs") -> np.ndarray:
    """Examination propensities per position from the click logs of two or more rankers.

    Under the position-based model a query-document ``(q, d)`` shown at position ``k`` is clicked
    with probability ``p_k rel(q, d)``. Different rankers show the same ``(q, d)`` at different
    positions: the query-documents shown at both ``k`` and ``k'`` form the interventional set
    ``S_{k,k'}`` (sec. 4 of the paper), in which position, not relevance, tells the click rates
    apart. With ``n_i`` the sessions of log ``i``, each impression of ``d`` at ``k`` in a session
    of ``q`` weighs ``w(q, d, k) = 1 / sum_i n_i 1[rank_i(q, d) = k]`` (eq. 6; a ranker showing
    ``d`` at ``k`` in a share of its sessions of ``q`` counts that share of ``n_i``):

    .. math::

        \\tilde c_k^{k,k'} = \\sum_{(q, d) \\in S_{k,k'}} w(q, d, k) \\sum_{\\text{impressions at } k} c,
        \\qquad
        \\tilde r_k^{k,k'} = \\sum_{(q, d) \\in S_{k,k'}} w(q, d, k) \\sum_{\\text{impressions at } k} 1,

    so that ``E[c~_k^{k,k'}] = p_k sum_{S_{k,k'}} P(q) rel(q, d)``, the same sum at ``k`` and ``k'``.
    ``estimator="all_pairs"`` (default) is the paper's AllPairs extremum estimator (sec. 5): with a
    free ``q_{k,k'} = q_{k',k}`` per set,

    .. math::

        \\hat p = \\arg\\max_{p, q} \\sum_{k \\ne k'} \\tilde c_k^{k,k'} \\log(p_k q_{k,k'})
                  + (\\tilde r_k^{k,k'} - \\tilde c_k^{k,k'}) \\log(1 - p_k q_{k,k'}),

    ``p_1 = 1`` (only ratios are identified), each ``q_{k,k'}`` profiled out in closed form and
    ``log p`` found by L-BFGS; it chains positions that never meet the top through others.
    ``estimator="top_ratio"`` is the ratio ``p_k = c~_k^{1,k} / c~_1^{1,k}`` of the sets with the
    top position (the swap-intervention estimate of Joachims, Swaminathan, Schnabel, WSDM 2017).

    Parameters
    ----------
    logs : sequence of ClickLog or ClickData
        Two or more click logs, one per ranker (or ranker version), in the layout of
        :func:`simulate_clicks` (``qid`` and ``row`` identify a query-document: the logs must come
        from one data set) or of :func:`customobj.data.read_click_log` read with ``document=``
        (its ``query`` and ``document`` ids identify it; ids of one kind, numbers or strings, in
        every log). Positions 0-based, one session per group.
    n_positions : int, optional
        Positions estimated, ``2 <= n_positions <= 10_000`` (rows below are ignored). Default: the
        deepest position any log shows, at most 32.
    estimator : "all_pairs" or "top_ratio"

    Returns
    -------
    ndarray of float, shape (n_positions,)
        The propensity of each position relative to the top (first entry 1.0), each in
        ``[exp(-30), exp(30)]`` (inside what ``Unbiased(objective, propensity=...)`` accepts).

    Raises
    ------
    ValueError
        Naming the argument: fewer than two logs; a log without document ids; ids of different
        kinds across logs; a source row under two queries (simulated logs of different data); a
        session showing a document twice; no query-document shown at two positions; a position
        linked to the top by no interventional set, or never clicked in one.

    Examples
    --------
    >>> import numpy as np, customobj
    >>> from customobj.clicks import harvest_propensities, simulate_clicks
    >>> d = customobj.data.synthetic(300, 12, 5, seed=0)
    >>> rng = np.random.default_rng(0)
    >>> logs = [simulate_clicks(d, ranker=d.y + rng.normal(0, 2, d.y.size), sessions=20, shown=5, seed=s)
    ...         for s in range(3)]
    >>> p = harvest_propensities(logs)
    >>> bool(np.abs(p - 1 / np.arange(1, 6)).max() < 0.05)
    True
    >>> obj = customobj.Unbiased(customobj.LambdaRank(), propensity=p)
    """
    if isinstance(logs, (str, bytes, ClickLog, ClickData)) or not isinstance(logs, Sequence):
        raise TypeError("logs must be a list of two or more click logs (ClickLog or ClickData), one per ranker")
    if len(logs) < 2:
        raise ValueError(f"logs holds {len(logs)} click log(s): intervention harvesting needs the logs of two or "
                         "more rankers (one ranker shows each query-document at one position)")
    n_positions = check_int(n_positions, "n_positions", minimum=2, maximum=MAX_POSITION, allow_none=True)
    code = HARVEST_ESTIMATORS[check_choice(estimator, "estimator", set(HARVEST_ESTIMATORS))]
    q, d, pos, N, C, E, k = _cells(logs, n_positions)
    if k < 2:
        raise ValueError("logs show one position only: there is no position bias to estimate")
    Cw, Rw = _interventional_sets(q, d, pos, N, C, E, k)
    _check_estimable(Cw, Rw)
    if code == ALL_PAIRS:
        return _all_pairs(Cw, Rw)
    if code == TOP_RATIO:
        return _top_ratio(Cw, Rw)
    raise AssertionError(f"estimator code {code} has no implementation")  # check_choice admits only the names
