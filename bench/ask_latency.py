"""Benchmark: end-to-end ``ask`` on the demo corpus with the embedded default (local llama.cpp, packaged model).

Twenty questions (written for this benchmark, one or two per demo topic) are asked one after another
through ``MathRAG.ask_stream``, the way the CLI and the chat ask them, once with each configuration:
``before`` (the settings before issue 24: prompt v2 with the fence key in its system message, five
whole sources, llama-cpp-python's server defaults), ``synthesis`` (today's settings with the written
answer), ``model-always`` (the quoting answer with the model asked every time) and ``now`` (today's
defaults: the learned ranker's clear first result is quoted without asking the model). Reports first-token
and full-answer latency p50/p95; where the prompt's tokens go (instructions, question, each source) and
how many of them the server found in its cache (its log's prefix-match lines); and the answer checks:
all citations valid, the model citing on its own, attribution, supported sentences, not-found
decisions. Each configuration starts its own server before its first question (start-up reported apart).

    python bench/ask_latency.py [--model qwen2.5-coder-1.5b-instruct] [--only now] [--out bench/results]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from rag_app import MathRAG, Settings
from rag_app.answering.answer import AnswerStatus
from rag_app.answering.citations import citation_numbers
from rag_app.serving.packaged_models import resolve_gguf
from rag_app.settings import LlamaCppSettings

ROOT = Path(__file__).resolve().parents[1]

QUESTIONS = [
    "What does the Seifert-van Kampen theorem say about the fundamental group of a union?",
    "When does a map into a space lift to a covering space?",
    "What does Nakayama's lemma say about a finitely generated module $M$ with $IM = M$?",
    "State the Chinese remainder theorem for rings.",
    "What does Cauchy's integral formula give for $f(z_0)$?",
    "Is there always a prime between $n$ and $2n$?",
    "Why are there infinitely many primes?",
    "What is Fermat's little theorem?",
    "How many terms does inclusion-exclusion have for $|A_1 \\cup \\dots \\cup A_n|$?",
    "What does the Hahn-Banach theorem say about extending linear functionals?",
    "When does a contraction on a complete metric space have a fixed point?",
    "What is the degree of a tower of field extensions $[L:K]$?",
    "When does a finite extension have a primitive element?",
    "Which graphs have an Euler circuit?",
    "How many labelled trees are there on $n$ vertices?",
    "What is the rank-nullity theorem?",
    "When does an irreducible aperiodic Markov chain converge to its stationary distribution?",
    "What does the monotone convergence theorem say about $\\int f_n \\, d\\mu$?",
    "Is a closed and bounded subset of $\\mathbb{R}^n$ compact?",
    "What does Markov's inequality bound?",
]


def percentile(values: list[float], q: float) -> float:
    return round(float(np.percentile(values, q)), 1) if values else float("nan")


def before(settings: Settings) -> Settings:
    """The settings of the embedded default before issue 24 (for the side-by-side run)."""
    cpus = os.cpu_count() or 1
    settings = settings.model_copy(deep=True)
    settings.llm.prompt = "answer_with_citations@v2"
    settings.llm.threads = max(cpus // 2, 1)  # llama-cpp-python's server defaults
    settings.llm.llama_cpp = LlamaCppSettings(batch_threads=cpus, prompt_logits=True)
    settings.answers.max_sources, settings.answers.source_margin = 5, None
    settings.answers.max_source_tokens, settings.answers.proofs = None, "never"
    settings.answers.sources_budget_tokens = None
    settings.llm.llama_cpp.warm_up = False
    settings.answers.style = "synthesis"  # the written answer was the default then
    return settings


def synthesis(settings: Settings) -> Settings:
    """Today's settings with the written answer (the default before the quoting answer, issue 40)."""
    settings = settings.model_copy(deep=True)
    settings.answers.style = "synthesis"
    return settings


def model_always(settings: Settings) -> Settings:
    """Today's quoting answer with the model asked every time (before the ranker's clear first result
    was quoted without it, issue 47)."""
    settings = settings.model_copy(deep=True)
    settings.answers.quote.ranker_sure_margin = None
    return settings


def model_always_logits(settings: Settings) -> Settings:
    """``model-always`` with the local server keeping every logit, so that the choice comes with its
    probabilities (what ``llm.llama_cpp.prompt_logits`` costs)."""
    settings = model_always(settings)
    settings.llm.llama_cpp.prompt_logits = True
    return settings


CONFIGURATIONS = {
    "before": before,
    "synthesis": synthesis,
    "model-always": model_always,
    "model-always+logits": model_always_logits,
    "now": lambda settings: settings,
}
_PREFIX_HIT = re.compile(r"Llama\.generate: (\d+) prefix-match hit, remaining (\d+) prompt tokens to eval")


