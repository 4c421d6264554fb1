"""Robustness of the OLE tree booster (issue 7): bad input raises clear errors before any tree is
grown, and saved models are byte-identical whatever the thread count."""
from __future__ import annotations

import numpy as np
import pytest

import customobj as co
from customobj.data import synthetic

ole = pytest.importorskip("customobj.ole")
TreeBooster = ole.TreeBooster


@pytest.fixture(scope="module")
def data():
    d = synthetic(24, 12, 5, seed=1)
    return np.asarray(d.X), d.y, np.asarray(d.group)


def _fit(X, y, g, **kw):
    opts = dict(n_estimators=2, num_leaves=4, min_data_in_leaf=5, verbose=False)
    opts.update(kw)
    return TreeBooster(co.RankNet(), **opts).fit(X, y, g)


BAD_FITS = [
    ("X 1-D", lambda X, y, g: _fit(X[:, 0], y, g), ValueError, r"X must be 2-D"),
    ("X object", lambda X, y, g: _fit(X.astype(object), y, g), TypeError, r"X must be numeric, got dtype object"),
    ("X sparse", lambda X, y, g: _fit(__import__("scipy.sparse").sparse.csr_matrix(X), y, g), TypeError,
     r"X must be a dense 2-D array"),
    ("y shorter", lambda X, y, g: _fit(X, y[:-1], g), ValueError, r"rows"),
    ("group sum", lambda X, y, g: _fit(X, y, np.r_[g[:-1], g[-1] + 1]), ValueError, r"group sizes sum to \d+ but data has \d+ rows"),
    ("NaN label", lambda X, y, g: _fit(X, np.r_[np.nan, y[1:]], g), ValueError, r"labels must be finite; found nan at position 0"),
    ("negative label", lambda X, y, g: _fit(X, np.r_[y[:3], -1, y[4:]], g), ValueError, r"non-negative.*-1.0 at row 3"),
    ("group missing", lambda X, y, g: _fit(X, y, None), ValueError, r"RankNet is a ranking objective and needs group="),
    ("num_leaves 0", lambda X, y, g: _fit(X, y, g, num_leaves=0), ValueError, r"num_leaves must be >= 1"),
    ("learning_rate nan", lambda X, y, g: _fit(X, y, g, learning_rate=float("nan")), ValueError, r"learning_rate must be finite"),
    ("n_jobs 0", lambda X, y, g: _fit(X, y, g, n_jobs=0), ValueError, r"n_jobs must be >= 1"),
    ("criterion", lambda X, y, g: _fit(X, y, g, criterion="gini"), ValueError, r"criterion must be one of"),
    ("init_score inf", lambda X, y, g: TreeBooster(co.RankNet(), n_estimators=1, verbose=False).fit(
        X, y, g, init_score=np.r_[np.inf, np.zeros(len(y) - 1)]), ValueError, r"init_score must be finite; found inf at position 0"),
    ("objective type", lambda X, y, g: TreeBooster("lambdarank"), TypeError, r"objective must be a customobj Objective"),
]


@pytest.mark.parametrize("name,call,exc,msg", BAD_FITS, ids=[b[0] for b in BAD_FITS])
def test_bad_fit_input(data, name, call, exc, msg):
    with pytest.raises(exc, match=msg):
        call(*data)


def test_predict_checks_width(data):
    X, y, g = data
    m = _fit(X, y, g, n_estimators=1)
    with pytest.raises(ValueError, match=r"X has 4 features but the model was trained on 5"):
        m.predict(X[:, :4])


def test_nan_features_are_missing_values_not_errors(data):
    X, y, g = data
    X = X.copy()
    X[::3, 1] = np.nan
    pred = _fit(X, y, g).predict(X)
    assert np.all(np.isfinite(pred))


def test_extreme_labels_and_single_query(data):
    X, y, g = data
    for labels, groups in ((np.ones_like(y), g), (y, [len(y)]), (y, np.ones(len(y), np.int64))):
        pred = _fit(X, labels, groups).predict(X)
        assert np.all(np.isfinite(pred))


@pytest.mark.parametrize("objective,criterion", [
    (co.RankNet(), "ole"), (co.QBRank(), "ole"), (co.SquaredError(), "wse"),
])
def test_saved_model_identical_across_n_jobs(tmp_path, data, objective, criterion):
    X, y, g = data
    files = []
    for run, n_jobs in enumerate((1, 2, 1, 2)):
        m = TreeBooster(objective, criterion=criterion, n_estimators=3, num_leaves=6, min_data_in_leaf=3,
                        bagging_fraction=0.8, feature_fraction=0.8, random_state=5, n_jobs=n_jobs, verbose=False)
        m.fit(X, y, g)
        path = tmp_path / f"model_{run}.json"
        m.save(path)
        files.append(path.read_bytes())
    assert files[2] == files[0] and files[3] == files[1]  # same n_jobs: same bytes
    assert files[1] == files[0]  # the thread count is not saved and does not change the model
