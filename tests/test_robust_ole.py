"""Robustness of the OLE tree booster (issue 7): bad input raises clear errors before any tree is
grown, and saved models are byte-identical whatever the thread count."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import customobj as co
import customobj.ole as ole
from customobj.data import synthetic

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
    ("X strings", lambda X, y, g: _fit(np.where(X > 0, "a", "b").astype(object), y, g), TypeError, r"X holds strings"),
    ("X complex", lambda X, y, g: _fit(X + 1j, y, g), ValueError, r"X has complex dtype complex64: Complex data not supported"),
    ("X sparse", lambda X, y, g: _fit(__import__("scipy.sparse").sparse.csr_matrix(X), y, g), TypeError,
     r"X must be a dense 2-D array"),
    ("y shorter", lambda X, y, g: _fit(X, y[:-1], g), ValueError, r"^X has 276 rows but y has 275$"),
    ("X shorter", lambda X, y, g: _fit(X[:-1], y, g), ValueError, r"^X has 275 rows but y has 276$"),
    ("weight longer", lambda X, y, g: TreeBooster(co.RankNet(), verbose=False).fit(X, y, g, sample_weight=np.ones(277)),
     ValueError,
     r"^X has 276 rows but sample_weight has 277$"),
    ("group sum", lambda X, y, g: _fit(X, y, np.r_[g[:-1], g[-1] + 1]), ValueError, r"group sizes sum to \d+ but data has \d+ rows"),
    ("NaN label", lambda X, y, g: _fit(X, np.r_[np.nan, y[1:]], g), ValueError, r"labels must be finite; found nan at position 0"),
    ("negative label", lambda X, y, g: _fit(X, np.r_[y[:3], -1, y[4:]], g), ValueError, r"non-negative.*-1.0 at row 3"),
    ("group missing", lambda X, y, g: _fit(X, y, None), ValueError, r"RankNet is a ranking objective: fit needs group= \(query sizes\) or qid="),
    ("num_leaves 0", lambda X, y, g: _fit(X, y, g, num_leaves=0), ValueError, r"num_leaves must be in \[2, 131072\], got 0"),
    ("learning_rate nan", lambda X, y, g: _fit(X, y, g, learning_rate=float("nan")), ValueError, r"learning_rate must be finite"),
    ("n_jobs 0", lambda X, y, g: _fit(X, y, g, n_jobs=0), ValueError, r"n_jobs must be in \[1, "),
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
    with pytest.raises(ValueError, match=r"X has 4 features, but TreeBooster is expecting 5 features as input"):
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
def test_saved_model_identical_across_n_jobs(tmp_path, data, objective, criterion, two_threads):
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


# ------------------------------------------------------------------------------------------------
# issue 13 classes 9 and 10: degenerate data is refused, tiny data trains, options fail where written
# ------------------------------------------------------------------------------------------------
DEGENERATE = [
    ("0 rows", lambda X, y, g: _fit(X[:0], y[:0], [0]), r"^X has 0 rows \(shape=\(0, 5\)\) while a minimum of 1"),
    ("0 rows pointwise", lambda X, y, g: TreeBooster(co.SquaredError(), verbose=False).fit(X[:0], y[:0]),
     r"^X has 0 rows"),
    ("0 features", lambda X, y, g: _fit(X[:, :0], y, g),
     r"^X has 0 feature\(s\) \(shape=\(276, 0\)\) while a minimum of 1 is required"),
    ("qid and group", lambda X, y, g: TreeBooster(co.RankNet(), verbose=False).fit(X, y, g, qid=np.repeat(
        np.arange(len(g)), g)), r"pass group= \(query sizes\) or qid= \(one query id per row\), not both"),
    ("per-row ids as group", lambda X, y, g: _fit(X, y, np.repeat(np.arange(len(g)), g)),
     r"group sizes sum to \d+ but data has 276 rows; group holds one entry per row: if these are query ids, "
     r"pass them as qid="),
    ("qid length", lambda X, y, g: TreeBooster(co.RankNet(), verbose=False).fit(X, y, qid=np.zeros(275)),
     r"qid has 275 rows but data has 276 rows"),
    ("qid not contiguous", lambda X, y, g: TreeBooster(co.RankNet(), verbose=False).fit(
        X, y, qid=np.arange(len(y)) % 2), r"qid 0 reappears at row 2 after another query"),
    ("zero weights", lambda X, y, g: TreeBooster(co.RankNet(), verbose=False).fit(X, y, g, sample_weight=np.zeros(276)),
     r"sample_weight: every weight is zero"),
    ("eval_set y short", lambda X, y, g: TreeBooster(co.RankNet(), verbose=False).fit(
        X, y, g, eval_set=[(X, y[:-1])]), r"eval_set\[0\] X has 276 rows but y has 275"),
]


@pytest.mark.parametrize("name,call,msg", DEGENERATE, ids=[d[0] for d in DEGENERATE])
def test_degenerate_fit_input_is_refused(data, name, call, msg):
    with pytest.raises(ValueError, match=msg):
        call(*data)


BAD_OPTIONS = [
    ({"num_leaves": 1}, ValueError, r"num_leaves must be in \[2, 131072\], got 1 \(a tree needs at least two leaves"),
    ({"num_leaves": 2**70}, ValueError, r"num_leaves must be in \[2, 131072\], got 1180591620717411303424"),
    ({"num_leaves": True}, TypeError, r"num_leaves must be an integer, got bool"),
    ({"random_state": -1}, ValueError, r"random_state must be in \[0, \d+\], got -1 \(a seed: a non-negative integer\)"),
    ({"random_state": 1.5}, TypeError, r"random_state must be an integer, got float"),
    ({"min_data_in_leaf": 10**400}, ValueError, r"min_data_in_leaf must be in \[1, 9007199254740992\]"),
    ({"max_bin": 65535}, ValueError, r"max_bin must be in \[2, 65534\], got 65535"),
    ({"criterion": ["ole"]}, ValueError, r"criterion must be one of \['ole', 'ole_fast', 'ole_float64', 'se', 'wse'\], got \['ole'\]"),
    ({"bagging_fraction": 0.0}, ValueError, r"bagging_fraction must be in \(0.0, 1.0\], got 0.0"),
    ({"feature_fraction": 1.5}, ValueError, r"feature_fraction must be in \(0.0, 1.0\], got 1.5"),
    ({"lambda_l2": float("inf")}, ValueError, r"lambda_l2 must be finite, got inf"),
    ({"learning_rate": True}, TypeError, r"learning_rate must be a real number, got bool"),
    ({"line_search": "yes"}, TypeError, r"line_search must be True or False, got str 'yes'"),
    ({"verbose": "yes"}, TypeError, r"verbose must be True or False \(or an integer: > 0 shows progress\)"),
    ({"objective": "lambdarank"}, TypeError, r"objective must be a customobj Objective"),
]


@pytest.mark.parametrize("options,exc,msg", BAD_OPTIONS, ids=[str(sorted(o)) + repr(list(o.values())[0])[:20]
                                                             for o, _, _ in BAD_OPTIONS])
def test_bad_options_fail_in_the_constructor_and_again_in_fit(data, options, exc, msg):
    with pytest.raises(exc, match=msg):
        TreeBooster(**options)
    # set_params stores without checking (scikit-learn convention); fit checks before any work
    model = TreeBooster(co.RankNet(), n_estimators=1, verbose=False).set_params(**options)
    with pytest.raises(exc, match=msg):
        model.fit(*data)
    assert not hasattr(model, "trees_")  # nothing was fitted


def test_refit_with_bad_data_keeps_the_fitted_model(data):
    X, y, g = data
    model = _fit(X, y, g)
    before = model.predict(X)
    with pytest.raises(ValueError, match="X has 0 feature"):
        model.fit(X[:, :0], y, g)
    with pytest.raises(ValueError, match="labels must be finite"):
        model.fit(X[:, :3], np.r_[np.nan, y[1:]], g)
    assert model.n_features_in_ == 5
    np.testing.assert_array_equal(model.predict(X), before)


@pytest.mark.parametrize("n_rows,n_features", [(1, 1), (2, 1), (3, 2)])
def test_tiny_valid_data_trains(n_rows, n_features):
    X = np.arange(n_rows * n_features, dtype=float).reshape(n_rows, n_features)
    y = np.arange(n_rows, dtype=float) % 2
    for obj, group in ((co.SquaredError(), None), (co.RankNet(), [n_rows]), (co.LambdaRank(), [n_rows])):
        model = TreeBooster(obj, n_estimators=2, num_leaves=2, min_data_in_leaf=1, verbose=False).fit(X, y, group)
        pred = model.predict(X)
        assert pred.shape == (n_rows,) and np.all(np.isfinite(pred))
    assert model.predict(X[:0]).shape == (0,)  # predicting no rows is fine


def test_pointwise_objective_needs_no_queries(data):
    X, y, g = data
    pred = TreeBooster(co.SquaredError(), n_estimators=3, verbose=False).fit(X, y).predict(X)
    assert np.all(np.isfinite(pred)) and np.ptp(pred) > 0


_HOSTILE_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
    st.sampled_from([[1], [], {}, (), np.array([1.0, 4.0]), np.int64(-1), np.float32("nan"), "ole", "joint",
                     b"split", 1j, co.RankNet(), object()]),
)


@settings(max_examples=150, deadline=None)
@given(name=st.sampled_from(sorted(TreeBooster().get_params())), value=_HOSTILE_VALUES)
def test_any_option_value_is_accepted_or_refused_by_name(name, value):
    """Every value of every option: a model, or TypeError/ValueError naming the option (no other error)."""
    try:
        model = TreeBooster(**{name: value})
    except (TypeError, ValueError) as exc:
        assert name in str(exc)
        # the same value through set_params is refused by fit, with the same error, before any work
        late = TreeBooster(co.RankNet(), n_estimators=1, verbose=False).set_params(**{name: value})
        with pytest.raises(type(exc)) as again:
            late.fit(np.zeros((2, 1)), np.zeros(2), [2])
        assert str(again.value) == str(exc) and not hasattr(late, "trees_")
    else:
        assert model.get_params()[name] is value  # stored unmodified


def test_ragged_sample_weight_names_the_argument():
    """Found by the fuzz campaign: numpy's "inhomogeneous shape" message did not say which argument."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(3, 2)), np.array([2.0, 0.0, 1.0])
    with pytest.raises(ValueError, match=r"sample_weight must be 1-D"):
        TreeBooster(co.SquaredError(), n_estimators=1, verbose=False).fit(X, y, sample_weight=[[1.0, 1.0], [1.0]])
