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


def test_line_search_refuses_a_custom_objective_that_is_not_an_adapter(small):
    X, y, g = small
    obj = customobj.RankNet()

    def plain(preds, data):  # the user's own function: LineSearch cannot know its loss
        return obj.grad_hess(preds, data.get_label(), g)

    with pytest.raises(TypeError, match="not a customobj adapter"):
        lgb.train(dict(P, objective=plain), lgb.Dataset(X, y, group=g), 2,
                  callbacks=[adapters.LineSearch(obj, X, y, g)])


def test_line_search_refuses_the_sklearn_estimators(small):
    X, y, g = small
    obj = customobj.QBRank()
    ranker = lgb.LGBMRanker(objective=adapters.lightgbm_objective(obj), n_estimators=2, verbose=-1, n_jobs=1)
    with pytest.raises(TypeError, match="lightgbm.train only"):
        ranker.fit(X, y, group=g, callbacks=[adapters.LineSearch(obj, X, y, g)])


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
