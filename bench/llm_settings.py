"""Benchmark: llama.cpp settings for the embedded default on this CPU (prompt reading and generation speed).

The packaged GGUF is loaded in-process with ``llama_cpp.Llama`` (what ``python -m llama_cpp.server``
runs) once per setting, and reads real answer prompts: the demo corpus's sources for four of
``bench/ask_latency.py``'s questions in today's prompt (``answer_with_citations``). For each setting it
reports prompt reading (prefill) tokens/s, generation tokens/s and the time to the first token, each
prompt read cold (nothing of it in the KV cache). The settings measured are the server's knobs that
can matter on a CPU: threads for generation (llama-cpp-python's server takes half the CPUs by
default), logits for every prompt token (the server's default, needed only for prompt logprobs),
batch sizes, flash attention, a quantized KV cache, and prompt-lookup decoding (answers copy formulas
from their sources).

Each setting's rates are also given as a ratio to the first setting measured in the same run (by default
"server default"): a slower or busier machine moves both, not the comparison.

    python bench/llm_settings.py [--model qwen2.5-coder-1.5b-instruct] [--out bench/results]

Results: ``llm_settings.{json,md}``. The chosen values are the ``[llm.llama_cpp]`` settings.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from ask_latency import QUESTIONS as ASK_QUESTIONS
from floors import ratio
from llama_cpp import Llama
from llama_cpp.llama_speculative import LlamaPromptLookupDecoding
from tqdm import tqdm

from prompts import load_prompt
from rag_app import MathRAG, Settings
from rag_app.answering.context import new_fence_key, pack_sources
from rag_app.serving.packaged_models import resolve_gguf

ROOT = Path(__file__).resolve().parents[1]
# Four of the ask benchmark's questions (the script's folder is on the path when it runs).
QUESTIONS = [ASK_QUESTIONS[i] for i in (2, 4, 14, 17)]
GGML_TYPE_Q8_0 = 8
CPUS = os.cpu_count() or 1

# name -> keyword arguments of Llama beyond the model and the context size. "server default" is what
# `python -m llama_cpp.server` used before these settings existed.
SETTINGS: dict[str, dict[str, Any]] = {
    "server default": {"n_threads": max(CPUS // 2, 1), "n_threads_batch": CPUS, "logits_all": True},
    "threads = CPUs": {"n_threads": CPUS, "n_threads_batch": CPUS, "logits_all": True},
    "threads = CPUs, no prompt logits": {"n_threads": CPUS, "n_threads_batch": CPUS, "logits_all": False},
    "+ batch 256": {"n_threads": CPUS, "n_threads_batch": CPUS, "logits_all": False, "n_batch": 256, "n_ubatch": 256},
    "+ batch 1024": {
        "n_threads": CPUS,
        "n_threads_batch": CPUS,
        "logits_all": False,
        "n_batch": 1024,
        "n_ubatch": 1024,
    },
    "+ flash attention": {"n_threads": CPUS, "n_threads_batch": CPUS, "logits_all": False, "flash_attn": True},
    "+ flash attention, q8_0 KV cache": {
        "n_threads": CPUS,
        "n_threads_batch": CPUS,
        "logits_all": False,
        "flash_attn": True,
        "type_k": GGML_TYPE_Q8_0,
        "type_v": GGML_TYPE_Q8_0,
    },
    # llama-cpp-python checks drafted tokens against logits of every position: it needs logits_all.
    "+ prompt-lookup decoding (with prompt logits)": {
        "n_threads": CPUS,
        "n_threads_batch": CPUS,
        "logits_all": True,
        "draft_model": "prompt-lookup",
    },
}


def answer_prompts(settings: Settings) -> list[list[dict[str, str]]]:
    """Today's answer prompt for each question, with the demo corpus's top 5 sources."""
    prompt = load_prompt("answer_with_citations@v2")
    prompts = []
    with MathRAG(settings) as rag:
        rag.ingest_demo()
        for question in QUESTIONS:
            fence = new_fence_key()
            packed = pack_sources(rag.search(question, 5), 3000, fence)
            prompts.append(prompt.messages(sources=packed.text, question=question, fence=fence))
    return prompts


def run(model_path: Path, options: dict[str, Any], prompts: list[list[dict[str, str]]], max_tokens: int) -> dict:
    options = dict(options)
    if options.pop("draft_model", None):
        options["draft_model"] = LlamaPromptLookupDecoding(num_pred_tokens=10)
    llm = Llama(model_path=str(model_path), n_ctx=4096, verbose=False, **options)
    rows = []
    for messages in prompts:
        llm.reset()  # read the whole prompt: nothing of it cached
        started = time.perf_counter()
        first = None
        pieces = 0
        for chunk in llm.create_chat_completion(
            messages, max_tokens=max_tokens, temperature=0.2, repeat_penalty=1.0, stream=True, seed=0
        ):
            if chunk["choices"][0]["delta"].get("content"):
                pieces += 1
                if first is None:
                    first = time.perf_counter() - started
        total = time.perf_counter() - started
        # The same prompt again, without a reset: read from the cache, it only reports its size.
        prompt_tokens = llm.create_chat_completion(messages, max_tokens=1)["usage"]["prompt_tokens"]
        rows.append({"prompt_tokens": prompt_tokens, "first_token_s": first, "total_s": total, "pieces": pieces})
    prefill = [r["prompt_tokens"] / r["first_token_s"] for r in rows]
    generation = [(r["pieces"] - 1) / (r["total_s"] - r["first_token_s"]) for r in rows]
    return {
        "options": {k: v for k, v in options.items() if k != "draft_model"},
        "prompt_tokens_mean": round(statistics.fmean(r["prompt_tokens"] for r in rows), 1),
        "first_token_s_mean": round(statistics.fmean(r["first_token_s"] for r in rows), 2),
        "prefill_tokens_per_s": round(statistics.fmean(prefill), 1),
        "generation_pieces_per_s": round(statistics.fmean(generation), 1),
        "answer_s_mean": round(statistics.fmean(r["total_s"] for r in rows), 2),
        "rows": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b-instruct")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--only", nargs="*", help="names of the settings to measure (default: all)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results")
    parser.add_argument("--measure", nargs=2, help=argparse.SUPPRESS)  # internal: SETTING PROMPTS_FILE
    args = parser.parse_args()

    settings = Settings()
    model_path = resolve_gguf(args.model, settings.data_dir)
    if args.measure:  # a fresh process per setting: no other library's threads, one model in memory
        name, prompts_file = args.measure
        prompts = json.loads(Path(prompts_file).read_text())
        print(json.dumps(run(model_path, SETTINGS[name], prompts, args.max_tokens)))
        return

    results = {}
    with tempfile.TemporaryDirectory() as workdir:
        prompts_file = Path(workdir) / "prompts.json"
        prompts_file.write_text(
            json.dumps(answer_prompts(settings.model_copy(update={"index_dir": Path(workdir) / "index"})))
        )
        for name in tqdm([n for n in SETTINGS if not args.only or n in args.only], desc="settings"):
            command = [sys.executable, __file__, "--model", args.model, "--max-tokens", str(args.max_tokens)]
            output = subprocess.run([*command, "--measure", name, str(prompts_file)], capture_output=True, text=True)
            if output.returncode:  # a setting this llama.cpp build refuses: say why, measure the others
                results[name] = {"error": output.stderr.strip().splitlines()[-1]}
                print(name, results[name], flush=True)
                continue
            results[name] = json.loads(output.stdout.strip().splitlines()[-1])
            print(name, {k: v for k, v in results[name].items() if k not in ("rows", "options")}, flush=True)
    result = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {"platform": platform.platform(), "python": platform.python_version(), "cpus": CPUS},
        "model": args.model,
        "max_tokens": args.max_tokens,
        "questions": QUESTIONS,
        "settings": results,
    }
    baseline_name = next((name for name, row in results.items() if "error" not in row), None)
    baseline = results.get(baseline_name, {})
    for row in results.values():
        if "error" not in row:
            row["prefill_x_baseline"] = ratio(row["prefill_tokens_per_s"], baseline["prefill_tokens_per_s"])
            row["generation_x_baseline"] = ratio(row["generation_pieces_per_s"], baseline["generation_pieces_per_s"])
    result["baseline"] = baseline_name
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "llm_settings.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        f"# llama.cpp settings on this CPU ({result['date']}, {CPUS} CPUs, {args.model})",
        "",
        f"{len(QUESTIONS)} real answer prompts (demo corpus, top 5 sources), each read cold; "
        f"up to {args.max_tokens} new tokens at temperature 0.2.",
        "",
        f'In brackets: the rate against "{baseline_name}" in the same run.',
        "",
        "| setting | prompt tokens | prefill tokens/s | first token s | generation tokens/s | answer s |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, row in results.items():
        if "error" in row:
            lines.append(f"| {name} | failed: {row['error']} | | | | |")
            continue
        lines.append(
            f"| {name} | {row['prompt_tokens_mean']} | {row['prefill_tokens_per_s']} ({row['prefill_x_baseline']}x) "
            f"| {row['first_token_s_mean']} | {row['generation_pieces_per_s']} ({row['generation_x_baseline']}x) "
            f"| {row['answer_s_mean']} |"
        )
    (args.out / "llm_settings.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
