"""Method names of ``customobj compare``: one parser for every backend.

Grammar (whitespace around every token is ignored)::

    method    := backend ":" target [ "(" options ")" ] [ "[" criterion "]" ] [ "{" leaves "}" ]
    options   := key "=" value ( "," key "=" value )*
    value     := int | float | true/false | none | 'quoted' | "quoted" | bare-word

``backend`` is ``lgb`` (LightGBM), ``xgb`` (XGBoost), ``cb`` (CatBoost, optional extra) or ``ole``
(customobj's own booster, :class:`customobj.ole.TreeBooster`). ``target`` is either a native
objective of the library (``lgb:lambdarank``, ``xgb:rank:ndcg``, ``cb:YetiRank``) or the class
name of a customobj objective (``lgb:LambdaRank``, ``xgb:MPBoost(ddf=logdd,lam=3)``). Names are
case-sensitive because ``lgb:lambdarank`` (LightGBM's) and ``lgb:LambdaRank`` (ours) differ.
Options of a native method are passed to the library as parameters; options of a customobj
objective are its keyword arguments. ``criterion`` (``ole``/``wse``/``se``, default ``ole``) is the
split criterion of the ``ole`` backend and is rejected elsewhere. ``leaves`` (``exact_leaves``) asks
an ``lgb`` method with a customobj objective for :class:`customobj.adapters.ExactLeaves`
(``lgb:LambdaRank{exact_leaves}``). Values are parsed without ``eval``.
"""
from __future__ import annotations

import difflib
import inspect
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ..objectives import Objective

__all__ = [
    "BACKENDS",
    "NATIVE",
    "CRITERIA",
    "MethodSpec",
    "parse_method",
    "seeded",
    "parse_methods",
    "split_methods",
    "parse_value",
    "objective_names",
    "build_objective",
    "valid_names_help",
    "ENS_PREFIX",
    "EnsembleSpec",
    "is_ensemble_name",
    "parse_ensemble",
    "member_specs",
]

BACKENDS = {
    "lgb": "LightGBM",
    "xgb": "XGBoost",
    "cb": "CatBoost, an optional extra: pip install '.[catboost]'",
    "ole": "customobj.ole.TreeBooster",
}

#: What users type for a backend (the library's own name): suggested in the error, never accepted.
BACKEND_SPELLINGS = {"lightgbm": "lgb", "lgbm": "lgb", "xgboost": "xgb", "catboost": "cb", "treebooster": "ole"}

#: Native ranking / regression objectives per backend (the library's own spelling).
NATIVE = {
    "lgb": ("lambdarank", "rank_xendcg", "regression"),
    "xgb": ("rank:ndcg", "rank:pairwise"),
    "cb": ("YetiRank", "PairLogit", "YetiRankPairwise", "PairLogitPairwise"),
    "ole": (),
}

#: Backends that train a customobj objective.
CUSTOM_BACKENDS = ("lgb", "xgb", "ole")

from ..ole.criterion import CRITERIA as _OLE_CRITERIA  # noqa: E402  (one home for the names)
from .method_values import KEY, format_value, parse_value, split_top  # noqa: E402

CRITERIA = tuple(_OLE_CRITERIA)

#: Leaf solvers an ``lgb`` method of a customobj objective can ask for with a ``{...}`` suffix.
LEAF_SOLVERS = ("exact_leaves",)

# Objective classes that are building blocks, not losses one can train from graded labels alone.
_NOT_TRAINABLE = frozenset({"Objective", "Prepared", "Sum", "Scaled"})



@dataclass(frozen=True)
class MethodSpec:
    """A parsed method name. ``native`` tells a library objective from a customobj one."""

    backend: str
    target: str
    native: bool
    options: tuple = field(default=())  # ((key, value), ...) in the order given
    criterion: str | None = None
    leaves: str | None = None  # "exact_leaves": the ExactLeaves callback (lgb backend only)

    @property
    def kwargs(self):
        return dict(self.options)

    @property
    def label(self):
        """Canonical spelling: no whitespace, options as parsed, the ole criterion always shown."""
        text = f"{self.backend}:{self.target}"
        if self.options:
            text += "(" + ",".join(f"{k}={format_value(v)}" for k, v in self.options) + ")"
        if self.criterion is not None:
            text += f"[{self.criterion}]"
        if self.leaves is not None:
            text += "{" + self.leaves + "}"
        return text

    def __str__(self):
        return self.label


