"""No numba function of customobj takes more than 12 positional arguments (issue 31, item 4, for
``objectives/``; issue 40, item 4, for the whole package): data and options travel as NamedTuple
records (``PassInputs``, ``PairSpec``, the GPU kernels' ``Inputs``, ``LabelRows``, ``PairList``,
``Rows``; the OLE grower's ``SplitRules``, ``ChildSums``, ``HistPairs``, ``KeyedPairs``,
``QueryTable``, ``TreeArrays``; the click kernels' ``AffineRows``, ``PairOutputs``), which numba and
numba.cuda both take as arguments. Read from the source (``ast``): every function decorated with
``njit`` or ``cuda.jit``, device functions included, in every module below ``customobj/``."""
import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "customobj"
MAX_POSITIONAL = 12


def _kernels():
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and any(
                    "njit" in ast.unparse(d) or "cuda.jit" in ast.unparse(d) for d in node.decorator_list):
                yield f"{path.relative_to(PACKAGE).as_posix()}:{node.name}", len(node.args.posonlyargs) + len(node.args.args)


def test_no_kernel_takes_more_than_12_positional_arguments():
    kernels = dict(_kernels())
    # the walk finds them in every package: objectives, the OLE grower (CPU and GPU), clicks, metrics
    packages = {name.split("/")[0] for name in kernels if "/" in name}
    assert len(kernels) > 200 and {"objectives", "ole", "clicks"} <= packages, packages
    assert "objectives/_pairwise_cuda.py:label_pairs_rows" in kernels and "_metric_kernels.py:dcg_all" in kernels
    assert any(name.startswith("ole/cuda/") for name in kernels)  # the GPU tree builder's wing too
    over = {name: n for name, n in kernels.items() if n > MAX_POSITIONAL}
    assert over == {}, f"kernels over {MAX_POSITIONAL} positional arguments (pass a record): {over}"
