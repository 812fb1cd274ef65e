"""Benchmark: what answers assert, measured against the statement that answers each question.

Questions with a known answering statement, from four distributions:

- ``demo``: the 20 demo questions (``eval/answers/demo-questions.v1.jsonl``, demo corpus);
- ``hott``: 12 research questions about the HoTT book (``eval/answers/hott-questions.v1.jsonl``);
- ``slogans``: a seeded sample of the Stacks slogans development set (human-written paraphrases);
- ``thesis``: the 15 thesis-sample questions (arXiv statements of 2025, LLM-written questions).

The index is the development index (``rag-app eval --dev`` builds it) copied once under ``--work``
with the demo corpus added. Every question goes through ``MathRAG.ask_stream`` with each configuration
(``before``: free synthesis with prompt v4 and the support score only, the defaults before issue 40;
``now``: today's defaults), and per set it reports: the answering statement among the retrieved top 10
and among the sources the model was given; cited; quoted word for word; claim sentences marked
supported, flagged and removed; repeated and cut-off answers; first-token and full-answer latency.
Each configuration's answers, sentence by sentence with the text of the sources they cite, go to
``answer_quality-answers-NAME.jsonl`` (ignored by git: the answers quote third-party statements): the
material of the judged set (``eval/answers/judged.v1.jsonl``).

    python bench/answer_quality.py [--only now] [--slogans 30] [--work ~/.cache/rag-app-answers] [--out bench/results]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

import numpy as np
from tqdm import tqdm

from rag_app import MathRAG, Settings
from rag_app.answering.answer import Answer, AnswerStatus
from rag_app.answering.statement_check import source_context
from rag_app.datasets.query_set import EvalQuery, QuerySet
from rag_app.serving.packaged_models import resolve_gguf

ROOT = Path(__file__).resolve().parents[1]
SETS = {
    "demo": ROOT / "eval/answers/demo-questions.v1.jsonl",
    "hott": ROOT / "eval/answers/hott-questions.v1.jsonl",
    "slogans": ROOT / "eval/sets/stacks-slogans-dev.v2.jsonl",
    "thesis": ROOT / "eval/sets/thesis-sample.v2.jsonl",
}
DEV_INDEX = Path.home() / ".local/share/rag-app/eval/index/packaged-all-MiniLM-L6-v2-unicode-math"


def before(settings: Settings) -> Settings:
    """The answer settings before issue 40: the model writes, only the support score checks."""
    settings = settings.model_copy(deep=True)
    settings.answers.style = "synthesis"
    settings.answers.check_statements = False
    settings.llm.prompt = "answer_with_citations@v4"
    return settings


def synthesis(settings: Settings) -> Settings:
    """Free synthesis with today's checks (what a served larger model gets with answers.style = synthesis)."""
    settings = settings.model_copy(deep=True)
    settings.answers.style = "synthesis"
    return settings


CONFIGURATIONS = {"before": before, "synthesis": synthesis, "now": lambda settings: settings}


def questions(slogans: int, seed: int = 40) -> list[tuple[str, EvalQuery]]:
    chosen = []
    for name, path in SETS.items():
        queries = list(QuerySet.load(path).queries)
        if name == "slogans":
            queries = random.Random(seed).sample(queries, min(slogans, len(queries)))
        chosen += [(name, query) for query in queries]
    return chosen


def answer_index(work: Path, dev_index: Path) -> Path:
    """The development index with the demo corpus added (copied once, reused)."""
    index = work / "index"
    if not (index / "manifest.json").exists():
        if not (dev_index / "manifest.json").exists():
            raise SystemExit(f"no development index at {dev_index}: run `rag-app eval --dev` first")
        shutil.rmtree(index, ignore_errors=True)
        shutil.copytree(dev_index, index)
        report = MathRAG(Settings(data_dir=work / "data", index_dir=index)).ingest_demo()
        print(f"demo corpus added: {report.summary()}")
    return index


def gold_ids(rag: MathRAG) -> dict[str, set[str]]:
    """Docno (``paper#label`` or the record's own) to the ids of the statements bearing it."""
    found: dict[str, set[str]] = {}
    for record in rag.index.store.iter_records():
        found.setdefault(record.docno, set()).add(record.id)
    return found


