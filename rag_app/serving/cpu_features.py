"""Which x86-64 instruction sets this machine really runs, and the llama.cpp build that fits them.

A CPU (or a hypervisor) can advertise instructions a guest cannot run: a cloud VM listed ``amx_tile`` and
``avx512f`` in ``/proc/cpuinfo`` and trapped on ggml's first ``tilezero``, killing the chat model's server
with SIGILL. So a feature counts as usable only when all three agree:

1. the CPU advertises it (``/proc/cpuinfo``, i.e. CPUID),
2. the OS enables its register state (XCR0 read by ``xgetbv``; AMX tile data also needs
   ``arch_prctl(ARCH_REQ_XCOMP_PERM)`` on Linux),
3. a probe in a child process executes one of its instructions without dying of SIGILL.

``scripts/setup.sh`` runs this file with the system Python before the virtual environment exists, so it
uses the standard library only. ``python3 rag_app/serving/cpu_features.py --help`` lists what it prints;
``rag-app llm cpu`` adds the installed build and a check of its libraries.
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import json
import mmap
import platform
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

# One representative instruction per feature, as machine code (x86-64, System V), each ending in `ret`.
# The probe calls it as a C function; a feature the CPU or OS does not give traps with SIGILL.
VZEROUPPER_RET = "c5f877c3"
PROBE_CODE: dict[str, str] = {
    "sse4_2": "f20f38f1c0c3",  # crc32 eax, eax
    "avx": "c5fc57c0" + VZEROUPPER_RET,  # vxorps ymm0, ymm0, ymm0
    "avx2": "c5fdfec0" + VZEROUPPER_RET,  # vpaddd ymm0, ymm0, ymm0
    "fma": "c4e27db8c0" + VZEROUPPER_RET,  # vfmadd231ps ymm0, ymm0, ymm0
    "f16c": "c4e27d13c0" + VZEROUPPER_RET,  # vcvtph2ps ymm0, xmm0
    "bmi2": "c4e27bf5c0c3",  # pdep eax, eax, eax
    "avx_vnni": "c4e27d50c0" + VZEROUPPER_RET,  # {vex} vpdpbusd ymm0, ymm0, ymm0
    "avx512f": "62f17d48fec0" + VZEROUPPER_RET,  # vpaddd zmm0, zmm0, zmm0
    "avx512bw": "62f17d48fcc0" + VZEROUPPER_RET,  # vpaddb zmm0, zmm0, zmm0
    "avx512vnni": "62f27d4850c0" + VZEROUPPER_RET,  # vpdpbusd zmm0, zmm0, zmm0
    "avx512_bf16": "62f27e4872c0" + VZEROUPPER_RET,  # vcvtne2ps2bf16 zmm0, zmm0, zmm0
    "avx512vbmi": "62f27d488dc0" + VZEROUPPER_RET,  # vpermb zmm0, zmm0, zmm0
    # ldtilecfg [rdi]; tilezero tmm0; tilerelease: the tile data the VM above trapped on.
    "amx_tile": "c4e2784907c4e27b49c0c4e27849c0c3",
}
# The /proc/cpuinfo flag that advertises each probed feature (Linux's names).
# The kernel writes AVX512-VNNI as "avx512_vnni": looked up by the probe's name, a CPU that lists it would be
# reported "advertised no".
ADVERTISED_AS = {feature: feature for feature in PROBE_CODE} | {"sse4_2": "sse4_2", "avx512vnni": "avx512_vnni"}
# XCR0 bits each feature's registers need: 1 SSE, 2 AVX (upper ymm), 5-7 AVX-512 (opmask, upper zmm,
# zmm16-31), 17-18 AMX (tile config, tile data).
XCR0_SSE, XCR0_AVX, XCR0_AVX512, XCR0_AMX = 1 << 1, 1 << 2, 0b111 << 5, 0b11 << 17
XCR0_NEEDS = {
    "sse4_2": 0,
    "bmi2": 0,
    **dict.fromkeys(("avx", "avx2", "fma", "f16c", "avx_vnni"), XCR0_SSE | XCR0_AVX),
    **dict.fromkeys(
        ("avx512f", "avx512bw", "avx512vnni", "avx512_bf16", "avx512vbmi"), XCR0_SSE | XCR0_AVX | XCR0_AVX512
    ),
    "amx_tile": XCR0_AMX,
}
XGETBV_CODE = "31c90f01d048c1e22048 09d0c3".replace(" ", "")  # xor ecx,ecx; xgetbv; rax |= rdx << 32; ret
ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA, SYS_ARCH_PRCTL = 0x1023, 18, 158

# The llama.cpp builds setup chooses between: ggml's own x86 variants (ggml/src/CMakeLists.txt names them).
# "haswell" runs on every x86-64 CPU with AVX2 (2013 on): what the chat model's speed needs. "x64" is
# the safe build: no extension at all, for a CPU without AVX2, and the fallback a server retries with
# after SIGILL.
PROFILE_FEATURES = {"haswell": ("sse4_2", "avx", "f16c", "fma", "avx2", "bmi2"), "x64": ()}
GGML_FLAG_OF = {"sse4_2": "SSE42", "avx": "AVX", "f16c": "F16C", "fma": "FMA", "avx2": "AVX2", "bmi2": "BMI2"}
GGML_OFF_ALWAYS = (
    "AVX_VNNI", "AVX512", "AVX512_VBMI", "AVX512_VNNI", "AVX512_BF16", "AMX_TILE", "AMX_INT8", "AMX_BF16",
)  # fmt: skip


@dataclass
class FeatureCheck:
    """One feature: advertised by the CPU, enabled by the OS (XCR0), and what executing it did."""

    advertised: bool
    os_enabled: bool | None  # None: XCR0 could not be read
    probe: str  # "runs", "traps (SIGILL)", "not tried" (not advertised), or why the probe could not run

    @property
    def usable(self) -> bool:
        return self.probe == "runs"


@dataclass
class CpuReport:
    machine: str
    model: str
    xcr0: int | None
    features: dict[str, FeatureCheck] = field(default_factory=dict)

    @property
    def usable(self) -> set[str]:
        return {name for name, check in self.features.items() if check.usable}

    @property
    def advertised_not_usable(self) -> list[str]:
        """Features the CPU lists that this machine cannot run (the trap the safe build avoids)."""
        return sorted(name for name, check in self.features.items() if check.advertised and not check.usable)

    def to_dict(self) -> dict[str, object]:
        features = {name: {**asdict(check), "usable": check.usable} for name, check in self.features.items()}
        return {
            "machine": self.machine,
            "model": self.model,
            "xcr0": None if self.xcr0 is None else hex(self.xcr0),
            "usable": sorted(self.usable),
            "advertised_not_usable": self.advertised_not_usable,
            "build_profile": build_profile(self),
            "features": features,
        }


def cpuinfo() -> tuple[str, set[str]]:
    """The CPU's model name and advertised flags (Linux's ``/proc/cpuinfo``; empty elsewhere)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor(), set()
    model = re.search(r"^model name\s*:\s*(.+)$", text, re.M)
    flags = re.search(r"^flags\s*:\s*(.+)$", text, re.M)
    return (model.group(1).strip() if model else platform.processor()), set(flags.group(1).split() if flags else ())


