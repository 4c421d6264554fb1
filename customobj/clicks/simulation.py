"""Semi-synthetic click logs from LETOR data (Joachims, Swaminathan, Schnabel, WSDM 2017, sec. 6;
Ai, Bi, Luo, Guo, Croft, SIGIR 2018, sec. 5.1): a production ranker orders each query, the top
``shown`` rows are displayed, and simulated users click by one of the click models of
:data:`CLICK_MODELS`: position-based, cascade, trust bias, DCM or UBM.

Re-exported as :func:`customobj.data.simulate_clicks` and :func:`customobj.clicks.simulate_clicks`.
"""
from __future__ import annotations

from typing import Any, NamedTuple, Optional, Sequence

import numpy as np

from . import loggers as L
from ._inputs import MAX_POSITION
from .._validation import _to_numpy, as_1d_float, as_labels, check_choice, check_int, check_nonnegative, check_positive
from ..groups import as_groups

__all__ = ["ClickLog", "simulate_clicks", "CLICK_MODELS", "PBM", "CASCADE", "TRUST", "DCM", "UBM",
           "DEFAULT_CONTINUE_PROB", "trust_defaults", "LOGGERS", "plackett_luce_marginals"]

#: The click models, as codes once the option is read (nothing below compares strings).
PBM, CASCADE, TRUST, DCM, UBM = 0, 1, 2, 3, 4
#: The click models' names (``click_model``, ``customobj compare --clicks``) -> their codes: the one list.
CLICK_MODELS = {"pbm": PBM, "cascade": CASCADE, "trust": TRUST, "dcm": DCM, "ubm": UBM}
#: DCM's default probability of examining on after a click (``continue_prob``): a choice, not a paper's value.
DEFAULT_CONTINUE_PROB = 0.5
#: Largest click log simulated at once (rows = shown rows x sessions): about 1 GB of indices and draws.
MAX_LOG_ROWS = 50_000_000


class ClickLog(NamedTuple):
    """Simulated sessions, one query group per session, rows in displayed order.

    ``X``, ``y`` (clicks, 0 / 1) and ``group`` (rows per session) train like any LETOR data;
    ``position`` is each row's display position (0 = top), ``true_label`` its graded label (for
    evaluation only), ``row`` its row in the source data, ``qid`` its source query. The logger's
    record (``simulate_clicks``' ``logger``): ``randomised`` marks the rows of sessions whose order
    an intervention changed (randomised or swapped), ``logging_prob`` is the probability that the
    logging policy put the row's document at its position, ``ranker_id`` the ranker that logged it.
    """

    X: Any
    y: np.ndarray
    group: np.ndarray
    position: np.ndarray
    true_label: np.ndarray
    row: np.ndarray
    qid: np.ndarray
    randomised: Optional[np.ndarray] = None
    logging_prob: Optional[np.ndarray] = None
    ranker_id: Optional[np.ndarray] = None


def _ranker_scores(ranker, X, n):
    if hasattr(ranker, "predict"):
        ranker = ranker.predict(X)
    return as_1d_float(ranker, "ranker", n=n, allow_bool=False)


def _features(X, n):
    """``X`` with one row per label: a 2-D array, a pandas DataFrame (its values) or a scipy sparse
    matrix (kept sparse, as CSR); what ``X[rows]`` then indexes by row number."""
    if hasattr(X, "tocsr") and hasattr(X, "nnz"):
        X = X.tocsr()
    else:
        X = _to_numpy(X, "data X")  # None, object, strings and GPU arrays refused here; DataFrame -> values
    if X.ndim != 2:
        raise ValueError(f"data X must be 2-D (one row of features per label), got shape {X.shape}")
    if X.shape[0] != n:
        raise ValueError(f"data X has {X.shape[0]} rows but the data labels have {n}: give one row of "
                         "features per label")
    return X


def _click_table(click_prob):
    if isinstance(click_prob, (str, bytes)) or np.ndim(click_prob) != 1 or len(click_prob) == 0:
        raise TypeError("click_prob must be a non-empty sequence of click probabilities, one per grade")
    table = as_1d_float(click_prob, "click_prob", allow_bool=False)
    bad = np.flatnonzero((table < 0.0) | (table > 1.0))
    if bad.size:
        raise ValueError(f"click_prob must be probabilities in [0, 1]; found {table[bad[0]]} for grade {int(bad[0])}")
    return table


