"""The machine code (SASS) of the GPU histogram kernels, without a GPU (issue 42, item 5).

    python benchmarks/sass.py [--cc 80 90] [--out sass.json] [--show KERNEL]

Each kernel is compiled as a card would compile it: numba-cuda types it with its launch signature and NVVM makes PTX
(``cuda.compile_ptx``); ``ptxas`` (NVIDIA's ``nvidia-cuda-nvcc-cu12`` wheel, which the ``cuda`` extra brings)
assembles the PTX into a cubin for ``sm_80`` or ``sm_90``; ``nvdisasm`` (the ``nvidia-cuda-nvdisasm`` wheel, in the
``test`` extra) prints its SASS. None of it needs a card.

What is measured, per kernel: its **update loops** (the innermost loop around each shared-memory atomic, a
compare-and-swap spin loop of its own looked through) and for each one the instructions of one iteration (one (item,
feature) update) on its longest and its shortest path through the loop body, subroutines it calls (``div_s64``,
``div_rn_f64``) counted at their size, the loop's static size, and its atomics by kind: native shared adds
(``ATOMS.ADD``), compare-and-swap (``ATOMS.CAS``, ``ATOMS.CAST.SPIN``: a 64-bit shared add on sm_80/sm_90 is one of
these, the hardware has no native 64-bit shared add) and global ones (``RED``, ``ATOM``). The loops are found on the
control-flow graph (natural loops of its back edges), not on the text's order.

>>> text = '''
...         /*0000*/                   MOV R1, 0x0 ;
... .L_x_1:
...         /*0010*/                   ATOMS.ADD RZ, [R2], R3 ;
...         /*0020*/                   IADD3 R1, R1, 0x1, RZ ;
...         /*0030*/               @P0 BRA `(.L_x_1) ;
...         /*0040*/                   EXIT ;
... '''
>>> [(u.longest, u.shortest, u.native, u.cas) for u in update_loops(parse_sass(text))]
[(3, 3, 1, 0)]
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import types as pytypes
from typing import NamedTuple

__all__ = ["Instr", "UpdateLoop", "Tools", "find_tools", "parse_sass", "update_loops", "kernel_ptx", "kernel_sass",
           "histogram_kernels", "measure", "main"]

_LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
_LABEL = re.compile(r"^\s*([.$\w][\w.$]*):\s*$")
_TARGET = re.compile(r"`\(([^)]+)\)")


class Instr(NamedTuple):
    """One SASS instruction: its byte address, predicate (``""`` when none), opcode and the whole text."""

    addr: int
    pred: str
    op: str
    text: str


class UpdateLoop(NamedTuple):
    """An update loop's measures: instructions of one iteration on its ``longest`` and ``shortest`` path
    (subroutine calls counted at their size), its ``static`` size, and its shared atomics: ``native`` adds, ``cas``
    compare-and-swaps (each a spin loop), and ``global_`` global atomics (static counts); ``fewest_atomics``: the
    shared atomics of the iteration that runs fewest (those every update runs, a carry's conditional add left out)."""

    header: int
    longest: int
    shortest: int
    static: int
    native: int
    cas: int
    global_: int
    calls: tuple
    fewest_atomics: int


class Tools(NamedTuple):
    """Paths of ``ptxas`` and ``nvdisasm``."""

    ptxas: str
    nvdisasm: str


def find_tools() -> Tools | None:
    """``ptxas`` and ``nvdisasm`` from NVIDIA's wheels (``site-packages/nvidia/*/bin``) or the PATH;
    None when either is missing."""
    import shutil
    found = {}
    roots = [os.path.join(p, "nvidia") for p in sys.path if os.path.isdir(os.path.join(p, "nvidia"))]
    for name in ("ptxas", "nvdisasm"):
        hits = sorted(h for r in roots for h in glob.glob(os.path.join(r, "*", "bin", name)) if os.access(h, os.X_OK))
        found[name] = hits[0] if hits else shutil.which(name)
    if not all(found.values()):
        return None
    return Tools(found["ptxas"], found["nvdisasm"])


def parse_sass(text: str) -> dict:
    """``{function: ([Instr], {label: address})}`` of ``nvdisasm -c`` output: the kernel's code up to
    its first subroutine (``$__internal_...``), and each subroutine."""
    funcs: dict = {}
    name = "kernel"
    instrs: list = []
    labels: dict = {}
    pending: list = []
    for line in text.splitlines():
        if line.startswith("//---") and instrs:  # a new function section (another kernel)
            break
        m = _LABEL.match(line)
        if m and not line.lstrip().startswith("."):
            if m.group(1).startswith("$"):
                funcs[name] = (instrs, labels)
                name, instrs, labels = m.group(1), [], {}
            else:
                pending.append(m.group(1))
            continue
        if m and m.group(1).startswith(".L"):
            pending.append(m.group(1))
            continue
        m = _LINE.search(line)
        if not m:
            continue
        body = m.group(2).strip()
        pred = ""
        if body.startswith("@"):
            pred, body = body.split(None, 1)
        addr = int(m.group(1), 16)
        for lab in pending:
            labels[lab] = addr
        pending = []
        instrs.append(Instr(addr, pred, body.split()[0], body))
    funcs[name] = (instrs, labels)
    return funcs


def _jumps(ins: Instr, labels: dict) -> bool:
    """A branch to a label of the function: ``BRA``, or a ``CALL.REL.NOINC`` to one of its own labels
    (how sm_80 code leaves a loop's convergence region; it never returns)."""
    t = _TARGET.search(ins.text)
    return ins.op.startswith(("BRA", "CALL")) and t is not None and t.group(1) in labels


def _blocks(instrs: list, labels: dict) -> tuple:
    """Basic blocks ``[(first index, end index)]`` and successor lists of a function's code."""
    index = {ins.addr: i for i, ins in enumerate(instrs)}
    leaders = {0}
    for i, ins in enumerate(instrs):
        if _jumps(ins, labels) or ins.op.startswith(("EXIT", "RET", "BRX", "JMX")):
            leaders.add(i + 1)
            t = _TARGET.search(ins.text)
            if t and t.group(1) in labels:
                leaders.add(index[labels[t.group(1)]])
    starts = sorted(s for s in leaders if s < len(instrs))
    spans = [(s, e) for s, e in zip(starts, starts[1:] + [len(instrs)])]
    of = {s: b for b, (s, _) in enumerate(spans)}
    succ = []
    for b, (s, e) in enumerate(spans):
        last = instrs[e - 1]
        out = []
        t = _TARGET.search(last.text)
        if _jumps(last, labels):
            out.append(of[index[labels[t.group(1)]]])
        ends = _jumps(last, labels) or last.op.startswith(("EXIT", "RET", "BRX", "JMX"))
        if (not ends or last.pred not in ("", "@PT")) and e < len(instrs):
            out.append(b + 1)
        succ.append(out)
    return spans, succ


def _dominators(succ: list) -> tuple:
    """``(dominators, predecessors)`` of each block (block 0 the entry)."""
    n = len(succ)
    pred: list = [[] for _ in range(n)]
    for b, out in enumerate(succ):
        for c in out:
            pred[c].append(b)
    dom = [set(range(n)) for _ in range(n)]
    dom[0] = {0}
    changed = True
    while changed:
        changed = False
        for b in range(1, n):
            new = set.intersection(*(dom[p] for p in pred[b])) if pred[b] else set()
            new = new | {b}
            if new != dom[b]:
                dom[b], changed = new, True
    return dom, pred


def _natural_loops(succ: list) -> dict:
    """``{header: set of blocks}``: the natural loops of the back edges (``b -> h``, ``h`` dominates ``b``)."""
    dom, pred = _dominators(succ)
    loops: dict = {}
    for b, out in enumerate(succ):
        for h in out:
            if h in dom[b]:
                body = loops.setdefault(h, {h})
                stack = [b]
                while stack:
                    x = stack.pop()
                    if x not in body:
                        body.add(x)
                        stack.extend(pred[x])
    return loops


def _is_shared_atomic(ins: Instr) -> bool:
    return ins.op.startswith("ATOMS")


def _is_cas(ins: Instr) -> bool:
    return "CAS" in ins.op


def _is_global_atomic(ins: Instr) -> bool:
    return ins.op.startswith(("RED", "ATOM.", "ATOMG")) or ins.op == "ATOM"


def update_loops(funcs: dict) -> list:
    """The :class:`UpdateLoop` of each innermost loop around a shared atomic of ``funcs["kernel"]``
    (:func:`parse_sass`); a loop holding nothing but a compare-and-swap's spin is looked through."""
    instrs, labels = funcs["kernel"]
    spans, succ = _blocks(instrs, labels)
    loops = _natural_loops(succ)
    sizes = {name: len(code) for name, (code, _) in funcs.items() if name != "kernel"}

    def cost(b):
        s, e = spans[b]
        calls = (_TARGET.search(ins.text) for ins in instrs[s:e] if ins.op.startswith("CALL"))
        return e - s + sum(sizes.get(t.group(1), 0) for t in calls if t)

    def block_atomics(b):
        return instrs[spans[b][0]:spans[b][1]]

    def is_spin(h):
        body = loops[h]
        inner = [x for x in loops if x != h and loops[x] < body]
        has_cas = any(_is_cas(i) for b in body for i in block_atomics(b))
        return has_cas and not inner and len(body) <= 2
    chosen: dict = {}
    for b in range(len(spans)):
        if not any(_is_shared_atomic(i) for i in block_atomics(b)):
            continue
        around = sorted((h for h in loops if b in loops[h] and not is_spin(h)), key=lambda h: len(loops[h]))
        if around:
            chosen[around[0]] = loops[around[0]]
    result = []
    for h, body in sorted(chosen.items()):
        inner = {x: loops[x] for x in loops if x != h and loops[x] < body}
        # one iteration: a DAG of the body without back edges (inner loops counted once)
        back = {(b, c) for b in body for c in succ[b] if c == h or any(c == x and b in inner[x] for x in inner)}
        longest: dict = {}  # per block of the iteration: the most, the fewest instructions, the fewest atomics
        shortest, fewest = dict(longest), dict(longest)
        order = _topo(body, succ, back, h)
        for b in order:
            ins_pred = [p for p in body if b in succ[p] and (p, b) not in back]
            base_l = max((longest[p] for p in ins_pred if p in longest), default=0)
            base_s = min((shortest[p] for p in ins_pred if p in shortest), default=0)
            base_a = min((fewest[p] for p in ins_pred if p in fewest), default=0)
            longest[b], shortest[b] = base_l + cost(b), base_s + cost(b)
            fewest[b] = base_a + sum(_is_shared_atomic(i) for i in block_atomics(b))
        latches = [b for b in body if h in succ[b]]
        code = [i for b in body for i in block_atomics(b)]
        calls = tuple(sorted({t.group(1) for i in code if i.op.startswith("CALL")
                              for t in [_TARGET.search(i.text)] if t and t.group(1) in sizes}))
        result.append(UpdateLoop(
            header=instrs[spans[h][0]].addr, longest=max(longest[b] for b in latches),
            shortest=min(shortest[b] for b in latches), static=sum(spans[b][1] - spans[b][0] for b in body),
            native=sum(_is_shared_atomic(i) and not _is_cas(i) for i in code),
            cas=sum(_is_shared_atomic(i) and _is_cas(i) for i in code),
            global_=sum(_is_global_atomic(i) for i in code), calls=calls,
            fewest_atomics=min(fewest[b] for b in latches)))
    return result


def _topo(body: set, succ: list, back: set, h: int) -> list:
    seen: set = set()
    out: list = []

    def visit(b):
        stack = [(b, iter(succ[b]))]
        seen.add(b)
        while stack:
            x, it = stack[-1]
            for c in it:
                if c in body and (x, c) not in back and c not in seen:
                    seen.add(c)
                    stack.append((c, iter(succ[c])))
                    break
            else:
                out.append(x)
                stack.pop()
    visit(h)
    return out[::-1]


def cas_anywhere(funcs: dict) -> int:
    """Compare-and-swap instructions (``CAS``, ``CAST``) anywhere in the kernel's code, loops or not."""
    return sum(_is_cas(i) for code, _ in funcs.values() for i in code)


def kernel_ptx(kernel, signature, ccs) -> dict:
    """``{cc: PTX}`` of ``kernel`` (a ``cuda.jit`` dispatcher) for ``signature`` (numba types of its
    arguments) and each compute capability of ``ccs``: typed and lowered once, NVVM once per chip.
    numba-cuda's lowering reads the compute capability only below 6.0 (float64 atomics) and 7.5
    (fastmath ``tanh``), so the LLVM IR of every chip from sm_80 on is one and its code library gives
    each chip's PTX (``cuda.compile_ptx``'s own two steps). A numba-cuda without that step:
    ``compile_ptx`` per chip. Needs the simulator off in this process."""
    from numba import types as T

    from customobj._cuda_runtime import cuda_module
    cuda = cuda_module()
    sig = T.void(*signature)
    try:
        from numba.cuda.compiler import _compile_pyfunc_with_fixup
    except ImportError:
        return {cc: cuda.compile_ptx(kernel.py_func, sig, cc=cc)[0] for cc in ccs}
    if any(cc < (7, 5) for cc in ccs):
        raise ValueError(f"kernel_ptx: chips from sm_75 on share their lowering, not {ccs}")
    lib, _ = _compile_pyfunc_with_fixup(kernel.py_func, sig, device=False, abi="numba", cc=max(ccs))
    return {cc: lib.get_asm_str(cc=cc) for cc in ccs}


def kernel_sass(kernel, signature, cc: tuple, tools: Tools, ptx: str | None = None) -> str:
    """The SASS text of ``kernel`` (a ``cuda.jit`` dispatcher) compiled for ``signature`` (numba
    types of its arguments) and compute capability ``cc`` (``(8, 0)``): NVVM's PTX (``ptx``, or
    :func:`kernel_ptx`'s), ``ptxas``, ``nvdisasm -c``. Needs the simulator off in this process."""
    if ptx is None:
        ptx = kernel_ptx(kernel, signature, [cc])[cc]
    arch = f"sm_{cc[0]}{cc[1]}"
    with tempfile.TemporaryDirectory() as tmp:
        src, cubin = os.path.join(tmp, "k.ptx"), os.path.join(tmp, "k.cubin")
        with open(src, "w") as fh:
            fh.write(ptx)
        for cmd in ([tools.ptxas, f"-arch={arch}", "-O3", "-o", cubin, src], [tools.nvdisasm, "-c", cubin]):
            out = subprocess.run(cmd, capture_output=True, text=True)
            if out.returncode != 0:
                raise RuntimeError(f"{os.path.basename(cmd[0])} failed on {kernel.__name__} ({arch}): "
                                   f"{out.stderr.strip()[-2000:]}")
    return out.stdout


def histogram_kernels(every_signature: bool = True) -> dict:
    """``{name: (kernel, signature)}``: every histogram kernel of the OLE grower with each launch
    signature it is used with (u8 / u16 bins, int32 / int64 pair indices), or (``every_signature``
    False) with its first only: u8 bins, int32 pairs (255 bins, fewer than 2**31 pairs)."""
    from numba import types as T

    import numba.cuda.dispatcher as dispatcher

    from customobj._cuda_runtime import cuda_module
    cuda = cuda_module()
    if not cuda.is_available():  # no card: numba asks the current device's capability while typing
        dispatcher.get_current_device = lambda: pytypes.SimpleNamespace(compute_capability=(8, 0))
    from customobj.ole.cuda import _choice_kernels as C
    from customobj.ole.cuda import _histograms_kernels as HK
    from customobj.ole.cuda import _level_place_kernels as LP
    from customobj.ole.cuda import _partitions_kernels as P
    from customobj.ole.cuda.histograms import ChildPlan, ChosenPairs, RowBuild
    f1, i1, f2, i, f, b = T.float64[::1], T.int64[::1], T.float64[:, ::1], T.int64, T.float64, T.boolean
    i2, j1, b1, u8, u16 = T.int64[:, ::1], T.int32[::1], T.boolean[::1], T.uint8[:, ::1], T.uint16[:, ::1]
    plan32, plan64 = (T.NamedTuple([i1, i, i, f, f, f, b, b, p, p, f1, f1, f2, f2], ChildPlan) for p in (j1, i1))
    build = T.NamedTuple([i1, i, f1, f1, f1, f2], RowBuild)
    choice = T.NamedTuple([b1, T.boolean[:, ::1], T.int64[:, :, ::1], T.int64[:, :, ::1], i2], C.FeatureChoice)
    chosen = T.NamedTuple([i1, i, i, i, j1, j1, f1, f1], ChosenPairs)
    f3 = T.float64[:, :, ::1]
    level = T.NamedTuple([i2, i2, j1, j1, f1, j1, j1, f1, f3, i1, f1, f1], C.LevelPairs)
    node = T.NamedTuple([f1, i1, i], HK.NodeRows)
    root32, root64 = (T.NamedTuple([p, p, f1, i, i, i1, b, f1], HK.RootPairs) for p in (j1, i1))
    sides32, place32 = T.NamedTuple([j1, j1, f1, i, i, i, i2, i1], P.PairSides), T.NamedTuple([j1, j1, f1, f1], P.PairPlace)
    found = {
        "row_hist_shared[u8]": (HK.row_hist_shared, (u8, i1, i, f1, f1, f1, i2, i2, i1, f2, root32)),
        "row_hist_shared[u16]": (HK.row_hist_shared, (u16, i1, i, f1, f1, f1, i2, i2, i1, f2, root64)),
        "pair_hist_shared[u8,i32]": (HK.pair_hist_shared, (u8, j1, j1, f1, i, i, f1, i2, i2, i1, f2, node)),
        "pair_hist_shared[u16,i64]": (HK.pair_hist_shared, (u16, i1, i1, f1, i, i, f1, i2, i2, i1, f2, node)),
        "child_hists[u8,i32]": (HK.child_hists, (u8, i2, i2, i1, plan32, build, node, node)),
        "child_hists[u16,i64]": (HK.child_hists, (u16, i2, i2, i1, plan64, build, node, node)),
        "chosen_child_pairs[u8]": (HK.chosen_child_pairs, (u8, chosen, choice, f2, f2, node, node)),
        # ole_fast's chosen pair histograms of a breadth-first level's children, one launch a level
        "chosen_level_pairs[u8,i32]": (C.chosen_level_pairs, (u8, level, choice)),
        # ole_fast's pair placing with the smaller child's row histogram (its row update is row_hist_shared's)
        "place_sides_row_hist[u8,i32]": (P.place_sides_row_hist, (u8, i2, i2, i1, build, sides32, b1, place32)),
        # the same for every searched split of a breadth-first level, one launch a level
        "place_sides_row_hist_level[u8,i32]": (LP.place_sides_row_hist_level, (
            u8, i2, i2, i1, T.NamedTuple([i1, f1, f1, f1, f3, i2], LP.LevelRows), i2,
            T.NamedTuple([j1, j1, f1, j1, j1, f1, i2, i2, f1], LP.LevelPlacings), b1)),
    }
    if not every_signature:
        firsts = {name.split("[")[0]: name for name in reversed(list(found))}
        found = {name: found[name] for name in firsts.values()}
    return found


def measure(ccs=((8, 0), (9, 0)), only=None, tools: Tools | None = None, every_signature: bool = True) -> dict:
    """``{kernel: {"sm_XY": [UpdateLoop as dict, ...], "sm_XY_cas": CAS anywhere}}`` of
    :func:`histogram_kernels` (``only``: names to keep). Raises RuntimeError naming what is missing when ``ptxas`` or ``nvdisasm`` is."""
    tools = tools or find_tools()
    if tools is None:
        raise RuntimeError("ptxas and nvdisasm are needed: pip install nvidia-cuda-nvcc-cu12 nvidia-cuda-nvdisasm")
    out: dict = {}
    for name, (kernel, sig) in histogram_kernels(every_signature).items():
        if only and name not in only:
            continue
        ptx = kernel_ptx(kernel, sig, ccs)
        for cc in ccs:
            funcs = parse_sass(kernel_sass(kernel, sig, cc, tools, ptx[cc]))
            out.setdefault(name, {})[f"sm_{cc[0]}{cc[1]}"] = [u._asdict() for u in update_loops(funcs)]
            out[name][f"sm_{cc[0]}{cc[1]}_cas"] = cas_anywhere(funcs)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cc", nargs="+", type=int, default=[80, 90], choices=[80, 86, 89, 90])
    p.add_argument("--out", default=None, help="JSON written (atomically)")
    p.add_argument("--show", default=None, metavar="KERNEL", help="print this kernel's SASS (first --cc)")
    args = p.parse_args(argv)
    ccs = tuple((c // 10, c % 10) for c in args.cc)
    if args.show:
        tools = find_tools()
        if tools is None:
            p.error("ptxas and nvdisasm are needed: pip install nvidia-cuda-nvcc-cu12 nvidia-cuda-nvdisasm")
        kernel, sig = histogram_kernels()[args.show]
        print(kernel_sass(kernel, sig, ccs[0], tools))
        return 0
    res = measure(ccs)
    print(f"{'kernel':28s} {'arch':6s} {'loop':>6s} {'longest':>8s} {'shortest':>8s} {'static':>7s} "
          f"{'native':>6s} {'fewest':>6s} {'CAS':>4s} {'global':>6s} {'CAS in kernel':>13s} calls")
    for name, by_cc in res.items():
        for arch, loops in by_cc.items():
            if arch.endswith("_cas"):
                continue
            for u in loops:
                print(f"{name:28s} {arch:6s} {u['header']:#6x} {u['longest']:8d} {u['shortest']:8d} {u['static']:7d} "
                      f"{u['native']:6d} {u['fewest_atomics']:6d} {u['cas']:4d} {u['global_']:6d} "
                      f"{by_cc[arch + '_cas']:13d} {','.join(u['calls']) or '-'}")
    if args.out:
        tmp = args.out + ".tmp"
        with open(tmp, "w") as fh:
            json.dump(res, fh, indent=1)
        os.replace(tmp, args.out)
    return 0


if __name__ == "__main__":
    os.environ.pop("NUMBA_ENABLE_CUDASIM", None)  # compile for a card, whatever the caller set
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.exit(main())
