"""The objective protocol; its composition (sums and scalings): ``composite.py``; per-dataset preparation:
``prepared.py``.

An objective is a small immutable object. Its public methods take ``(scores, labels, group)``;
adapters and the OLE booster call the ``*_prepared`` variants with a :class:`Prepared` built once
per dataset, so validation, dtype conversion and label-only precomputation (pairs, ideal DCGs,
...) happen once, not every boosting round.

Rounds: what changes from one boosting round to the next (YetiRank's sampled pairs, XENDCG's noise,
``Unbiased``'s propensity estimates) lives in the per-data-set state, never in the objective: one
``grad_hess_prepared`` call on a :class:`Prepared` is one round of that data set. The public calls
of an objective whose rounds matter (``rounds_matter``) continue the rounds of the data set they
were last given while the same labels, groups, weights and positions come back (compared by
content), so a hand-written loop of ``grad_hess`` calls is a boosting loop too; other data start
at round 0. What an objective learned on a data set (``Unbiased``: ``position_bias_``) is read
with :meth:`Objective.fitted_attributes`; the trainers copy it onto their fitted models.

Subclasses implement:

- ``_state(prep)``: label-only precomputation for this objective (default ``None``); cached in
  ``prep`` under the objective, so equal objectives share it.
- ``_grad_hess(scores, prep, state, out_grad, out_hess)``: *add* this objective's gradient and
  diagonal hessian into the (zeroed or partially filled) float64 output arrays.
- ``_loss(scores, prep, state) -> float``.
- ``_pair_couplings(scores, prep, state) -> (i, j, c)`` for pairwise / listwise objectives.
- ``device_route() -> DeviceRoute`` (optional): its GPU drivers (``_<family>_route``); inherited by subclasses.
- ``_convert_labels(y) -> y`` (optional): map the user's labels to the non-negative grades the
  kernels use, before validation (``Logistic``: ``{-1, +1} -> {0, 1}``). ``Sum`` and ``Scaled``
  apply their parts' conversions in turn, so a converting part works inside a sum too.

Scores must be finite real numbers (booleans are refused) with ``|s| <= SCORE_LIMIT`` (1e100,
see ``customobj._validation``); labels, weights and options have limits of their own there
(docs/robustness.md, "Input limits"), chosen so that no kernel overflows. A loss that still
overflows float64 (squared 1e100 margins) raises ``ValueError`` instead of returning inf.

Weights: ``weight`` is per row. Pointwise terms are multiplied by ``w_i``; pairwise terms by
the pair weight ``(w_i + w_j) / 2`` (equal to the query weight when weights are per query).
Hessians are never negative; where the true second derivative vanishes or does not exist the
objective documents its surrogate.
"""
from __future__ import annotations

import numbers
from importlib import import_module
from typing import Callable, Optional, Tuple

import numpy as np
import numpy.typing as npt

from .._device import device_of
from .._validation import SCORE_LIMIT, as_1d_float, as_scores
from ..groups import GroupLike
from ._arrays import freeze_option, zero_fill
# The device seam: it loads numba.cuda only when device scores arrive (the CPU path never pays for it)
# and reads the objectives only through their public methods (no import of this module).
from . import devices as _devices
from .prepared import Prepared
from .records import DeviceRoute, PairSource, RelevancePairs, listed_source

__all__ = ["Objective", "Prepared", "DeviceRoute", "PairSource", "RelevancePairs", "listed_source"]
#: Sums and scalings of objectives: imported on use, since they are objectives themselves (no import cycle).
_COMPOSITE = ".composite"

#: ``(i, j, c)``: row pairs ``(i[m], j[m])`` and their hessian couplings ``h_ij = c[m]``.
Couplings = Tuple[np.ndarray, np.ndarray, np.ndarray]
#: ``m -> (i, j, c)``: writable arrays of length ``m`` for the pairs (``grad_hess_couplings_prepared``).
PairBuffer = Callable[[int], Couplings]


