"""What this CPU really runs, the llama.cpp build chosen from it, and a check that the installed build holds
no instruction this machine cannot run (the SIGILL that killed the chat on a VM advertising AMX)."""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rag_app.serving import cpu_features
from rag_app.serving.cpu_features import CpuReport, FeatureCheck, build_profile, cmake_args, instruction_needs
from rag_app.serving.llm_server import installed_llama_build, llama_cpp_library_dir, safe_cpu_library

x86_only = pytest.mark.skipif(platform.machine() != "x86_64", reason="the probes are x86-64 machine code")


def report_with(usable: set[str], advertised: set[str] = frozenset()) -> CpuReport:
    report = CpuReport("x86_64", "test CPU", 0x207)
    for name in cpu_features.PROBE_CODE:
        runs = name in usable
        report.features[name] = FeatureCheck(runs or name in advertised, True, "runs" if runs else "traps (SIGILL)")
    return report


def test_the_build_is_haswell_only_where_avx2_and_its_companions_run_whatever_is_advertised() -> None:
    haswell = {"sse4_2", "avx", "avx2", "fma", "f16c", "bmi2"}
    # The VM of the report: AMX and AVX-512 advertised, trapping: still the AVX2 build, never those.
    vm = report_with(haswell, advertised={"amx_tile", "avx512f", "avx512bw"})
    assert build_profile(vm) == "haswell" and vm.advertised_not_usable == ["amx_tile", "avx512bw", "avx512f"]
    assert build_profile(report_with(haswell - {"fma"})) == "x64"
    assert build_profile(report_with(set(), advertised=haswell)) == "x64"


def test_cmake_args_never_compile_for_the_building_cpu_and_never_turn_on_avx512_or_amx() -> None:
    for profile in ("haswell", "x64"):
        args = cmake_args(profile, "x86_64").split()
        assert "-DGGML_NATIVE=OFF" in args and not [arg for arg in args if "-march" in arg]
        assert all(f"-DGGML_{name}=OFF" in args for name in ("AVX512", "AMX_TILE", "AMX_INT8", "AVX_VNNI"))
    assert "-DGGML_AVX2=ON" in cmake_args("haswell", "x86_64").split()
    safe = cmake_args("x64", "x86_64").split()
    assert not [arg for arg in safe if arg.endswith("=ON") or "-m" in arg.split("=", 1)[1]], "no extension, no tuning"
    assert cmake_args("haswell", "aarch64") == "-DGGML_NATIVE=OFF"


def test_instructions_are_classified_by_encoding_mnemonic_and_registers() -> None:
    assert instruction_needs(["62", "f1", "7d", "48", "fe", "c0"], "vpaddd", "%zmm0,%zmm0,%zmm0") >= {"avx512f"}
    assert instruction_needs(["c5", "fd", "fe", "c0"], "vpaddd", "%ymm0,%ymm0,%ymm0") == {"avx", "avx2"}
    assert instruction_needs(["c5", "fc", "57", "c0"], "vxorps", "%ymm0,%ymm0,%ymm0") == {"avx"}
    assert "fma" in instruction_needs(["c4", "e2", "7d", "b8", "c0"], "vfmadd231ps", "%ymm0,%ymm0,%ymm0")
    assert "amx_tile" in instruction_needs(["c4", "e2", "7b", "49", "c0"], "tilezero", "%tmm4")
    assert "avx_vnni" in instruction_needs(["c4", "e2", "7d", "50", "c0"], "{vex}", "vpdpbusd %ymm0,%ymm0,%ymm0")
    assert "avx512vnni" in instruction_needs(["62", "f2", "7d", "48", "50", "c0"], "vpdpbusd", "%zmm0,%zmm0,%zmm0")
    assert instruction_needs(["66", "0f", "fe", "c0"], "paddd", "%xmm0,%xmm0") == set()  # SSE2: every x86-64


@x86_only
def test_a_probe_runs_each_instruction_in_a_child_and_a_trap_is_reported_not_fatal() -> None:
    report = cpu_features.check_cpu()
    assert "sse4_2" in report.usable, "every x86-64 CPU of the last 15 years runs SSE4.2"
    assert all(check.probe == "runs" or not check.advertised or "trap" in check.probe or "failed" in check.probe
               for check in report.features.values())  # fmt: skip
    script = str(Path(cpu_features.__file__))
    trap = subprocess.run([sys.executable, script, "--child-code", "0f0b"], capture_output=True, check=False)
    assert trap.returncode == -4  # ud2: SIGILL, in the child only
    assert cpu_features.probe_code("0f0b")[0] == "traps (SIGILL)"
    assert cpu_features.probe_code("c3")[0] == "runs"  # ret


