"""The pair sets of the pairwise objectives, as their kernels take them: the label pairs of each query
and explicit preference pairs (``PreferencePairs``, ``QBRank(pairs=...)``), checked once; and
QBRank's state, its pairs plus its labelled rows.

Label pairs depend on the labels only, so the state (built once per data set) holds the rows of
each query sorted by label; the kernels walk those blocks per query (in parallel over queries,
whose rows are disjoint) instead of materialising millions of pairs. The explicit pair list is
built only when ``pair_couplings`` asks for it, and then cached.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np
import numpy.typing as npt

from .._kernel_status import check_status, checked_value
from .._validation import as_pairs, check_pair_budget
from . import _pairwise_kernels as PK
from ._arrays import kernel_weights
from .prepared import Prepared

__all__ = ["ExplicitPairs", "LabelPairs", "ListedPairs", "QBRankState", "no_pairs", "listed_couplings",
           "check_pairs_option", "pairs_in_range", "labeled_rows", "row_incidence",
           "explicit_pairs_refusal"]

_EMPTY = np.zeros(0, dtype=np.float64)
_EMPTY_I = np.zeros(0, dtype=np.int64)


class ExplicitPairs(NamedTuple):
    """Explicit pairs as the pair-list kernels take them: row ``pi[m]`` should rank above ``pj[m]``
    by the margin ``theta[m]`` (the state of ``PreferencePairs``)."""

    pi: np.ndarray
    pj: np.ndarray
    theta: np.ndarray


class ListedPairs(NamedTuple):
    """A pairwise loss's pairs one by one, as its ``listed_pairs(prep)`` gives them to the drivers
    that need them listed (the pair couplings on the CPU and the GPU, the click estimators): row
    ``pi[k]`` should rank above ``pj[k]`` with ``theta[k]``, pair weight ``pair_w[k]`` (read when
    ``use_pw``), the loss's ``PairSpec``. Read-only arrays, cached on the prepared data."""

    pi: np.ndarray
    pj: np.ndarray
    theta: np.ndarray
    pair_w: np.ndarray
    use_pw: bool
    spec: PK.PairSpec


def listed_couplings(obj, scores, prep):
    """``(i, j, c)`` of ``obj.listed_pairs(prep)``: each pair's coupling times its weight."""
    lp = obj.listed_pairs(prep)
    if lp is None:
        return no_pairs()
    w, use_w = kernel_weights(prep.weight)
    c = np.empty(lp.pi.size, dtype=np.float64)
    check_status(PK.pair_list_couplings(scores, lp.pi, lp.pj, lp.theta, lp.pair_w, lp.use_pw, w, use_w, lp.spec, c),
                 type(obj).__name__)
    return lp.pi, lp.pj, c


def no_pairs() -> "tuple[np.ndarray, np.ndarray, np.ndarray]":
    """Three empty arrays ``(i, j, c)``: the couplings of an objective without pair terms now."""
    return _EMPTY_I.copy(), _EMPTY_I.copy(), _EMPTY.copy()


#: The pair-budget hint of a couplings-only pair list: the losses that walk their label pairs without
#: storing them (RankNet, RankSVM, MPBoost, ...) still give gradients and losses.
_COUPLINGS_HINT = ("gradients and losses do not materialise pairs and still work; "
                   "split very large queries or subsample rows per query")


class LabelPairs:
    """Label-only pair structure of a prepared data set: rows of each query by decreasing label."""

    __slots__ = ("order", "lower", "n_pairs", "_lists")

    def __init__(self, labels: np.ndarray, ptr: np.ndarray) -> None:
        n = labels.shape[0]
        self.order = np.empty(n, dtype=np.int64)
        self.lower = np.empty(n, dtype=np.int64)
        PK.label_order_kernel(labels, ptr, self.order, self.lower)
        ends = np.repeat(ptr[1:], np.diff(ptr))  # end of each sorted position's query
        self.n_pairs = int((ends - self.lower).sum())
        self._lists: dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def pair_list(self, labels: np.ndarray, ptr: np.ndarray, theta_mode: int, p: float, *,
                  what: str = "pair_couplings", hint: str = _COUPLINGS_HINT) -> "tuple[np.ndarray, np.ndarray, np.ndarray]":
        """``(i, j, theta)`` arrays of every label pair (built on first use, then cached; read-only).

        ``what`` and ``hint`` word the pair-budget refusal for the caller: by default the pair
        couplings of a loss whose gradients walk the pairs without storing them."""
        key = (theta_mode, p)
        if key not in self._lists:
            check_pair_budget(self.n_pairs, what, hint=hint)
            pi = np.empty(self.n_pairs, dtype=np.int64)
            pj = np.empty(self.n_pairs, dtype=np.int64)
            th = np.empty(self.n_pairs, dtype=np.float64)
            checked_value(PK.label_pair_list_kernel(labels, ptr, self.order, self.lower, int(theta_mode), p,
                                                    pi, pj, th), "label pair list")
            for arr in (pi, pj, th):
                arr.setflags(write=False)  # shared by every later call: callers must not sort in place
            self._lists[key] = (pi, pj, th)
        return self._lists[key]


