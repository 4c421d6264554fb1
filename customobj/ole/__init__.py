"""customobj.ole: a histogram gradient-boosted tree learner with SE, WSE and exact pairwise OLE splits.

See :class:`TreeBooster` (a scikit-learn estimator: docs/sklearn.md) and Xia, Zhai, Wang, "Analysis
of regression tree fitting algorithms in learning to rank", section 3.1 (OLE).
"""
__all__ = ["TreeBooster"]


def __getattr__(name: str):
    # Loaded on first use: TreeBooster imports scikit-learn (about a second, pandas included),
    # which the submodules the adapters use (joint_leaves, ...) do not need.
    if name == "TreeBooster":
        from .booster import TreeBooster

        return TreeBooster
    raise AttributeError(f"module 'customobj.ole' has no attribute {name!r}")
