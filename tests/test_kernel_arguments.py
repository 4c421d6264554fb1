"""No kernel of customobj/objectives takes more than 12 positional arguments (issue 31, item 4): data
and options travel as NamedTuple records (``PassInputs``, ``PairSpec``, the GPU kernels' ``Inputs``,
``LabelRows``, ``PairList``, ``Rows``), which numba and numba.cuda both take as arguments. Read from
the source (``ast``): every function decorated with ``njit`` or ``cuda.jit``, device functions included."""
import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "customobj" / "objectives"
MAX_POSITIONAL = 12


def _kernels():
    for path in sorted(PACKAGE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and any(
                    "njit" in ast.unparse(d) or "cuda.jit" in ast.unparse(d) for d in node.decorator_list):
                yield f"{path.name}:{node.name}", len(node.args.posonlyargs) + len(node.args.args)


def test_no_objectives_kernel_takes_more_than_12_positional_arguments():
    kernels = dict(_kernels())
    assert len(kernels) > 50 and "_pairwise_cuda.py:label_pairs_rows" in kernels  # the walk finds them
    over = {name: n for name, n in kernels.items() if n > MAX_POSITIONAL}
    assert over == {}, f"kernels over {MAX_POSITIONAL} positional arguments (pass a record): {over}"
