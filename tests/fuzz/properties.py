"""One property per public entry point: a strategy of :class:`~fuzz.runner.Example`.

The property itself is the same everywhere (see :func:`fuzz.runner.assert_holds`): the worker
returns finite output of the right shape, or raises ValueError / TypeError (MemoryError with a
message) naming the hostile argument; never a crash, a hang, NaN / inf or another exception.
``CORE_PROPERTIES`` (here), ``OLE_PROPERTIES`` and ``IO_PROPERTIES`` map property names to
strategies; :data:`fuzz._suite.PROPERTIES` merges them for the tests and ``benchmarks/fuzz.py``.
"""
from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from . import strategies as S
from .runner import Example

BINARY = ("Logistic", "SquaredHinge")
RANKERS = ("RankNet", "RankSVM", "MPBoost", "QBRank", "LambdaRank", "StructuredDCG")
ALL_OBJECTIVES = ("SquaredError", *BINARY, "McRank", *RANKERS, "PreferencePairs")
POS = st.floats(0.05, 4.0)


def on_rows(hostile, n):
    """With no rows at all, an error about the empty data is fair whatever else is hostile."""
    if n:
        return hostile
    return tuple(tuple(g) + ("rows", "query", "empty", "no ") if g else g for g in hostile)


def valid_params(draw, cls, n):
    """Valid keyword options of ``cls`` for data of ``n`` rows (read from the class signatures)."""
    pairs = st.lists(st.tuples(st.integers(0, max(n - 1, 0)), st.integers(0, max(n - 1, 0)))
                     .filter(lambda p: p[0] != p[1]), max_size=4).map(lambda v: np.asarray(v, dtype=np.int64).reshape(-1, 2))
    spec = {
        "SquaredError": {},
        "Logistic": {"sigma": POS, "balanced": st.booleans()},
        "SquaredHinge": {"C": POS},
        "McRank": {"n_classes": st.none() | st.integers(5, 7)},
        "RankNet": {"sigma": POS},
        "RankSVM": {"margin": st.floats(0.0, 3.0)},
        "MPBoost": {"ddf": st.sampled_from(["binary", "ldd", "logdd", "logitdd"]), "alpha": POS, "lam": POS, "beta": POS},
        "PreferencePairs": {"pairs": pairs if n >= 2 else st.just(np.zeros((0, 2), np.int64)),
                            "margin": st.floats(0.0, 2.0)},
        "QBRank": {"w": st.floats(0.0, 1.0), "margin": st.just("grade") | st.floats(0.0, 2.0),
                   "hessian": st.sampled_from(["exact", "upper_bound"]),
                   "labeled": st.sampled_from(["all", "none", "single_label_queries"])},
        "LambdaRank": {"metric": st.sampled_from(["ndcg", "err", "map", "mrr"]), "k": st.none() | st.integers(1, 6),
                       "sigma": POS, "truncation": st.none() | st.integers(1, 6), "norm": st.booleans()},
        "StructuredDCG": {"k": st.integers(1, 6), "hess": POS},
    }[cls]
    names = draw(st.lists(st.sampled_from(sorted(spec)), unique=True)) if spec else []
    params = {k: draw(spec[k]) for k in names}
    if cls == "PreferencePairs":
        params["pairs"] = draw(spec["pairs"])
    return params


def hostile_params(draw, cls, n):
    """Valid options with one replaced by a hostile value; returns (params, name or None)."""
    params = valid_params(draw, cls, n)
    names = {"SquaredError": [], "Logistic": ["sigma", "balanced"], "SquaredHinge": ["C"],
             "McRank": ["n_classes"], "RankNet": ["sigma"], "RankSVM": ["margin"],
             "MPBoost": ["ddf", "alpha", "lam", "beta"], "PreferencePairs": ["pairs", "margin", "weight"],
             "QBRank": ["w", "margin", "hessian", "pairs", "labeled", "label_pairs"],
             "LambdaRank": ["metric", "k", "sigma", "truncation", "gain", "norm"],
             "StructuredDCG": ["k", "hess"]}[cls]
    if not names:
        return params, None
    name = draw(st.sampled_from(names))
    if name in ("pairs", "weight", "labeled", "gain") and draw(st.booleans()):
        base = {"pairs": np.array([[0, 1]] if n >= 2 else np.zeros((0, 2)), dtype=np.int64),
                "weight": np.ones(len(params.get("pairs", ()))), "labeled": np.ones(n, dtype=bool),
                "gain": np.array([0.0, 1.0, 3.0, 7.0, 15.0])}[name]
        params[name] = S.mutate_array(draw, base, values=(math.nan, -1.0, 1e300, 2**70, 0.5, math.inf))
    else:
        params[name] = draw(S.hostile_param())
    return params, name