def _quoted(answer: Answer, text: str) -> bool:
    """``text`` appears in the answer word for word (block-quote marks and spacing aside)."""
    plain = " ".join(line.removeprefix(">").strip() for line in answer.text.splitlines())
    return " ".join(text.split()) in " ".join(plain.split())


def ask_one(rag: MathRAG, name: str, query: EvalQuery, gold: set[str]) -> dict[str, Any]:
    stream = rag.ask_stream(query.text)
    for _ in stream:
        pass
    answer = stream.result()
    top10 = [hit.record.id for hit in stream.sources[:10]]
    given = [hit.record.id for hit in answer.sources]
    gold_numbers = [n for n, record_id in enumerate(given, start=1) if record_id in gold]
    gold_texts = [hit.record.text for hit in answer.sources if hit.record.id in gold]
    claims = [s for s in answer.sentences if s.claim]
    return {
        "set": name,
        "qid": query.qid,
        "question": query.text,
        "gold": sorted(query.relevant),
        "status": answer.status.value,
        "style": answer.style,
        "gold_in_top10": any(i in gold for i in top10),
        "gold_given": bool(gold_numbers),
        "gold_cited": any(n in answer.cited for n in gold_numbers),
        "gold_quoted": any(_quoted(answer, text) for text in gold_texts),
        "sources_given": len(given),
        "claims": len(claims),
        "supported": sum(s.supported for s in claims),
        "flagged": sum(not s.supported for s in claims),
        "removed": len(answer.removed_sentences),
        "repeated": answer.repeated_sentences,
        "truncated": answer.truncated,
        "first_token_ms": answer.timings_ms.get("first_token"),
        "full_answer_ms": answer.timings_ms.get("full_answer"),
        "answer": answer.text,
        "raw_answer": answer.raw_text,
        "sentences": [
            {
                **sentence.to_dict(),
                "cited_sources": [
                    {
                        "number": n,
                        "docno": answer.sources[n - 1].record.docno,
                        "text": answer.sources[n - 1].record.text,
                        "context": source_context(answer.sources[n - 1].record),
                    }
                    for n in (sentence.cited or sentence.attributed)
                    if 1 <= n <= len(answer.sources)
                ],
            }
            for sentence in answer.sentences
        ],
    }


def percentile(values: list[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)), 1) if values else None


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    generated = [r for r in rows if r["status"] in (AnswerStatus.ANSWERED.value, AnswerStatus.UNSUPPORTED.value)]
    claims = sum(r["claims"] for r in rows)

    def share(key: str, among: list[dict[str, Any]] = rows) -> float | None:
        return round(sum(bool(r[key]) for r in among) / len(among), 3) if among else None

    given = [r for r in rows if r["gold_given"]]
    return {
        "questions": len(rows),
        "generated": len(generated),
        "gold_in_top10": share("gold_in_top10"),
        "gold_given": share("gold_given"),
        "gold_cited": share("gold_cited"),
        "gold_cited_when_given": share("gold_cited", given),
        "gold_quoted": share("gold_quoted"),
        "unsupported": round(sum(r["status"] == AnswerStatus.UNSUPPORTED.value for r in rows) / len(rows), 3)
        if rows
        else None,
        "claims": claims,
        "claims_supported": sum(r["supported"] for r in rows),
        "claims_flagged": sum(r["flagged"] for r in rows),
        "sentences_removed": sum(r["removed"] for r in rows),
        "answers_with_repeats": sum(r["repeated"] > 0 for r in rows),
        "answers_cut_off": sum(bool(r["truncated"]) for r in rows),
        "first_token_ms": {"p50": percentile([r["first_token_ms"] for r in generated if r["first_token_ms"]], 50),
                           "p95": percentile([r["first_token_ms"] for r in generated if r["first_token_ms"]], 95)},
        "full_answer_ms": {"p50": percentile([r["full_answer_ms"] for r in generated if r["full_answer_ms"]], 50),
                           "p95": percentile([r["full_answer_ms"] for r in generated if r["full_answer_ms"]], 95)},
    }  # fmt: skip


