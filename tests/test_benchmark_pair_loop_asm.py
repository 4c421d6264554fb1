"""benchmarks/pair_loop_asm.py: the loop finder on a known assembly listing (an outer loop around an inner loop
unrolled by two, a vector loop beside them), then the count of the compiled NDCG pair loops (GRAD, GRAD_LOSS) and of
GRAD_LOSS's cost loop: each plain pair loop does one division a pair, the grade walk's GRAD_LOSS loops hold the
divisions GRAD_LOSS's every-pair sums do not, and the report prints its summary; the fused
pass of m labels' loops found by role, and its per (pair, label) count below GRAD's per pair."""
import runpy
from types import SimpleNamespace

import pytest

from conftest import REPO

ASM = """\
_ZN3foo6kernelB2v1E5ArrayIdLi1E1C7mutable7alignedE:
\tpushq\t%rbp
\txorl\t%eax, %eax
\tjmp\t.LBB0_2
.LBB0_1:
\tincq\t%rsi
\tcmpq\t%rsi, %rdi
\tje\t.LBB0_5
.LBB0_2:
\tmovq\t%rsi, %rcx
.LBB0_3:
\tvmovsd\t(%rdx,%rcx,8), %xmm0
\tvdivsd\t%xmm1, %xmm0, %xmm0
\tvmovsd\t8(%rdx,%rcx,8), %xmm2
\tvdivsd\t%xmm1, %xmm2, %xmm2
\taddq\t$2, %rcx
\tcmpq\t%rcx, %rax
\tjne\t.LBB0_3
\tjmp\t.LBB0_1
.LBB0_4:
\tvmovupd\t(%rdx,%r8,8), %zmm0
\tvgatherqpd\t(%r9,%zmm1,8), %zmm2 {%k1}
\taddq\t$8, %r8
\tcmpq\t%r8, %r10
\tjne\t.LBB0_4
.LBB0_5:
\tpopq\t%rbp
\tretq
.Lfunc_end0:
"""


@pytest.fixture(scope="module")
def asm_mod():
    return SimpleNamespace(**runpy.run_path(str(REPO / "benchmarks" / "pair_loop_asm.py")))  # not a package


def test_the_innermost_loops_of_a_known_listing(asm_mod):
    loops = {lp.header: lp for lp in asm_mod.loops_of(ASM, "kernel")}
    assert sorted(loops) == [".LBB0_3", ".LBB0_4"]  # the outer loop (.LBB0_1 .. .LBB0_3) holds .LBB0_3
    inner, vec = loops[".LBB0_3"], loops[".LBB0_4"]
    assert len(inner.instructions) == 7 and inner.step == 2 and inner.per_pair == 3.5
    assert inner.divisions == 2 and inner.gathers == 0 and not inner.vector
    assert len(vec.instructions) == 5 and vec.step == 8 and vec.vector and vec.gathers == 1 and vec.divisions == 0
    with pytest.raises(ValueError, match="missing"):
        asm_mod.function_blocks(ASM, "missing")


def test_the_compiled_pair_loops(asm_mod, capsys):
    asm = asm_mod.compiled_asm()
    r = asm_mod.report(asm)
    plain = [lp for lp in r["GRAD"]["pairs"] if lp.divisions == lp.step]  # rho's division, once a pair
    assert plain and all(lp.per_pair > 10 for lp in plain)
    # GRAD_LOSS: every division in the terms loop's vectors, its pair loops only the ordered sums
    assert r["GRAD_LOSS"]["pairs"] and all(lp.divisions == 0 for lp in r["GRAD_LOSS"]["pairs"])
    assert any(lp.vector and lp.divisions > 0 for lp in r["GRAD_LOSS"]["costs"])
    s = r["summary"]
    assert s["grad"] == min(lp.per_pair for lp in plain) and s["grad_loss_divisions"] == 0
    # the grade walk's GRAD_LOSS loops: rho's division a pair (plain), both divisions (damped), the cost inline
    walk = r["GRAD_LOSS"]["walk"]
    assert {lp.divisions // lp.step for lp in walk} == {1, 2} and not any(lp.vector for lp in walk)
    assert s["grad_loss_walk"] == min(lp.per_pair for lp in walk if lp.divisions == lp.step) > s["grad"]
    assert 0 < s["grad_loss"] < s["grad"] and s["cost_lane"] > 0 and s["cost_vectorised"]
    fused = r["FUSED"]  # the fused pass of m labels: its vector loops vectorised, its sums scalar and in order
    for mode in ("grad", "loss"):
        f = fused[mode]
        assert f["main"].vector and f["scatter"].vector and f["shared"].vector and f["shared"].divisions >= 2
        assert not f["sums"].vector and f["sums"].per_pair <= f["sums_norm"].per_pair
        assert asm_mod.fused_per_pair(f, 4) < asm_mod.fused_per_pair(f, 2) < s["grad"]  # the claim counted
    # the knots for the cost: loaded by gathers where LLVM's cost model takes them (AVX-512), else lane by lane
    # (AMD Zen 3's AVX2 code): either way more instructions a lane than the gradients' shared terms
    assert fused["grad"]["shared"].gathers == 0 and fused["loss"]["shared"].per_pair > fused["grad"]["shared"].per_pair
    assert asm_mod.row_shares([3]) == (16 / 3, 0.0) and asm_mod.row_shares([10], trunc=1) == (16 / 9, 8 / 9)
    outer = asm_mod.outer_loops(asm["LABEL_LOSS"], "_label_rows_loss")  # the rows' loop and the sums' loop
    assert len(outer) == 2 and all(count > 0 for _, count in outer)
    assert asm_mod.outer_loops(ASM, "kernel")[0] == (".LBB0_2", 5)  # .LBB0_1: 3, .LBB0_2: 1, the jmp back: 1
    asm_mod.main([], asm)  # compiled once
    out = capsys.readouterr().out
    assert "instructions per pair: GRAD" in out and "(its ordered sums, 0 divisions)" in out and out.count(" loop .LBB") >= 3
    assert "fused instructions per (pair, label)" in out and "m = 4" in out and "outer loops" in out
