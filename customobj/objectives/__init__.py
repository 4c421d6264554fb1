"""customobj objectives: the losses of the five papers and the peers' (formulas and sections: docs/formulas.md)."""
from .base import Objective, Prepared
from .composite import Scaled, Sum
from .pointwise import SquaredError
from .pointwise import Logistic, McRank, SquaredHinge
from .pairwise import MPBoost, PreferencePairs, QBRank, RankNet, RankSVM
from .listwise import LambdaRank
from .structured_dcg import StructuredDCG
from .softmax import ListNet, QuerySoftMax
from .xendcg import XENDCG
from .query_rmse import QueryRMSE
from .lambdaloss import LambdaLoss
from .yetirank import YetiRank

__all__ = ["Objective", "Prepared", "Sum", "Scaled", "SquaredError"]
__all__ += ["Logistic", "SquaredHinge", "McRank", "RankNet", "RankSVM", "QBRank", "MPBoost", "PreferencePairs"]
__all__ += ["LambdaRank", "StructuredDCG"]
__all__ += ["ListNet", "QuerySoftMax", "XENDCG"]
__all__ += ["QueryRMSE", "LambdaLoss", "YetiRank"]