def trust_defaults(shown: int) -> tuple:
    """``(epsilon_plus, epsilon_minus)`` per 1-based position ``r = 1..shown``: the click rates of an
    examined relevant / non-relevant row of Vardasbi, de Rijke, Markov (CIKM 2021, eq. 10-11),
    ``1 - (min(r, 20) + 1) / 100`` and ``0.65 / min(r, 10)``.

    Examples
    --------
    >>> plus, minus = trust_defaults(3)
    >>> plus.round(2).tolist(), minus.round(3).tolist()
    ([0.98, 0.97, 0.96], [0.65, 0.325, 0.217])
    """
    r = np.arange(1, check_int(shown, "shown", minimum=1, maximum=MAX_POSITION) + 1, dtype=np.float64)
    return 1.0 - (np.minimum(r, 20.0) + 1.0) / 100.0, 0.65 / np.minimum(r, 10.0)


def _per_position(value, name, shown):
    """A probability per 1-based position ``1..shown`` from a number or a sequence (at least ``shown`` long)."""
    arr = as_1d_float(np.full(shown, value) if np.ndim(value) == 0 else value, name, allow_bool=False)
    if arr.size < shown:
        raise ValueError(f"{name} has {arr.size} entries but shown={shown} positions need one each")
    bad = np.flatnonzero((arr < 0.0) | (arr > 1.0))
    if bad.size:
        raise ValueError(f"{name} must be probabilities in [0, 1]; found {arr[bad[0]]} at position {int(bad[0]) + 1}")
    return arr[:shown]


def _model_options(model, shown, epsilon_plus, epsilon_minus, continue_prob):
    """The options of the chosen model, checked; an option of another model is refused, never ignored."""
    given = {"epsilon_plus": (epsilon_plus, TRUST), "epsilon_minus": (epsilon_minus, TRUST),
             "continue_prob": (continue_prob, DCM)}
    for name, (value, owner) in given.items():
        if value is not None and model != owner:
            owner_name = next(k for k, v in CLICK_MODELS.items() if v == owner)
            raise ValueError(f"{name} is an option of click_model={owner_name!r}, not of the model chosen")
    plus, minus = trust_defaults(shown)
    plus = plus if epsilon_plus is None else _per_position(epsilon_plus, "epsilon_plus", shown)
    minus = minus if epsilon_minus is None else _per_position(epsilon_minus, "epsilon_minus", shown)
    cont = _per_position(DEFAULT_CONTINUE_PROB if continue_prob is None else continue_prob, "continue_prob", shown)
    return plus, minus, cont


def _above_in_session(flags, sizes):
    """For each row, how many rows above it in its session have ``flags`` set."""
    before = np.cumsum(flags) - flags  # counting from the log's start
    first_of_session = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    return before - np.repeat(before[first_of_session] if sizes.size else before[:0], sizes)


def _ubm_clicks(position, sizes, u_exam, wants, eta):
    """UBM: a row at 1-based position ``r`` is examined with probability ``(1 / d)^eta``, ``d`` its
    distance to the last click above it (``d = r`` before any click); examined rows are clicked
    when ``wants``. Sequential in the position, vectorised over the sessions."""
    session = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)
    last = np.full(sizes.size, -1, dtype=np.int64)  # 0-based position of the last click (-1: none)
    clicks = np.zeros(position.size, dtype=bool)
    for t in range(int(sizes.max(initial=0))):
        at = np.flatnonzero(position == t)  # one row per session that shows position t
        d = t - last[session[at]]
        hit = (u_exam[at] < (1.0 / d) ** eta) & wants[at]
        clicks[at] = hit
        last[session[at[hit]]] = t
    return clicks