def labels_for(draw, cls, n):
    if cls in BINARY:
        return np.asarray(draw(st.lists(st.sampled_from([0.0, 1.0]), min_size=n, max_size=n)))
    return S.grade_array(draw, n, top=4)


def n_classes(cls, params, labels):
    if cls != "McRank":
        return 1
    k = params.get("n_classes")
    if isinstance(k, int) and not isinstance(k, bool) and 2 <= k <= 16:
        return k
    y = np.asarray(labels, dtype=float) if np.asarray(labels).dtype.kind in "biuf" else np.zeros(1)
    return max(int(np.nanmax(y, initial=0)) + 1, 2) if np.all(np.isfinite(y)) and y.max(initial=0) < 16 else 2


@st.composite
def objective_examples(draw, classes=ALL_OBJECTIVES, methods=("grad_hess", "loss", "pair_couplings")):
    """An objective method on tiny data with at most one hostile argument or option."""
    cls = draw(st.sampled_from(classes))
    n = draw(st.integers(0, 9))
    labels = labels_for(draw, cls, n)
    group = S.valid_group(draw, n)
    weight = None if draw(st.booleans()) else S.float_array(draw, n, 0.0, 3.0)
    what = draw(st.sampled_from(["none", "params", "scores", "labels", "group", "weight", "wrap"]))
    params, pname = hostile_params(draw, cls, n) if what == "params" else (valid_params(draw, cls, n), None)
    k = n_classes(cls, params, labels)
    scores = S.float_array(draw, n, -8, 8, cols=None if k == 1 else k)
    wrap, hostile = (), ()
    if what == "params" and pname:
        hostile = ((pname,),)
    elif what == "scores":
        scores, names = S.hostile_arg(draw, scores, S.HOSTILE_FLOATS + (1e100, -1e100, 9.99e99), S.SCORE_NAMES)
        if draw(st.booleans()):
            scores = scores > 0 if isinstance(scores, np.ndarray) and scores.dtype.kind in "biuf" else scores
        hostile = (names,)
    elif what == "labels":
        labels, names = S.hostile_arg(draw, labels, S.HOSTILE_LABELS, S.LABEL_NAMES)
        # McRank infers its classes from the labels: a shape error on the scores is then fair.
        hostile = (names + (("classes", "score") if cls == "McRank" else ()),)
    elif what == "group":
        group = S.hostile_group(draw, n)
        hostile = (S.GROUP_NAMES,)
    elif what == "weight":
        weight, names = S.hostile_arg(draw, np.ones(n) if weight is None else weight, S.HOSTILE_WEIGHTS,
                                      S.WEIGHT_NAMES)
        hostile = (names,)
    elif what == "wrap":
        factor = draw(st.sampled_from([1e308, 1e300, 1e200, 0.0, -1.0, math.nan, math.inf, 1e-320, True, 2**70]))
        wrap = [("scale", factor)] * draw(st.integers(1, 2))
        hostile = (("factor", "operand", "overflow", "scale"),)
    method = draw(st.sampled_from(methods))
    kwargs = dict(cls=cls, params=params, method=method, scores=scores, labels=labels, group=group, wrap=wrap)
    if method != "pair_couplings":
        kwargs["weight"] = weight
    elif what == "weight":
        kwargs["weight"] = None
        hostile = ()
    return Example("objective", kwargs, on_rows(hostile, n))


