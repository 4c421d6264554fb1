"""Machine instructions per pair of LambdaRank's NDCG pair loops, from numba's compiled assembly (issue 41).

A count, not a timing: it reads the x86 assembly numba made for this machine's CPU
(``dispatcher.inspect_asm``), so it can run on loaded cores. For the gradient-only pass (``GRAD``) and the
pass with the per-label cost (``GRAD_LOSS``, what ``MultiObjective``'s cost-reading methods call per label),
it finds each kernel's innermost loops (natural loops of the control-flow graph that hold no other loop)
and prints, per loop, its instructions, how many pairs (or vector lanes) one trip handles, the
instructions per pair, its divisions and gathers. A loop's pairs per trip is the step of the register its
closing compare reads (``incq``/``decq``: 1; ``addq $K``: K). The pair loop comes twice (LLVM unswitches
``lambdarank_norm``'s damping, two divisions a pair instead of one); ``GRAD_LOSS``'s costs are computed
ahead of it in ``_rows_losses``' vector loop (plus its scalar fallback, taken only when the scratch rows
overlap, which they never do). The summary line: the plain pair loop's instructions per pair in ``GRAD`` and
in ``GRAD_LOSS`` (plus the cost loop's per lane): what the cost adds per pair before its per-row call and the
padding of each row to whole vectors (those depend on the query sizes).

    python benchmarks/pair_loop_asm.py [--loops]
"""
from __future__ import annotations

import argparse
import os
import re
import runpy
import sys
from typing import NamedTuple

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import numpy as np  # noqa: E402

_natural_loops = runpy.run_path(os.path.join(_HERE, "sass.py"))["_natural_loops"]  # one control-flow home
_LABEL = re.compile(r"^(\.LBB\d+_\d+):")
_JUMP = re.compile(r"^(j\w+)\s+(\.LBB\d+_\d+)")


class Loop(NamedTuple):
    """One innermost loop: its header label, instructions, pairs (lanes) per trip, divisions, gathers and
    whether it uses vector registers."""

    header: str
    instructions: list
    step: int
    divisions: int
    gathers: int
    vector: bool

    @property
    def per_pair(self) -> float:
        return len(self.instructions) / self.step


def function_blocks(asm: str, name: str) -> list:
    """``[(label, instructions)]``: the basic blocks of the first function whose symbol holds ``name`` (a
    jump ends a block; directives and comments dropped)."""
    lines = asm.splitlines()
    start = next((i for i, line in enumerate(lines) if line.endswith(":") and line.startswith("_ZN")
                  and name in line and "cpython" not in line), None)
    if start is None:
        raise ValueError(f"no function named like {name!r} in the assembly")
    blocks, label, body = [], "entry", []
    for line in lines[start + 1:]:
        if line.startswith(".Lfunc_end"):
            break
        m = _LABEL.match(line)
        if m:
            if body or label != "entry":
                blocks.append((label, body))
            label, body = m.group(1), []
            continue
        text = line.split("#")[0].strip()
        if not text or text.startswith("."):
            continue
        body.append(text)
        if re.match(r"^(j\w+|ret\w*)\b", text):
            blocks.append((label, body))
            label, body = f"_after{len(blocks)}", []
    if body:
        blocks.append((label, body))
    return blocks


def _successors(blocks: list) -> list:
    index = {label: i for i, (label, _) in enumerate(blocks)}
    succ = []
    for i, (_, body) in enumerate(blocks):
        s = set()
        last = body[-1] if body else ""
        m = _JUMP.match(last)
        if m and m.group(2) in index:
            s.add(index[m.group(2)])
        if not (last.startswith("jmp") or last.startswith("ret")) and i + 1 < len(blocks):
            s.add(i + 1)
        succ.append(s)
    return succ


def innermost_loops(blocks: list) -> list:
    """The natural loops (``benchmarks/sass.py``'s, of the back edges to a block that dominates their source)
    that contain no other loop, as sorted lists of block indices."""
    loops = _natural_loops([sorted(s) for s in _successors(blocks)])
    return [sorted(b) for h, b in loops.items() if not any(o != h and loops[o] < b for o in loops)]


def loop_step(instructions: list) -> int:
    """Pairs (lanes) per trip: the step of a register the loop's compares read (1 when none is found)."""
    regs = set()
    for ins in instructions:
        if ins.startswith("cmp"):
            regs.update(re.findall(r"%(r\w+)", ins))
    for ins in instructions:
        m = re.match(r"^(inc|dec)q\s+%(r\w+)$", ins)
        if m and m.group(2) in regs:
            return 1
        m = re.match(r"^(add|sub)q\s+\$(\d+), %(r\w+)$", ins)
        if m and m.group(3) in regs:
            return int(m.group(2))
    return 1


