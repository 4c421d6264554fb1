"""customobj/_letor_labels.py and ``load_letor(label_features=...)``: feature columns moved into labels."""
import numpy as np
import pytest
import scipy.sparse as sp

import customobj
from customobj._letor_labels import check_label_features, move_label_features

LINES = "2 qid:1 1:0.5 2:0.1 3:7\n0 qid:1 1:0.2 3:3\n1 qid:2 1:0.9 2:0.4 3:1\n"


def test_load_letor_moves_the_named_features(tmp_path):
    f = tmp_path / "train.txt"
    f.write_text(LINES)
    d = customobj.load_letor(f, label_features=[3, 2])
    np.testing.assert_allclose(d.X, [[0.5], [0.2], [0.9]], rtol=1e-6)
    np.testing.assert_allclose(d.extra_labels, [[7, 0.1], [3, 0], [1, 0.4]], rtol=1e-6)
    assert d.extra_labels.dtype == np.float64 and d.group.tolist() == [2, 1] and d.y.tolist() == [2, 0, 1]
    s = customobj.load_letor(f, label_features=[2], sparse=True)
    assert sp.issparse(s.X) and s.X.shape == (3, 2)
    assert s.extra_labels.ravel().tolist() == pytest.approx([0.1, 0, 0.4])
    assert customobj.load_letor(f).extra_labels is None
    assert d._replace(y=d.y + 1).extra_labels is d.extra_labels  # kept by _replace


def test_bad_label_features_are_named(tmp_path):
    f = tmp_path / "train.txt"
    f.write_text(LINES)
    with pytest.raises(ValueError, match=r"label_features names feature 9 but the data has 3 features"):
        customobj.load_letor(f, label_features=[9])
    with pytest.raises(ValueError, match=r"label_features names a feature twice"):
        check_label_features([2, 2])
    with pytest.raises(ValueError, match=r"label_features must be"):
        check_label_features([0])
    with pytest.raises(TypeError, match=r"label_features must be a list of feature numbers"):
        check_label_features("3")
    with pytest.raises(ValueError, match=r"would move all 3 features"):
        customobj.load_letor(f, label_features=[1, 2, 3])
    X = np.array([[1.0, np.nan], [2.0, 3.0]], dtype=np.float32)
    with pytest.raises(ValueError, match=r"feature 2 is nan at row 0; a label must be finite"):
        move_label_features(X, (2,))
