"""Semi-synthetic click logs from LETOR data (Joachims, Swaminathan, Schnabel, WSDM 2017, sec. 6;
Ai, Bi, Luo, Guo, Croft, SIGIR 2018, sec. 5.1): a production ranker orders each query, the top
``shown`` rows are displayed, and simulated users click by a position-based or a cascade model.

Re-exported as :func:`customobj.data.simulate_clicks` and :func:`customobj.clicks.simulate_clicks`.
"""
from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import numpy as np

from ._inputs import row_order_positions
from .._validation import as_1d_float, as_labels, check_choice, check_int, check_nonnegative
from ..groups import as_groups

__all__ = ["ClickLog", "simulate_clicks", "CLICK_MODELS", "PBM", "CASCADE"]

#: The click models, as codes once the option is read (nothing below compares strings).
PBM, CASCADE = 0, 1
#: The click models' names (``click_model``, ``customobj compare --clicks``) -> their codes: the one list.
CLICK_MODELS = {"pbm": PBM, "cascade": CASCADE}
#: Largest click log simulated at once (rows = shown rows x sessions): about 1 GB of indices and draws.
MAX_LOG_ROWS = 50_000_000


class ClickLog(NamedTuple):
    """Simulated sessions, one query group per session, rows in displayed order.

    ``X``, ``y`` (clicks, 0 / 1) and ``group`` (rows per session) train like any LETOR data;
    ``position`` is each row's display position (0 = top), ``true_label`` its graded label (for
    evaluation only), ``row`` its row in the source data, ``qid`` its source query.
    """

    X: Any
    y: np.ndarray
    group: np.ndarray
    position: np.ndarray
    true_label: np.ndarray
    row: np.ndarray
    qid: np.ndarray


def _ranker_scores(ranker, data, n):
    if hasattr(ranker, "predict"):
        ranker = ranker.predict(data.X)
    return as_1d_float(ranker, "ranker", n=n, allow_bool=False)


def _click_table(click_prob):
    if isinstance(click_prob, (str, bytes)) or np.ndim(click_prob) != 1 or len(click_prob) == 0:
        raise TypeError("click_prob must be a non-empty sequence of click probabilities, one per grade")
    table = as_1d_float(click_prob, "click_prob", allow_bool=False)
    bad = np.flatnonzero((table < 0.0) | (table > 1.0))
    if bad.size:
        raise ValueError(f"click_prob must be probabilities in [0, 1]; found {table[bad[0]]} for grade {int(bad[0])}")
    return table


def simulate_clicks(data: Any, *, ranker: Any, click_model: str = "pbm", eta: float = 1.0,
                    click_prob: Sequence[float] = (0.1, 0.5, 1.0), shown: int = 10, sessions: int = 12,
                    seed: int = 0) -> ClickLog:
    """Simulate the click log of ``sessions`` users per query on the ranker's top ``shown`` rows.

    For each query, the rows are sorted by ``ranker`` (descending, ties by row order) and the
    first ``shown`` displayed. A row at display position ``p`` (0-based: 0 is the top; ``r = p + 1``
    below) with grade ``y`` is clicked

    .. math::

        \\text{pbm:}\\quad P(c = 1) = (1 / r)^{\\eta}\\,\\text{click\\_prob}[y],
        \\qquad
        \\text{cascade:}\\quad P(c_r = 1) = \\text{click\\_prob}[y]\\prod_{r' < r}(1 - \\text{click\\_prob}[y_{r'}])

    (the cascade user scans down and leaves after the first click; ``eta`` is unused there).
    Grades beyond the table use its last entry. The same arguments give the same log.

    Parameters
    ----------
    data : LetorData or any ``(X, y, group)``
        Graded labels (non-negative integers) and query sizes.
    ranker : array of scores, one per row, or a model with ``predict(data.X)``
        The production ranker whose order users see.
    click_model : "pbm" or "cascade"
    eta : float >= 0
        Severity of the position bias (PBM): examination ``(1/r)^eta``.
    click_prob : sequence of floats in [0, 1]
        Click probability of an examined row per grade (default 0.1 / 0.5 / 1.0 for 0 / 1 / 2).
    shown, sessions, seed : int
        Rows displayed per query, sessions per query, the random seed.

    Returns
    -------
    ClickLog

    Examples
    --------
    >>> import customobj
    >>> d = customobj.data.synthetic(20, 10, 5, seed=0)
    >>> log = customobj.data.simulate_clicks(d, ranker=d.X[:, 0], sessions=3, seed=1)
    >>> int(log.position.max()) <= 9, set(log.y.tolist()) <= {0.0, 1.0}
    (True, True)
    """
    X, y, group = data[0], data[1], data[2]
    grades = as_labels(y, integer=True, name="data labels")
    n = grades.shape[0]
    groups = as_groups(group, n, name="data group")
    scores = _ranker_scores(ranker, data, n)
    model = CLICK_MODELS[check_choice(click_model, "click_model", set(CLICK_MODELS))]
    eta = check_nonnegative(eta, "eta")
    table = _click_table(click_prob)
    shown = check_int(shown, "shown", minimum=1)
    sessions = check_int(sessions, "sessions", minimum=1, maximum=100_000)
    seed = check_int(seed, "seed", minimum=0)

    qid = np.repeat(np.arange(groups.n_groups, dtype=np.int64), groups.sizes)
    order = np.lexsort((np.arange(n), -scores, qid))  # by query, then score descending, then row
    rank = np.empty(n, dtype=np.int64)
    rank[order] = row_order_positions(groups.ptr)  # sorted rows' index within their query
    shown_rows = order[rank[order] < shown]  # displayed rows, query by query, in displayed order
    per_query = np.bincount(qid[shown_rows], minlength=groups.n_groups)
    if shown_rows.size * sessions > MAX_LOG_ROWS:
        raise ValueError(f"sessions={sessions} would log {shown_rows.size * sessions:,} rows, more than "
                         f"customobj.clicks.simulation.MAX_LOG_ROWS = {MAX_LOG_ROWS:,}; use fewer sessions or shown")
    # Sessions of one query follow each other: row block of query q repeated `sessions` times.
    starts = np.concatenate(([0], np.cumsum(per_query)))
    rows = np.concatenate([np.tile(shown_rows[starts[q]:starts[q + 1]], sessions)
                           for q in range(groups.n_groups) if per_query[q]] or [np.zeros(0, np.int64)])
    sizes = np.repeat(per_query[per_query > 0], sessions)
    position = rank[rows]
    p_click = table[np.minimum(grades[rows].astype(np.int64), table.size - 1)]

    rng = np.random.default_rng(seed)
    u_exam = rng.random(rows.size)
    u_click = rng.random(rows.size)
    if model == PBM:
        clicks = (u_exam < (1.0 / (position + 1.0)) ** eta) & (u_click < p_click)
    else:
        wants = u_click < p_click
        before = np.cumsum(wants) - wants  # clicks wanted above, counting from the log's start
        first_of_session = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        above = before - np.repeat(before[first_of_session] if sizes.size else before[:0], sizes)
        clicks = wants & (above == 0)
    X_out = X[rows]
    return ClickLog(X_out, clicks.astype(np.float64), sizes.astype(np.int64), position, grades[rows].copy(),
                    rows.astype(np.int64), qid[rows])