def run_machine_code(code_hex: str) -> int:
    """Execute ``code_hex`` as a function in this process and return what it left in rax.

    Only ever called in a probe's child process: an instruction the CPU cannot run kills it.
    """
    code = bytes.fromhex(code_hex)
    memory = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    memory.write(code)
    address = ctypes.addressof(ctypes.c_char.from_buffer(memory))
    function = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_void_p)(address)
    tile_config = (ctypes.c_uint8 * 64)()
    tile_config[0] = 1  # palette 1
    tile_config[16] = 64  # tile 0: 64 bytes a row ...
    tile_config[48] = 16  # ... and 16 rows
    return int(function(ctypes.addressof(tile_config)))


def _child(feature: str | None, code_hex: str | None = None) -> None:
    """The probe's child: request AMX tile data from Linux first when probing AMX, then execute."""
    if code_hex is not None:
        print(run_machine_code(code_hex))
        return
    if feature == "amx_tile":
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.syscall(SYS_ARCH_PRCTL, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0:
            print("the OS refused AMX tile data (arch_prctl)")
            sys.exit(3)
    code = XGETBV_CODE if feature == "xgetbv" else PROBE_CODE[feature]
    print(run_machine_code(code))


def probe(feature: str, timeout_s: float = 20.0) -> tuple[str, str]:
    """Run one feature's instruction in a child process: ("runs", its output) or why it did not."""
    return _run_child(["--child", feature], timeout_s)


def probe_code(code_hex: str, timeout_s: float = 20.0) -> tuple[str, str]:
    """Run any machine code (ending in ``ret``) the same way: the probe's own test."""
    return _run_child(["--child-code", code_hex], timeout_s)


def _run_child(arguments: list[str], timeout_s: float) -> tuple[str, str]:
    command = [sys.executable, "-I", "-S", str(Path(__file__).resolve()), *arguments]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"probe failed: {error}", ""
    if done.returncode == 0:
        return "runs", done.stdout.strip()
    if done.returncode < 0:
        name = signal.Signals(-done.returncode).name
        return f"traps ({name})", ""
    reason = done.stdout.strip() or (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
    return f"probe failed: {reason[:200]}", ""


def check_cpu() -> CpuReport:
    """Advertised, OS-enabled and executed, for every feature llama.cpp's x86 builds may use."""
    model, flags = cpuinfo()
    report = CpuReport(platform.machine(), model, None)
    if report.machine not in ("x86_64", "AMD64"):
        return report
    if "xsave" in flags or "osxsave" in flags:
        outcome, output = probe("xgetbv")
        report.xcr0 = int(output) if outcome == "runs" and output.isdigit() else None
    for feature in PROBE_CODE:
        advertised = ADVERTISED_AS[feature] in flags
        needs = XCR0_NEEDS[feature]
        os_enabled = None if report.xcr0 is None else (report.xcr0 & needs) == needs
        if not advertised:
            outcome = "not tried (not advertised)"
        elif os_enabled is False:
            outcome = "not tried (the OS does not enable its registers: XCR0)"
        else:
            outcome, _ = probe(feature)
        report.features[feature] = FeatureCheck(advertised, os_enabled, outcome)
    return report


def build_profile(report: CpuReport) -> str:
    """The llama.cpp build for this machine: "haswell" where AVX2 and its companions run, else "x64"."""
    usable = report.usable
    return "haswell" if all(feature in usable for feature in PROFILE_FEATURES["haswell"]) else "x64"


def cmake_args(profile: str, machine: str | None = None) -> str:
    """CMAKE_ARGS for llama-cpp-python: never ``-march=native`` (it compiles for what the CPU advertises)."""
    machine = machine or platform.machine()
    if machine not in ("x86_64", "AMD64"):
        return "-DGGML_NATIVE=OFF"  # ggml's defaults for the architecture's baseline
    wanted = PROFILE_FEATURES[profile]
    flags = [f"-DGGML_{flag}={'ON' if feature in wanted else 'OFF'}" for feature, flag in GGML_FLAG_OF.items()]
    flags += [f"-DGGML_{flag}=OFF" for flag in GGML_OFF_ALWAYS]
    if wanted:
        # Scheduled for this CPU, never more instructions: -mtune changes no instruction set. Measured in
        # one run of 4 alternating rounds, prompt tokens/s: untuned 35.7, tuned 44.1, -march=native 42.8.
        flags += ["-DCMAKE_C_FLAGS=-mtune=native", "-DCMAKE_CXX_FLAGS=-mtune=native"]
    return " ".join(["-DGGML_NATIVE=OFF", *flags])


# ------------------------------------------------------------------ what a built library holds

# Mnemonics (as objdump prints them) that need a feature beyond their encoding's baseline.
MNEMONIC_NEEDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^(tile|tdp|tcmmimfp16ps|tcmmrlfp16ps)"), "amx_tile"),
    (re.compile(r"^v?fn?m(add|sub)"), "fma"),
    (re.compile(r"^vcvtp[hs]2p[sh]$"), "f16c"),
    (re.compile(r"^(pdep|pext|shlx|shrx|sarx|rorx|bzhi|mulx)"), "bmi2"),
    (re.compile(r"^crc32"), "sse4_2"),
    (re.compile(r"^vp(dpbusds?|dpwssds?)$"), "vnni"),  # VEX: avx_vnni, EVEX: avx512vnni
    (re.compile(r"^(vdpbf16ps|vcvtne2?ps2bf16)"), "avx512_bf16"),
    (re.compile(r"^(vpermb|vpermt2b|vpermi2b|vpmultishiftqb)$"), "avx512vbmi"),
    (re.compile(r"^(vpbroadcast|vperm2i128|vinserti128|vextracti128|vpgather|vgather|vpmaskmov)"), "avx2"),
    (re.compile(r"^(vpsllv|vpsrlv|vpsrav|vpblendd|vpermq|vpermd)"), "avx2"),
)  # fmt: skip
INSTRUCTION_LINE = re.compile(r"^\s*[0-9a-f]+:\s+((?:[0-9a-f]{2} )+)\s*(\S+)\s*(.*)$")


def instruction_needs(raw_bytes: list[str], mnemonic: str, operands: str) -> set[str]:
    """The features one disassembled instruction needs (from its encoding, mnemonic and registers)."""
    needs: set[str] = set()
    prefix = next((byte for byte in raw_bytes if byte not in ("67", "2e", "3e", "26", "64", "65", "36")), "")
    if mnemonic.startswith("{vex}"):
        mnemonic = operands.split()[0] if operands else mnemonic
    for pattern, feature in MNEMONIC_NEEDS:
        if pattern.match(mnemonic):
            if feature == "vnni":
                feature = "avx512vnni" if prefix == "62" else "avx_vnni"
            needs.add(feature)
    if prefix == "62":  # EVEX: AVX-512 (64-bit mode has no BOUND, so 0x62 always starts EVEX)
        needs.add("avx512f")
    elif prefix in ("c4", "c5"):  # VEX: AVX; 256-bit integer work is AVX2
        needs.add("avx")
        if "%ymm" in operands and mnemonic.startswith("vp"):
            needs.add("avx2")
    if "%tmm" in operands:
        needs.add("amx_tile")
    return needs


def library_needs(path: Path) -> dict[str, int]:
    """Feature -> how many instructions of ``path`` need it (objdump's disassembly of its code). Read once per
    process for a file as it stands (the disassembly of libllama takes seconds; a rebuilt file is read again)."""
    stat = path.stat()
    return dict(_library_needs(str(path.resolve()), stat.st_size, stat.st_mtime_ns))


@functools.lru_cache(maxsize=32)
def _library_needs(path: str, _size: int, _mtime_ns: int) -> dict[str, int]:
    objdump = shutil.which("objdump")
    if objdump is None:
        raise FileNotFoundError("objdump is not installed (Debian: binutils)")
    # A deadline on the disassembly too (libllama's is tens of MB of text: seconds).
    listing = subprocess.run([objdump, "-d", "-w", path], capture_output=True, text=True, timeout=600, check=True)
    counts: dict[str, int] = {}
    for line in listing.stdout.splitlines():
        match = INSTRUCTION_LINE.match(line)
        if not match:
            continue
        raw, mnemonic, operands = match.groups()
        for feature in instruction_needs(raw.split(), mnemonic, operands):
            counts[feature] = counts.get(feature, 0) + 1
    return counts


def unrunnable_instructions(paths: list[Path], report: CpuReport) -> dict[str, dict[str, int]]:
    """For each library, the features its instructions need that this machine cannot run (empty: all run)."""
    usable = report.usable
    found = {}
    for path in paths:
        missing = {feature: count for feature, count in library_needs(path).items() if feature not in usable}
        if missing:
            found[str(path)] = missing
    return found


def describe(report: CpuReport) -> list[str]:
    """The report as lines for a person (``rag-app llm cpu`` and this file's own command line)."""
    lines = [f"{report.model} ({report.machine}); XCR0 {report.to_dict()['xcr0']}"]
    for name, check in report.features.items():
        lines.append(f"  {name:12} advertised {'yes' if check.advertised else 'no ':3}  {check.probe}")
    lines.append(f"usable: {' '.join(sorted(report.usable)) or '(baseline only)'}")
    if report.advertised_not_usable:
        lines.append(f"advertised but not usable here: {' '.join(report.advertised_not_usable)}")
    lines.append(f"llama.cpp build profile: {build_profile(report)}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--child-code", help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help="the whole report as JSON")
    parser.add_argument("--profile", action="store_true", help="print the llama.cpp build profile for this machine")
    parser.add_argument("--cmake-args", metavar="PROFILE", help="print llama-cpp-python's CMAKE_ARGS for PROFILE")
    args = parser.parse_args(argv)
    if args.child or args.child_code:
        _child(args.child, args.child_code)
        return 0
    if args.cmake_args:
        print(cmake_args(args.cmake_args))
        return 0
    report = check_cpu()
    if args.profile:
        print(build_profile(report))
    elif args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print("\n".join(describe(report)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