def simulate_clicks(data: Any, *, ranker: Any, click_model: str = "pbm", eta: float = 1.0,
                    click_prob: Sequence[float] = (0.1, 0.5, 1.0), shown: int = 10, sessions: int = 12,
                    seed: int = 0, epsilon_plus: Optional[Any] = None, epsilon_minus: Optional[Any] = None,
                    continue_prob: Optional[Any] = None, logger: str = "deterministic", explore: float = 1.0,
                    temperature: float = 1.0, samples: int = L.DEFAULT_SAMPLES, ranker_id: int = 0) -> ClickLog:
    """Simulate the click log of ``sessions`` users per query on the ranker's top ``shown`` rows.

    For each query, the rows are sorted by ``ranker`` (descending, ties by row order) and the
    first ``shown`` displayed. A row at display position ``p`` (0-based: 0 is the top; ``r = p + 1``
    below) with grade ``y`` has the relevance ``gamma = click_prob[y]`` (the probability that it
    attracts an examining user; grades beyond the table use its last entry), ``theta_r = (1/r)^eta``.
    The click models:

    .. math::

        \\text{pbm:}\\quad P(c_r = 1) = \\theta_r\\,\\gamma_r
        \\qquad
        \\text{trust:}\\quad P(c_r = 1) = \\theta_r\\,\\big(\\epsilon^+_r \\gamma_r + \\epsilon^-_r (1 - \\gamma_r)\\big)

    - ``"pbm"``: the position-based model (the examination hypothesis of Richardson, Dominowska,
      Ragno, WWW 2007; Joachims et al. 2017, sec. 6).
    - ``"cascade"``: the user scans down and leaves after the first click (Craswell, Zoeter, Taylor,
      Ramsey, WSDM 2008): ``P(c_r = 1) = gamma_r prod_{r' < r} (1 - gamma_r')``; ``eta`` unused.
    - ``"trust"``: trust bias (Agarwal, Wang, Li, Bendersky, Najork, WWW 2019): an
      examined row is relevant with probability ``gamma_r`` and clicked with the position's
      true-positive rate ``epsilon_plus[r]`` if relevant, its false-positive rate
      ``epsilon_minus[r]`` if not (default: :func:`trust_defaults`).
    - ``"dcm"``: the dependent click model (Guo, Liu, Wang, WSDM 2009): the user scans down,
      clicks an examined row with probability ``gamma_r``, and after a click at ``r`` examines on
      with probability ``continue_prob[r]`` (``lambda_r``; default
      :data:`DEFAULT_CONTINUE_PROB`), without a click always; ``eta`` unused.
      ``P(c_r = 1) = gamma_r prod_{r' < r} (1 - gamma_r' (1 - lambda_r'))``.
    - ``"ubm"``: the user browsing model (Dupret, Piwowarski, SIGIR 2008): a row is examined
      with probability ``(1/d)^eta``, ``d`` the distance to the last click above it (``d = r`` before
      any click), and clicked then with probability ``gamma_r``.

    The same arguments give the same log.

    Parameters
    ----------
    data : LetorData or any ``(X, y, group)``
        Features (a 2-D array, a pandas DataFrame or a scipy sparse matrix, one row per label),
        graded labels (non-negative integers) and query sizes.
    ranker : array of scores, one per row, or a model with ``predict(data.X)``
        The production ranker whose order users see (a model predicts on ``data``'s ``X`` as given).
    click_model : "pbm", "cascade", "trust", "dcm" or "ubm"
    eta : float >= 0
        Severity of the position bias: examination ``(1/r)^eta`` (pbm, trust; ubm: ``(1/d)^eta``).
    click_prob : sequence of floats in [0, 1]
        Click probability of an examined row per grade (default 0.1 / 0.5 / 1.0 for 0 / 1 / 2).
    shown, sessions, seed : int
        Rows displayed per query (``1 <= shown <= MAX_POSITION = 10_000``, the largest display
        position any click estimator takes), sessions per query (``1 <= sessions <= 100_000``; the
        log has at most :data:`MAX_LOG_ROWS` rows), the random seed (``0 <= seed < 2**62``).
    epsilon_plus, epsilon_minus : float or sequence of floats in [0, 1], optional
        ``click_model="trust"`` only: the click rates of examined relevant / non-relevant rows, one
        per position from the top (or one number for all).
    continue_prob : float or sequence of floats in [0, 1], optional
        ``click_model="dcm"`` only: the probability of examining on after a click, per position.
        An option of another model than ``click_model`` is a ``ValueError``.
    logger : "deterministic", "randomised", "swap" or "stochastic"
        The logging policy (:mod:`customobj.clicks.loggers`): the production order every session
        (default), a share ``explore`` of the sessions shuffled or with one random pair of positions
        swapped (marked in ``ClickLog.randomised``), or a Plackett-Luce ranking per session over the
        ranker's scores with ``temperature`` (the logging probabilities estimated from ``samples``
        draws per query). ``ClickLog.logging_prob`` records each shown row's probability of its position.
    explore : float in [0, 1]
        Share of the sessions a randomised or swap logger intervenes on (default all).
    temperature : float > 0
        The stochastic logger's Plackett-Luce temperature (scores divided by it; larger: more random).
    ranker_id : int >= 0
        Recorded in ``ClickLog.ranker_id``: which ranker logged the sessions (several rankers' logs,
        :func:`customobj.clicks.trust_interventions.estimate_trust`).

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
    if isinstance(data, (str, bytes)) or not hasattr(data, "__getitem__") or not hasattr(data, "__len__") \
            or len(data) != 3:
        raise TypeError(f"data must be a LetorData or an (X, y, group) triple, got {type(data).__name__}")
    X_in, y, group = data[0], data[1], data[2]
    grades = as_labels(y, integer=True, name="data labels")
    n = grades.shape[0]
    groups = as_groups(group, n, name="data group")
    X = _features(X_in, n)
    scores = _ranker_scores(ranker, X_in, n)
    model = CLICK_MODELS[check_choice(click_model, "click_model", set(CLICK_MODELS))]
    eta = check_nonnegative(eta, "eta")
    table = _click_table(click_prob)
    # shown sizes the per-position tables before any row is drawn: bounded like every display position
    shown = check_int(shown, "shown", minimum=1, maximum=MAX_POSITION)
    sessions = check_int(sessions, "sessions", minimum=1, maximum=100_000)
    seed = check_int(seed, "seed", minimum=0)
    plus, minus, cont = _model_options(model, shown, epsilon_plus, epsilon_minus, continue_prob)

    code = L.LOGGERS[check_choice(logger, "logger", set(L.LOGGERS))]
    explore = check_nonnegative(explore, "explore")
    if explore > 1.0:
        raise ValueError(f"explore must be a share of the sessions in [0, 1], got {explore}")
    temperature = check_positive(temperature, "temperature")
    samples = check_int(samples, "samples", minimum=1, maximum=10**6)
    ranker_id = check_int(ranker_id, "ranker_id", minimum=0)
    qid = np.repeat(np.arange(groups.n_groups, dtype=np.int64), groups.sizes)
    n_shown = int(np.minimum(groups.sizes, shown).sum())
    if n_shown * sessions > MAX_LOG_ROWS:
        raise ValueError(f"sessions={sessions} would log {n_shown * sessions:,} rows, more than "
                         f"customobj.clicks.simulation.MAX_LOG_ROWS = {MAX_LOG_ROWS:,}; use fewer sessions or shown")
    # Sessions of one query follow each other, rows in display order (the logger's).
    rows, sizes, position, randomised, logging_prob = L.log_order(code, scores, groups.ptr, shown, sessions, explore,
                                                                  temperature, samples, seed)
    # grades beyond the table use its last entry; capped as floats first (a grade of 1e20 wraps int64)
    p_click = table[np.minimum(grades[rows], table.size - 1).astype(np.int64)]

    rng = np.random.default_rng(seed)
    u_exam = rng.random(rows.size)
    u_click = rng.random(rows.size)
    if model == PBM:
        clicks = (u_exam < (1.0 / (position + 1.0)) ** eta) & (u_click < p_click)
    elif model == CASCADE:
        wants = u_click < p_click
        clicks = wants & (_above_in_session(wants, sizes) == 0)
    elif model == TRUST:
        relevant = rng.random(rows.size) < p_click  # drawn after the shared draws: pbm logs stay as they were
        rate = np.where(relevant, plus[position], minus[position])
        clicks = (u_exam < (1.0 / (position + 1.0)) ** eta) & (u_click < rate)
    elif model == DCM:
        wants = u_click < p_click
        stops = wants & (rng.random(rows.size) >= cont[position])  # a click after which the user leaves
        clicks = wants & (_above_in_session(stops, sizes) == 0)
    elif model == UBM:
        clicks = _ubm_clicks(position, sizes, u_exam, u_click < p_click, eta)
    else:  # unreachable: check_choice admits only CLICK_MODELS
        raise AssertionError(f"click model code {model} has no simulation")
    X_out = X[rows]
    return ClickLog(X_out, clicks.astype(np.float64), sizes.astype(np.int64), position, grades[rows].copy(),
                    rows.astype(np.int64), qid[rows], randomised, logging_prob,
                    np.full(rows.size, ranker_id, dtype=np.int64))