@x86_only
def test_the_check_finds_code_this_cpu_cannot_run_in_a_library(tmp_path: Path) -> None:
    """The disassembly check can fail: a library holding an AVX-512 (or, where that runs, AMX) instruction."""
    if shutil.which("gcc") is None or shutil.which("objdump") is None:
        pytest.fail("gcc and objdump (binutils) are needed: they come with the build tools setup uses")
    report = cpu_features.check_cpu()
    # the first of these that this CPU cannot run (a machine with AVX-512 and AMX may still lack AVX-512 VNNI)
    candidates = [
        ("avx512f", "vpaddd %zmm0, %zmm0, %zmm0"),
        ("amx_tile", "tilerelease"),
        ("avx512vnni", "vpdpbusd %zmm0, %zmm0, %zmm0"),
        ("avx512_bf16", "vdpbf16ps %zmm0, %zmm0, %zmm0"),
        ("avx512vbmi", "vpermb %zmm0, %zmm0, %zmm0"),
    ]
    unrunnable = [(feature, asm) for feature, asm in candidates if feature not in report.usable]
    if not unrunnable:
        pytest.skip(f"this CPU runs every instruction set the check knows ({', '.join(sorted(report.usable))})")
    feature, asm = unrunnable[0]
    source = tmp_path / "probe.c"
    source.write_text(f'void needs_it(void) {{ __asm__ volatile("{asm}"); }}\n')
    library = tmp_path / "libprobe.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", str(source), "-o", str(library)], check=True)
    assert cpu_features.unrunnable_instructions([library], report) == {str(library): {feature: 1}}


@x86_only
@pytest.mark.slow
def test_the_installed_llama_cpp_holds_no_instruction_this_cpu_cannot_run() -> None:
    build = installed_llama_build()
    assert build, "scripts/setup.sh records the build it made (scripts/build_llama_cpp.sh)"
    assert "-DGGML_NATIVE=OFF" in build["cmake_args"]
    report = cpu_features.check_cpu()
    assert build["profile"] == build_profile(report)
    library_dir = llama_cpp_library_dir()
    assert library_dir is not None, "llama-cpp-python is installed by setup"
    libraries = sorted(library_dir.glob("lib*.so"))
    assert any(path.name == "libggml-cpu.so" for path in libraries)
    safe = safe_cpu_library()
    if build["profile"] != "x64":
        assert safe is not None, "the safe CPU library the server retries with after SIGILL"
        libraries.append(safe)
        # the safe library holds no extension at all: it runs on any x86-64 CPU
        assert cpu_features.library_needs(safe) == {}
    assert cpu_features.unrunnable_instructions(libraries, report) == {}


@x86_only
@pytest.mark.slow
def test_rag_app_llm_cpu_reports_the_probe_the_build_and_the_check() -> None:
    from typer.testing import CliRunner

    from rag_app.cli import app

    result = CliRunner().invoke(app, ["llm", "cpu", "--json"])
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert "sse4_2" in record["usable"] and record["build_profile"] in ("haswell", "x64")
    assert record["unrunnable"] == {} and record["installed_build"]["profile"] == record["build_profile"]
    text = CliRunner().invoke(app, ["llm", "cpu"])
    assert text.exit_code == 0 and "llama.cpp libraries runs here" in text.stdout and "XCR0" in text.stdout


def test_each_feature_is_read_under_the_flag_the_kernel_lists_it_by(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 86: `rag-app llm cpu` said "avx512vnni advertised no" where /proc/cpuinfo lists avx512_vnni."""
    monkeypatch.setattr(cpu_features, "cpuinfo", lambda: ("a CPU", {"avx2", "avx512f", "avx512_vnni"}))
    monkeypatch.setattr(cpu_features, "probe", lambda name: ("runs", "0"))
    report = cpu_features.check_cpu()
    if report.machine in ("x86_64", "AMD64"):
        assert report.features["avx512vnni"].advertised and report.features["avx2"].advertised
        assert not report.features["avx_vnni"].advertised
