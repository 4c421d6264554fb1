"""customobj.adapters._data: what the LightGBM and XGBoost adapters share (objective checks, the
per-dataset state, weights, output shapes, ranking scores). The adapters end to end are tested in
tests/test_adapters_lightgbm.py and tests/test_adapters_xgboost.py."""
import copy
import pickle

import numpy as np
import pytest

import customobj as co
from customobj.adapters import _data as D


class _Adapter(D.AdapterObjective):
    _factory = "test_adapter"


def test_require_objective_names_the_caller():
    obj = co.RankNet()
    assert D.require_objective(obj, "where") is obj
    with pytest.raises(TypeError, match=r"lgb_thing expects a customobj objective .*got str"):
        D.require_objective("lambdarank", "lgb_thing")


def test_known_outputs_says_what_to_do_while_mcrank_has_no_classes():
    assert D.known_outputs(co.RankNet(), "x") == 1
    assert D.known_outputs(co.McRank(n_classes=4), "x") == 4
    with pytest.raises(ValueError, match=r"LightGBM: McRank does not know its number of classes yet.*n_classes=K"):
        D.known_outputs(co.McRank(), "LightGBM")


def test_adapter_objective_identity_pickling_and_deepcopy():
    a, b = _Adapter(co.RankNet(sigma=2.0)), _Adapter(co.RankNet(sigma=2.0))
    assert a == b and hash(a) == hash(b) and a != _Adapter(co.RankNet())
    assert repr(a) == "test_adapter(RankNet(sigma=2.0))"
    dataset = _Adapter  # stands for a Dataset / DMatrix: any weak-referenceable key
    a._states[dataset] = "cached"
    back = pickle.loads(pickle.dumps(a))
    assert back == a and len(back._states) == 0  # only the objective travels
    assert copy.deepcopy(a) is a  # deep copies share the per-dataset caches
    with pytest.raises(TypeError, match=r"test_adapter expects a customobj objective"):
        _Adapter(object())


def test_prepare_state_builds_buffers_of_the_library_shape():
    ptr = np.array([0, 2, 5])
    st = D.prepare_state(co.RankNet(), D.as_label_array([0, 1, 2, 0, 1]), ptr, None, library="LightGBM", group_hint="set group",
                         out_dtype=np.float32)
    assert st.prep.n_rows == 5 and st.grad.shape == st.out_grad.shape == (5,)
    assert st.grad.dtype == np.float64 and st.out_grad.dtype == np.float32
    st = D.prepare_state(co.McRank(n_classes=3), D.as_label_array([0, 1, 2]), None, None, library="XGBoost", group_hint="",
                         out_dtype=np.float32, out_order="F")
    assert st.out_hess.shape == (3, 3) and st.out_hess.flags.f_contiguous
    with pytest.raises(ValueError, match=r"RankNet is a group-wise \(ranking\) objective but the XGBoost training "
                                         r"data has no query groups: set_group it"):
        D.prepare_state(co.RankNet(), D.as_label_array([0, 1]), None, None, library="XGBoost", group_hint="set_group it",
                        out_dtype=np.float32)


def test_copy_out_refuses_values_beyond_float32():
    st = D.TrainState(None, (3,), np.float32)
    st.grad[:] = [1.0, -2.0, 0.5]
    st.hess[:] = 1.0
    g, h = D.copy_out(st, co.RankNet(), "LightGBM")
    assert g.dtype == np.float32 and g.tolist() == [1.0, -2.0, 0.5]
    st.grad[1] = 1e39
    with pytest.raises(ValueError, match=r"RankNet produced a gradient or hessian of 1e\+39, beyond the float32 "
                                         r"range LightGBM trains with"):
        D.copy_out(st, co.RankNet(), "LightGBM")


def test_as_label_array_wants_one_grade_per_row():
    assert D.as_label_array([0, 1, 2]).tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match=r"labels \(y\) must be a 1-D array .*got shape \(2, 2\)"):
        D.as_label_array([[0, 1], [1, 0]])
    with pytest.raises(ValueError, match=r"labels \(y\) must be a 1-D array with one grade per row"):
        D.as_label_array([[0, 1], [1]])


def test_rows_weight_per_row_or_per_query():
    ptr = np.array([0, 2, 5])
    assert D.rows_weight(None, ptr, 5) is None and D.rows_weight([], ptr, 5) is None
    assert D.rows_weight([1, 2, 3, 4, 5], ptr, 5).tolist() == [1, 2, 3, 4, 5]
    assert D.rows_weight([2.0, 3.0], ptr, 5).tolist() == [2.0, 2.0, 3.0, 3.0, 3.0]  # XGBoost: one per query
    with pytest.raises(ValueError, match=r"weight has 3 entries; expected one per row \(5\) or per query"):
        D.rows_weight([1, 2, 3], ptr, 5)
    with pytest.raises(ValueError, match=r"weight must be a 1-D array"):
        D.rows_weight(np.ones((5, 1)), ptr, 5)
    with pytest.raises(TypeError, match=r"weight must be a numeric array, got list"):
        D.rows_weight(["a", "b"], ptr, 2)


def test_check_outputs_matches_scores_to_the_objective():
    D.check_outputs(co.RankNet(), np.zeros(4), "XGBoost", "hint")
    D.check_outputs(co.McRank(n_classes=3), np.zeros((4, 3)), "XGBoost", "hint")
    with pytest.raises(ValueError, match=r"McRank has 3 output\(s\) per row but XGBoost passed scores of shape "
                                         r"\(4,\); set num_class"):
        D.check_outputs(co.McRank(n_classes=3), np.zeros(4), "XGBoost", "set num_class")
    with pytest.raises(TypeError, match=r"scores \(preds\) of dtype object"):
        D.check_outputs(co.RankNet(), np.zeros(4, dtype=object), "XGBoost", "")
    with pytest.raises(ValueError, match=r"scores \(preds\) of shape \(2, 2, 1\)"):
        D.check_outputs(co.RankNet(), np.zeros((2, 2, 1)), "XGBoost", "")


def test_ranking_scores_is_the_margin_or_the_expected_grade():
    m = np.array([0.5, -1.0])
    np.testing.assert_array_equal(D.ranking_scores(m), m)
    np.testing.assert_array_equal(D.ranking_scores(m[:, None]), m)
    raw = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 50.0]])
    np.testing.assert_allclose(D.ranking_scores(raw), [1.0, 2.0])  # uniform: (0+1+2)/3; nearly surely grade 2
    np.testing.assert_array_equal(D.ranking_scores(raw), co.McRank.expected_grade(raw))