def run(settings: Settings, chosen: list[tuple[str, EvalQuery]]) -> dict[str, Any]:
    with MathRAG(settings) as rag:
        golds = gold_ids(rag)
        started = time.perf_counter()
        model = rag.llm.client().model  # starts the local server: not counted in any answer's latency
        server_start_s = time.perf_counter() - started
        rows = []
        for name, query in tqdm(chosen, desc="asking", unit="question"):
            gold = set().union(*(golds.get(docno, set()) for docno in query.relevant))
            rows.append(ask_one(rag, name, query, gold))
    by_set = {name: summarize([r for r in rows if r["set"] == name]) for name in SETS}
    return {
        "model": model,
        "server_start_s": round(server_start_s, 1),
        "summary": {"all": summarize(rows), **by_set},
        "answers": rows,
    }


MEASURES = [
    ("questions", "questions"),
    ("answering statement in the top 10", "gold_in_top10"),
    ("... among the sources given", "gold_given"),
    ("... cited", "gold_cited"),
    ("... cited when given", "gold_cited_when_given"),
    ("... quoted word for word", "gold_quoted"),
    ("answers with status unsupported (quote: no source picked)", "unsupported"),
    ("claim sentences", "claims"),
    ("claims marked supported", "claims_supported"),
    ("claims flagged", "claims_flagged"),
    ("sentences removed", "sentences_removed"),
    ("answers with repeats", "answers_with_repeats"),
    ("answers cut off", "answers_cut_off"),
    ("first token p50 / p95, ms", "first_token_ms"),
    ("full answer p50 / p95, ms", "full_answer_ms"),
]


def _cell(value: Any) -> str:
    if isinstance(value, dict):
        return f"{value['p50']:,} / {value['p95']:,}" if value["p50"] is not None else "—"
    if isinstance(value, float):
        return f"{value:.0%}"
    return "—" if value is None else f"{value:,}"


def markdown(result: dict[str, Any]) -> str:
    runs = result["runs"]
    lines = [
        "# Answer quality against the answering statement",
        "",
        f"{result['date']}, {result['machine']['cpus']} CPUs, {Path(next(iter(runs.values()))['model']).name} on "
        "llama.cpp (embedded default); the same questions with each configuration, one after another.",
        "",
    ]
    for scope in ["all", *SETS]:
        lines += [f"## {scope}", "", "| measure | " + " | ".join(runs) + " |", "| --- |" + " ---: |" * len(runs)]
        for label, key in MEASURES:
            lines.append(f"| {label} | " + " | ".join(_cell(runs[n]["summary"][scope][key]) for n in runs) + " |")
        lines.append("")
    lines += ["Settings:", ""]
    for name, data in runs.items():
        lines.append(f"- {name}: `{json.dumps(data['settings'], sort_keys=True)}`")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="*", choices=list(CONFIGURATIONS), help="configurations (default: all)")
    parser.add_argument("--slogans", type=int, default=30, help="slogans sampled from the development set")
    parser.add_argument("--dev-index", type=Path, default=DEV_INDEX)
    parser.add_argument("--work", type=Path, default=Path.home() / ".cache" / "rag-app-answers")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args()

    index = answer_index(args.work, args.dev_index)
    chosen = questions(args.slogans)
    runs = {}
    for name, configure in CONFIGURATIONS.items():
        if args.only and name not in args.only:
            continue
        base = Settings(data_dir=args.work / "data", index_dir=index)
        base.llm.local_model = str(resolve_gguf(base.llm.local_model, Settings().data_dir))
        settings = configure(base)
        runs[name] = run(settings, chosen)
        runs[name]["settings"] = {
            "llm": settings.llm.model_dump(mode="json", include={"prompt", "max_tokens", "temperature"}),
            "answers": settings.answers.model_dump(mode="json"),
        }
        args.out.mkdir(parents=True, exist_ok=True)
        with (args.out / f"answer_quality-answers-{name}.jsonl").open("w", encoding="utf-8") as handle:
            for row in runs[name]["answers"]:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        print(name, json.dumps(runs[name]["summary"]["all"]), flush=True)
    result = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count()},
        "runs": {name: {k: v for k, v in data.items() if k != "answers"} for name, data in runs.items()},
    }
    (args.out / "answer_quality.json").write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    (args.out / "answer_quality.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
