"""benchmarks/sass.py (issue 42, item 5): the histogram kernels' machine code, counted without a card.

The parser and the loop finder are checked on hand-written SASS (a loop with a native atomic, a
compare-and-swap spin loop inside an update loop, a subroutine call, a branch out of the loop); then
every histogram kernel is compiled for sm_80 and sm_90 (NVVM, ptxas, nvdisasm: NVIDIA's wheels, no
GPU) and held to issue 42's budget per (item, feature) update. The compilers are in the ``test``
extra, so under CI=true a missing one is an error, not a skip.
"""
from __future__ import annotations

import json
import os

import pytest
from conftest import BENCH, import_benchmark

sass = import_benchmark("sass")

#: Issue 42's budget per update: instructions on the longest path of one iteration, native shared atomics.
MAX_INSTRUCTIONS = 60

_SPIN = """
        /*0000*/                   MOV R1, 0x0 ;
.L_x_0:
        /*0010*/                   LDG.E R2, [R4.64] ;
        /*0020*/               @P1 BRA `(.L_x_2) ;
        /*0030*/                   CALL.REL.NOINC `($__internal_0_$__cuda_sm20_div_s64) ;
.L_x_1:
        /*0040*/                   LDS.64 R12, [R17] ;
        /*0050*/                   ATOMS.CAST.SPIN.64 R14, [R17], R12, R14 ;
        /*0060*/              @!P2 BRA `(.L_x_1) ;
.L_x_2:
        /*0070*/                   REDG.E.ADD.F64.RN.STRONG.GPU [R8.64], R10 ;
        /*0080*/               @P0 BRA `(.L_x_0) ;
        /*0090*/                   EXIT ;
$__internal_0_$__cuda_sm20_div_s64:
        /*00a0*/                   IADD3 R1, R1, 0x1, RZ ;
        /*00b0*/                   IADD3 R1, R1, 0x1, RZ ;
        /*00c0*/                   RET.REL.NODEC R2 `(kernel) ;
"""


def test_a_spin_loop_is_looked_through_and_a_call_counts_its_subroutine():
    funcs = sass.parse_sass(_SPIN)
    assert len(funcs["kernel"][0]) == 10 and len(funcs["$__internal_0_$__cuda_sm20_div_s64"][0]) == 3
    (u,) = sass.update_loops(funcs)
    assert u.header == 0x10 and u.static == 8 and (u.native, u.cas, u.global_) == (0, 1, 1)
    # longest: LDG BRA CALL(+3) | LDS ATOMS BRA (spin once) | RED BRA; shortest: LDG BRA | RED BRA
    assert (u.longest, u.shortest) == (11, 4)
    assert u.calls == ("$__internal_0_$__cuda_sm20_div_s64",)


def test_no_shared_atomic_no_update_loop():
    text = _SPIN.replace("ATOMS.CAST.SPIN.64", "LDS.64")
    assert sass.update_loops(sass.parse_sass(text)) == []


def test_a_call_to_a_label_is_a_jump_out_of_the_loop():
    text = """
        /*0000*/                   MOV R1, 0x0 ;
.L_x_0:
        /*0010*/                   ATOMS.ADD RZ, [R2], R3 ;
        /*0020*/              @!P0 CALL.REL.NOINC `(.L_x_9) ;
        /*0030*/                   BRA `(.L_x_0) ;
.L_x_9:
        /*0040*/                   EXIT ;
"""
    (u,) = sass.update_loops(sass.parse_sass(text))
    assert (u.static, u.longest, u.native, u.cas) == (3, 3, 1, 0)


