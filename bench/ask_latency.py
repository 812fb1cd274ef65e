"""Benchmark: end-to-end ``ask`` on the demo corpus with the embedded default (local llama.cpp, packaged model).

Twenty questions (written for this benchmark, one or two per demo topic) are asked one after another
through ``MathRAG.ask_stream``, the way the CLI and the chat ask them. Reports first-token and
full-answer latency p50/p95, the share of answers whose citations were all valid, the share where the
model cited on its own, and what post-hoc attribution made of the answers. The LLM server is started
once before the first question (its start-up is reported apart, not inside the latencies).

    python bench/ask_latency.py [--model qwen2.5-coder-1.5b-instruct] [--out bench/results]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from rag_app import MathRAG, Settings
from rag_app.answer import AnswerStatus
from rag_app.citations import citation_numbers

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None, help="packaged chat model; default: the settings' llm.local_model")
    parser.add_argument("--k", type=int, default=None)
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as workdir:
        settings = Settings(data_dir=Settings().data_dir, index_dir=Path(workdir) / "index")
        if args.model:
            settings.llm.local_model = args.model
        with MathRAG(settings) as rag:
            ingest = rag.ingest_demo()
            started = time.perf_counter()
            client = rag.llm_client()  # starts the local server: the embedded default
            server_start_s = time.perf_counter() - started
            rows = []
            for question in tqdm(QUESTIONS, desc="asking", unit="question"):
                stream = rag.ask_stream(question, args.k)
                for _ in stream:
                    pass
                answer = stream.result()
                rows.append(
                    {
                        "question": question,
                        "status": answer.status.value,
                        "first_token_ms": answer.timings_ms.get("first_token"),
                        "full_answer_ms": answer.timings_ms.get("full_answer"),
                        "retrieval_ms": answer.timings_ms.get("retrieval"),
                        "context_tokens": answer.context.tokens,
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

    generated = [r for r in rows if r["status"] in (AnswerStatus.ANSWERED.value, AnswerStatus.UNSUPPORTED.value)]
    first = [r["first_token_ms"] for r in generated]
    full = [r["full_answer_ms"] for r in generated]
    claims = sum(r["sentences"] for r in generated)
    summary = {
        "questions": len(rows),
        "generated": len(generated),
        "not_found": sum(r["status"] == AnswerStatus.NOT_FOUND.value for r in rows),
        "first_token_ms": {"p50": percentile(first, 50), "p95": percentile(first, 95)},
        "full_answer_ms": {"p50": percentile(full, 50), "p95": percentile(full, 95)},
        "retrieval_ms": {"p50": percentile([r["retrieval_ms"] for r in rows], 50)},
        "context_tokens_mean": round(float(np.mean([r["context_tokens"] for r in generated])), 1) if generated else 0,
        "all_citations_valid": round(sum(not r["invalid_citations"] for r in generated) / max(1, len(generated)), 3),
        "model_cited_on_its_own": round(sum(bool(r["model_cited"]) for r in generated) / max(1, len(generated)), 3),
        "cited_after_attribution": round(
            sum(bool(r["model_cited"] or r["attributed"]) for r in generated) / max(1, len(generated)), 3
        ),
        "supported_answers": round(
            sum(r["status"] == AnswerStatus.ANSWERED.value for r in generated) / max(1, len(generated)), 3
        ),
        "claim_sentences": claims,
        "supported_sentences": round(sum(r["supported_sentences"] for r in generated) / max(1, claims), 3),
    }
    result = {
        "machine": {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count()},
        "model": model,
        "server": "llama.cpp (embedded default)",
        "server_start_s": round(server_start_s, 1),
        "max_tokens": settings.llm.max_tokens,
        "top_k": args.k or settings.retrieval.top_k,
        "demo_statements": ingest.statements,
        "summary": summary,
        "answers": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "ask_latency.json").write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    lines = [
        "# Ask latency on the demo corpus (embedded default)",
        "",
        f"{model} on llama.cpp, {result['machine']['cpus']} CPUs, top {result['top_k']} sources, "
        f"max {result['max_tokens']} new tokens; server start {result['server_start_s']} s (not counted). "
        f"{summary['generated']} of {summary['questions']} questions generated an answer "
        f"({summary['not_found']} judged not in the corpus).",
        "",
        "| measure | p50 | p95 |",
        "| --- | ---: | ---: |",
        f"| first token, ms | {summary['first_token_ms']['p50']:,} | {summary['first_token_ms']['p95']:,} |",
        f"| full answer, ms | {summary['full_answer_ms']['p50']:,} | {summary['full_answer_ms']['p95']:,} |",
        "",
        "| answers | share |",
        "| --- | ---: |",
        f"| all citations valid | {summary['all_citations_valid']:.0%} |",
        f"| the model cited on its own | {summary['model_cited_on_its_own']:.0%} |",
        f"| cited after attribution | {summary['cited_after_attribution']:.0%} |",
        f"| supported (at least one claim matched to a source) | {summary['supported_answers']:.0%} |",
        f"| claim sentences supported | {summary['supported_sentences']:.0%} of {summary['claim_sentences']} |",
        "",
    ]
    (args.out / "ask_latency.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
