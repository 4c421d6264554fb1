"""Every ```python block of README.md and docs/*.md runs as written.

Per file: its blocks in order, concatenated into one script file that runs as ``python file.py``
with the repository root as the working directory (what a user saving them one after the other and
running them gets; a page that starts worker processes must guard its work with
``if __name__ == "__main__":`` as a script must, which ``python -c`` would not show). A failure names the
file, the block that raised and the process's stderr. Blocks that read ``../shared/data`` need the
LETOR data there: without it the file is skipped, except under ``CI=true`` where that is an error.

New docs/*.md files are picked up automatically; a file without python blocks is not a test.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

#: One file's blocks may train a few small models and start a Dask cluster: generous, not infinite.
TIMEOUT_S = 600

#: A fenced block opened by ```python (a line of its own) up to the next closing fence.
_BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)

#: Marks the start of block ``i`` in the concatenated script, so a traceback can be mapped back.
_MARK = "# --- customobj-docs block {i} ---"

#: How the docs print a score of a trained model: beside a random ranking's on the same data,
#: ``NDCG@10 0.8123 (random ranking 0.4310)``. The score must beat it by LEARNED_MARGIN, so a page
#: whose model did not learn (validation data of another task, a model stopped at round 1) fails.
_SCORE = re.compile(r"NDCG@10 (\d+\.\d+) \(random ranking (\d+\.\d+)\)")
LEARNED_MARGIN = 0.1
#: An NDCG value printed some other way (the rule above would not see it): "NDCG" or "ndcg@k" and,
#: before any "=" (an option's repr such as ``metric='ndcg', sigma=1.0``), a number with two
#: decimals or more. A method name (``xgb:rank:ndcg``) beside a p-value is not a score.
_ANY_NDCG = re.compile(r"(?:NDCG|(?i:ndcg)@\d+)[^=\n]{0,40}?\d\.\d\d")
#: Blocks that fit on validation data; their page must print at least one score (as above).
_VALIDATES = re.compile(r"eval_set|valid_sets|evals=|eval_X|GridSearchCV|cross_val")


def unlearned_scores(stdout: str) -> list[str]:
    """The printed lines that break the score rule: a score not above its random ranking's by
    LEARNED_MARGIN, or an NDCG printed without a random ranking's beside it."""
    problems = []
    for line in stdout.splitlines():
        pairs = _SCORE.findall(line)
        if not pairs and _ANY_NDCG.search(line):
            problems.append(f"{line.strip()!r}: print an NDCG as 'NDCG@10 <score> (random ranking <score>)'")
        for score, random in pairs:
            if float(score) < float(random) + LEARNED_MARGIN:
                problems.append(f"{line.strip()!r}: {score} is not {LEARNED_MARGIN} above the random ranking's "
                                f"{random}: the model did not learn")
    return problems


#: customobj's own warnings in a page's stderr (``path:line: Category: message``): the import-order
#: warning of customobj.adapters and whatever else customobj's code warns about. KernelCacheWarning
#: reports the machine (an unwritable cache folder), not the page, and is left out.
_WARNING = re.compile(r"^(\S.*?):\d+: (\w*Warning): (.*)$", re.MULTILINE)


def customobj_warnings(stderr: str) -> list[str]:
    package = (str(REPO / "customobj"), str(REPO / "adapters"))
    return [m.group(0) for m in _WARNING.finditer(stderr) if m.group(2) != "KernelCacheWarning"
            and ("customobj" in m.group(3) or m.group(1).startswith(package))]