class Objective:
    """Base class of every customobj objective (see module docstring for the protocol)."""

    #: True when the loss has pair terms (``pair_couplings`` returns arrays, not ``None``).
    pairwise = False
    #: True when ``grad_hess_couplings_prepared`` writes its pairs into a given ``pair_buffer``.
    writes_pair_buffer = False
    #: True when labels must be integer grades (McRank, ERR-based LambdaRank).
    integer_labels = False
    #: Number of raw score columns per row (McRank: one per grade).
    n_outputs = 1
    #: True when ``group`` matters (pairwise / listwise); pointwise objectives ignore it.
    needs_group = False
    #: True when a round depends on the rounds before it (sampled pairs, noise, estimates): the public
    #: calls then continue the rounds of the data set they were last given (see the module docstring).
    rounds_matter = False
    #: True when each round estimates something from all rows of the data set (``Unbiased``'s
    #: propensities): a distributed training must sum the workers' statistics (``Prepared.collective``).
    pools_rows = False

    # --- identity --------------------------------------------------------------------------------
    def _params(self) -> tuple:
        """Tuple of (name, value) of the options; used for repr, equality and state caching."""
        return tuple(sorted((k, v) for k, v in vars(self).items() if not k.startswith("_")))

    def _cache_key(self) -> tuple:
        """Hashable identity of the options (arrays by content), for equality and state caching.

        An array option (QBRank's explicit pairs, a row mask, pair weights) is frozen to bytes once
        per array object, not on every call: ``state_for`` asks for the key every round, and the
        same ``bytes`` object caches its hash, so a round no longer copies and hashes O(pairs) bytes.
        The objectives make their array options read-only at construction; a writeable array (one a
        subclass stored as given) is frozen again on every call, so edits to it are still seen.
        """
        return (type(self).__name__,) + tuple((k, freeze_option(v)) for k, v in self._params())

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._params() if not isinstance(v, np.ndarray))
        return f"{type(self).__name__}({args})"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self._cache_key() == other._cache_key()

    def __hash__(self) -> int:
        return hash(self._cache_key())

    # --- preparation -----------------------------------------------------------------------------
    def prepare(self, labels: npt.ArrayLike, group: "GroupLike | None" = None,
                weight: "npt.ArrayLike | None" = None, *, position: "npt.ArrayLike | None" = None) -> Prepared:
        """Validate and convert the data once; returns a :class:`Prepared` for the ``*_prepared`` calls.

        ``position``: each row's display position (0 = top), for the objectives that read it (click
        debiasing, :class:`customobj.clicks.Unbiased`); the others ignore it."""
        if group is None and self.needs_group:
            raise ValueError(f"{type(self).__name__} is a ranking objective and needs group= (query sizes)")
        labels = self._convert_labels(as_1d_float(labels, "labels"))
        prep = Prepared.build(labels, group, weight, integer_labels=self.integer_labels, position=position)
        prep.state_for(self)  # runs check_prepared and builds the label-only state now, not in round 1
        return prep

    def _public_prep(self, labels: npt.ArrayLike, group: "GroupLike | None", weight: "npt.ArrayLike | None",
                     remember: bool = True) -> Prepared:
        """The prepared data of a public call: for an objective whose rounds matter, the data set of
        its last public call while the data are equal (its rounds go on), else a fresh one (kept for
        the next calls unless ``remember`` is false: ``pair_couplings``, which takes no weights, and
        ``loss``, which a held-out set may call between rounds)."""
        prep = self.prepare(labels, group, weight)
        if not self.rounds_matter:
            return prep
        last = self.__dict__.get("_last_prep")
        if last is not None and _same_data(last, prep):
            return last
        if remember:
            # the cache owns its labels and weights: a view of the caller's arrays, edited in place between
            # calls, would still compare equal while the state built from the old values went on
            prep = _owned(self, prep)
            self.__dict__["_last_prep"] = prep  # a cache of the public calls, not an option: not pickled
        return prep

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_last_prep", None)  # the public calls' data set travels with neither a pickle nor a copy
        return state

    def fitted_attributes(self, prep: "Prepared | None" = None) -> dict:
        """What the objective learned on a data set, by attribute name (``Unbiased``:
        ``position_bias_``, ``position_bias_unclicked_``); empty for objectives that learn nothing.

        ``prep``: the prepared data set (default: the one of the last public ``grad_hess`` calls).
        The objective itself holds no fitted state; ``TreeBooster.fit`` copies these onto the fitted
        model, the adapters' callables give them per training set (``f.fitted_attributes(dataset)``).
        """
        if prep is None:
            prep = self.__dict__.get("_last_prep")
            if prep is None:
                raise ValueError(f"{type(self).__name__}.fitted_attributes(): no data set yet; pass the Prepared "
                                 "the rounds ran on, or call grad_hess first")
        return self._fitted_attributes(prep, prep.state_for(self))

    def _fitted_attributes(self, prep: Prepared, state: object) -> dict:
        return {}

    def check_prepared(self, prep: Prepared) -> None:
        """Objective-specific checks on the data (override to reject labels it cannot use; call super).

        Runs once per (objective, ``Prepared``), from :meth:`Prepared.state_for`, so it also guards
        a ``Prepared`` built by another objective.
        """
        if self.integer_labels and prep.labels.size and np.any(prep.labels != np.floor(prep.labels)):
            row = int(np.flatnonzero(prep.labels != np.floor(prep.labels))[0])
            raise ValueError(
                f"{type(self).__name__} needs integer grades in labels; found {prep.labels[row]} at row {row}"
            )

    def _convert_labels(self, labels):
        """Labels (finite float64, 1-D) as the grades this objective's kernels use; default: unchanged."""
        return labels

    def _state(self, prep):
        """Label-only data the kernels need, built once per data set (``Prepared.state_for``): ``None``
        here; a named record in objectives that have one (``_LambdaRankState``, ``_QBRankState``, ...)."""
        return None

    def _check_scores(self, scores, prep):
        k = self.n_outputs
        if k is None:  # an McRank(n_classes=None) part learns K from the labels of this data
            self.check_prepared(prep)
            k = self.n_outputs
        return as_scores(scores, prep.n_rows, allow_2d=k is not None and k > 1, max_abs=SCORE_LIMIT)

    @staticmethod
    def _check_out(out, shape, name):
        if not isinstance(out, np.ndarray) or out.dtype != np.float64 or out.shape != shape \
                or not out.flags.c_contiguous or not out.flags.writeable:
            got = f"{type(out).__name__}" if not isinstance(out, np.ndarray) else \
                f"{out.dtype} array of shape {out.shape}" + ("" if out.flags.writeable else " (read-only)")
            raise ValueError(f"{name} must be a writable C-contiguous float64 array of shape {shape}, got {got}")
        return out

    # --- public API ------------------------------------------------------------------------------
    def grad_hess(self, scores: npt.ArrayLike, labels: npt.ArrayLike, group: "GroupLike | None" = None,
                  weight: "npt.ArrayLike | None" = None) -> "tuple[np.ndarray, np.ndarray]":
        """Gradient ``dL/ds`` and diagonal hessian (float64, ``hess >= 0``); computed on the GPU as numba
        device arrays when ``scores`` are there (the device follows the data: ``objectives.devices``)."""
        if device_of(scores).is_cuda:
            return _devices.grad_hess(self, scores, labels, group, weight)
        return self.grad_hess_prepared(scores, self._public_prep(labels, group, weight))

    def loss(self, scores: npt.ArrayLike, labels: npt.ArrayLike, group: "GroupLike | None" = None,
             weight: "npt.ArrayLike | None" = None) -> float:
        """The exact loss the gradients differentiate (a sum over rows / pairs / queries; docs/formulas.md).

        A loss on other data (a held-out set) leaves the rounds of the last ``grad_hess`` data set going
        on: only gradient calls choose the data set the public calls continue."""
        return self.loss_prepared(scores, self._public_prep(labels, group, weight, remember=False))

    def pair_couplings(self, scores: npt.ArrayLike, labels: npt.ArrayLike,
                       group: "GroupLike | None" = None) -> Optional[Couplings]:
        """``(i, j, c)``: row pairs and their hessian couplings ``h_ij``; ``None`` for pointwise losses."""
        return self.pair_couplings_prepared(scores, self._public_prep(labels, group, None, remember=False))

    def grad_hess_prepared(self, scores: npt.ArrayLike, prep: Prepared, out_grad: "np.ndarray | None" = None,
                           out_hess: "np.ndarray | None" = None) -> "tuple[np.ndarray, np.ndarray]":
        if device_of(scores).is_cuda:
            return _devices.grad_hess_prepared(self, scores, prep, out_grad, out_hess)
        s = self._check_scores(scores, prep)
        out_grad, out_hess = self._zeroed_outputs(s.shape, out_grad, out_hess)
        self._grad_hess(s, prep, prep.state_for(self), out_grad, out_hess)
        return out_grad, out_hess

    def _zeroed_outputs(self, shape, out_grad, out_hess):
        # given outputs (reused every round by the adapters and TreeBooster) are zeroed by all threads
        if out_grad is None:
            out_grad = np.zeros(shape, dtype=np.float64)
        else:
            zero_fill(self._check_out(out_grad, shape, "out_grad"))
        if out_hess is None:
            out_hess = np.zeros(shape, dtype=np.float64)
        else:
            zero_fill(self._check_out(out_hess, shape, "out_hess"))
        return out_grad, out_hess

    def loss_prepared(self, scores: npt.ArrayLike, prep: Prepared) -> float:
        s = self._check_scores(scores, prep)
        value = float(self._loss(s, prep, prep.state_for(self)))
        if not np.isfinite(value):
            # Gradients are finite under the input limits; a sum of squared 1e100 margins is not.
            raise ValueError(
                f"the {type(self).__name__} loss of these scores overflows float64 (largest |scores| "
                f"{np.abs(s).max(initial=0.0):g}, largest weight {_largest(prep.weight):g}); "
                "lower the scores or the weights"
            )
        return value

    def pair_couplings_prepared(self, scores: npt.ArrayLike, prep: Prepared) -> Optional[Couplings]:
        if not self.pairwise:
            prep.state_for(self)  # the labels must still suit this objective
            return None
        s = self._check_scores(scores, prep)
        return self._pair_couplings(s, prep, prep.state_for(self))

    def grad_hess_couplings_prepared(self, scores: npt.ArrayLike, prep: Prepared, out_grad: "np.ndarray | None" = None,
                                     out_hess: "np.ndarray | None" = None, *, pair_buffer: Optional[PairBuffer] = None
                                     ) -> "tuple[np.ndarray, np.ndarray, Optional[Couplings]]":
        """``(grad, hess, couplings)`` in one call; ``couplings`` is ``None`` for pointwise losses.

        The OLE booster needs both every round. Objectives whose kernels can produce them in one
        pass (sharing the per-query sort) override ``_grad_hess_couplings``. ``pair_buffer``: an
        optional callable ``m -> (i, j, c)`` returning writable arrays of length ``m`` (any
        integer dtype for the rows); objectives that count their pairs before writing them
        (LambdaRank) fill those instead of allocating, and return them. Others ignore it.
        """
        s = self._check_scores(scores, prep)
        if not self.pairwise:
            return (*self.grad_hess_prepared(s, prep, out_grad, out_hess), None)
        grad, hess = self._zeroed_outputs(s.shape, out_grad, out_hess)
        couplings = self._grad_hess_couplings_into(s, prep, prep.state_for(self), grad, hess, pair_buffer)
        return grad, hess, couplings

    def _grad_hess_couplings(self, scores, prep, state, out_grad, out_hess):
        """Add grad/hess into the outputs and return ``(i, j, c)``; override to fuse the passes."""
        self._grad_hess(scores, prep, state, out_grad, out_hess)
        return self._pair_couplings(scores, prep, state)

    def _grad_hess_couplings_into(self, scores, prep, state, out_grad, out_hess, pair_buffer):
        """``_grad_hess_couplings`` writing the pairs into ``pair_buffer``; by default unused."""
        return self._grad_hess_couplings(scores, prep, state, out_grad, out_hess)

    def device_route(self) -> DeviceRoute:
        """This loss's GPU drivers, which ``grad_hess`` on device scores and ``TreeBooster(device="cuda")``
        run; a subclass inherits its parent's. ``NotImplementedError`` naming the loss when it has none.

        Examples
        --------
        >>> import customobj
        >>> customobj.RankNet().device_route().grad_hess.__name__
        'label_pair_loss'
        """
        raise NotImplementedError(f"{type(self).__name__} has no GPU kernel yet (its CPU kernels have no numba.cuda "
                                  "twin): pass host (numpy) scores to run it on the CPU")

    #: A click estimator (``Unbiased``, ``Affine``): wrapping one in another would correct the clicks twice.
    corrects_clicks = False

    def relevance_pairs(self) -> RelevancePairs:
        """This loss as :class:`RelevancePairs`, the form ``customobj.clicks.Affine`` corrects; a
        ``TypeError`` saying why for a loss without it (here: not a loss on label pairs).

        Examples
        --------
        >>> import customobj
        >>> customobj.RankNet(sigma=2.0).relevance_pairs().theta
        2.0
        """
        raise TypeError(f"{self!r}: not a loss on label pairs (a listwise or pointwise loss); the affine "
                        "correction corrects the label pairs of LambdaRank(metric='ndcg'), RankNet, RankSVM, MPBoost")

    def pair_source(self) -> PairSource:
        """Where ``customobj.clicks.Unbiased`` takes this loss's pairs from (:class:`PairSource`); a
        subclass inherits its parent's. ``NONE`` here: no pairs to debias.

        Examples
        --------
        >>> import customobj
        >>> customobj.LambdaRank().pair_source().name, customobj.RankNet().pair_source().name
        ('OWN_PASS', 'LISTED')
        >>> customobj.QBRank(hessian="upper_bound").pair_source().name  # a diagonal bound: no pair couplings
        'NONE'
        """
        return PairSource.NONE

    def squared_error_weight(self, prep: Prepared) -> Optional[np.ndarray]:
        """Row weights of the squared-error term the loss adds beside its pairs on ``prep`` (QBRank's
        labelled rows), which ``customobj.clicks.Unbiased`` adds undebiased; ``None`` (here) without one."""
        return None

    # --- to implement ----------------------------------------------------------------------------
    def _grad_hess(self, scores, prep, state, out_grad, out_hess):  # pragma: no cover - abstract
        raise NotImplementedError

    def _loss(self, scores, prep, state):  # pragma: no cover - abstract
        raise NotImplementedError

    def _grad_hess_loss(self, scores, prep, state, out_grad, out_hess):
        """``_grad_hess`` then ``_loss`` at the same scores (``MultiObjective``'s per-label costs); a loss
        whose pass can give both from one walk over the pairs overrides it (LambdaRank: the same gradients'
        bits, the loss within a stated bound, ``_lambdarank_terms.SOFTPLUS_TABLE_ERROR``)."""
        self._grad_hess(scores, prep, state, out_grad, out_hess)
        return float(self._loss(scores, prep, state))

    def _pair_couplings(self, scores, prep, state):  # pragma: no cover - abstract
        raise NotImplementedError

    def _grad_hess_couplings_loss(self, scores, prep, state, out_grad, out_hess):
        """``(couplings, loss)`` of one round: ``_grad_hess_couplings`` then ``_loss`` (``MultiObjective``'s
        per-label costs beside the pairs, ``TreeBooster(criterion="ole")``). A loss whose ``_grad_hess_loss``
        gives another cost than ``_loss`` (LambdaRank's tabled softplus) overrides it, so that the cost read
        with pairs is the one read without them, and the one its GPU route (``grad_hess_loss``) writes."""
        couplings = self._grad_hess_couplings(scores, prep, state, out_grad, out_hess)
        return couplings, float(self._loss(scores, prep, state))

    # --- composition -----------------------------------------------------------------------------
    def _scale_bound(self):
        """Largest product of ``Scaled`` factors on any path to a leaf objective (1 for a leaf)."""
        return 1.0

    def __add__(self, other: object) -> "Objective":  # a composite.Sum
        if not isinstance(other, Objective):
            return NotImplemented
        return import_module(_COMPOSITE, __package__).Sum(self, other)

    def __mul__(self, factor: float) -> "Objective":  # a composite.Scaled
        if isinstance(factor, bool) or not isinstance(factor, numbers.Real):
            return NotImplemented
        return import_module(_COMPOSITE, __package__).Scaled(self, factor)

    __rmul__ = __mul__


def _largest(weight):
    return 1.0 if weight is None else float(weight.max(initial=0.0))


def _owned(objective: "Objective", prep: Prepared) -> Prepared:
    """``prep`` as a data set owning copies of its labels, weights and positions (its state built anew)."""
    def copy(x):
        return None if x is None else np.array(x, copy=True)

    out = Prepared(copy(prep.labels), prep.groups, copy(prep.weight), copy(prep.position))
    out.state_for(objective)
    return out


def _same_data(a: Prepared, b: Prepared) -> bool:
    """Whether two prepared data sets hold equal labels, query boundaries, weights and positions."""
    def same(x, y):
        if x is None or y is None:
            return x is None and y is None
        return x.shape == y.shape and np.array_equal(x, y)

    return (same(a.labels, b.labels) and same(a.ptr, b.ptr) and same(a.weight, b.weight)
            and same(a.position, b.position))
