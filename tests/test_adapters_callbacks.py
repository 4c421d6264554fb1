"""adapters.callbacks guard rails: LineSearch (and any callback built on
require_customobj_training) refuses trainings whose objective is not a customobj adapter.

Also covers adapters/_tracking.py (ScoreTracking, claim_datasets, require_customobj_training), the
score tracking LineSearch and ExactLeaves share."""
import numpy as np
import pytest

from customobj import adapters  # before lightgbm: sets the OpenMP wait policy

import lightgbm as lgb

import customobj
from customobj.adapters.callbacks import require_customobj_training

P = dict(num_leaves=7, learning_rate=0.2, min_data_in_leaf=10, verbose=-1, num_threads=1, metric="None",
         deterministic=True, force_row_wise=True)


@pytest.fixture(scope="module")
def small():
    d = customobj.data.synthetic(30, 15, 5, seed=4)
    return d.X, d.y, np.asarray(d.group)


def test_line_search_refuses_a_native_objective_before_changing_trees(small):
    X, y, g = small
    ls = adapters.LineSearch(customobj.LambdaRank(), X, y, g)
    with pytest.raises(TypeError, match="native objective 'lambdarank'.*lightgbm_objective"):
        lgb.train(dict(P, objective="lambdarank"), lgb.Dataset(X, y, group=g), 3, callbacks=[ls])
    assert ls.rhos == []  # refused at the first call, before any rescaling


def test_line_search_refuses_a_dataset_reused_from_an_earlier_training(small):
    """The first training's score corrections stay on the Dataset: a second training with it would
    start from gradients that already include them."""
    X, y, g = small
    obj = customobj.RankNet()
    data = lgb.Dataset(X, y, group=g)
    lgb.train(dict(P, objective=adapters.lightgbm_objective(obj)), data, 2,
              callbacks=[adapters.LineSearch(obj, X, y, g)])
    second = adapters.LineSearch(obj, X, y, g)
    with pytest.raises(ValueError, match="LineSearch: this training Dataset carries score corrections"):
        lgb.train(dict(P, objective=adapters.lightgbm_objective(obj)), data, 2, callbacks=[second])
    assert second.rhos == []


@pytest.mark.parametrize("who", ["LineSearch", "ExactLeaves"])
def test_refuses_a_custom_objective_that_is_not_an_adapter(small, who):
    X, y, g = small
    obj = customobj.RankNet()

    def plain(preds, data):  # the user's own function: the callback cannot know its loss
        return obj.grad_hess(preds, data.get_label(), g)

    with pytest.raises(TypeError, match="not a customobj adapter"):
        lgb.train(dict(P, objective=plain), lgb.Dataset(X, y, group=g), 2,
                  callbacks=[getattr(adapters, who)(obj, X, y, g)])


@pytest.mark.parametrize("who, obj", [("LineSearch", customobj.QBRank()), ("ExactLeaves", customobj.RankNet())])
def test_refuses_the_sklearn_estimators(small, who, obj):
    X, y, g = small
    ranker = lgb.LGBMRanker(objective=adapters.lightgbm_objective(obj), n_estimators=2, verbose=-1, n_jobs=1)
    with pytest.raises(TypeError, match=f"{who} works with lightgbm.train only"):
        ranker.fit(X, y, group=g, callbacks=[getattr(adapters, who)(obj, X, y, g)])


def test_line_search_refuses_another_objective(small):
    X, y, g = small
    with pytest.raises(ValueError, match=r"LineSearch was given RankNet.*booster trains QBRank"):
        lgb.train(dict(P, objective=adapters.lightgbm_objective(customobj.QBRank())), lgb.Dataset(X, y, group=g), 2,
                  callbacks=[adapters.LineSearch(customobj.RankNet(), X, y, g)])


def test_the_guard_is_generic_and_returns_the_trained_objective(small):
    """What a future callback (ExactLeaves) calls at its first round."""
    X, y, g = small
    seen = []

    class Probe:
        objective = customobj.QBRank()
        order = 5
        before_iteration = False

        def __call__(self, env):
            seen.append(require_customobj_training(env, self))

    obj = customobj.QBRank()
    lgb.train(dict(P, objective=adapters.lightgbm_objective(obj)), lgb.Dataset(X, y, group=g), 2, callbacks=[Probe()])
    assert seen == [obj, obj]
    with pytest.raises(TypeError, match="Probe needs the booster to train a customobj objective"):
        lgb.train(dict(P, objective="rank_xendcg"), lgb.Dataset(X, y, group=g), 1, callbacks=[Probe()])


# --- issue 26.2 / 26.3: nothing recorded or trained that is not the model's ----------------------------
def _callback(who, obj, X, y, g, **kw):
    return getattr(adapters, who)(obj, X, y, g, **kw)


def _changed(cb):
    return cb.rhos if isinstance(cb, adapters.LineSearch) else cb.quadratic_exact


@pytest.fixture(scope="module")
def valid():
    d = customobj.data.synthetic(12, 15, 5, seed=5)
    return d.X, d.y, np.asarray(d.group)


