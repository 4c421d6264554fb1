"""The value grammar of ``customobj compare``'s method names (``customobj/compare/method_values.py``)."""
import pytest

from customobj.compare.method_values import INT_MAX, INT_MIN, format_value, parse_value, split_top


@pytest.mark.parametrize("text, value", [
    ("3", 3), ("-2", -2), ("0.5", 0.5), ("1e-3", 1e-3), (".25", 0.25), ("true", True), ("False", False),
    ("none", None), ("logdd", "logdd"), ("'a,b'", "a,b"), ('"3"', "3"), ("  ndcg ", "ndcg"),
])
def test_parse_value(text, value):
    got = parse_value(text)
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize("text, message", [
    ("9223372036854775808", "outside the 64-bit range"),
    ("-9223372036854775809", "outside the 64-bit range"),
    ("1180591620717411303424", "outside the 64-bit range"),
    ("1" * 5000, "outside the 64-bit range"),  # refused before building a 5000-digit int
    ("1e999", "'1e999' is not finite"),
    ("nan", "'nan' is not finite"),
    ("-inf", "'-inf' is not finite"),
])
def test_parse_value_checks_numbers_as_python_values(text, message):
    with pytest.raises(ValueError, match=message):
        parse_value(text)
    assert parse_value("9223372036854775807") == 2**63 - 1 and parse_value("-9223372036854775808") == -(2**63)


def test_parse_value_never_evaluates():
    assert parse_value("__import__") == "__import__"
    with pytest.raises(ValueError, match="cannot parse value"):
        parse_value("__import__('os')")


@pytest.mark.parametrize("value", [3, -2, 0.5, 1e-3, True, False, None, "logdd", "a,b", "true", "3", "x y", INT_MIN, INT_MAX])
def test_format_value_parses_back(value):
    got = parse_value(format_value(value))
    assert got == value and type(got) is type(value)


def test_split_top_keeps_nested_separators():
    assert split_top("a(x=1,y=[2,3]),b,'c,d'", ",", "list") == ["a(x=1,y=[2,3])", "b", "'c,d'"]
    assert split_top("", ",", "list") == [""]


@pytest.mark.parametrize("text, message", [
    ("a(b", r"unclosed '\('"), ("a)b", r"unbalanced '\)' at position 1"), ("a[b)", r"unbalanced '\)'"),
    ("'ab", "unterminated quote"),
])
def test_split_top_rejects_unbalanced_input(text, message):
    with pytest.raises(ValueError, match=message):
        split_top(text, ",", "list")
