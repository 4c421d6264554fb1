"""Properties of the OLE TreeBooster: hostile options and data for ``fit`` / ``predict``, mutated
model files for ``load``, and saving over a good file (see :mod:`fuzz.properties`)."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from . import strategies as S
from .model_files import model_file_examples, save_examples
from .properties import labels_for, n_classes, on_rows, valid_params
from .runner import Example

FIT_OBJECTIVES = ("RankNet", "LambdaRank", "SquaredError", "McRank", "QBRank", "StructuredDCG", "Logistic")
_VALID_BOOSTER = {
    "criterion": st.sampled_from(["ole", "wse", "se"]), "num_leaves": st.integers(2, 6),
    "n_estimators": st.integers(0, 3), "max_bin": st.integers(2, 40), "min_data_in_leaf": st.integers(1, 5),
    "min_sum_hessian_in_leaf": st.floats(0.0, 1.0), "lambda_l2": st.floats(0.0, 2.0),
    "max_depth": st.integers(-1, 4), "growth": st.sampled_from(["best_first", "breadth_first"]),
    "feature_fraction": st.floats(0.2, 1.0), "bagging_fraction": st.floats(0.2, 1.0),
    "random_state": st.integers(0, 2**32 - 1), "n_jobs": st.none() | st.integers(1, 2),
    "leaf_solver": st.sampled_from(["diagonal", "joint"]), "line_search": st.booleans(),
    "importance_type": st.sampled_from(["split", "gain"]), "learning_rate": st.floats(0.01, 1.0),
}
#: n_estimators is a request for work: huge valid counts would train for hours, so only values that
#: must be refused (negative, beyond int64, wrong types) are hostile here.
_HOSTILE_N_ESTIMATORS = (-1, -(2**70), 2**63, 2**70, True, 1.5, math.nan, "3", None, [2])
_FIT_ARGS = ("X", "y", "group", "sample_weight", "init_score", "eval_set", "eval_metric", "early_stopping_rounds")


@st.composite
def booster_fit_examples(draw):
    """TreeBooster(options).fit(X, y, group, ...) then predict, with one hostile option or argument."""
    cls = draw(st.sampled_from(FIT_OBJECTIVES))
    # 0 rows or 0 features cannot train (TreeBooster refuses them, naming X): the valid baseline has
    # at least one of each; hostile_arg below still draws empty X as a hostile case.
    n = draw(st.integers(1, 30))
    F = draw(st.integers(1, 4))
    X = S.float_array(draw, n, -3, 3, cols=F)
    if draw(st.booleans()):
        X = X.astype(np.float32)
    y = labels_for(draw, cls, n)
    obj_params = valid_params(draw, cls, n)
    if cls == "McRank":
        obj_params = {"n_classes": 5}
    group = S.valid_group(draw, n)
    names = draw(st.lists(st.sampled_from(sorted(_VALID_BOOSTER)), unique=True, max_size=6))
    params = {k: draw(_VALID_BOOSTER[k]) for k in names}
    params.setdefault("n_estimators", draw(st.integers(1, 3)))
    fit_options, X_predict, hostile = {}, None, ()
    what = draw(st.sampled_from(["none", "param", "param", "param", "data", "data", "data"]))
    if what == "param":
        name = draw(st.sampled_from(sorted(_VALID_BOOSTER)))
        params[name] = draw(st.sampled_from(_HOSTILE_N_ESTIMATORS)) if name == "n_estimators" \
            else draw(S.hostile_param() | st.sampled_from([1, 0, -1]))
        hostile = ((name,),)
    elif what == "data":
        arg = draw(st.sampled_from(_FIT_ARGS))
        if arg == "X":
            X, names_ = S.hostile_arg(draw, X, S.HOSTILE_FLOATS, ("X",))
            hostile = (names_,)
            arr = S.as_array_or_none(X)
            X_predict = X if arr is not None and arr.ndim == 2 else None
        elif arg == "y":
            y = S.mutate_array(draw, y, values=S.HOSTILE_LABELS)
            hostile = (S.LABEL_NAMES + ("X",),)  # a length mismatch may name either, never "scores"
        elif arg == "group":
            group = S.hostile_group(draw, n)
            hostile = (S.GROUP_NAMES,)
        elif arg == "sample_weight":
            fit_options["sample_weight"], names_ = S.hostile_arg(draw, np.ones(n), S.HOSTILE_WEIGHTS, S.WEIGHT_NAMES)
            hostile = (names_,)
        elif arg == "init_score":
            k = n_classes(cls, obj_params, y)
            base = np.zeros(n) if k == 1 else np.zeros((n, k))
            fit_options["init_score"], names_ = S.hostile_arg(draw, base, S.HOSTILE_FLOATS, ("init_score",))
            hostile = (names_,)
        elif arg == "eval_set":
            bad = S.mutate_array(draw, X)
            fit_options.update(eval_set=[(bad, y)], eval_group=[group])
            hostile = (("eval", "X"),)
        elif arg == "eval_metric":
            fit_options.update(eval_set=[(X, y)], eval_group=[group],
                               eval_metric=draw(S.hostile_param() | st.sampled_from(["ndcg@0", "nope", "ndcg@2**70"])))
            hostile = (("eval_metric", "metric"),)
        else:
            fit_options.update(eval_set=[(X, y)], eval_group=[group], early_stopping_rounds=draw(S.hostile_param()))
            hostile = (("early_stopping_rounds",),)
    kwargs = dict(cls=cls, obj_params=obj_params, params=params, X=X, y=y, group=group, fit_options=fit_options,
                  X_predict=X_predict)
    return Example("booster.fit", kwargs, on_rows(hostile, n))


OLE_PROPERTIES = {
    "ole.fit_predict": booster_fit_examples(),
    "ole.load_model_file": model_file_examples(),
    "ole.save_over_file": save_examples(),
}
