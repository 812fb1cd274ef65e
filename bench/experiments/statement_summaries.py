"""Benchmark (issue 60, point 3): what an index-time summary of each statement costs on the local model.

The closest peer embeds an LLM-written slogan of each statement beside its text; on 65 research statements a
slogan read by MiniLM found them better than their LaTeX (MRR 0.58 -> 0.63, issue 60). Before any of it goes
into ingestion, this measures its price: a seeded sample of statements from an index, each summarized by the
configured LLM (the local llama.cpp server here, vLLM in production) with ``prompts/statement_summary``,
timed one at a time. The report extrapolates to the development index and to an arXiv month.

    python bench/experiments/statement_summaries.py --index DIR --sample 30 --out bench/results/statement_summaries

An experiment (bench/experiments/): it decided something once. Decision recorded in
docs/retrieval-and-evaluation.md, section "Issue 60: the stronger packaged embedder, and vectors that follow
in the background", "Index-time summaries, priced": not adopted at ingestion on CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from tqdm import tqdm

from prompts import load_prompt
from rag_app import MathRAG
from rag_app.settings import Settings
from rag_app.training.index_store import open_index_store

STATEMENT_CHARS = 600  # as the question generator reads (training.question_statement_chars)
ARXIV_MONTH_STATEMENTS = 150_000  # about 20,000 math papers a month, a few statements each (order of magnitude)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--sample", type=int, default=30)
    parser.add_argument("--seed", type=int, default=60)
    args = parser.parse_args()
    settings = Settings().with_overrides({"llm.temperature": 0.0, "llm.max_tokens": 60})
    store, _ = open_index_store(args.index)
    records = list(store.iter_records())
    sample = random.Random(args.seed).sample(records, min(args.sample, len(records)))
    prompt = load_prompt("statement_summary")
    client = MathRAG(settings).llm.client()
    client.chat(prompt.messages(kind="Lemma", title="warm-up", statement="$1 + 1 = 2$."), max_tokens=8)
    rows, seconds = [], []
    for record in tqdm(sample, desc="summaries", unit="statement"):
        messages = prompt.messages(
            kind=record.kind.value.capitalize(),
            title=record.title or record.paper_id,
            statement=record.text[:STATEMENT_CHARS],
        )
        started = time.perf_counter()
        summary = " ".join(client.chat(messages).split())
        seconds.append(time.perf_counter() - started)
        rows.append({"docno": record.docno, "seconds": round(seconds[-1], 2), "summary": summary})
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / "summaries.jsonl").open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    per = statistics.mean(seconds)
    report = {
        "model": client.model,
        "prompt": f"{prompt.name}@v{prompt.version}",
        "statements": len(rows),
        "seconds_per_statement": {
            "mean": round(per, 2),
            "p50": round(statistics.median(seconds), 2),
            "max": round(max(seconds), 2),
        },
        "extrapolated_hours": {
            "development index (17,780 statements)": round(17_780 * per / 3600, 1),
            f"an arXiv month (~{ARXIV_MONTH_STATEMENTS:,} statements)": round(ARXIV_MONTH_STATEMENTS * per / 3600, 1),
        },
        "machine": f"{os.cpu_count()} CPUs",
    }
    (args.out / "report.json").write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    print(json.dumps(report, indent=2, ensure_ascii=False))
    for row in rows[:8]:
        print(f"- {row['docno']}: {row['summary']}")


if __name__ == "__main__":
    main()