def objective_names() -> list[str]:
    """Class names of the customobj objectives available right now (sorted)."""
    from .. import objectives

    names = []
    for name in getattr(objectives, "__all__", ()):
        cls = getattr(objectives, name, None)
        if name in _NOT_TRAINABLE or not isinstance(cls, type):
            continue
        if issubclass(cls, objectives.Objective):
            names.append(name)
    # Unbiased(objective=<name>, ...) and RegressionEM: learning from clicks
    from .clicks import CLICK_TARGETS, CLICK_TRAINERS

    return sorted(names + list(CLICK_TARGETS) + list(CLICK_TRAINERS))


def valid_names_help() -> str:
    lines = ["valid method names are BACKEND:TARGET[(key=value,...)][[criterion]][{leaf solver}], or ens:A+B, with"]
    lines.append("  backends: " + ", ".join(f"{b} ({d})" for b, d in BACKENDS.items()))
    for b, natives in NATIVE.items():
        if natives:
            lines.append(f"  native {b} objectives: " + ", ".join(f"{b}:{n}" for n in natives))
    objs = objective_names()
    lines.append("  customobj objectives (with lgb, xgb or ole): " + (", ".join(objs) or "(none importable)"))
    lines.append("  criteria (ole backend only): " + ", ".join(CRITERIA))
    lines.append("  leaf solvers (lgb with a customobj objective): " + ", ".join("{" + x + "}" for x in LEAF_SOLVERS))
    lines.append("  ensembles: ens:A+B with two method names A and B (their best linear combination on validation)")
    lines.append("  e.g. lgb:lambdarank, xgb:rank:ndcg, lgb:LambdaRank, xgb:MPBoost(ddf=logdd,lam=3), "
                 "ole:RankNet(sigma=2)[se], ens:lgb:LambdaRank+ole:LambdaRank[ole]")
    return "\n".join(lines)


def _error(text, why, suggest_from=(), close=None):
    msg = f"invalid method {text!r}: {why}"
    close = close or difflib.get_close_matches(why.split("'")[1] if "'" in why else "", list(suggest_from), n=3)
    if close:
        msg += f" (did you mean {', '.join(close)}?)"
    return ValueError(msg + "\n" + valid_names_help())


def split_methods(text: str) -> list[str]:
    """Split a comma-separated method list, keeping commas inside ``(...)`` and ``[...]``."""
    if not isinstance(text, str):
        raise TypeError(f"methods must be a string, got {type(text).__name__}")
    parts = [p.strip() for p in split_top(text, ",", "method list")]
    if not any(parts):
        raise ValueError("the method list is empty\n" + valid_names_help())
    empty = [i for i, p in enumerate(parts) if not p]
    if empty:
        raise ValueError(f"empty method name at position {empty[0] + 1} in {text!r} (stray comma?)")
    return parts


def _parse_options(body, text):
    body = body.strip()
    if not body:
        return ()
    options, seen = [], set()
    for item in split_top(body, ",", "options of"):
        item = item.strip()
        if not item:
            raise _error(text, "empty option (stray comma in the parentheses)")
        if "=" not in item:
            raise _error(text, f"option {item!r} must look like key=value")
        key, value = (s.strip() for s in item.split("=", 1))
        if not KEY.match(key):
            raise _error(text, f"option name {key!r} is not an identifier")
        if key in seen:
            raise _error(text, f"option {key!r} given twice")
        seen.add(key)
        try:
            options.append((key, parse_value(value)))
        except ValueError as exc:
            raise _error(text, f"option {key!r}: {exc}") from None
    return tuple(options)


def parse_method(text: str) -> MethodSpec | EnsembleSpec:
    """Parse one method name into a :class:`MethodSpec` (an ``ens:A+B`` into a
    :class:`customobj.compare.ensemble.EnsembleSpec`); ``ValueError`` listing valid names if bad."""
    if not isinstance(text, str):
        raise TypeError(f"method name must be a string, got {type(text).__name__}")
    raw = text
    s = text.strip()
    if not s:
        raise _error(raw, "empty name")
    if re.match(r"ens\s*:", s):  # ens:A+B, two methods combined (parse_ensemble below)
        return parse_ensemble(raw)
    return _parse_single(raw, s)


