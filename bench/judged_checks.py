"""Benchmark: the answer checks against the judged set, sentences labelled by reading them.

``eval/answers/judged.v1.jsonl`` holds sentences that answers gave (``bench/answer_quality.py``, free
synthesis by the packaged 1.5B model), each with the text of the sources it cites and a label given by
reading it against them:

- ``stated``: the cited source states it (a faithful restatement counts);
- ``true-not-stated``: true, but not what the cited source says (background, another source's claim);
- ``wrong``: false, or not what the source says (a dropped hypothesis, an inserted word, a changed
  connective, a reversed example, a link no source makes, the question restated as its answer);
- ``filler``: no mathematical claim ("Yes.", "The sources do not say.").

For each checker, over the claim sentences: how many wrong sentences it catches (recall; the target is
95%), how many stated ones it flags (the target is at most 10%), and the precision of its flags.
Checkers: ``support`` (the support score alone: what marked sentences supported before issue 40),
``statement`` (the statement check alone) and ``support+statement`` (what written answers use now).

    python bench/judged_checks.py [--judged eval/answers/judged.v1.jsonl] [--index DIR] [--out bench/results]

The judged set names each cited source by its docno only: the statements themselves are third-party
text (the Stacks project, the HoTT book, arXiv papers) and are read from the index
``bench/answer_quality.py`` builds (the development index plus the demo corpus), never copied here.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from ingestion.formula_spans import find_formula_spans
from rag_app import MathRAG
from rag_app.answering.attribution import MIN_CLAIM_WORDS, support_features
from rag_app.answering.statement_check import StatementChecker, source_context
from rag_app.search.embedder_factory import make_embedder
from rag_app.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
ANSWER_INDEX = Path.home() / ".cache" / "rag-app-answers" / "index"  # bench/answer_quality.py's --work
LABELS = ("stated", "true-not-stated", "wrong", "filler")


def load(path: Path) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        row = json.loads(line)
        if row.get("label") not in LABELS:
            raise SystemExit(f"{path}:{number}: label {row.get('label')!r} is not one of {', '.join(LABELS)}")
        rows.append(row)
    return rows


def cited_texts(rows: list[dict[str, Any]], index: Path) -> list[tuple[str, str]]:
    """Each row's cited sources from the index: (statement texts, with headings) joined, and the texts alone."""
    if not (index / "manifest.json").exists():
        raise SystemExit(f"no index at {index}: run bench/answer_quality.py first (it builds one) or pass --index")
    wanted = {source["docno"] for row in rows for source in row["cited_sources"]}
    found = {}
    for record in MathRAG(Settings(index_dir=index)).index.store.iter_records():
        if record.docno in wanted:
            found[record.docno] = record
    missing = sorted(wanted - set(found))
    if missing:
        raise SystemExit(f"{index}: {len(missing)} cited statements are not in this index, e.g. {missing[0]}")
    return [
        (
            "\n".join(source_context(found[s["docno"]]) for s in row["cited_sources"]),
            "\n".join(found[s["docno"]].text for s in row["cited_sources"]),
        )
        for row in rows
    ]


def flags(rows: list[dict[str, Any]], settings: Settings, index: Path) -> dict[str, list[bool]]:
    """For each checker, whether it flags each sentence (True: not supported)."""
    embedder = make_embedder(settings)
    sentences = [row["sentence"] for row in rows]
    # what the answer's check reads: each cited source with its heading (statement_check.source_context)
    sources, plain = zip(*cited_texts(rows, index), strict=True) if rows else ((), ())
    sentence_vectors = embedder.embed_documents(sentences)
    source_vectors = embedder.embed_documents(list(plain))
    checker = StatementChecker()
    support, statement = [], []
    vectors = zip(sentence_vectors, source_vectors, strict=True)
    for row, sentence, source, text, (s_vec, t_vec) in zip(rows, sentences, sources, plain, vectors, strict=True):
        score = support_features(sentence, s_vec, text, t_vec).score if text else 0.0
        support.append(score < settings.answers.min_support)
        before = rows[len(statement) - 1] if statement else None
        previous = before["sentence"] if before and before["qid"] == row["qid"] else ""
        statement.append(not source or not checker.check(sentence, source, row.get("question", ""), previous).stated)
    both = [a or b for a, b in zip(support, statement, strict=True)]
    return {"support": support, "statement": statement, "support+statement": both}


def is_claim(sentence: str) -> bool:
    return bool(find_formula_spans(sentence)) or len(sentence.split()) >= MIN_CLAIM_WORDS


def measure(rows: list[dict[str, Any]], flagged: list[bool]) -> dict[str, Any]:
    claims = [(row["label"], flag) for row, flag in zip(rows, flagged, strict=True) if is_claim(row["sentence"])]
    wrong = [flag for label, flag in claims if label == "wrong"]
    stated = [flag for label, flag in claims if label == "stated"]
    unstated = [flag for label, flag in claims if label == "true-not-stated"]
    flags_raised = [label for label, flag in claims if flag]
    passed = [label for label, flag in claims if not flag]
    return {
        "wrong_caught": f"{sum(wrong)} of {len(wrong)}",
        "recall_wrong": round(sum(wrong) / len(wrong), 3) if wrong else None,
        "stated_flagged": f"{sum(stated)} of {len(stated)}",
        "stated_flag_rate": round(sum(stated) / len(stated), 3) if stated else None,
        "true_not_stated_flagged": f"{sum(unstated)} of {len(unstated)}",
        "precision_of_flags": round(flags_raised.count("wrong") / len(flags_raised), 3) if flags_raised else None,
        "passed_as_supported": len(passed),
        "wrong_among_passed": f"{passed.count('wrong')} of {len(passed)}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--judged", type=Path, default=ROOT / "eval/answers/judged.v1.jsonl")
    parser.add_argument("--index", type=Path, default=ANSWER_INDEX, help="where the cited statements are read")
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results")
    args = parser.parse_args()
    rows = load(args.judged)
    settings = Settings()
    results = {name: measure(rows, flagged) for name, flagged in flags(rows, settings, args.index).items()}
    result = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "judged": str(args.judged.relative_to(ROOT) if args.judged.is_relative_to(ROOT) else args.judged),
        "sentences": len(rows),
        "labels": dict(Counter(row["label"] for row in rows)),
        "support_threshold": settings.answers.min_support,
        "checkers": results,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "judged_checks.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        "# The answer checks on the judged set",
        "",
        f"{result['date']}: {len(rows)} sentences of `{result['judged']}` ({result['labels']}); claim sentences only.",
        "",
        "| checker | wrong caught | recall on wrong | stated flagged | flag rate on stated | true-not-stated flagged "
        "| precision of flags | wrong among those passed |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, m in results.items():
        lines.append(
            f"| {name} | {m['wrong_caught']} | {m['recall_wrong']} | {m['stated_flagged']} | {m['stated_flag_rate']} "
            f"| {m['true_not_stated_flagged']} | {m['precision_of_flags']} | {m['wrong_among_passed']} |"
        )
    (args.out / "judged_checks.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