def check_pairs_option(pairs: npt.ArrayLike, name: str = "pairs") -> np.ndarray:
    """Shape/type checks that do not need the data (row bounds are checked at ``prepare``)."""
    arr = as_pairs(pairs, None, name=name)
    arr.setflags(write=False)
    return arr


def pairs_in_range(pairs: np.ndarray, n: int, name: str = "pairs") -> None:
    """Every row index of ``pairs`` (checked non-negative already) must be below ``n``, the rows of the data."""
    if pairs.size and pairs.max() >= n:
        k = int(np.flatnonzero((pairs >= n).any(axis=1))[0])
        raise ValueError(f"{name}[{k}] = {pairs[k].tolist()} points outside the data (rows 0..{n - 1})")


class QBRankState(NamedTuple):
    """QBRank's label-only state, built once per data set."""

    label_pairs: Optional[LabelPairs]  # pairs from labels within queries, or None
    explicit: Optional[ExplicitPairs]  # the ``pairs=`` option, or None
    labeled_weight: Optional[np.ndarray]  # (1 - w) times the labelled-row mask (and row weight), or None
    cache: dict  # "pairs": the concatenated pair list for pair_couplings, built on first use

    def pair_list(self, prep: Prepared, theta_mode: int,
                  p: float) -> "Optional[tuple[np.ndarray, np.ndarray, np.ndarray]]":
        """``(i, j, theta)`` of every label and explicit pair, or None without pairs (read-only, cached)."""
        if "pairs" not in self.cache:
            # Label-only, so built once: LineSearch asks for couplings at every Newton step.
            pieces = []
            if self.label_pairs is not None:
                pieces.append(self.label_pairs.pair_list(prep.labels, prep.ptr, theta_mode, p))
            if self.explicit is not None:
                pieces.append(self.explicit)
            self.cache["pairs"] = tuple(np.concatenate(a) for a in zip(*pieces)) if pieces else None
            for arr in self.cache["pairs"] or ():
                arr.setflags(write=False)  # shared across calls: callers must not sort it in place
        return self.cache["pairs"]


def labeled_rows(labeled: "str | np.ndarray", prep: Prepared) -> np.ndarray:
    """QBRank's labelled rows ``L`` as a boolean mask: its ``labeled`` option applied to the data."""
    n = prep.n_rows
    if not isinstance(labeled, str):
        if labeled.shape[0] != n:
            raise ValueError(f"labeled mask has {labeled.shape[0]} entries but data has {n} rows")
        return labeled
    if labeled == "all":
        return np.ones(n, dtype=bool)
    if labeled == "none":
        return np.zeros(n, dtype=bool)
    sizes = np.diff(prep.ptr)
    starts = prep.ptr[:-1][sizes > 0]
    mask = np.zeros(n, dtype=bool)
    if starts.size:
        single = np.minimum.reduceat(prep.labels, starts) == np.maximum.reduceat(prep.labels, starts)
        mask = np.repeat(single, sizes[sizes > 0])
    return mask


def row_incidence(pi: np.ndarray, pj: np.ndarray, n: int) -> tuple:
    """``(ptr, pair, sign)``: each row's listed pairs in list order (pair ``k`` adds ``+`` to ``pi[k]``
    then ``-`` to ``pj[k]``), for the GPU kernels where a row sums its own pairs in the CPU's order.

    Examples
    --------
    >>> ptr, pair, sign = row_incidence(np.array([0, 1]), np.array([1, 2]), 3)
    >>> ptr.tolist(), pair.tolist(), sign.tolist()
    ([0, 1, 3, 4], [0, 0, 1, 1], [1, -1, 1, -1])
    """
    m = pi.size
    rows = np.concatenate([pi, pj]).astype(np.int64)
    pair = np.concatenate([np.arange(m), np.arange(m)]).astype(np.int64)
    side = np.concatenate([np.zeros(m, np.int64), np.ones(m, np.int64)])
    idx = np.lexsort((side, pair, rows))
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=ptr[1:])
    sign = np.where(side[idx] == 0, 1, -1).astype(np.int64)
    return ptr, pair[idx], sign


def explicit_pairs_refusal(objective: object) -> TypeError:
    """The ``TypeError`` of ``relevance_pairs()`` for losses over explicit pairs (QBRank, PreferencePairs)."""
    return TypeError(f"{objective!r}: explicit pairs (QBRank's, PreferencePairs'), no per-row relevance to "
                     "correct; the affine correction corrects the label pairs of LambdaRank(metric='ndcg'), "
                     "RankNet, RankSVM, MPBoost")
