"""Benchmark: the chat model's speed on each llama.cpp CPU library, in one run on one machine.

The builds differ only in ggml's CPU library (``libggml-cpu.so``: ggml adds its instruction-set flags to
that target alone), so each build is served by the installed llama.cpp with its CPU library preloaded:
``installed`` (what scripts/setup.sh built: the portable AVX2 build), ``safe`` (no extension: the SIGILL
fallback), and any other given with ``--library NAME=PATH`` (a ``-march=native`` build's, say). Rounds
alternate between the builds so that a busy machine weighs on each alike. Per round and build: prompt
reading (a ~330-token prompt, one token generated: prompt tokens per second) and generation (64 tokens
streamed: tokens per second between the first and the last). The safe library has no SIMD at all: it is
measured to show what the SIGILL fallback costs, and skipped with ``--no-safe``.

    python bench/experiments/llama_build.py [--library native=/path/libggml-cpu.so] [--rounds 3] [--model ...]

An experiment (bench/experiments/): it decided something once. Decision recorded in
docs/scale-and-serving.md, section "Benchmarks": the llama.cpp CPU build that setup installs for this
machine's instruction set.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from rag_app.serving import cpu_features
from rag_app.serving.llm_server import LlamaCppServer, installed_llama_build, physical_cores, safe_cpu_library
from rag_app.serving.packaged_models import resolve_gguf
from rag_app.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
PROMPT = " ".join(
    f"Lemma {n}. Let $R$ be a Noetherian ring and $M$ a finitely generated $R$-module; then $M_{n}$ is finite."
    for n in range(10)
)


def measure(server: LlamaCppServer) -> dict[str, float]:
    url = f"{server.base_url}/completions"
    started = time.perf_counter()
    reply = httpx.post(url, json={"prompt": PROMPT, "max_tokens": 1, "temperature": 0}, timeout=600).json()
    prompt_s = time.perf_counter() - started
    prompt_tokens = reply["usage"]["prompt_tokens"]
    body = {"prompt": "Count: 1, 2, 3,", "max_tokens": 64, "temperature": 0, "stream": True}
    times = []
    with httpx.stream("POST", url, json=body, timeout=600) as response:
        for line in response.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]" and json.loads(line[6:])["choices"][0]["text"]:
                times.append(time.perf_counter())
    return {
        "prompt_tokens_per_s": prompt_tokens / prompt_s,
        "generated_tokens": len(times),
        "generation_tokens_per_s": (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--library", action="append", default=[], metavar="NAME=PATH", help="another CPU library")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-safe", action="store_true", help="leave out the safe (no-extension) library")
    parser.add_argument("--model", default=None, help="packaged chat model; default: the settings' llm.local_model")
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results")
    args = parser.parse_args()
    settings = Settings.load()
    model_name = args.model or settings.llm.local_model
    libraries: dict[str, Path | None] = {"installed": None}
    if safe_cpu_library() is not None and not args.no_safe:
        libraries["safe"] = safe_cpu_library()
    for entry in args.library:
        name, _, path = entry.partition("=")
        libraries[name] = Path(path)
    results: dict[str, list[dict[str, float]]] = {name: [] for name in libraries}
    with tempfile.TemporaryDirectory() as work:
        model = resolve_gguf(model_name, settings.data_dir)
        for round_number in range(args.rounds):
            for name, library in libraries.items():
                server = LlamaCppServer(model_path=model, model_alias=model_name, context_window=2048,
                                        cpu_library=library, log_path=Path(work) / f"{name}.log")  # fmt: skip
                with server:
                    results[name].append(measure(server))
                print(f"round {round_number + 1} {name}: {results[name][-1]}")
    summary = {
        name: {
            key: round(statistics.median(run[key] for run in runs), 2)
            for key in ("prompt_tokens_per_s", "generation_tokens_per_s")
        }
        for name, runs in results.items()
    }
    record = {
        "model": model_name,
        "rounds": args.rounds,
        "machine": {
            "cpu": cpu_features.cpuinfo()[0],
            "cores": physical_cores(),
            "usable": sorted(cpu_features.check_cpu().usable),
            "platform": platform.platform(),
        },
        "installed_build": installed_llama_build(),
        "libraries": {name: str(path) if path else "as installed" for name, path in libraries.items()},
        "median": summary,
        "runs": results,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "llama_build.json").write_text(json.dumps(record, indent=2) + "\n")
    # Per round, each library against the installed one run beside it: a busy machine's drift cancels.
    paired = {
        name: {
            key: round(statistics.median(r[key] / i[key] for r, i in zip(runs, results["installed"], strict=True)), 3)
            for key in ("prompt_tokens_per_s", "generation_tokens_per_s")
        }
        for name, runs in results.items()
    }
    record["paired_ratio_median"] = paired
    (args.out / "llama_build.json").write_text(json.dumps(record, indent=2) + "\n")
    lines = [
        "# The chat model on each llama.cpp CPU library (bench/experiments/llama_build.py)",
        "",
        f"Model {model_name}; {record['machine']['cpu']}, usable: {' '.join(record['machine']['usable'])}; "
        f"median of {args.rounds} alternating rounds.",
        "",
        "| CPU library | prompt tokens/s | generated tokens/s | prompt vs installed | generation vs installed |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, medians in summary.items():
        lines.append(
            f"| {name} ({record['libraries'][name]}) | {medians['prompt_tokens_per_s']:.1f} | "
            f"{medians['generation_tokens_per_s']:.1f} | {paired[name]['prompt_tokens_per_s']:.2f} | "
            f"{paired[name]['generation_tokens_per_s']:.2f} |"
        )
    lines += ["", "Ratios: the median over rounds of each round's ratio to the installed library in that round."]
    (args.out / "llama_build.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
