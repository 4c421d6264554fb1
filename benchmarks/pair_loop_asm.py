"""Machine instructions per pair of LambdaRank's NDCG pair loops, from numba's compiled assembly (issue 41).

A count, not a timing: it reads the x86 assembly numba made for this machine's CPU
(``dispatcher.inspect_asm``), so it can run on loaded cores. For the gradient-only pass (``GRAD``) and the
pass with the per-label cost (``GRAD_LOSS``, what ``MultiObjective``'s cost-reading methods call per label),
it finds each kernel's innermost loops (natural loops of the control-flow graph that hold no other loop)
and prints, per loop, its instructions, how many pairs (or vector lanes) one trip handles, the
instructions per pair, its divisions and gathers. A loop's pairs per trip is the step of the register its
closing compare reads (``incq``/``decq``: 1; ``addq $K``: K). The pair loop comes twice (LLVM unswitches
``lambdarank_norm``'s damping, two divisions a pair instead of one). ``GRAD_LOSS``'s pair terms (cost,
lambdas, hessian, both divisions) are computed ahead in ``_rows_losses``' vector loop (plus its scalar
fallback, taken only when the scratch rows overlap, which they never do) and its pair loop only adds them in
order. Both kernels also hold the grade walk's pair loops (``_lambdarank_grades``: the pairs of different gains
only, each lower row's index loaded from a list, GRAD_LOSS's cost computed in the loop), damped and not: in
``GRAD`` they are among the plain loops, in ``GRAD_LOSS`` the loops with divisions (``walk``). The summary line:
``GRAD``'s plain pair loop's instructions per pair, ``GRAD_LOSS``'s ordered sums per pair plus the terms loop's
per lane, before its per-row call and the padding of each row to whole vectors (those depend on the query
sizes), and ``GRAD_LOSS``'s plain walk loop per pair.

The fused pass of ``m`` LambdaRank labels (``customobj/objectives/_lambdarank_fused.py``): the shared pair
terms' vector loop (``_shared_rows``, once a pair for all labels), and per label its pair values' vector loop,
its scatter loop and its upper rows' ordered sums (scalar, unrolled by LLVM, with a scalar remainder). Its
summary: instructions per (pair, label) for ``m`` = 2 and 4, ``main + scatter + sums + shared / m``, against
``GRAD``'s per pair; with ``--data`` (a LETOR file) also weighed by that data's rows (each row's pairs padded
to whole vectors, the remainder of the unrolled sums); with ``--mca`` each loop's cycles a trip by
``llvm-mca -mcpu=icelake-server`` (an estimate from a model, not a measurement).

    python benchmarks/pair_loop_asm.py [--loops] [--data FILE] [--mca]
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
            if body or not label.startswith(("entry", "_after")):  # an empty block after a jump is unreachable:
                blocks.append((label, body))  # kept, it would hide every block it falls into from the dominators
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
        m = re.match(r"^(add|sub)q\s+\$(-?\d+), %(r\w+)$", ins)
        if m and m.group(3) in regs:
            return abs(int(m.group(2)))  # a count down by K (``addq $-8``) as a count up
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
    from customobj.objectives import _lambdarank_fused as FU, _lambdarank_pass as P
    from customobj.objectives._lambdarank_records import FusedCut, PassOutputs, Query, block_scratch_arrays

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
    Xl, X = FU.scratch(1, n)
    Xl[:] = 0.5
    X[:] = 0.5
    cut = FusedCut(n, 1.0, 1.0, False, False, 64.0, True)
    fused = (("SHARED", FU._shared_rows, (X, 0, 1, cut)),
             ("LABEL_GRAD", FU._LABEL_ROWS_GRAD, (Xl[0], X, 0, 1, cut._replace(loss=False), 0.1, 0.0, 0.0)),
             ("LABEL_LOSS", FU._LABEL_ROWS_LOSS, (Xl[0], X, 0, 1, cut, 0.1, 0.0, 0.0)))
    for mode, d, args in fused:
        f = fresh(d)
        f(*args)
        asm[mode] = f.inspect_asm(f.signatures[0])
    return asm


def report(asm: dict) -> dict:
    """Per kernel, its pair loops (``pairs``; GRAD: divisions per pair 1 = plain, 2 = damped, both walks; GRAD_LOSS:
    the every-pair walk's ordered sums, no division) and, for GRAD_LOSS, the terms loop (``costs``: every pair's
    cost, lambdas and hessian in whole vectors, the divisions there) and the grade walk's loops (``walk``); the
    summary's per-pair counts (``grad``, ``grad_loss``, ``cost_lane``, ``grad_loss_walk``) and
    ``grad_loss_divisions`` (0: none left in GRAD_LOSS's ordered sums)."""
    from customobj.objectives import _lambdarank_pass as P

    loop = {"GRAD": P._NDCG_GRAD, "GRAD_LOSS": P._NDCG_GRAD_LOSS}  # each mode's loop has its own qualname
    out = {mode: {"pairs": loops_of(asm[mode], d.py_func.__qualname__)} for mode, d in loop.items()}
    both = out["GRAD_LOSS"]["pairs"]  # the every-pair walk's ordered sums (no division), the grade walk's loops
    out["GRAD_LOSS"] = {"pairs": [lp for lp in both if lp.divisions == 0], "walk": [lp for lp in both if lp.divisions]}
    out["GRAD_LOSS"]["costs"] = loops_of(asm["COSTS"], "_rows_losses")

    def plain(loops):
        return min((lp for lp in loops if lp.divisions == lp.step), key=lambda lp: lp.per_pair)

    vector = [lp for lp in out["GRAD_LOSS"]["costs"] if lp.vector]
    cost_lane = min(lp.per_pair for lp in vector) if vector else min(lp.per_pair for lp in out["GRAD_LOSS"]["costs"])
    sums = out["GRAD_LOSS"]["pairs"]
    out["summary"] = {"grad": plain(out["GRAD"]["pairs"]).per_pair,
                      "grad_loss": min(lp.per_pair for lp in sums),
                      "grad_loss_divisions": sum(lp.divisions for lp in sums),
                      "cost_lane": cost_lane, "cost_vectorised": bool(vector),
                      "grad_loss_walk": plain(out["GRAD_LOSS"]["walk"]).per_pair}
    if "SHARED" in asm:
        out["FUSED"] = fused_loops(asm)
    return out


def _is_sum(lp: Loop) -> bool:
    # the ordered sums: scalar adds of loaded values, no product (the pair values' loops multiply)
    return not lp.vector and not any(x.startswith("vmul") for x in lp.instructions)


def fused_loops(asm: dict) -> dict:
    """The fused pass's loops by role, per mode (``grad``, ``loss``): ``shared`` (``_shared_rows``' vector loop:
    with the softplus knots' gathers for ``loss``), ``main`` (the label's pair values, the largest vector loop),
    ``scatter`` (the smallest vector loop), ``sums`` / ``sums_norm`` (the ordered sums of two upper rows a trip,
    unrolled, without and with ``lambdarank_norm``'s sum: the fewer and the more instructions a pair; their steps
    doubled, a trip's pairs) and ``rest`` (their remainders, likewise).
    LLVM's scalar copies taken when scratch rows overlap (never) are left out."""
    shared = [lp for lp in loops_of(asm["SHARED"], "_shared_rows") if lp.vector]
    out = {}
    for mode, key, name in (("grad", "LABEL_GRAD", "_label_rows_grad"), ("loss", "LABEL_LOSS", "_label_rows_loss")):
        loops = loops_of(asm[key], name)
        vec = sorted((lp for lp in loops if lp.vector), key=lambda lp: len(lp.instructions))
        sums = sorted((lp for lp in loops if _is_sum(lp) and lp.step > 1), key=lambda lp: lp.per_pair)
        rest = sorted((lp for lp in loops if _is_sum(lp) and lp.step == 1), key=lambda lp: lp.per_pair)
        two = [lp._replace(step=2 * lp.step) for lp in (sums[0], sums[-1], rest[0], rest[-1])]  # two rows a trip
        # the knots' loads: gathers where LLVM takes them (AVX-512), else lane by lane (AVX2): more instructions
        knots = (lambda lp: (lp.gathers, len(lp.instructions)))  # noqa: E731
        out[mode] = {"shared": max(shared, key=knots) if mode == "loss" else
                     min(shared, key=knots), "main": vec[-1], "scatter": vec[0],
                     "sums": two[0], "sums_norm": two[1], "rest": two[2], "rest_norm": two[3]}
    return out


def outer_loops(asm: str, name: str) -> list:
    """``[(header, instructions)]``: each loop of the function named like ``name`` that holds other loops, with the
    instructions of its blocks outside them: every path of one trip's set-up (the runtime alias checks before
    each vector loop, the views, the copies LLVM made of it), so an upper bound of what one trip executes."""
    blocks = function_blocks(asm, name)
    loops = _natural_loops([sorted(s) for s in _successors(blocks)])
    out = []
    for h, body in sorted(loops.items()):
        nested = [loops[o] for o in loops if o != h and loops[o] < body]
        if nested:
            own = body - set().union(*nested)
            out.append((blocks[h][0], sum(len(blocks[i][1]) for i in own)))
    return out


def fused_per_pair(loops: dict, m: int, lanes: float = 1.0, unrolled: float = 1.0, norm: bool = False) -> float:
    """Instructions per (pair, label) of the fused pass of ``m`` labels: ``lanes`` vector lanes a pair (the
    padding of each row to whole vectors), ``unrolled`` the share of the pairs summed in the unrolled loop (the
    rest in its remainder loop)."""
    sums, rest = (loops["sums_norm"], loops["rest_norm"]) if norm else (loops["sums"], loops["rest"])
    vector = loops["main"].per_pair + loops["scatter"].per_pair + loops["shared"].per_pair / m
    return lanes * vector + unrolled * sums.per_pair + (1.0 - unrolled) * rest.per_pair


def row_shares(sizes, lanes: int = 8, trunc: "int | None" = None) -> "tuple[float, float]":
    """``(lanes a pair, share summed unrolled)`` over every upper row of queries of ``sizes`` rows (LambdaRank's
    default: every row but the last an upper row; ``trunc``: the first ``trunc``), unrolled by ``lanes``."""
    pairs = padded = unrolled = 0
    for n in np.asarray(sizes, dtype=np.int64):
        for a in range(min(n - 1, trunc if trunc is not None else n)):
            p = int(n - a - 1)
            pairs += p
            padded += -(-p // lanes) * lanes
            unrolled += p // lanes * lanes
    return padded / max(pairs, 1), unrolled / max(pairs, 1)


def mca_cycles(lp: Loop) -> float:
    """Cycles a pair (lane) of the loop by ``llvm-mca -mcpu=icelake-server`` (its jumps dropped: llvm-mca
    repeats the block as a loop), from its ``Total Cycles`` over 200 iterations."""
    import subprocess

    body = "\n".join(x for x in lp.instructions if not re.match(r"^j\w+\s", x)) + "\n"
    res = subprocess.run(["llvm-mca", "-mcpu=icelake-server", "-iterations=200"], input=body, capture_output=True,
                         text=True, check=True)
    total = float(re.search(r"Total Cycles:\s+(\d+)", res.stdout).group(1))
    return total / 200 / lp.step


def _loop_name(mode: str) -> str:
    """The qualname of ``mode``'s NDCG pair loop (each mode's loop has its own)."""
    from customobj.objectives import _lambdarank_pass as P

    return {"GRAD": P._NDCG_GRAD, "GRAD_LOSS": P._NDCG_GRAD_LOSS}[mode].py_func.__qualname__


def main(argv=None, asm=None):
    """The command line; ``asm``: :func:`compiled_asm`'s result when already made (numba shows no cached code)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--loops", action="store_true", help="also print each loop's instructions")
    p.add_argument("--data", help="a LETOR file (.txt or .txt.gz): weigh the fused counts by its query sizes")
    p.add_argument("--mca", action="store_true", help="also each loop's cycles by llvm-mca's Ice Lake server model")
    args = p.parse_args(argv)
    asm_listing = asm if asm is not None else compiled_asm()
    r = report(asm_listing)
    for mode in ("GRAD", "GRAD_LOSS"):
        for part, loops in r[mode].items():
            for lp in loops:
                kind = "vector" if lp.vector else "scalar"
                mca = f", {mca_cycles(lp):.2f} cycles a pair/lane (llvm-mca)" if args.mca else ""
                print(f"{mode:9s} {part:5s} loop {lp.header}: {len(lp.instructions)} instructions, {lp.step} per trip "
                      f"({kind}), {lp.per_pair:.1f} a pair/lane, {lp.divisions} divisions, {lp.gathers} gathers{mca}")
                if args.loops:
                    print("\n".join("    " + x for x in lp.instructions))
    s = r["summary"]
    print(f"instructions per pair: GRAD {s['grad']:.1f} (its plain pair loop), GRAD_LOSS {s['grad_loss']:.1f} (its "
          f"ordered sums, {s['grad_loss_divisions']} divisions) + the terms loop's {s['cost_lane']:.1f} a lane "
          f"({'vectorised' if s['cost_vectorised'] else 'NOT vectorised'}) = {s['grad_loss'] + s['cost_lane']:.1f}, "
          "before the per-row call and the padding to whole vectors; the grade walk's GRAD_LOSS "
          f"{s['grad_loss_walk']:.1f} a pair of different gains")
    if "FUSED" not in r:
        return
    fz = r["FUSED"]
    for mode, loops in fz.items():
        for role, lp in loops.items():
            mca = f", {mca_cycles(lp):.2f} cycles a pair/lane (llvm-mca)" if args.mca else ""
            print(f"FUSED {mode:4s} {role:9s} loop {lp.header}: {len(lp.instructions)} instructions, {lp.step} pairs "
                  f"a trip ({'vector' if lp.vector else 'scalar'}), {lp.per_pair:.2f} a pair/lane{mca}")
    for key, name in (("GRAD", _loop_name("GRAD")), ("SHARED", "_shared_rows"), ("LABEL_LOSS", "_label_rows_loss")):
        if key in asm_listing:
            print(f"{key} outer loops, instructions outside their inner loops (every path; one row's or two rows' "
                  f"set-up at most): {outer_loops(asm_listing[key], name)}")
    shares = [("every row a whole number of vectors", 1.0, 1.0)]
    if args.data:
        from customobj.data import load_letor

        lanes, unrolled = row_shares(load_letor(args.data)[2])
        shares.append((f"{os.path.basename(args.data)}'s rows ({lanes:.2f} lanes a pair, {unrolled:.2f} of the "
                       "pairs summed unrolled)", lanes, unrolled))
    for what, lanes, unrolled in shares:
        print(f"fused instructions per (pair, label), {what}; GRAD alone {s['grad']:.1f} a pair:")
        for mode in ("grad", "loss"):
            for norm in (False, True):
                counts = ", ".join(f"m = {m}: {fused_per_pair(fz[mode], m, lanes, unrolled, norm):.1f}" for m in (2, 4))
                print(f"    {mode.upper():4s}{' norm' if norm else '     '}  {counts}")
    if args.mca:  # the same sum in llvm-mca's cycles, every row a whole number of vectors, without norm
        grad = min((lp for lp in r["GRAD"]["pairs"] if lp.divisions == lp.step), key=lambda lp: lp.per_pair)
        for mode in ("grad", "loss"):
            c = {role: mca_cycles(lp) for role, lp in fz[mode].items()}
            per = ", ".join(f"m = {m}: {c['shared'] / m + c['main'] + c['scatter'] + c['sums']:.1f}" for m in (2, 4))
            print(f"fused {mode.upper()} cycles per (pair, label) by llvm-mca: {per}; "
                  f"GRAD alone {mca_cycles(grad):.1f} a pair")


if __name__ == "__main__":
    main()
