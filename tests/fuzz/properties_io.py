"""Properties of the data functions (hostile LETOR files, synthetic options) and of the adapters'
callables on tiny LightGBM / XGBoost data (see :mod:`fuzz.properties`)."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from . import strategies as S
from .properties import BINARY, labels_for, n_classes, valid_params
from .runner import Example

FILE = ("data.txt",)


def _line(label, qid, feats, comment=""):
    head = f"{label}" + (f" qid:{qid}" if qid is not None else "")
    return head + "".join(f" {j}:{v}" for j, v in feats) + (f" # {comment}" if comment else "")


@st.composite
def letor_examples(draw):
    """A LETOR file (mostly valid lines, one hostile feature) written to a temporary folder and loaded."""
    n = draw(st.integers(1, 6))
    with_qid = draw(st.booleans())
    rows = []
    for r in range(n):
        feats = sorted(draw(st.dictionaries(st.integers(1, 5), st.floats(-3, 3, allow_nan=False), max_size=4)).items())
        rows.append([draw(st.integers(0, 4)), (r // 2 + 1) if with_qid else None, feats])
    options, query_text, hostile = {}, None, (FILE,)
    if not with_qid and draw(st.booleans()):
        query_text = "\n".join(str(s) for s in S.sizes_of(draw, n) if s) + "\n"
    what = draw(st.sampled_from(["none", "index", "index", "value", "label", "token", "file", "qid", "query",
                                 "n_features", "sparse"]))
    r = draw(st.integers(0, n - 1))
    if what == "index":
        rows[r][2] = rows[r][2] + [(draw(st.sampled_from([2000000000, 2**31, 2**63, 2**64, 10**30, 0, -1, 2**40])), 1.0)]
    elif what == "value":
        rows[r][2] = [(1, draw(st.sampled_from(["1e39", "-1e39", "1e400", "nan", "inf", "0x10", "1,5", "", "1e-50",
                                                "3.4028236e38", "1_0"])))]
    elif what == "label":
        rows[r][0] = draw(st.sampled_from(["-1", "0.5", "1024", "1e300", "nan", "inf", "abc", "", "1e400", "2**3"]))
        hostile = (FILE + ("label",),)
    elif what == "token":
        rows[r][2] = rows[r][2] + [draw(st.sampled_from(["1:", ":1", "x:1", "1:2:3", "1", "qid:3", "1:1 1:2"]))]
        rows[r][2] = [(t, v) if not isinstance(t, str) else (t, "") for t, v in [x if isinstance(x, tuple) else (x, None)
                                                                               for x in rows[r][2]]]
    elif what == "qid" and with_qid and n >= 3:
        rows[0][1], rows[-1][1] = 5, 5  # query 5 reappears after another query
        rows[r][1] = draw(st.sampled_from([5, "x", "", -1, 2**70, "1.5"]))
    elif what == "query":
        query_text = draw(st.sampled_from([f"{n + 1}\n", "-1\n", f"{2**62}\n{2**62}\n{2**62}\n{2**62 + n}\n",
                                           "1.5\n", "x\n", "", f"{2**64 + n}\n"]))
        rows = [[row[0], None, row[2]] for row in rows]
        hostile = (("query", "data.txt", "group"),)
    elif what == "n_features":
        options["n_features"] = draw(S.hostile_param() | st.sampled_from([1, 0, 2]))
        hostile = (("n_features", "data.txt"),)
    elif what == "sparse":
        options["sparse"] = draw(st.sampled_from([1, "yes", None, 2.5, [True]]))
        hostile = (("sparse",),)
    text = "\n".join(_line(*row) if not any(isinstance(t, str) for t, _ in row[2]) else
                     f"{row[0]}" + "".join(f" {t}" if v == "" else f" {t}:{v}" for t, v in row[2]) for row in rows) + "\n"
    if what == "file":
        text = draw(st.sampled_from(["", "\n\n", "# only a comment\n", "#\n# two\n", " \t\n", "\x00\x00",
                                     b"\x1f\x8b\x08\x00truncated gzip", b"\xff\xfe\xfa bytes\n", "1 qid:1 1:1",
                                     "1 qid:1 1:1\r\n0 qid:1 2:1\r\n", "1 qid:1 " + "1:1 " * 5000 + "\n"]))
    if what == "none" or (what == "qid" and not (with_qid and n >= 3)):
        hostile = ()
    return Example("data.load_letor", dict(text=text, options=options, query_text=query_text), hostile)


_SYNTH_VALID = {"n_queries": st.integers(1, 5), "docs_per_query": st.integers(1, 8), "n_features": st.integers(1, 4),
                "seed": st.integers(0, 10), "max_grade": st.integers(1, 6), "noise": st.floats(0, 2),
                "query_effect": st.floats(0, 2), "feature_shift": st.floats(0, 2), "min_docs": st.integers(1, 2),
                "grade_ratio": st.floats(0.1, 1.0)}
#: Sizes are requests for memory: only values that must be refused are hostile (plus 2000 grades,
#: issue 13 class 10).
_SYNTH_HOSTILE = {"n_queries": (0, -1, 2**63, 2**70, 1.5, math.nan, "3", True, None),
                  "docs_per_query": (-1, 0.5, math.nan, math.inf, 1e300, 2**70, "4", True),
                  "n_features": (0, -1, 2**63, 1.5, "3", True), "seed": (-1, 2**64, 2**70, 1.5, "a", math.nan),
                  "max_grade": (2000, 1024, 0, -1, 2**63, 1.5, True), "min_docs": (0, -1, 2**70, 1.5),
                  "noise": S.HOSTILE_FLOATS, "query_effect": S.HOSTILE_FLOATS, "feature_shift": S.HOSTILE_FLOATS,
                  "grade_ratio": (0.0, 1e-320, 2.0, math.nan, math.inf, -0.5, 1e300)}


@st.composite
def synthetic_examples(draw):
    names = draw(st.lists(st.sampled_from(sorted(_SYNTH_VALID)), unique=True))
    options = {k: draw(_SYNTH_VALID[k]) for k in names}
    options.setdefault("n_queries", draw(st.integers(1, 5)))
    options.setdefault("docs_per_query", draw(st.integers(2, 8)))
    options.setdefault("n_features", draw(st.integers(1, 4)))
    if options.get("min_docs", 1) > options["docs_per_query"]:
        options["min_docs"] = 1
    hostile = ()
    if draw(st.booleans()):
        name = draw(st.sampled_from(sorted(_SYNTH_HOSTILE)))
        options[name] = draw(st.sampled_from(_SYNTH_HOSTILE[name]))
        hostile = ((name,),)
    return Example("data.synthetic", {"options": options}, hostile)


ADAPTER_OBJECTIVES = ("RankNet", "LambdaRank", "SquaredError", "QBRank", "MPBoost", "StructuredDCG", "Logistic")


@st.composite
def adapter_examples(draw):
    lib = draw(st.sampled_from(["lightgbm", "xgboost"]))
    cls = draw(st.sampled_from(ADAPTER_OBJECTIVES))
    n = draw(st.integers(2, 12))
    X = S.float_array(draw, n, -2, 2, cols=2)
    labels = labels_for(draw, cls, n)
    group = [s for s in S.sizes_of(draw, n) if s] or [n]
    params = valid_params(draw, cls, n)
    preds = S.float_array(draw, n, -3, 3)
    weight = None if lib == "xgboost" or draw(st.booleans()) else S.float_array(draw, n, 0.1, 2.0)
    mutation = draw(st.sampled_from([None, "set_label", "set_label", "set_group", "set_weight"]))
    if lib == "xgboost" and mutation == "set_weight":
        mutation = "set_label"
    new_labels = labels_for(draw, cls, n)
    new_group = [s for s in S.sizes_of(draw, n) if s] or [n]
    new_weight = S.float_array(draw, n, 0.1, 2.0)
    hostile = ()
    what = draw(st.sampled_from(["none", "none", "preds", "labels"]))
    if what == "preds":
        preds, names = S.hostile_arg(draw, preds, S.HOSTILE_FLOATS, S.SCORE_NAMES)
        hostile = (names,)
    elif what == "labels":
        labels = S.mutate_array(draw, labels, values=S.HOSTILE_LABELS)
        arr = S.as_array_or_none(labels)
        if arr is None or arr.dtype.kind not in "biuf" or arr.ndim != 1 or len(arr) != n:
            labels = np.asarray([-1.0] + [0.0] * (n - 1))
        hostile = (S.LABEL_NAMES,)
    return Example("adapters.train_callables", dict(
        lib=lib, cls=cls, params=params, X=X, labels=labels, group=group, weight=weight, preds=preds,
        mutation=mutation, new_labels=new_labels, new_group=new_group, new_weight=new_weight), hostile)


@st.composite
def sklearn_callable_examples(draw):
    lib = draw(st.sampled_from(["lightgbm", "xgboost"]))
    cls = draw(st.sampled_from(("SquaredError", *BINARY, "McRank") if lib == "xgboost" else ADAPTER_OBJECTIVES))
    n = draw(st.integers(1, 10))
    y = labels_for(draw, cls, n)
    params = valid_params(draw, cls, n) if cls != "McRank" else {"n_classes": 5}
    k = n_classes(cls, params, y)
    preds = S.float_array(draw, n, -3, 3, cols=None if k == 1 else k)
    group = [s for s in S.sizes_of(draw, n) if s] or [n]
    weight = None
    what = draw(st.sampled_from(["none", "inplace", "y", "pred", "weight", "group"]))
    hostile, inplace = (), None
    if what == "inplace":
        inplace = labels_for(draw, cls, n)
    elif what == "y":
        y, names = S.hostile_arg(draw, y, S.HOSTILE_LABELS, S.LABEL_NAMES + ("y_true",))
        hostile = (names,)
    elif what == "pred":
        preds, names = S.hostile_arg(draw, preds, S.HOSTILE_FLOATS, S.SCORE_NAMES)
        hostile = (names,)
    elif what == "weight":
        weight, names = S.hostile_arg(draw, np.ones(n), S.HOSTILE_WEIGHTS, S.WEIGHT_NAMES)
        hostile = (names,)
    elif lib == "lightgbm":
        group = S.hostile_group(draw, n)
        group = group["arg"] if isinstance(group, dict) and "__groups__" in group else group
        hostile = (S.GROUP_NAMES,)
    return Example("adapters.sklearn_callables", dict(lib=lib, cls=cls, params=params, y_true=y, y_pred=preds,
                                                      weight=weight, group=group, inplace_labels=inplace), hostile)


@st.composite
def line_search_examples(draw):
    n = draw(st.integers(6, 12))
    native = draw(st.sampled_from(["lambdarank", "rank_xendcg", "regression", "same-callable"]))
    X = S.float_array(draw, n, -2, 2, cols=2)
    X[:, 0] = np.arange(n)  # at least one usable feature, or LightGBM refuses the data itself
    return Example("adapters.line_search", dict(native=native, X=X,
                                                y=S.grade_array(draw, n, 2), group=[n // 2, n - n // 2]))


IO_PROPERTIES = {
    "data.load_letor": letor_examples(),
    "data.synthetic": synthetic_examples(),
    "adapters.train_callables": adapter_examples(),
    "adapters.sklearn_callables": sklearn_callable_examples(),
    "adapters.line_search": line_search_examples(),
}