def loops_of(asm: str, name: str) -> list:
    """The innermost loops of the function named like ``name`` in ``asm``, as :class:`Loop` records."""
    blocks = function_blocks(asm, name)
    out = []
    for body in innermost_loops(blocks):
        ins = [x for i in body for x in blocks[i][1]]
        out.append(Loop(blocks[body[0]][0], ins, loop_step(ins), sum(x.startswith("vdiv") for x in ins),
                        sum("gather" in x for x in ins), any("mm" in x and ("ymm" in x or "zmm" in x) for x in ins)))
    return out


def compiled_asm() -> dict:
    """The assembly of the GRAD and GRAD_LOSS NDCG pair loops and of GRAD_LOSS's cost loop, each compiled
    afresh without the cache (numba shows no assembly for cached code) and called once on one tiny sorted
    query."""
    from numba import njit

    from customobj import LambdaRank
    from customobj.objectives import _lambdarank_pass as P
    from customobj.objectives._lambdarank_records import PassOutputs, Query, block_scratch_arrays

    def fresh(dispatcher):
        options = {k: v for k, v in dispatcher.targetoptions.items() if k != "nopython"}  # njit's own
        return njit(**options)(dispatcher.py_func)

    n = 12
    rng = np.random.default_rng(0)
    obj = LambdaRank()
    inp = obj.pass_inputs(rng.normal(size=n), obj.prepare(rng.integers(0, 3, n).astype(float), group=np.array([n])))
    q = Query(n, float(inp.qnorm[0]), min(inp.k, n), min(inp.k, n, inp.trunc), 0)
    order = np.argsort(-inp.scores, kind="mergesort")
    none_i, none_f = np.zeros(0, dtype=np.int64), np.zeros(0)
    out = PassOutputs(np.zeros(n), np.zeros(n), none_i, none_i, none_f)
    F, I = block_scratch_arrays(n)
    P._sorted_scores(inp, q, order, F)
    asm = {}
    for mode, d in (("GRAD", P._NDCG_GRAD), ("GRAD_LOSS", P._NDCG_GRAD_LOSS), ("COSTS", P._rows_losses)):
        f = fresh(d)
        if mode == "COSTS":
            P._pad_losses(inp, n, F)
            f(F, 0, 1, n, q.qn, inp.sigma, inp.sigma * 64.0, False)
        else:
            f(inp, q, True, order, F, I, out)
        asm[mode] = f.inspect_asm(f.signatures[0])
    return asm


def report(asm: dict) -> dict:
    """Per kernel, its pair loops (``pairs``: divisions per pair 1 = plain, 2 = damped) and, for GRAD_LOSS,
    the cost loops; the summary's per-pair counts (``grad``, ``grad_loss``, ``cost_lane``)."""
    from customobj.objectives import _lambdarank_pass as P

    loop = {"GRAD": P._NDCG_GRAD, "GRAD_LOSS": P._NDCG_GRAD_LOSS}  # each mode's loop has its own qualname
    out = {mode: {"pairs": loops_of(asm[mode], d.py_func.__qualname__)} for mode, d in loop.items()}
    out["GRAD_LOSS"]["costs"] = loops_of(asm["COSTS"], "_rows_losses")

    def plain(loops):
        return min((lp for lp in loops if lp.divisions == lp.step), key=lambda lp: lp.per_pair)

    vector = [lp for lp in out["GRAD_LOSS"]["costs"] if lp.vector and lp.divisions == 0]
    cost_lane = min(lp.per_pair for lp in vector) if vector else min(lp.per_pair for lp in out["GRAD_LOSS"]["costs"])
    out["summary"] = {"grad": plain(out["GRAD"]["pairs"]).per_pair,
                      "grad_loss": plain(out["GRAD_LOSS"]["pairs"]).per_pair,
                      "cost_lane": cost_lane, "cost_vectorised": bool(vector)}
    return out


def main(argv=None, asm=None):
    """The command line; ``asm``: :func:`compiled_asm`'s result when already made (numba shows no cached code)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--loops", action="store_true", help="also print each loop's instructions")
    args = p.parse_args(argv)
    r = report(asm if asm is not None else compiled_asm())
    for mode in ("GRAD", "GRAD_LOSS"):
        for part, loops in r[mode].items():
            for lp in loops:
                kind = "vector" if lp.vector else "scalar"
                print(f"{mode:9s} {part:5s} loop {lp.header}: {len(lp.instructions)} instructions, {lp.step} per trip "
                      f"({kind}), {lp.per_pair:.1f} a pair/lane, {lp.divisions} divisions, {lp.gathers} gathers")
                if args.loops:
                    print("\n".join("    " + x for x in lp.instructions))
    s = r["summary"]
    print(f"instructions per pair (plain pair loop): GRAD {s['grad']:.1f}, GRAD_LOSS {s['grad_loss']:.1f} + the cost "
          f"loop's {s['cost_lane']:.1f} a lane ({'vectorised' if s['cost_vectorised'] else 'NOT vectorised'}) = "
          f"{s['grad_loss'] + s['cost_lane']:.1f}, before the per-row call and the padding to whole vectors")


if __name__ == "__main__":
    main()
