"""Feature columns moved into labels: ``load_letor(..., label_features=[...])`` (multi-label learning to rank).

The KDD 2023 paper's protocol (Mahapatra et al., "Multi-Label Learning to Rank through Multi-Objective
Optimization", section 5.1) makes extra labels of MSLR-WEB30K's quality score, click count and dwell
time features; here any features, given by their LETOR numbers (1-based, as written in the file),
leave ``X`` and come back as ``LetorData.extra_labels`` (one column each, float64, in the order asked).
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ._validation import check_int

__all__ = ["check_label_features", "move_label_features"]


def check_label_features(label_features: Any) -> Optional[tuple]:
    """Distinct feature numbers (1-based), as a tuple; ``None`` stays ``None``.

    >>> check_label_features([41, 3])
    (41, 3)
    """
    if label_features is None:
        return None
    if isinstance(label_features, (str, bytes)) or not hasattr(label_features, "__iter__"):
        raise TypeError(f"label_features must be a list of feature numbers (1-based), got {type(label_features).__name__}")
    out = tuple(check_int(j, "label_features", minimum=1) for j in label_features)
    if not out:
        raise ValueError("label_features must name at least one feature (or be None)")
    if len(set(out)) != len(out):
        raise ValueError(f"label_features names a feature twice: {list(out)}")
    return out


def move_label_features(X: Any, features: tuple) -> "tuple[Any, np.ndarray]":
    """``(X without the columns, their values as an n x k float64 array)``; refused when a feature is
    beyond ``X``'s width, when every feature would leave, or when a value is not finite (a label must be).

    >>> import numpy as np
    >>> X = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32)
    >>> rest, labels = move_label_features(X, (2,))
    >>> rest.tolist(), labels.tolist()
    ([[1.0, 3.0], [4.0, 6.0]], [[2.0], [5.0]])
    """
    width = int(X.shape[1])
    for j in features:
        if j > width:
            raise ValueError(f"label_features names feature {j} but the data has {width} features")
    if len(features) >= width:
        raise ValueError(f"label_features would move all {width} features into labels; keep at least one feature")
    cols = [j - 1 for j in features]
    taken = X[:, cols]
    labels = np.asarray(taken.toarray() if hasattr(taken, "toarray") else taken, dtype=np.float64).reshape(-1, len(cols))
    bad = np.argwhere(~np.isfinite(labels))
    if bad.size:
        row, k = (int(v) for v in bad[0])
        raise ValueError(f"label_features: feature {features[k]} is {labels[row, k]} at row {row}; a label must be finite")
    keep = np.setdiff1d(np.arange(width), cols)
    return X[:, keep], labels