@pytest.fixture(scope="module")
def measured():
    """Every histogram kernel's update loops at sm_80 and sm_90 (u8 bins, int32 pairs: the CLI
    measures the other signatures too), compiled in a child process with the simulator off (the
    suite runs under it): NVVM takes ~5 s a kernel and arch."""
    from _isolated import run_isolated

    if sass.find_tools() is None:
        if os.environ.get("CI") == "true":
            pytest.fail("ptxas or nvdisasm is missing: pip install -e '.[test]' brings both")
        pytest.skip("ptxas or nvdisasm is missing: pip install -e '.[test]'")
    code = f"""
import os, sys, json
os.environ.pop("NUMBA_ENABLE_CUDASIM", None)
sys.path.insert(0, {str(BENCH)!r})
import sass
print("JSON" + json.dumps(sass.measure(every_signature=False)))
"""
    out = run_isolated(code, timeout=600)
    return json.loads(out.split("JSON", 1)[1])


def _loops(measured, kind):
    """``(name, arch, loop)`` of every update loop of the ``kind`` ("pair" or "row"): a row update
    has 5 shared adds in its code (``g`` and ``h``: a low word and a carry's high word each; the
    count: one word); every other loop has 2 (one channel: a low word and a carry's high word) and
    is held to the pair budget: a pair update (``hi`` or ``nanp``) or a row's ``R`` update (its
    coupling sum ``rho``, the pair histograms' third channel built from the rows)."""
    for name, by_cc in measured.items():
        for arch, loops in by_cc.items():
            if arch.endswith("_cas"):
                continue
            for u in loops:
                is_row = u["native"] == 5  # g, h (two words each) and the count's one word
                if is_row == (kind == "row"):
                    yield name, arch, u


@pytest.mark.slow  # the compilation (the fixture): ~40 s
def test_every_histogram_kernel_is_measured_at_both_archs(measured):
    assert {n.split("[")[0] for n in measured} == {n.split("[")[0] for n in sass.histogram_kernels()}
    assert len(measured) == 7  # row_hist_shared, pair_hist_shared, child_hists, chosen_child_pairs,
    # chosen_level_pairs, place_sides_row_hist, place_sides_row_hist_level
    for name, by_cc in measured.items():
        assert set(by_cc) == {"sm_80", "sm_90", "sm_80_cas", "sm_90_cas"}, name
        for arch in ("sm_80", "sm_90"):
            assert by_cc[arch], f"{name} {arch}: no update loop found"
            for u in by_cc[arch]:
                assert 0 < u["shortest"] <= u["longest"] and u["static"] > 0, (name, arch, u)
    # both kinds of update in the kernels that build both (child_hists: the rows and the two children's pairs)
    assert any(n.startswith("child_hists") for n, _, _ in _loops(measured, "row"))
    assert any(n.startswith("child_hists") for n, _, _ in _loops(measured, "pair"))


@pytest.mark.slow  # the compilation (the fixture): ~40 s
def test_no_compare_and_swap_and_no_subroutine_in_any_histogram_kernel(measured):
    # issue 42: a 64-bit shared add compiles to a CAS spin loop on sm_80 / sm_90; a float64 atomic on
    # a pointer of unknown space carries one as a fallback; a division per update calls a subroutine
    for name, by_cc in measured.items():
        for arch in ("sm_80", "sm_90"):
            assert by_cc[arch + "_cas"] == 0, f"{name} {arch}: {by_cc[arch + '_cas']} CAS instructions"
            for u in by_cc[arch]:
                assert u["cas"] == 0 and u["calls"] == [] and u["native"] > 0, (name, arch, u)


@pytest.mark.slow  # the compilation (the fixture): ~40 s
def test_a_row_update_fits_issue_42s_instruction_budget(measured):
    over = [f"{n} {a}: {u['longest']}" for n, a, u in _loops(measured, "row") if u["longest"] > MAX_INSTRUCTIONS]
    assert over == []


@pytest.mark.slow  # the compilation (the fixture): ~40 s
def test_a_pair_update_fits_issue_42s_budget(measured):
    over = [f"{n} {a}: {u['longest']} instructions, {u['fewest_atomics']} atomics" for n, a, u in _loops(measured, "pair")
            if u["longest"] > MAX_INSTRUCTIONS or u["fewest_atomics"] > 1 or u["native"] != 2]
    assert over == []
