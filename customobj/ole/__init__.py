"""customobj.ole: a histogram gradient-boosted tree learner with SE, WSE and exact pairwise OLE splits.

See :class:`TreeBooster` (a scikit-learn estimator: docs/sklearn.md) and SPEC.md section 5
(Xia, Zhai, Wang).
"""
from .booster import TreeBooster

__all__ = ["TreeBooster"]