def _parse_single(raw: str, s: str) -> MethodSpec:
    """Parse ``s``, the stripped non-empty ``raw`` and no ensemble, into a :class:`MethodSpec`."""
    try:
        split_top(s, "\0", "method")  # balance check only
    except ValueError as exc:
        raise _error(raw, str(exc)) from None

    leaves: str | None = None
    if s.endswith("}"):
        open_at = s.rfind("{")
        if open_at < 0:
            raise _error(raw, "unbalanced '}'")
        leaves, s = s[open_at + 1:-1].strip(), s[:open_at].rstrip()
        if leaves not in LEAF_SOLVERS:
            raise _error(raw, f"leaf solver '{leaves}' is not one of {', '.join(LEAF_SOLVERS)}", LEAF_SOLVERS)
    criterion: str | None = None
    if s.endswith("]"):
        open_at = s.rfind("[")
        criterion = s[open_at + 1:-1].strip()
        s = s[:open_at].rstrip()
        if criterion not in CRITERIA:
            raise _error(raw, f"criterion '{criterion}' is not one of {', '.join(CRITERIA)}", CRITERIA)
    options: tuple[tuple[str, object], ...] = ()
    if s.endswith(")"):
        open_at = s.find("(")
        options = _parse_options(s[open_at + 1:-1], raw)
        s = s[:open_at].rstrip()
    if any(ch in s for ch in "()[]{}"):
        raise _error(raw, "options '(...)' must come before the criterion '[...]' and the leaf solver '{...}', "
                          "each at most once")

    if ":" not in s:
        raise _error(raw, f"missing backend prefix; use one of {', '.join(b + ':' for b in BACKENDS)}")
    backend, target = (p.strip() for p in s.split(":", 1))
    target = re.sub(r"\s*:\s*", ":", target)  # 'rank : ndcg' -> 'rank:ndcg'
    if backend not in BACKENDS:
        known = BACKEND_SPELLINGS.get(backend.lower(), backend.lower())
        raise _error(raw, f"unknown backend '{backend}'", BACKENDS, [known + ":"] if known in BACKENDS else None)
    if not target:
        raise _error(raw, "missing objective after the backend")

    if target in NATIVE[backend]:
        native = True
    elif backend in CUSTOM_BACKENDS and target in objective_names():
        native = False
    else:
        candidates = list(NATIVE[backend]) + (objective_names() if backend in CUSTOM_BACKENDS else [])
        why = f"'{target}' is neither a native {backend} objective nor a customobj objective"
        if not NATIVE[backend]:
            why = f"'{target}' is not a customobj objective (the {backend} backend trains those only)"
        elif backend not in CUSTOM_BACKENDS:
            why = f"'{target}' is not a native {backend} objective (customobj objectives need lgb, xgb or ole)"
        raise _error(raw, why, candidates)

    from .clicks import CLICK_TRAINERS, EM_BACKENDS

    if target in CLICK_TRAINERS and backend not in EM_BACKENDS:
        raise _error(raw, f"'{target}' trains with {' or '.join(b + ':' for b in EM_BACKENDS)} only")
    if backend == "ole":
        criterion = criterion or "ole"
    elif criterion is not None:
        raise _error(raw, f"a criterion '[{criterion}]' only applies to the ole backend")
    if leaves is not None and (backend != "lgb" or native):
        raise _error(raw, f"the leaf solver '{{{leaves}}}' only applies to lgb with a customobj objective")
    return MethodSpec(backend, target, native, options, criterion, leaves)


def parse_methods(text_or_list: str | list[str]) -> list[MethodSpec | EnsembleSpec]:
    """Parse a comma-separated string (or a list of names); labels must be unique."""
    names = split_methods(text_or_list) if isinstance(text_or_list, str) else list(text_or_list)
    specs = [parse_method(n) for n in names]
    labels = [s.label for s in specs]
    dup = sorted({lab for lab in labels if labels.count(lab) > 1})
    if dup:
        raise ValueError(f"method(s) listed twice: {', '.join(dup)}")
    return specs


def _keyword_options(cls) -> list[str] | None:
    """The keyword options of an objective's constructor (``None`` if it takes ``**kwargs``)."""
    params = inspect.signature(cls.__init__).parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return [p.name for p in params if p.name != "self" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]


def seeded(spec: MethodSpec, seed: int) -> MethodSpec:
    """``spec`` with the run's ``seed`` as its objective's ``seed`` option when the objective draws
    random numbers (YetiRank's pairs, XENDCG's gammas) and the method does not fix one, so that
    ``--seed`` / ``--seeds`` reach it as they reach the libraries' sampling (issue 39).

    Examples
    --------
    >>> seeded(parse_method("lgb:YetiRank"), 3).kwargs, seeded(parse_method("lgb:RankNet"), 3).kwargs
    ({'seed': 3}, {})
    """
    if spec.native or "seed" in spec.kwargs:
        return spec
    from .. import objectives

    cls = getattr(objectives, spec.target, None)
    if cls is None or "seed" not in (_keyword_options(cls) or ()):
        return spec
    return MethodSpec(spec.backend, spec.target, spec.native, (*spec.options, ("seed", seed)), spec.criterion,
                      spec.leaves)