def doc_files() -> list[Path]:
    """README.md and every docs/*.md, in a stable order."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def python_blocks(text: str) -> list[tuple[int, str]]:
    """``(line number of the opening fence, code)`` for every ```python block of a Markdown text."""
    return [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in _BLOCK.finditer(text)]


def script_for(blocks: list[tuple[int, str]]) -> str:
    """The blocks concatenated, each preceded by its marker line."""
    return "\n".join(_MARK.format(i=i) + "\n" + code for i, (_, code) in enumerate(blocks, 1))


def failing_block(script: str, stderr: str, filename: str = "<docs>") -> int | None:
    """The number of the block whose line the last traceback frame of ``filename`` points into."""
    lines = [int(n) for n in re.findall(rf'File "{re.escape(filename)}", line (\d+)', stderr)]
    if not lines:
        return None
    block = None
    for lineno, text in enumerate(script.splitlines(), 1):
        if lineno > lines[-1]:
            break
        m = re.fullmatch(r"# --- customobj-docs block (\d+) ---", text)
        if m:
            block = int(m.group(1))
    return block


def run_script(script: str, folder: Path) -> tuple[subprocess.CompletedProcess, str]:
    """Save ``script`` in ``folder`` and run it as ``python file.py`` from the repository root;
    returns the finished process and the file's name (as tracebacks spell it)."""
    path = folder / "docs_blocks.py"
    path.write_text(script, encoding="utf-8")
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run([sys.executable, str(path)], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    return proc, str(path)


def test_blocks_run_as_a_script_file_not_python_c(tmp_path: Path) -> None:
    """A spawned worker imports the script's file again: its unguarded top level runs twice, as it
    does for a user's script (under ``python -c`` it would run once and hide a missing guard)."""
    script = script_for([(1, "import multiprocessing as mp\nprint('top level', __name__)\n"),
                         (5, "if __name__ == '__main__':\n"
                             "    p = mp.get_context('spawn').Process(target=len, args=('x',))\n"
                             "    p.start(); p.join(); assert p.exitcode == 0\n")])
    proc, _ = run_script(script, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["top level __main__", "top level __mp_main__"]


def _params():
    return [pytest.param(path, id=path.relative_to(REPO).as_posix()) for path in doc_files()]


def repo_files() -> set[str]:
    """Files under the repository root, without git's, caches and build output."""
    skip = {".git", "__pycache__", ".pytest_cache", ".hypothesis", "build", "dist"}
    out = set()
    for root, dirs, files in os.walk(REPO):
        dirs[:] = [d for d in dirs if d not in skip and not d.endswith(".egg-info")]
        out.update(os.path.relpath(os.path.join(root, f), REPO) for f in files)
    return out


def test_block_parser_finds_fenced_python_only() -> None:
    text = "x\n```python\na = 1\n```\n```bash\nls\n```\n```python\nb = a\n```\n"
    assert python_blocks(text) == [(2, "a = 1\n"), (8, "b = a\n")]
    script = script_for(python_blocks(text))
    assert failing_block(script, 'File "<docs>", line 4, in <module>') == 2
    assert failing_block(script, "no traceback") is None


def test_score_rule_flags_a_model_that_did_not_learn() -> None:
    """Issue 30: pages printed validation NDCG@10 of .44 (random order .415) and passed."""
    assert unlearned_scores("valid NDCG@10 0.8100 (random ranking 0.4150)\nbest round 12") == []
    assert len(unlearned_scores("valid NDCG@10 0.4400 (random ranking 0.4150)")) == 1
    assert len(unlearned_scores("XGBoost: 12 rounds, valid NDCG@10 0.4400")) == 1  # no random ranking beside it
    assert unlearned_scores("['co_err@10', 'co_ndcg@10', 'ndcg@10']") == []
    assert unlearned_scores("LambdaRank(metric='ndcg', sigma=1.0, truncation=30)") == []
    assert unlearned_scores("[('xgb:rank:ndcg', 0.3342, 0.5690)]") == []  # a method's p-values
    assert len(unlearned_scores("{'co_ndcg@10': [0.4412, 0.4523]}")) == 1


def test_customobj_warnings_are_found_in_stderr() -> None:
    """Issue 30: three pages triggered customobj's import-order warning and passed."""
    stderr = ("/tmp/x/docs_blocks.py:3: RuntimeWarning: lightgbm was imported before customobj.adapters, so ...\n"
              "  from customobj import adapters\n"
              "/site-packages/dask/base.py:9: FutureWarning: something of dask's own\n"
              f"{REPO / 'customobj' / '_numba_cache.py'}:120: KernelCacheWarning: customobj cannot write ...\n")
    assert customobj_warnings(stderr) == [stderr.splitlines()[0]]


def test_xgboost_early_stopping_examples_predict_with_the_best_trees() -> None:
    """Issue 30: after early stopping, xgboost.train's Booster keeps every tree and predicts with all
    of them; a block that stops early and predicts must pass iteration_range (docs/adapters.md's does)."""
    stopping = re.compile(r"(xgb|xgboost)\.train\((?s:.*?)(early_stopping_rounds=|xgboost_early_stopping\()")
    checked = 0
    for path in doc_files():
        for line, code in python_blocks(path.read_text(encoding="utf-8")):
            if stopping.search(code) and re.search(r"\bbst\.predict\(|booster\.predict\(", code):
                checked += 1
                assert "iteration_range=(0, bst.best_iteration + 1)" in code, f"{path.name}: block at line {line}"
    assert checked >= 1  # docs/adapters.md's "LightGBM and XGBoost side by side" block


@pytest.mark.parametrize("path", _params())
def test_python_blocks_run(path: Path, tmp_path: Path) -> None:
    rel = path.relative_to(REPO).as_posix()
    text = path.read_text(encoding="utf-8")
    blocks = python_blocks(text)
    if not blocks:
        pytest.skip(f"{rel} has no python blocks")
    # The blocks name the path literally (what a user pastes), so $CUSTOMOBJ_DATA cannot stand in.
    if "../shared/data" in text and not (REPO.parent / "shared" / "data" / "mq2008").is_dir():
        msg = f"{rel} reads ../shared/data, which is missing beside the repository"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(msg)
        pytest.skip(msg)
    script = script_for(blocks)
    before = repo_files()
    try:
        proc, filename = run_script(script, tmp_path)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{rel}: its {len(blocks)} python blocks did not finish within {TIMEOUT_S} s\n"
                    f"stderr:\n{exc.stderr or ''}")
    if proc.returncode != 0:
        block = failing_block(script, proc.stderr, filename)
        where = (f"block {block} of {len(blocks)} (opening fence at line {blocks[block - 1][0]})"
                 if block else f"one of its {len(blocks)} blocks")
        pytest.fail(f"{rel}: {where} failed (exit {proc.returncode})\nstderr:\n{proc.stderr[-6000:]}")
    left = sorted(repo_files() - before)
    assert left == [], f"{rel}: its blocks left files in the repository (write to a temporary folder): {left}"
    warned = customobj_warnings(proc.stderr)
    assert warned == [], f"{rel}: its blocks trigger customobj's own warnings:\n" + "\n".join(warned)
    problems = unlearned_scores(proc.stdout)
    assert problems == [], f"{rel}: printed scores that show no learning:\n" + "\n".join(problems)
    if any(_VALIDATES.search(code) for _, code in blocks):
        assert _SCORE.search(proc.stdout), (f"{rel}: its blocks fit on validation data but print no "
                                            "'NDCG@10 <score> (random ranking <score>)' line")


#: A block fenced as ```python gpu: an example that needs a real CUDA GPU (README and docs/gpu.md).
_GPU_BLOCK = re.compile(r"^```python gpu[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
#: The pages with GPU examples: the README's short one, docs/gpu.md's XGBoost one.
GPU_PAGES = ["README.md", "docs/gpu.md"]


def gpu_blocks() -> dict[str, list[str]]:
    """Every page's ```python gpu blocks, by page (relative path)."""
    found = {}
    for path in doc_files():
        blocks = _GPU_BLOCK.findall(path.read_text(encoding="utf-8"))
        if blocks:
            found[path.relative_to(REPO).as_posix()] = blocks
    return found


def test_gpu_blocks_are_not_run_with_the_others() -> None:
    found = gpu_blocks()
    assert sorted(found) == sorted(GPU_PAGES), f"pages with a python gpu example: {sorted(found)}"
    for rel, blocks in found.items():
        assert not any(code in blocks for _, code in python_blocks((REPO / rel).read_text(encoding="utf-8"))), rel


@pytest.mark.parametrize("rel", GPU_PAGES)
def test_gpu_blocks_run_on_a_gpu(rel: str) -> None:
    """Each page's GPU blocks, concatenated, in one process; only where a real GPU is present."""
    from customobj._cuda_runtime import gpu_status

    status = gpu_status()
    if not status.available or status.simulator:
        pytest.skip(f"{rel}'s GPU example needs a real CUDA GPU: {status.reason or 'the simulator is on'}")
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    proc = subprocess.run([sys.executable, "-c", "\n".join(gpu_blocks()[rel])], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    assert proc.returncode == 0, proc.stderr[-6000:]


#: A block fenced as ```python simulator: docs/gpu.md's GPU path on numba's CUDA simulator (no GPU needed).
_SIMULATOR_BLOCK = re.compile(r"^```python simulator[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
SIMULATOR_PAGE = REPO / "docs" / "gpu.md"


def test_the_gpu_examples_import_customobj_adapters_before_xgboost() -> None:
    # Importing xgboost first makes customobj.adapters warn that it cannot set the thread policy.
    checked = 0
    for block in (b for blocks in gpu_blocks().values() for b in blocks):
        lines = block.splitlines()
        xgb = [i for i, ln in enumerate(lines) if re.match(r"\s*(import|from) xgboost\b", ln)]
        if not xgb:
            continue
        checked += 1
        first = min(i for i, ln in enumerate(lines)
                    if "customobj.adapters" in ln or "from customobj import adapters" in ln)
        assert first < min(xgb), block
    assert checked >= 1  # docs/gpu.md's XGBoost example


def test_the_simulator_example_runs_and_equals_the_cpu(tmp_path: Path) -> None:
    # docs/gpu.md "Without a GPU": run as it says, NUMBA_ENABLE_CUDASIM=1 python sim.py (tiny data: it is slow).
    text = SIMULATOR_PAGE.read_text(encoding="utf-8")
    (block,) = _SIMULATOR_BLOCK.findall(text)
    assert "NUMBA_ENABLE_CUDASIM=1 python sim.py" in text
    (tmp_path / "sim.py").write_text(block)
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run([sys.executable, "-W", "error::UserWarning", str(tmp_path / "sim.py")], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    assert proc.returncode == 0, proc.stderr[-6000:]
    assert proc.stdout.split() == ["True", "True"], proc.stdout


def test_ci_runs_the_readme_test_command() -> None:
    """The README opens with its two commands; `.ci/run` runs the second, the test command, as written."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    first = re.search(r"^```bash\n(.*?)^```", readme, re.MULTILINE | re.DOTALL)
    assert first and readme.index(first.group(0)) < readme.index("\n## "), "the README opens with its commands"
    install_and_compare, install_and_test = first.group(1).splitlines()
    assert install_and_compare.endswith("&& customobj compare")
    assert install_and_test.endswith("&& python -m pytest")
    assert install_and_test in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()


#: Pages whose every named repository path must exist: the README's links, docs/contributing.md's
#: code-structure table and recipes (issue 40: a recipe named three files that no longer existed) and
#: docs/gpu-design.md's map of the GPU tree builder.
PATH_PAGES = ["README.md", "docs/contributing.md", "docs/gpu-design.md"]
#: A code span that names a file or folder: no spaces, brackets or templates (``clicks/<name>.py``).
_CODE_SPAN = re.compile(r"`([\w./*-]+)`")
_FILE = re.compile(r"(?:[\w*-]+/)*[\w*-]+\.(?:py|md|rst|toml|txt|json|png)$|(?:[\w.-]+/)+$")
_LINK_TARGET = re.compile(r"\]\(([^)#\s]+)")
#: Where a code span's path may start: the repository root, customobj/ (``ole/criterion.py``) or
#: customobj/ole/ (``cuda/backend.py``).
_ROOTS = ("", "customobj/", "customobj/ole/")
_SEARCHED = ("customobj", "adapters", "tests", "benchmarks", "examples", "docs")


def named_paths(text: str) -> tuple[list[str], list[str]]:
    """(code spans that name a file or folder, relative link targets) of a Markdown text."""
    spans = [m for m in _CODE_SPAN.findall(text) if _FILE.fullmatch(m) and not m.startswith(".")]
    links = [m for m in _LINK_TARGET.findall(text) if "://" not in m and not m.startswith("mailto:")]
    return spans, links


def missing_paths(text: str, folder: Path) -> list[str]:
    """The paths ``text`` names that do not exist (its links taken relative to ``folder``)."""
    spans, links = named_paths(text)
    missing = []
    for span in spans:
        if "/" in span.rstrip("/"):  # a path: from the root or from customobj/
            found = any(list(REPO.glob(root + span.rstrip("/"))) for root in _ROOTS)
        else:  # a bare file name (``lambdaloss.py`` beside ``customobj/objectives/pairwise.py``)
            found = (REPO / span).exists() or any(list((REPO / top).rglob(span)) for top in _SEARCHED)
        if not found:
            missing.append(span)
    missing += [link for link in links if not (folder / link).exists()]
    return missing


def test_path_check_finds_paths_and_misses() -> None:
    spans, links = named_paths("`customobj/ole/grower.py` and `ole/criterion.py`, `clicks/<name>.py`, "
                               "`a + b`, `tests/`, `pairwise.py`, [x](docs/tests.md#a), [y](https://x.org/a.md)")
    assert spans == ["customobj/ole/grower.py", "ole/criterion.py", "tests/", "pairwise.py"]
    assert links == ["docs/tests.md"]
    text = "`customobj/click_simulation.py` `ole/criterion.py` `gone.py` `examples/` [t](tests.md) [g](gone.md)"
    assert missing_paths(text, REPO / "docs") == ["customobj/click_simulation.py", "gone.py", "gone.md"]


@pytest.mark.parametrize("rel", PATH_PAGES)
def test_every_path_a_page_names_exists(rel: str) -> None:
    page = REPO / rel
    assert missing_paths(page.read_text(encoding="utf-8"), page.parent) == [], f"{rel} names paths that do not exist"


#: Issue 40: the README is a signpost into docs/ (LightGBM's and scikit-learn's are 150-200 lines),
#: not a manual; results, manuals and benchmark tables live in docs/ and benchmarks/README.md.
README_MAX_LINES = 200


def test_the_readme_is_a_signpost() -> None:
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) < README_MAX_LINES, f"README.md has {len(lines)} lines: move sections into docs/ pages"
    assert "docs/contributing.md" in "\n".join(lines)


#: A row of docs/contributing.md's code-structure table: paths | what they hold | main names.
_TABLE_ROW = re.compile(r"^\| (`[^|]+`[^|]*) \| [^|]+ \| ([^|]*) \|$", re.MULTILINE)
_DEFINES = "(?:class |def |)({name})\\b(?:\\(|:| =|\\[)"


def table_rows(text: str) -> list[tuple[list[str], list[str]]]:
    """(files of the row, names the row says they define) for each row of the code-structure table;
    a bare file name is in the folder of the row's first path; names in parentheses are left out."""
    section = text.split("## Where the code is", 1)[1].split("\n## ", 1)[0]
    rows = []
    for paths_cell, names_cell in _TABLE_ROW.findall(section):
        paths = re.findall(r"`([\w./*-]+)`", paths_cell)
        folder = paths[0].rsplit("/", 1)[0] + "/" if "/" in paths[0].rstrip("/") else ""
        files = [q if "/" in q else folder + q for q in paths if q.endswith(".py")]
        names = re.findall(r"`(\w+)`", re.sub(r"\([^)]*\)", "", names_cell))
        rows.append((files, names))
    return rows


def undefined_names(text: str) -> list[str]:
    """The main names of the code-structure table that none of their row's files defines."""
    wrong = []
    for files, names in table_rows(text):
        source = "\n".join(f.read_text(encoding="utf-8") for pattern in files for f in REPO.glob(pattern))
        wrong += [f"{name} ({', '.join(files)})" for name in names
                  if not re.search("^\\s*" + _DEFINES.format(name=name), source, re.MULTILINE)]
    return wrong


def test_the_table_check_finds_a_name_its_files_do_not_define() -> None:
    text = ("## Where the code is\n\n| path | what | names |\n|---|---|---|\n"
            "| `customobj/ole/grower.py`, `tree.py` | trees | `TreeGrower`, `Tree`, `GoneClass` (not `Hidden`) |\n")
    assert table_rows(text) == [(["customobj/ole/grower.py", "customobj/ole/tree.py"], ["TreeGrower", "Tree", "GoneClass"])]
    assert undefined_names(text) == ["GoneClass (customobj/ole/grower.py, customobj/ole/tree.py)"]


def test_the_code_structure_table_names_what_its_files_define() -> None:
    """Each main class or function of a row is defined in one of the row's files (issue 40: the
    table must follow the code as the recipes' paths do)."""
    text = (REPO / "docs" / "contributing.md").read_text(encoding="utf-8")
    assert len(table_rows(text)) >= 30
    assert undefined_names(text) == [], "the code-structure table names what its files do not define"