def ask_all(settings: Settings, log: Path) -> dict[str, Any]:
    """Every question through ``ask_stream`` with ``settings``; the server's log is read for cache hits."""
    with MathRAG(settings) as rag:
        ingest = rag.ingest_demo()
        started = time.perf_counter()
        client = rag.llm.client()  # starts the local server: the embedded default
        server_start_s = time.perf_counter() - started
        rows = []
        for question in tqdm(QUESTIONS, desc="asking", unit="question"):
            log_size = log.stat().st_size if log.exists() else 0
            stream = rag.ask_stream(question)
            for _ in stream:
                pass
            answer = stream.result()
            hits = _PREFIX_HIT.findall(log.read_bytes()[log_size:].decode("utf-8", "replace"))
            rows.append(
                {
                    "question": question,
                    "status": answer.status.value,
                    "chosen_by": answer.chosen_by,
                    "first_token_ms": answer.timings_ms.get("first_token"),
                    "full_answer_ms": answer.timings_ms.get("full_answer"),
                    "retrieval_ms": answer.timings_ms.get("retrieval"),
                    "context_tokens": answer.context.tokens,
                    "instruction_tokens": answer.context.instruction_tokens,
                    "question_tokens": answer.context.question_tokens,
                    "source_tokens": answer.context.source_tokens,
                    "proofs": answer.context.proofs,
                    # the server's own count: prompt tokens it found cached, and those it read
                    "cached_tokens": int(hits[-1][0]) if hits else 0,
                    "read_tokens": int(hits[-1][1]) if hits else None,
                    "answer_chars": len(answer.raw_text),
                    # what the model wrote itself, before checks (valid numbers only)
                    "model_cited": sorted(
                        {n for n in citation_numbers(answer.raw_text) if 1 <= n <= len(answer.sources)}
                    ),
                    "invalid_citations": answer.invalid_citations,
                    "attributed": answer.attributed,
                    "sentences": len([s for s in answer.sentences if s.claim]),
                    "supported_sentences": len([s for s in answer.sentences if s.claim and s.supported]),
                    "raw_answer": answer.raw_text,
                    "answer": answer.text,
                }
            )
        model = client.model
    return {
        "model": model,
        "server_start_s": round(server_start_s, 1),
        "prompt": settings.llm.prompt,
        "demo_statements": ingest.statements,
        "summary": summarize(rows),
        "answers": rows,
    }


def mean(values: list[float]) -> float:
    return round(float(np.mean(values)), 1) if values else 0.0


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    generated = [r for r in rows if r["status"] in (AnswerStatus.ANSWERED.value, AnswerStatus.UNSUPPORTED.value)]
    first = [r["first_token_ms"] for r in generated]
    full = [r["full_answer_ms"] for r in generated]
    claims = sum(r["sentences"] for r in generated)
    share = max(1, len(generated))
    return {
        "questions": len(rows),
        "generated": len(generated),
        "not_found": sum(r["status"] == AnswerStatus.NOT_FOUND.value for r in rows),
        "chosen_by_ranker": sum(r.get("chosen_by") == "ranker" for r in rows),
        "first_token_ms": {"p50": percentile(first, 50), "p95": percentile(first, 95)},
        "full_answer_ms": {"p50": percentile(full, 50), "p95": percentile(full, 95)},
        "retrieval_ms": {"p50": percentile([r["retrieval_ms"] for r in rows], 50)},
        "context_tokens_mean": mean([r["context_tokens"] for r in generated]),
        "instruction_tokens_mean": mean([r["instruction_tokens"] for r in generated]),
        "question_tokens_mean": mean([r["question_tokens"] for r in generated]),
        "sources_mean": mean([len(r["source_tokens"]) for r in generated]),
        "source_tokens_mean": mean([sum(r["source_tokens"]) for r in generated]),
        "tokens_per_source_mean": mean([t for r in generated for t in r["source_tokens"]]),
        "cached_tokens_mean": mean([r["cached_tokens"] for r in generated]),
        "read_tokens_mean": mean([r["read_tokens"] for r in generated if r["read_tokens"] is not None]),
        "answer_chars_mean": mean([r["answer_chars"] for r in generated]),
        "all_citations_valid": round(sum(not r["invalid_citations"] for r in generated) / share, 3),
        "model_cited_on_its_own": round(sum(bool(r["model_cited"]) for r in generated) / share, 3),
        "cited_after_attribution": round(sum(bool(r["model_cited"] or r["attributed"]) for r in generated) / share, 3),
        "supported_answers": round(sum(r["status"] == AnswerStatus.ANSWERED.value for r in generated) / share, 3),
        "claim_sentences": claims,
        "supported_sentences": round(sum(r["supported_sentences"] for r in generated) / max(1, claims), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None, help="packaged chat model; default: the settings' llm.local_model")
    parser.add_argument("--only", nargs="*", choices=list(CONFIGURATIONS), help="configurations to run (default: all)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results")
    parser.add_argument(
        "--keep", type=Path, help="an earlier ask_latency.json: its runs of the configurations not run now are kept"
    )
    args = parser.parse_args()

    runs = {}
    kept = json.loads(args.keep.read_text())["runs"] if args.keep else {}
    for name, configure in CONFIGURATIONS.items():
        if args.only and name not in args.only:
            if name in kept:
                runs[name] = {**kept[name], "kept_from": kept[name].get("kept_from") or str(args.keep)}
            continue
        with tempfile.TemporaryDirectory() as workdir:
            base = Settings(data_dir=Path(workdir) / "data", index_dir=Path(workdir) / "index")
            base.data_dir.mkdir(parents=True)
            # The packaged GGUF is assembled once under the usual data directory; reuse it.
            base.llm.local_model = str(resolve_gguf(args.model or base.llm.local_model, Settings().data_dir))
            settings = configure(base)
            runs[name] = ask_all(settings, settings.data_dir / "llm-server.log")
            runs[name]["date"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            runs[name]["settings"] = {
                "llm": settings.llm.model_dump(mode="json", include={"threads", "llama_cpp", "max_tokens", "prompt"}),
                "answers": settings.answers.model_dump(mode="json"),
            }
        print(name, json.dumps(runs[name]["summary"]), flush=True)

    result = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count()},
        "server": "llama.cpp (embedded default)",
        "runs": runs,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "ask_latency.json").write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    (args.out / "ask_latency.md").write_text(markdown(result))
    print(markdown(result))