@st.composite
def prepared_reuse_examples(draw):
    """A Prepared built by one objective, reused by another (issue 13, class 6)."""
    cls_a = draw(st.sampled_from(ALL_OBJECTIVES))
    cls_b = draw(st.sampled_from(ALL_OBJECTIVES))
    n = draw(st.integers(2, 9))
    labels = draw(st.sampled_from([
        S.grade_array(draw, n, top=draw(st.sampled_from([1, 4, 20]))),
        S.float_array(draw, n, 0.0, 3.0),
    ]))
    params_a, params_b = valid_params(draw, cls_a, n), valid_params(draw, cls_b, n)
    if cls_b == "LambdaRank" and draw(st.booleans()):
        params_b["gain"] = [0.0, 1.0, 3.0]
    k = n_classes(cls_b, params_b, labels)
    scores = S.float_array(draw, n, -3, 3, cols=None if k == 1 else k)
    return Example("objective.prepared_reuse", dict(cls_a=cls_a, params_a=params_a, cls_b=cls_b, params_b=params_b,
                                                    scores=scores, labels=labels, group=S.valid_group(draw, n)))


METRIC_OPTIONS = {
    "ndcg": ("k", "empty", "gain", "ties", "per_query"), "dcg": ("k", "gain", "ties", "per_query"),
    "ndcg_mpboost": ("k", "empty", "ties", "per_query"), "err": ("k", "max_grade", "ties", "per_query"),
    "average_precision": ("k", "empty", "ties", "per_query"), "reciprocal_rank": ("k", "empty", "ties", "per_query"),
    "precision_at_percent": ("percent",), "misordered_pairs": ("per_query",),
}
_VALID_OPTION = {"k": st.none() | st.integers(1, 12), "empty": st.sampled_from([1.0, 0.0, "exclude", 0.5]),
                 "gain": st.just([0.0, 1.0, 3.0, 7.0, 15.0]), "ties": st.sampled_from(["stable", "pessimistic"]),
                 "per_query": st.booleans(), "max_grade": st.sampled_from([4, 5.0, 10]),
                 "percent": st.sampled_from([100, 50, 10, 1e-3, 33.3])}


def _hostile_labels_or_group(draw, what, labels, group, n):
    """The labels (``what == "labels"``) or else the group made hostile: ``(labels, group, hostile)``."""
    if what == "labels":
        labels, names = S.hostile_arg(draw, labels, S.HOSTILE_LABELS, S.LABEL_NAMES)
        return labels, group, (names,)
    return labels, S.hostile_group(draw, n), (S.GROUP_NAMES,)


@st.composite
def metric_examples(draw):
    fname = draw(st.sampled_from(sorted(METRIC_OPTIONS)))
    n = draw(st.integers(0, 9))
    scores, labels, group = S.float_array(draw, n), S.grade_array(draw, n), S.valid_group(draw, n)
    names = draw(st.lists(st.sampled_from(METRIC_OPTIONS[fname]), unique=True))
    options = {k: draw(_VALID_OPTION[k]) for k in names}
    what = draw(st.sampled_from(["none", "option", "scores", "labels", "labels", "group"]))
    hostile = ()
    if what == "option":
        name = draw(st.sampled_from(METRIC_OPTIONS[fname]))
        options[name] = draw(S.hostile_param()) if name != "gain" else S.mutate_array(
            draw, np.array([0.0, 1.0, 3.0, 7.0, 15.0]), values=(math.nan, -1.0, 1e300, 1.7e308, math.inf))
        hostile = ((name,),)
    elif what == "scores":
        scores, names = S.hostile_arg(draw, scores, S.HOSTILE_FLOATS, S.SCORE_NAMES)
        hostile = (names,)
    elif what in ("labels", "group"):
        labels, group, hostile = _hostile_labels_or_group(draw, what, labels, group, n)
    return Example("metric", dict(fname=fname, scores=scores, labels=labels, group=group, options=options),
                   on_rows(hostile, n))


