"""The examples named in issue 13, as fixed fuzz examples: a deterministic checklist of the classes.

Each runs through the same worker and the same property as the generated examples (finite output
or a ValueError / TypeError naming the argument; no crash, hang, NaN or lost file).
"""
from __future__ import annotations

import numpy as np

from .runner import Example
from .strategies import GROUP_NAMES, LABEL_NAMES, SCORE_NAMES, WEIGHT_NAMES

S3 = np.array([0.5, 0.1, 0.3])
Y3 = np.array([2.0, 0.0, 1.0])
WRAP = [2**62] * 3 + [2**62 + 10]  # int64 sum wraps to 10
Y10 = np.array([0.0, 1, 2, 0, 1, 2, 0, 1, 2, 3])
S10 = np.linspace(-1, 1, 10)
BIG = 1180591620717411303424  # 2**70


def _obj(name, cls, params=None, method="grad_hess", scores=S3, labels=Y3, group=(3,), weight=None, wrap=(),
         hostile=(), nonzero=False):
    kw = dict(cls=cls, params=params or {}, method=method, scores=scores, labels=labels, group=list(group), wrap=wrap,
              nonzero=nonzero)
    if method != "pair_couplings":
        kw["weight"] = weight
    return name, Example("objective", kw, hostile)


def _metric(name, fname, labels, group=(3,), scores=S3, options=None, hostile=()):
    return name, Example("metric", dict(fname=fname, scores=scores, labels=labels, group=list(group),
                                        options=options or {}), hostile)


def _fit(name, params=None, X=None, y=None, group=None, cls="RankNet", fit_options=None, hostile=()):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3)) if X is None else X
    y = np.tile([0.0, 1.0, 2.0], 20) if y is None else y
    group = [30, 30] if group is None else group
    return name, Example("booster.fit", dict(cls=cls, obj_params={}, params={"n_estimators": 2, **(params or {})},
                                             X=X, y=y, group=group, fit_options=fit_options or {}), hostile)


def _letor(name, text, options=None, hostile=(("data.txt",),)):
    return name, Example("data.load_letor", dict(text=text, options=options or {}, query_text=None), hostile)