def build_objective(spec: MethodSpec) -> Objective:
    """Instantiate the customobj objective of ``spec``; bad options become a ``ValueError`` naming it."""
    if spec.native:
        raise ValueError(f"{spec.label} is a native {BACKENDS[spec.backend]} objective, not a customobj one")
    from .. import objectives
    from .clicks import CLICK_BUILDERS, CLICK_TARGETS, CLICK_TRAINERS

    if spec.target in CLICK_TRAINERS:
        raise ValueError(f"{spec.label} is a trainer (customobj.{spec.target}), not an objective")
    if spec.target in CLICK_TARGETS:
        try:
            return CLICK_BUILDERS[spec.target](spec.kwargs)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"invalid options for {spec.label}: {type(exc).__name__}: {exc}") from None
    cls = getattr(objectives, spec.target)
    accepted = _keyword_options(cls)
    unknown = sorted(set(spec.kwargs) - set(accepted)) if accepted is not None else []
    if unknown and accepted is not None:
        near = difflib.get_close_matches(unknown[0], accepted, n=1)
        raise ValueError(f"invalid options for {spec.label}: {spec.target} has no option {unknown[0]!r}"
                         + (f" (did you mean {near[0]!r}?)" if near else "")
                         + f"; its options: {', '.join(accepted) or '(none)'}")
    try:
        return cls(**spec.kwargs)
    except (TypeError, ValueError, OverflowError) as exc:
        # one line whatever the constructor raised (numba's messages span many lines)
        text = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())
        raise ValueError(f"invalid options for {spec.label}: {type(exc).__name__}: {text}") from None


# --- ensembles, ens:A+B (trained and combined by compare/ensemble.py) ----------------------------
ENS_PREFIX = "ens"
_ENS = re.compile(r"\s*ens\s*:")


@dataclass(frozen=True)
class EnsembleSpec:
    """A parsed ``ens:A+B``: the two member methods, in the order given."""

    members: tuple[MethodSpec, MethodSpec]

    backend = ENS_PREFIX
    native = False
    criterion = None
    options = ()

    @property
    def label(self) -> str:
        return f"{ENS_PREFIX}:" + "+".join(m.label for m in self.members)

    def __str__(self) -> str:
        return self.label


def is_ensemble_name(text: str) -> bool:
    """Whether ``text`` is spelled as an ensemble (``ens:...``), right or wrong."""
    return bool(_ENS.match(text))


def parse_ensemble(text: str) -> EnsembleSpec:
    """Parse ``ens:A+B``; a ``ValueError`` (first line: what is wrong) for anything else.

    ``+`` separates the members outside parentheses, brackets and quotes, so options such as
    ``lam=1e+3`` inside a member's parentheses are kept whole. Ensembles do not nest.
    """
    if not isinstance(text, str):
        raise TypeError(f"method name must be a string, got {type(text).__name__}")
    if not is_ensemble_name(text):
        raise _error(text, f"an ensemble is spelled {ENS_PREFIX}:A+B")
    body = text.split(":", 1)[1]
    try:
        parts = split_top(body, "+", "ensemble")
    except ValueError as exc:
        raise _error(text, str(exc)) from None
    if len(parts) != 2:
        raise _error(text, f"an ensemble combines exactly two methods, ens:A+B (got {len(parts)} part(s))")
    members: list[MethodSpec] = []
    for part in parts:
        if not part.strip():
            raise _error(text, "empty member; ens:A+B needs two method names")
        if is_ensemble_name(part):
            raise _error(text, "ensembles do not nest; a member must be a single method")
        try:
            members.append(_parse_single(part, part.strip()))
        except ValueError as exc:
            first = str(exc).splitlines()[0]
            first = re.sub(r"\Ainvalid method '.*?': ", "", first)  # the member is named just before
            raise _error(text, f"member {part.strip()!r}: {first}") from None
    if members[0].label == members[1].label:
        raise _error(text, f"both members are {members[0].label}; an ensemble combines two different methods")
    return EnsembleSpec((members[0], members[1]))


def member_specs(specs: list) -> list[MethodSpec]:
    """The single methods to train for ``specs``: every listed one, then the ensembles' members not
    listed themselves, each once, in order of first appearance."""
    out, seen = [], set()
    for s in specs:
        for m in (s.members if isinstance(s, EnsembleSpec) else (s,)):
            if m.label not in seen:
                seen.add(m.label)
                out.append(m)
    return out
