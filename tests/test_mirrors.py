"""docs/tests.md stays true: every source module of customobj/ and adapters/ has one test module,
the mirror of its path or (for pure kernels and package entry points) a test module whose
docstring names it; every test module is in one of the page's two tables."""
from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "tests.md"
_ROW = re.compile(r"^\| `([^`]+)` \| `?([^`|]+?)`? \|")


def mirror(source: str) -> str:
    """``customobj/compare/runner.py`` -> ``tests/test_compare_runner.py``; ``customobj/_io.py`` ->
    ``tests/test_io.py``; ``adapters/_data.py`` -> ``tests/test_adapters_data.py``."""
    parts = source[:-3].split("/")
    if parts[0] == "customobj":
        parts = parts[1:]
    return "tests/test_" + "_".join(parts[:-1] + [parts[-1].strip("_")]) + ".py"


def source_modules() -> list[str]:
    found = [p.relative_to(REPO).as_posix() for top in ("customobj", "adapters") for p in (REPO / top).rglob("*.py")]
    return sorted(found)


def page_tables() -> tuple[dict[str, str], set[str]]:
    """(source module -> test module) of the first table, and the test modules of the second."""
    text = PAGE.read_text(encoding="utf-8")
    head, _, rest = text.partition("## Test modules across modules")
    mapping = {}
    for line in head.splitlines():
        m = _ROW.match(line)
        if m and m.group(1) != "source module":
            assert m.group(1) not in mapping, f"{m.group(1)} is listed twice in docs/tests.md"
            mapping[m.group(1)] = m.group(2).strip()
    across = {m.group(1) for m in map(_ROW.match, rest.splitlines()) if m and m.group(1).startswith("tests/")}
    return mapping, across


def test_mirror_names():
    assert mirror("customobj/compare/runner.py") == "tests/test_compare_runner.py"
    assert mirror("customobj/_io.py") == "tests/test_io.py"
    assert mirror("customobj/__init__.py") == "tests/test_init.py"
    assert mirror("adapters/_dask_partition.py") == "tests/test_adapters_dask_partition.py"
    assert mirror("customobj/objectives/_parity.py") == "tests/test_objectives_parity.py"


def test_every_source_module_is_in_the_table_and_nothing_else():
    mapping, _ = page_tables()
    sources = source_modules()
    assert sorted(set(sources) - set(mapping)) == [], "source modules missing from docs/tests.md"
    assert sorted(set(mapping) - set(sources)) == [], "docs/tests.md lists modules that do not exist"


def test_every_row_names_an_existing_test_module_that_covers_its_source():
    mapping, _ = page_tables()
    wrong = []
    for source, test in mapping.items():
        path = REPO / test
        if not path.is_file():
            wrong.append(f"{source}: {test} does not exist")
        elif test != mirror(source):
            doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
            if source not in doc.replace("\n", " "):
                wrong.append(f"{source}: {test} is not its mirror ({mirror(source)}) and its docstring "
                             f"does not name {source}")
    assert wrong == []


def test_every_test_module_is_on_the_page():
    mapping, across = page_tables()
    listed = set(mapping.values()) | across
    tests = {p.relative_to(REPO).as_posix() for p in (REPO / "tests").glob("test_*.py")}
    assert sorted(tests - listed) == [], "test modules missing from docs/tests.md"
    assert sorted(listed - tests) == [], "docs/tests.md names test modules that do not exist"
