"""customobj.ole: a histogram gradient-boosted tree learner with SE, WSE and exact pairwise OLE splits.

See :class:`TreeBooster` (a scikit-learn estimator: docs/sklearn.md) and Xia, Zhai, Wang, "Analysis
of regression tree fitting algorithms in learning to rank", section 3.1 (OLE).
"""
from .booster import TreeBooster

__all__ = ["TreeBooster"]