CASES = {  # case -> (callback keywords, training changes, what the error says)
    "dart": ({}, dict(params=dict(boosting="dart")), "supports boosting 'gbdt' and 'goss' only.*'dart'"),
    "dart alias": ({}, dict(params=dict(boosting_type="DART")), "'dart'"),
    "weights": ({}, dict(weight=True), "weight other than the training Dataset's"),
    "groups": ({}, dict(merge_groups=True), r"query groups \(group\) other than the training Dataset's"),
    "X width": (dict(narrow_X=True), {}, "X has 4 features"),
    "valid_X width": (dict(valid_X="narrow"), {}, r"valid_X\[0\] has 4 features \(columns\) but the model has 5"),
    "valid_X rows": (dict(valid_X="short"), {}, r"valid_X\[0\] has 171 rows but validation set 'valid_0' has 172"),
    "too many valid_X": (dict(valid_X="two"), {}, "valid_X has 2 feature matrices but the training has 1"),
    "no valid_X": (dict(valid_X=None), {}, "needs the raw features of validation set 'valid_0'.*pass valid_X="),
}


@pytest.mark.parametrize("who", ["LineSearch", "ExactLeaves"])
@pytest.mark.parametrize("case", list(CASES))
def test_refuses_what_would_record_or_train_another_model(small, valid, who, case):
    """Each of these used to train on or record something else than the model (DART: earlier trees
    rescaled after the tracking; weights / groups: another loss searched; valid_X of the wrong width:
    read past each row; no valid_X: uncorrected validation metrics). Refused at the first call,
    before any tree changes, with the argument named."""
    X, y, g = small
    Xv, yv, gv = valid
    kw, change, match = CASES[case]
    vx = {"narrow": [Xv[:, :4]], "short": [Xv[:-1]], "two": [Xv, Xv], None: None}.get(kw.get("valid_X", "ok"), [Xv])
    cb = _callback(who, customobj.RankNet(), X[:, :4] if kw.get("narrow_X") else X, y, g, valid_X=vx)
    weight = np.linspace(0.5, 1.5, len(y)) if change.get("weight") else None
    group = [g[0] + g[1], *g[2:]] if change.get("merge_groups") else g
    params = dict(P, objective=adapters.lightgbm_objective(customobj.RankNet()), **change.get("params", {}))
    with pytest.raises(ValueError, match=match):
        lgb.train(params, lgb.Dataset(X, y, group=group, weight=weight), 2,
                  valid_sets=[lgb.Dataset(Xv, yv, group=gv)], feval=adapters.lightgbm_metric("ndcg@5"), callbacks=[cb])
    assert _changed(cb) == []


def test_line_search_and_exact_leaves_cannot_share_a_training(small):
    """Each corrects LightGBM's scores for its own leaves only: on a new Dataset the second one says
    so (it used to speak of corrections from an earlier training)."""
    X, y, g = small
    obj = customobj.RankNet()
    ls, exact = adapters.LineSearch(obj, X, y, g), adapters.ExactLeaves(obj, X, y, g)
    with pytest.raises(ValueError, match="cannot be combined in one training"):
        lgb.train(dict(P, objective=adapters.lightgbm_objective(obj)), lgb.Dataset(X, y, group=g), 2,
                  callbacks=[ls, exact])


@pytest.mark.parametrize("who", ["LineSearch", "ExactLeaves"])
@pytest.mark.parametrize("raw", ["valid_X", "free_raw_data"])
def test_recorded_metrics_and_objective_scores_are_the_models_own_after_init_model(small, valid, who, raw):
    """Continuing from ``init_model``: LightGBM puts the first model's predictions in the Datasets'
    initial scores and its trees in the new booster. Every recorded validation metric (customobj's
    and LightGBM's own name) equals the metric of the final booster's own predictions at that round,
    and the objective saw the model's training scores (they were counted twice before)."""
    X, y, g = small
    Xv, yv, gv = valid
    obj = customobj.RankNet()
    params = dict(P, objective=adapters.lightgbm_objective(obj), metric="ndcg", eval_at=[5])
    first = lgb.train(params, lgb.Dataset(X, y, group=g, free_raw_data=False), 3)
    cb = _callback(who, obj, X, y, g, valid_X=[Xv] if raw == "valid_X" else None)
    dtrain = lgb.Dataset(X, y, group=g, free_raw_data=False)
    dvalid = lgb.Dataset(Xv, yv, group=gv, reference=dtrain, free_raw_data=raw == "valid_X")
    record = {}
    booster = lgb.train(params, dtrain, 3, valid_sets=[dvalid], valid_names=["v"], init_model=first,
                        feval=adapters.lightgbm_metric("ndcg@5"), callbacks=[cb, lgb.record_evaluation(record)])
    assert booster.current_iteration() == 6 and len(_changed(cb)) == 3
    for r in range(3):
        want = customobj.metrics.ndcg(booster.predict(Xv, num_iteration=4 + r), yv, gv, k=5)
        assert record["v"]["co_ndcg@5"][r] == pytest.approx(want, abs=1e-9)
        assert record["v"]["ndcg@5"][r] == pytest.approx(want, abs=1e-9)
    seen = params["objective"].state_for(dtrain).scores  # at the last round: the model after 5 trees
    np.testing.assert_allclose(seen, booster.predict(X, num_iteration=5), atol=1e-9)
