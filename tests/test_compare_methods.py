"""The method-name parser of ``customobj compare`` (no training here)."""
import pytest

from customobj.compare.methods import (
    CRITERIA,
    MethodSpec,
    build_objective,
    objective_names,
    parse_method,
    parse_methods,
    split_methods,
)
from customobj.objectives import LambdaRank, MPBoost, RankNet


@pytest.mark.parametrize("text, backend, target, native, options, criterion", [
    ("lgb:lambdarank", "lgb", "lambdarank", True, (), None),
    ("lgb:rank_xendcg", "lgb", "rank_xendcg", True, (), None),
    ("lgb:regression", "lgb", "regression", True, (), None),
    ("xgb:rank:ndcg", "xgb", "rank:ndcg", True, (), None),
    ("xgb:rank:pairwise", "xgb", "rank:pairwise", True, (), None),
    ("cb:YetiRank", "cb", "YetiRank", True, (), None),
    ("cb:PairLogitPairwise", "cb", "PairLogitPairwise", True, (), None),
    ("lgb:LambdaRank", "lgb", "LambdaRank", False, (), None),
    ("xgb:MPBoost(ddf=logdd,lam=3)", "xgb", "MPBoost", False, (("ddf", "logdd"), ("lam", 3)), None),
    ("ole:LambdaRank[ole]", "ole", "LambdaRank", False, (), "ole"),
    ("ole:LambdaRank[wse]", "ole", "LambdaRank", False, (), "wse"),
    ("ole:RankNet(sigma=2)[se]", "ole", "RankNet", False, (("sigma", 2),), "se"),
    ("ole:RankNet", "ole", "RankNet", False, (), "ole"),  # the ole criterion is the default
    ("lgb:lambdarank(lambdarank_truncation_level=20)", "lgb", "lambdarank", True,
     (("lambdarank_truncation_level", 20),), None),
])
def test_valid_names(text, backend, target, native, options, criterion):
    spec = parse_method(text)
    assert spec == MethodSpec(backend, target, native, options, criterion)


def test_whitespace_is_ignored_and_label_is_canonical():
    spec = parse_method("  xgb : MPBoost ( ddf = logdd , lam = 3 ) ")
    assert spec.label == "xgb:MPBoost(ddf=logdd,lam=3)"
    assert parse_method(" xgb : rank : ndcg ").label == "xgb:rank:ndcg"
    assert parse_method("ole:RankNet( sigma=2 ) [ se ]").label == "ole:RankNet(sigma=2)[se]"
    assert parse_method("ole:LambdaRank").label == "ole:LambdaRank[ole]"
    # the canonical label parses back to the same spec
    for text in ("ole:LambdaRank(metric=ndcg,truncation=30)[wse]", "lgb:MPBoost(ddf=logdd,lam=0.5)"):
        spec = parse_method(text)
        assert parse_method(spec.label) == spec


def test_case_distinguishes_native_from_customobj():
    assert parse_method("lgb:lambdarank").native
    assert not parse_method("lgb:LambdaRank").native


def test_out_of_range_option_names_the_method():
    with pytest.raises(ValueError, match=r"invalid method 'lgb:LambdaRank\(k=1180591620717411303424\)': option 'k'"):
        parse_method("lgb:LambdaRank(k=1180591620717411303424)")


def test_unknown_option_names_the_valid_ones():
    with pytest.raises(ValueError, match=r"LambdaRank has no option 'sigmaa' \(did you mean 'sigma'\?\); its options: "
                                         r"metric, k, sigma, truncation"):
        build_objective(parse_method("lgb:LambdaRank(sigmaa=2)"))


def test_build_objective_reports_any_constructor_failure_on_one_line(monkeypatch):
    from customobj import objectives

    def explode(**kwargs):
        raise OverflowError("Python int too large\nto convert to C long")

    spec = parse_method("lgb:RankNet(sigma=2)")
    monkeypatch.setattr(objectives, "RankNet", explode)
    with pytest.raises(ValueError) as info:
        build_objective(spec)
    assert str(info.value) == ("invalid options for lgb:RankNet(sigma=2): OverflowError: Python int too large; "
                               "to convert to C long")


def test_split_methods_keeps_commas_inside_parentheses_and_quotes():
    text = "lgb:lambdarank, xgb:MPBoost(ddf=logdd,lam=3) ,ole:RankNet(sigma=2)[se],lgb:X(a='p,q')"
    assert split_methods(text) == ["lgb:lambdarank", "xgb:MPBoost(ddf=logdd,lam=3)",
                                   "ole:RankNet(sigma=2)[se]", "lgb:X(a='p,q')"]