@st.composite
def get_metric_examples(draw):
    name = draw(st.sampled_from([
        "ndcg@99999999999999999999999", "ndcg@-1", "ndcg@0", "ndcg@", "map@1e400", "err@9223372036854775808",
        "precision@1e400%", "precision@0%", "precision@-5%", "precision@nan%", "ndcg@10@3", "NDCG@3",
        "mrr@1180591620717411303424", "misordered", "ndcg", "dcg@3", "ndcg_mpboost@4611686018427387904",
    ]) | st.text(max_size=12) | st.builds("{}@{}".format, st.sampled_from(["ndcg", "map", "err", "mrr"]), S.hostile_int()))
    n = draw(st.integers(1, 8))
    return Example("metric.get_metric", dict(name=name, scores=S.float_array(draw, n), labels=S.grade_array(draw, n),
                                             group=S.valid_group(draw, n)), (("metric", "name", name[:20]),))


@st.composite
def groups_examples(draw):
    n = draw(st.integers(0, 12))
    ctor = draw(st.sampled_from(["from_sizes", "from_sizes", "as_groups", "from_ptr", "from_qid", "Groups"]))
    if ctor in ("from_sizes", "as_groups"):
        g = S.hostile_group(draw, n)
        arg = g["arg"] if isinstance(g, dict) and "__groups__" in g else g
    elif ctor == "from_qid":
        g = S.hostile_group(draw, n)
        arg = g["arg"] if isinstance(g, dict) and "__groups__" in g else np.asarray(draw(st.lists(S.hostile_int(), min_size=n, max_size=n)), dtype=object)
    else:
        sizes = S.sizes_of(draw, n)
        arg = S.mutate_array(draw, np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
                             values=(-1.0, 1e300, math.nan, 2.0**63, 0.5)) if draw(st.booleans()) else \
            draw(st.sampled_from([[0, 2**62, 2**63 - 1], [0, 2**64 + 5], [0, -(2**63)], [0, 3, 2], [1, 2]]))
    n_rows = draw(st.none() | st.just(n))
    return Example("groups", dict(ctor=ctor, arg=arg, n_rows=n_rows), (S.GROUP_NAMES,))


@st.composite
def label_pairs_examples(draw):
    n = draw(st.integers(0, 10))
    labels, group = S.grade_array(draw, n), S.valid_group(draw, n)
    options = {}
    what = draw(st.sampled_from(["none", "cap", "seed", "labels", "group"]))
    hostile = ()
    if draw(st.booleans()):
        options["max_pairs_per_query"] = draw(st.integers(0, 5))
    if what in ("cap", "seed"):
        name = "max_pairs_per_query" if what == "cap" else "seed"
        options[name] = draw(S.hostile_param())
        hostile = ((name,),)
    elif what in ("labels", "group"):
        labels, group, hostile = _hostile_labels_or_group(draw, what, labels, group, n)
    return Example("label_pairs", dict(labels=labels, group=group, options=options), on_rows(hostile, n))


@st.composite
def combination_examples(draw):
    n = draw(st.integers(0, 8))
    s1, s2 = S.float_array(draw, n), S.float_array(draw, n)
    labels, group = S.grade_array(draw, n), S.valid_group(draw, n)
    options = {}
    what = draw(st.sampled_from(["none", "s1", "s2", "labels", "group", "k", "empty", "gain"]))
    hostile = ()
    if what in ("s1", "s2"):
        arr, names = S.hostile_arg(draw, s1 if what == "s1" else s2, S.HOSTILE_FLOATS, (what, "score"))
        s1, s2 = (arr, s2) if what == "s1" else (s1, arr)
        hostile = (names,)
    elif what in ("labels", "group"):
        labels, group, hostile = _hostile_labels_or_group(draw, what, labels, group, n)
    elif what != "none":
        options[what] = draw(S.hostile_param())
        hostile = ((what,),)
    return Example("best_linear_combination", dict(s1=s1, s2=s2, labels=labels, group=group, options=options),
                   on_rows(hostile, n))


CORE_PROPERTIES = {
    "objectives.data": objective_examples(),
    "objectives.prepared_reuse": prepared_reuse_examples(),
    "metrics.functions": metric_examples(),
    "metrics.get_metric": get_metric_examples(),
    "groups.constructors": groups_examples(),
    "pairs.label_pairs": label_pairs_examples(),
    "combine.best_linear_combination": combination_examples(),
}
