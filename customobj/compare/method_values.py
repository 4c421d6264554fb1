"""The value grammar of ``customobj compare``'s method names: option values and top-level splitting.

``parse_value`` reads one option value without ``eval``; ``format_value`` writes it back so that it
parses to the same value; ``split_top`` splits a method list or an option list on a separator outside
parentheses, brackets and quotes. :mod:`customobj.compare.methods` builds the method grammar on them.

Examples
--------
>>> from customobj.compare.method_values import format_value, parse_value, split_top
>>> parse_value("1e-3"), parse_value("'a,b'"), parse_value("none")
(0.001, 'a,b', None)
>>> split_top("lgb:A(x=1,y=2),ole:B", ",", "method list")
['lgb:A(x=1,y=2)', 'ole:B']
>>> format_value("true")
"'true'"
"""
from __future__ import annotations

import math
import re

__all__ = ["INT_MIN", "INT_MAX", "KEY", "parse_value", "format_value", "split_top"]

#: An option name (a Python identifier).
KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_INT = re.compile(r"[+-]?\d+\Z")
_FLOAT = re.compile(r"[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?|inf|nan)\Z", re.IGNORECASE)

#: Integer option values must fit a signed 64-bit integer (every library and kernel stores them so).
INT_MIN, INT_MAX = -(2**63), 2**63 - 1


def format_value(v: object) -> str:
    """``v`` as written in a method name: words that would parse as something else are quoted."""
    if isinstance(v, bool) or v is None:
        return str(v).lower()
    if isinstance(v, str) and (not KEY.match(v) or v.lower() in ("true", "false", "none", "null")):
        return repr(v)
    return str(v)


def split_top(text: str, sep: str, what: str) -> list[str]:
    """Split on ``sep`` outside parentheses, brackets and quotes; reject unbalanced input."""
    parts: list[str] = []
    quote: str | None = None
    start = 0
    closing = {")": "(", "]": "["}
    stack: list[str] = []
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = None
            continue
        if ch in "'\"":
            quote = ch
        elif ch in "([":
            stack.append(ch)
        elif ch in ")]":
            if not stack or stack[-1] != closing[ch]:
                raise ValueError(f"unbalanced {ch!r} at position {i} in {what} {text!r}")
            stack.pop()
        elif ch == sep and not stack:
            parts.append(text[start:i])
            start = i + 1
    if quote:
        raise ValueError(f"unterminated quote {quote} in {what} {text!r}")
    if stack:
        raise ValueError(f"unclosed {stack[-1]!r} in {what} {text!r}")
    parts.append(text[start:])
    return parts


def parse_value(text: str) -> int | float | bool | str | None:
    """``'3'`` -> 3, ``'0.5'``/``'1e-3'`` -> float, ``true``/``false`` -> bool, ``none`` -> None,
    quoted text -> the text inside, anything else -> the stripped string. Never evaluates code.

    Numbers are checked as Python values: an integer outside the signed 64-bit range, or a float
    that is not finite (``nan``, ``inf``, ``1e999``), is a ``ValueError``.
    """
    t = text.strip()
    if not t:
        raise ValueError("empty value")
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "'\"":
        return t[1:-1]
    low = t.lower()
    if low == "true":
        return True
    if low == "false":
        return False
    if low in ("none", "null"):
        return None
    if _INT.match(t):
        if len(t.lstrip("+-")) > 25:  # no need to build a huge int to know it is out of range
            raise ValueError(f"integer {t[:20]}... is outside the 64-bit range")
        n = int(t)
        if not INT_MIN <= n <= INT_MAX:
            raise ValueError(f"integer {n} is outside the 64-bit range [{INT_MIN}, {INT_MAX}]")
        return n
    if _FLOAT.match(t):
        x = float(t)
        if not math.isfinite(x):
            raise ValueError(f"number {t!r} is not finite")
        return x
    if any(ch in t for ch in "()[]=,'\""):
        raise ValueError(f"cannot parse value {t!r}; quote strings that hold brackets, '=' or ','")
    return t
