"""The Dask tests' one-machine reference (tests/test_adapters_dask.py and tests/test_adapters_dask_labels.py
import it: one home): XGBoost's settings and run on one machine that a Dask run must equal. Their cluster is
tests/conftest.py's ``client`` fixture."""
import xgboost as xgb

from customobj import adapters


#: XGBoost's settings where a Dask run's fitted attributes are compared with one machine's: small
#: lossguide trees, one thread.
FITTED_PARAMS = dict(tree_method="hist", max_leaves=7, grow_policy="lossguide", max_depth=0, eta=0.3, nthread=1)


def _xgboost_on_one_machine(obj, X, y, g, rounds):
    """``(booster, fitted attributes)`` of ``obj`` trained by XGBoost in this process, with
    :data:`FITTED_PARAMS`: what the Dask run must give."""
    f = adapters.xgboost_objective(obj)
    dtrain = xgb.DMatrix(X, y, group=g)
    booster = xgb.train(adapters.xgboost_params(obj, FITTED_PARAMS), dtrain, rounds, obj=f)
    return booster, f.fitted_attributes(dtrain)
