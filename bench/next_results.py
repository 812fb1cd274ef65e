"""Benchmark (issue 76): how often the answering statement is visible without a click, before and after the list
of next results under the answer, and what the list costs.

For each question of each set, ``MathRAG.ask`` runs with the language model out of reach (the sources and the list
come from the search alone; the model only picks among the sources it reads), twice, in turn: once with the next
results (``retrieval.next_results``, the default) and once without (``retrieval.next_results = 0``, the answer
before this issue). With the answering statement known, each question says whether it is

- quoted or in the source cards (``answer.sources``, what the chat showed before): **visible before**;
- there, or in the first ``ui.next_results_shown`` lines of the list: **visible after**;
- in the search's top 4 / top 20 (Hit@4, Hit@20), beside them.

The cost: the answer's retrieval time with and without the list (the same questions, interleaved, one process),
the time to lay out the lines (grouping by place, first words), and the chat page's rerun with and without
the list (the real app under AppTest). The floor, measured in the same run
(bench/floors.py): the questions' embedding alone, so the extra milliseconds are also given in query embeddings.

    python bench/next_results.py [--index ~/.cache/rag-app-claims/index] [--set FILE ...] [--out bench/results]

Results: ``bench/results/next_results.{json,md}``.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

import numpy as np
from floors import percentile, query_embedding_floor, ratio
from tqdm import tqdm

from rag_app import MathRAG, Settings
from rag_app.datasets.query_set import QuerySet
from rag_app.result_files import json_text
from rag_app.search.result_list import first_words, grouped_by_place

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_INDEX = Path.home() / ".cache/rag-app-choice/index"  # the index of bench/answer_choice.py
DEFAULT_SETS = [
    ROOT / "eval/questions/research-questions.v1.jsonl",
    ROOT / "eval/questions/user-questions.v1.jsonl",
    ROOT / "eval/questions/yes-no-questions.v1.jsonl",
]
DOWN = "http://127.0.0.1:9/v1"  # nothing listens: the answer's search alone, no model


def settings_for(index: Path, next_results: int) -> Settings:
    settings = Settings(data_dir=index.parent / "data", index_dir=index)
    settings.llm.base_url, settings.llm.retries = DOWN, 0
    settings.retrieval.next_results = next_results
    return settings


def lay_out(hits: list[Any]) -> float:
    """What the chat does with the list before drawing it (grouping, first words), in ms."""
    started = time.perf_counter()
    for group in grouped_by_place(hits):
        for hit in group.hits:
            first_words(hit.record.text)
    return (time.perf_counter() - started) * 1000


def measure_set(path: Path, with_list: MathRAG, without: MathRAG, shown: int) -> dict[str, Any]:
    query_set = QuerySet.load(path)
    rows = []
    for position, query in enumerate(tqdm(query_set.queries, desc=path.stem, unit="question")):
        gold = set(query.relevant)
        if position % 2:  # in turn, so that neither always meets the caches the other warmed
            after, before = with_list.ask(query.text), without.ask(query.text)
        else:
            before, after = without.ask(query.text), with_list.ask(query.text)
        ranking = [*after.retrieval.hits, *after.retrieval.next_hits]
        cards = [hit.record.docno for hit in after.sources]
        listed = [hit.record.docno for hit in after.next_results[:shown]]
        rows.append(
            {
                "qid": query.qid,
                "sources_same": [h.record.id for h in before.sources] == [h.record.id for h in after.sources],
                "visible_before": bool(gold & {hit.record.docno for hit in before.sources}),
                "visible_after": bool(gold & (set(cards) | set(listed))),
                "hit_at_4": bool(gold & {hit.record.docno for hit in ranking[:4]}),
                "hit_at_20": bool(gold & {hit.record.docno for hit in ranking[:20]}),
                "cards": len(cards),
                "listed": len(listed),
                "retrieval_ms_without": before.timings_ms.get("retrieval"),
                "retrieval_ms_with": after.timings_ms.get("retrieval"),
                "layout_ms": lay_out(after.next_results[:shown]),
            }
        )
    floor = query_embedding_floor(with_list.index.embedder, [query.text for query in query_set.queries])
    return {"set": query_set.name, "questions": len(rows), "floor_query_embedding": floor,
            "summary": summarize(rows, floor), "rows": rows}  # fmt: skip


def summarize(rows: list[dict[str, Any]], floor: dict[str, float]) -> dict[str, Any]:
    n = len(rows)

    def share(key: str) -> float:
        return round(sum(bool(row[key]) for row in rows) / n, 3) if n else float("nan")

    extra = [row["retrieval_ms_with"] - row["retrieval_ms_without"] for row in rows]
    return {
        "visible_before": share("visible_before"),
        "visible_after": share("visible_after"),
        "gained": sum(row["visible_after"] and not row["visible_before"] for row in rows),
        "lost": sum(row["visible_before"] and not row["visible_after"] for row in rows),
        "hit_at_4": share("hit_at_4"),
        "hit_at_20": share("hit_at_20"),
        "sources_unchanged": share("sources_same"),
        "cards_mean": round(float(np.mean([row["cards"] for row in rows])), 2),
        "retrieval_ms_without": {"p50": percentile([r["retrieval_ms_without"] for r in rows], 50),
                                 "p95": percentile([r["retrieval_ms_without"] for r in rows], 95)},
        "retrieval_ms_with": {"p50": percentile([r["retrieval_ms_with"] for r in rows], 50),
                              "p95": percentile([r["retrieval_ms_with"] for r in rows], 95)},
        "list_extra_ms": {"p50": percentile(extra, 50), "p95": percentile(extra, 95)},
        "list_extra_x_embedding": ratio(percentile(extra, 50), floor["p50_ms"]),
        "layout_ms": {"p50": percentile([r["layout_ms"] for r in rows], 50),
                      "p95": percentile([r["layout_ms"] for r in rows], 95)},
    }  # fmt: skip


def page_render_ms(index: Path, shown: int, question: str, reruns: int = 10) -> dict[str, float]:
    """The chat page's script run (the real app, AppTest) redrawing one answer with ``shown`` lines under it:
    what each rerun of the page costs in Python (the browser's drawing is not in it)."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    os.environ.update({"RAG_APP_INDEX_DIR": str(index), "RAG_APP_DATA_DIR": str(index.parent / "data"),
                       "RAG_APP_LLM__BASE_URL": DOWN, "RAG_APP_LLM__RETRIES": "0",
                       "RAG_APP_UI__NEXT_RESULTS_SHOWN": str(shown)})  # fmt: skip
    st.cache_resource.clear()
    st.cache_data.clear()
    app = AppTest.from_file(str(ROOT / "ui" / "chat_app.py"), default_timeout=300).run()
    app.chat_input[0].set_value(question).run()
    times = []
    for _ in range(reruns):
        started = time.perf_counter()
        app.run()
        times.append((time.perf_counter() - started) * 1000)
    return {"p50_ms": percentile(times, 50), "max_ms": round(max(times), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, default=DEFAULT_INDEX)
    parser.add_argument("--set", type=Path, action="append", dest="sets", help="a question set (repeatable)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args()
    if not (args.index / "manifest.json").exists():
        sys.exit(f"no index at {args.index}: `python bench/answer_choice.py collect` builds it")
    with_list = MathRAG(settings_for(args.index, Settings().retrieval.next_results))
    without = MathRAG(settings_for(args.index, 0))
    shown = with_list.settings.ui.next_results_shown
    with_list.search("warm up", 5)
    without.search("warm up", 5)
    sets = [measure_set(path, with_list, without, shown) for path in args.sets or DEFAULT_SETS]
    question = QuerySet.load((args.sets or DEFAULT_SETS)[0]).queries[0].text
    runs: dict[str, list[dict[str, float]]] = {"without the list": [], "with the list": []}
    for name, lines in [("without the list", 0), ("with the list", shown)] * 3:  # in turn, three times each
        runs[name].append(page_render_ms(args.index, lines, question))
    page = {
        name: {"p50_ms": float(np.median([r["p50_ms"] for r in rows])), "max_ms": max(r["max_ms"] for r in rows)}
        for name, rows in runs.items()
    }
    result = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count()},
        "index": str(args.index),
        "statements": with_list.index.count(),
        "top_k": with_list.settings.retrieval.top_k,
        "next_results_kept": with_list.settings.retrieval.next_results,
        "next_results_shown": shown,
        "sets": sets,
        "page_rerun": page,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "next_results.json").write_text(json_text(result))
    (args.out / "next_results.md").write_text(markdown(result))
    print(markdown(result))


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "# The next results under an answer: the answering statement visible without a click",
        "",
        f"{result['date']}, {result['machine']['cpus']} CPUs; index `{result['index']}` "
        f"({result['statements']:,} statements); the answer's sources (top {result['top_k']} searched) and the "
        f"first {result['next_results_shown']} lines of the list ({result['next_results_kept']} kept). The model "
        "out of reach: the sources and the list come from the search alone.",
        "",
        "| set | questions | visible before (cards, quote) | visible after (+ the list) | gained / lost | Hit@4 "
        "| Hit@20 | sources unchanged |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for one in result["sets"]:
        s = one["summary"]
        lines.append(
            f"| {one['set']} | {one['questions']} | {s['visible_before']} | {s['visible_after']} | {s['gained']} / "
            f"{s['lost']} | {s['hit_at_4']} | {s['hit_at_20']} | {s['sources_unchanged']} |"
        )
    lines += [
        "",
        "What the list costs (the answer's retrieval with and without it, interleaved; the lines laid out):",
        "",
        "| set | retrieval p50 / p95 ms, without | with | the list's extra ms p50 / p95 (in query embeddings) "
        "| laying out the lines p50 / p95 ms | floor: query embedding p50 ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for one in result["sets"]:
        s = one["summary"]
        lines.append(
            f"| {one['set']} | {s['retrieval_ms_without']['p50']} / {s['retrieval_ms_without']['p95']} "
            f"| {s['retrieval_ms_with']['p50']} / {s['retrieval_ms_with']['p95']} "
            f"| {s['list_extra_ms']['p50']} / {s['list_extra_ms']['p95']} ({s['list_extra_x_embedding']}x) "
            f"| {s['layout_ms']['p50']} / {s['layout_ms']['p95']} | {one['floor_query_embedding']['p50_ms']} |"
        )
    page = result["page_rerun"]
    lines += [
        "",
        "The chat page redrawing one answer (the real app under AppTest; the median of three runs of 10 reruns each, "
        "the two in turn; Python's share of a redraw): "
        + "; ".join(f"{name}: p50 {row['p50_ms']} ms, max {row['max_ms']} ms" for name, row in page.items())
        + ".",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