@pytest.mark.parametrize("text, message", [
    ("", "empty"),
    ("lgb", "missing backend prefix"),
    ("foo:bar", "unknown backend 'foo'"),
    ("lgb:", "missing objective"),
    ("lgb:LambdaRnk", "did you mean"),
    ("lgb:lambdarnk", "neither a native lgb objective nor a customobj objective"),
    ("cb:LambdaRank", "customobj objectives need lgb, xgb or ole"),
    ("ole:lambdarank", "is not a customobj objective"),
    ("lgb:LambdaRank[ole]", "only applies to the ole backend"),
    ("ole:LambdaRank[xx]", "criterion 'xx' is not one of ole, wse, se"),
    ("ole:LambdaRank[ole](sigma=2)", "must come before the criterion"),
    ("lgb:RankNet(sigma)", "must look like key=value"),
    ("lgb:RankNet(sigma=1,sigma=2)", "given twice"),
    ("lgb:RankNet(1x=2)", "not an identifier"),
    ("lgb:RankNet(sigma=1,)", "empty option"),
    ("lgb:RankNet(sigma=)", "empty value"),
    ("lgb:RankNet(sigma=1", "unclosed '('"),
    ("lgb:RankNet sigma=1)", "unbalanced ')'"),
    ("lgb:RankNet(a='x)", "unterminated quote"),
    ("lgb:RankNet(a=f(1))", "cannot parse value"),
    # ensembles (parse_ensemble): the error names the ensemble, and the member at fault
    ("ens:lgb:lambdarank", "exactly two methods"),
    ("ens:lgb:lambdarank+lgb:LambdaRank+lgb:RankNet", "exactly two methods"),
    ("ens:lgb:lambdarank+", "empty member"),
    ("ens:lgb:lambdarank + lgb:lambdarank", "both members are lgb:lambdarank"),
    ("ens:lgb:lambdarank+ens:lgb:RankNet", "ensembles do not nest"),
    ("ens:lgb:Nope+lgb:lambdarank", "member 'lgb:Nope': 'Nope' is neither"),
    ("ens:lgb:RankNet(sigma=nan)+lgb:lambdarank", "member 'lgb:RankNet(sigma=nan)': option 'sigma'"),
    ("ens:(lgb:lambdarank+lgb:RankNet", "unclosed"),
])
def test_errors(text, message):
    with pytest.raises(ValueError) as info:
        parse_method(text)
    msg = str(info.value)
    first = msg.splitlines()[0]
    assert first.startswith(f"invalid method {text!r}: ") and message in first, first
    # every error lists the valid names: backends, natives, objectives, criteria
    for part in ("lgb (LightGBM)", "xgb:rank:ndcg", "cb:YetiRank", "LambdaRank", "criteria (ole backend only): ole, wse, se"):
        assert part in msg


def test_list_errors():
    with pytest.raises(ValueError, match="stray comma"):
        split_methods("lgb:lambdarank,,xgb:rank:ndcg")
    with pytest.raises(ValueError, match="the method list is empty"):
        split_methods(" ")
    with pytest.raises(ValueError, match="listed twice: lgb:RankNet"):
        parse_methods("lgb:RankNet, lgb : RankNet")
    with pytest.raises(TypeError):
        parse_method(3)


def test_objective_names_and_criteria():
    names = objective_names()
    for n in ("LambdaRank", "RankNet", "QBRank", "MPBoost", "McRank", "SquaredError"):
        assert n in names
    assert not {"Objective", "Sum", "Scaled", "Prepared"} & set(names)
    assert CRITERIA == ("ole", "wse", "se", "ole_fast", "ole_float64")


def test_build_objective():
    assert build_objective(parse_method("xgb:MPBoost(ddf=logdd,lam=3)")) == MPBoost(ddf="logdd", lam=3)
    assert build_objective(parse_method("ole:RankNet(sigma=2)[se]")) == RankNet(sigma=2)
    assert isinstance(build_objective(parse_method("lgb:LambdaRank")), LambdaRank)
    with pytest.raises(ValueError, match=r"invalid options for lgb:RankNet\(bogus=1\)"):
        build_objective(parse_method("lgb:RankNet(bogus=1)"))
    with pytest.raises(ValueError, match="is a native"):
        build_objective(parse_method("lgb:lambdarank"))


@pytest.mark.parametrize("text, message", [
    ("lgb:lambdarank{exact_leaves}", "only applies to lgb with a customobj objective"),
    ("ole:LambdaRank{exact_leaves}", "only applies to lgb with a customobj objective"),
    ("lgb:LambdaRank{exact}", "leaf solver 'exact' is not one of exact_leaves"),
    ("lgb:LambdaRank}", "unbalanced"),
    ("lgb:LambdaRank{exact_leaves}(k=10)", "must come before"),
])
def test_exact_leaves_suffix(text, message):
    spec = parse_method(" lgb : LambdaRank ( k = 10 ) { exact_leaves } ")
    assert (spec.backend, spec.target, spec.leaves, spec.kwargs) == ("lgb", "LambdaRank", "exact_leaves", {"k": 10})
    assert spec.label == "lgb:LambdaRank(k=10){exact_leaves}" and parse_method(spec.label) == spec
    assert parse_method("lgb:LambdaRank").leaves is None
    with pytest.raises(ValueError, match=message):
        parse_method(text)


@pytest.mark.parametrize("text, want", [("lightgbm:lambdarank", "lgb:"), ("XGBoost:rank:ndcg", "xgb:"),
                                        ("LGB:QBRank", "lgb:"), ("catboost:YetiRank", "cb:"), ("lgbm:RankNet", "lgb:")])
def test_a_librarys_own_name_as_backend_suggests_the_prefix(text, want):
    with pytest.raises(ValueError, match=rf"unknown backend '[^']+' \(did you mean {want}\?\)"):
        parse_method(text)