def markdown(result: dict[str, Any]) -> str:
    runs = result["runs"]
    names = list(runs)
    first = runs[names[0]]
    lines = [
        "# Ask latency on the demo corpus (embedded default)",
        "",
        f"{Path(first['model']).name} on llama.cpp, {result['machine']['cpus']} CPUs, {result['date']}; the same "
        f"{first['summary']['questions']} questions with each configuration, one after another; server start-up "
        "not counted.",
        "",
        "| measure | " + " | ".join(names) + " |",
        "| --- | " + " | ".join("---:" for _ in names) + " |",
    ]
    rows = [
        ("first token p50, ms", lambda s: f"{s['first_token_ms']['p50']:,}"),
        ("first token p95, ms", lambda s: f"{s['first_token_ms']['p95']:,}"),
        ("full answer p50, ms", lambda s: f"{s['full_answer_ms']['p50']:,}"),
        ("full answer p95, ms", lambda s: f"{s['full_answer_ms']['p95']:,}"),
        ("prompt tokens (mean)", lambda s: f"{s['context_tokens_mean']:,}"),
        ("- instructions (system message)", lambda s: f"{s['instruction_tokens_mean']:,}"),
        ("- question and frame", lambda s: f"{s['question_tokens_mean']:,}"),
        ("- sources (all)", lambda s: f"{s['source_tokens_mean']:,}"),
        ("sources given (mean)", lambda s: f"{s['sources_mean']}"),
        ("tokens per source (mean)", lambda s: f"{s['tokens_per_source_mean']}"),
        ("prompt tokens found in the server's cache (mean)", lambda s: f"{s['cached_tokens_mean']:,}"),
        ("prompt tokens read (mean)", lambda s: f"{s['read_tokens_mean']:,}"),
        ("answer length, characters (mean)", lambda s: f"{s['answer_chars_mean']:,}"),
        ("answers generated / judged not in the corpus", lambda s: f"{s['generated']} / {s['not_found']}"),
        ("quoted the ranker's clear first result, model not asked", lambda s: f"{s.get('chosen_by_ranker', 0)}"),
        ("all citations valid", lambda s: f"{s['all_citations_valid']:.0%}"),
        ("the model cited on its own", lambda s: f"{s['model_cited_on_its_own']:.0%}"),
        ("cited after attribution", lambda s: f"{s['cited_after_attribution']:.0%}"),
        ("supported (at least one claim matched to a source)", lambda s: f"{s['supported_answers']:.0%}"),
        ("claim sentences supported", lambda s: f"{s['supported_sentences']:.0%} of {s['claim_sentences']}"),
    ]
    for label, cell in rows:
        lines.append(f"| {label} | " + " | ".join(cell(runs[name]["summary"]) for name in names) + " |")
    lines += ["", "Settings:", ""]
    for name in names:
        lines.append(f"- {name}: `{json.dumps(runs[name]['settings'], sort_keys=True)}`")
        if runs[name].get("kept_from"):
            lines.append(f"  (measured in an earlier run of this script, {runs[name]['date']})")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