ISSUE_EXAMPLES = dict([
    # 1. integer overflow reaches numba
    ("1-from_sizes-wrap", Example("groups", dict(ctor="from_sizes", arg=WRAP, n_rows=10), (GROUP_NAMES,))),
    _obj("1-ranknet-wrapped-groups", "RankNet", scores=S10, labels=Y10, group=WRAP, hostile=(GROUP_NAMES,)),
    _metric("1-misordered-wrapped-groups", "misordered_pairs", Y10, WRAP, S10, hostile=(GROUP_NAMES,)),
    _obj("1-lambdarank-k-2**70", "LambdaRank", {"k": BIG}, hostile=(("k",),)),
    _obj("1-lambdarank-truncation-2**70", "LambdaRank", {"truncation": BIG}, hostile=(("truncation",),)),
    ("1-label_pairs-cap-2**70", Example("label_pairs", dict(labels=Y3, group=[3], options={"max_pairs_per_query": BIG}),
                                        (("max_pairs_per_query",),))),
    # 2. exponential gains overflow
    _obj("2-structured-dcg-label-1024", "StructuredDCG", labels=np.array([1024.0, 0, 1]), hostile=(LABEL_NAMES,)),
    _metric("2-ndcg-label-1024", "ndcg", np.array([1024.0, 0, 1]), hostile=(LABEL_NAMES,)),
    _metric("2-err-label-1024", "err", np.array([1024.0, 0, 1]), hostile=(LABEL_NAMES,)),
    _obj("2-lambdarank-label-1024", "LambdaRank", labels=np.array([1024.0, 0, 1]), hostile=(LABEL_NAMES,),
         nonzero=True),
    _obj("2-lambdarank-err-label-1024", "LambdaRank", {"metric": "err"}, labels=np.array([1024.0, 0, 1]),
         hostile=(LABEL_NAMES,)),
    # 5. stale caches
    ("5-lightgbm-set_label", Example("adapters.train_callables", dict(
        lib="lightgbm", cls="RankNet", params={}, X=np.c_[np.arange(6.0), np.arange(6.0) % 2], labels=Y3.repeat(2),
        group=[3, 3], weight=None, preds=np.linspace(-1, 1, 6), mutation="set_label",
        new_labels=np.array([0.0, 1, 2, 2, 1, 0]), new_group=None, new_weight=None))),
    ("5-xgboost-set_group", Example("adapters.train_callables", dict(
        lib="xgboost", cls="LambdaRank", params={}, X=np.c_[np.arange(6.0), np.arange(6.0) % 2], labels=Y3.repeat(2),
        group=[3, 3], weight=None, preds=np.linspace(-1, 1, 6), mutation="set_group", new_labels=None,
        new_group=[2, 4], new_weight=None))),
    # 6. misuse trains silently
    ("6-prepared-mcrank-grade-20", Example("objective.prepared_reuse", dict(
        cls_a="RankNet", params_a={}, cls_b="McRank", params_b={"n_classes": 3}, scores=np.zeros((3, 3)),
        labels=np.array([20.0, 0, 1]), group=[3]))),
    ("6-prepared-logistic-grades", Example("objective.prepared_reuse", dict(
        cls_a="RankNet", params_a={}, cls_b="Logistic", params_b={}, scores=S3, labels=Y3, group=[3]))),
    ("6-prepared-lambdarank-gain", Example("objective.prepared_reuse", dict(
        cls_a="RankNet", params_a={}, cls_b="LambdaRank", params_b={"gain": [0, 1, 3]}, scores=S3,
        labels=np.array([5.0, 0, 1]), group=[3]))),
    _obj("6-boolean-scores", "RankNet", scores=np.array([True, False, True]), hostile=(SCORE_NAMES,)),
    ("6-linesearch-native", Example("adapters.line_search", dict(
        native="lambdarank", X=np.c_[np.arange(12.0), np.arange(12.0) % 3], y=np.tile([0.0, 1, 2], 4), group=[6, 6]))),
    # 7. absurd magnitudes
    _obj("7-labels-1e300", "SquaredError", method="loss", labels=np.array([1e300, 0, 1]), hostile=(LABEL_NAMES,)),
    _obj("7-labels-1e300-lambdarank", "LambdaRank", labels=np.array([1e300, 0, 1]), hostile=(LABEL_NAMES,),
         nonzero=True),
    _obj("7-weights-1e300", "SquaredError", method="loss", scores=np.array([1e100, 0, 0]),
         weight=np.array([1e300, 1.0, 1.0]), hostile=(WEIGHT_NAMES,)),
    _obj("7-weights-1.7e308-ranknet", "RankNet", weight=np.array([1.7e308, 1.7e308, 1.0]), hostile=(WEIGHT_NAMES,)),
    _obj("7-weights-1.7e308", "RankSVM", weight=np.array([1.7e308, 1.7e308, 1.0]), hostile=(WEIGHT_NAMES,)),
    _obj("7-sigma-1e300", "RankNet", {"sigma": 1e300}, hostile=(("sigma",),)),
    _obj("7-margin-1e300", "RankSVM", {"margin": 1e300}, method="loss", hostile=(("margin",),)),
    _obj("7-alpha-1e300", "MPBoost", {"ddf": "ldd", "alpha": 1e300}, hostile=(("alpha",),)),
    _obj("7-scaled-1e308-twice", "RankNet", wrap=[("scale", 1e308), ("scale", 1e308)],
         hostile=(("factor", "scale", "overflow"),)),
    # 8. memory
    _letor("8-letor-feature-2e9", "1 qid:1 1:0.5\n0 qid:1 2000000000:1\n", hostile=(("data.txt", "sparse", "feature"),)),
    # 9. degenerate input
    _fit("9-num_leaves-1", {"num_leaves": 1}, hostile=(("num_leaves",),)),
    _fit("9-fit-0-rows", X=np.zeros((0, 3)), y=np.zeros(0), group=[], hostile=(("X", "rows", "y"),)),
    _fit("9-fit-0-features", X=np.zeros((60, 0)), hostile=(("X", "feature"),)),
    _letor("9-letor-empty", ""),
    _letor("9-letor-comment-only", "# nothing here\n"),
    # 10. messages
    _obj("10-mpboost-ddf-list", "MPBoost", {"ddf": ["ldd"]}, hostile=(("ddf",),)),
    _fit("10-random_state--1", {"random_state": -1}, hostile=(("random_state",),)),
    ("10-synthetic-max_grade-2000", Example("data.synthetic", {"options": {"n_queries": 3, "docs_per_query": 5,
                                                                           "n_features": 2, "max_grade": 2000}},
                                            (("max_grade",),))),
    _fit("10-fit-59-rows-60-labels", X=np.random.default_rng(0).normal(size=(59, 3)), group=[30, 30],
         hostile=(("y", "label", "X"),)),
    # 4. writes are not atomic
    ("4-save-unfitted-over-good", Example("booster.save", {"scenario": "unfitted"})),
    ("4-save-nan-history", Example("booster.save", {"scenario": "nan_history"})),
    ("4-save-full-disk", Example("booster.save", {"scenario": "full_disk", "size_limit": 100})),
])


def _model_examples():
    """Class 3 (model files are trusted): built from a valid model the worker saves."""
    import json

    from .model_files import FILE_NAMES, base_models

    base = json.loads(base_models()[0])
    X = np.zeros((4, base["n_features"]))

    def mutated(fn, names):
        d = json.loads(json.dumps(base))
        fn(d)
        return Example("booster.load", {"text": json.dumps(d, allow_nan=True), "X": X}, (names, FILE_NAMES))

    def set_tree(key, value, i=0):
        def fn(d):
            d["trees"][0][key][i] = value
        return fn

    return {
        "3-child-10**6": mutated(set_tree("left_child", 10**6), ("left_child", "child")),
        "3-split_feature-10**7": mutated(set_tree("split_feature", 10**7), ("split_feature", "feature")),
        "3-child-cycle-to-root": mutated(lambda d: (set_tree("left_child", 0)(d), set_tree("right_child", 0)(d)),
                                         ("left_child", "right_child", "child", "cycle")),
        "3-tree_class-wrong": mutated(lambda d: d.update(tree_class=[7] * len(d["tree_class"])), ("tree_class",)),
        "3-leaf_value-empty": mutated(lambda d: d["trees"][0].update(leaf_value=[]), ("leaf_value",)),
        "3-missing-key": mutated(lambda d: d.pop("n_outputs"), ("n_outputs",)),
    }


def all_examples() -> dict:
    return {**ISSUE_EXAMPLES, **_model_examples()}


def names() -> list:
    return sorted(ISSUE_EXAMPLES) + sorted(["3-child-10**6", "3-split_feature-10**7", "3-child-cycle-to-root",
                                            "3-tree_class-wrong", "3-leaf_value-empty", "3-missing-key"])
