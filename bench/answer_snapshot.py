"""Benchmark: does a change of the answering code change what users are shown, on the untouched halves?

``take`` asks every question of the untouched halves (``--side tune`` or ``all``: the tuned halves too)
(``eval/sets/halves.v1.json``; the sets written apart are untouched whole) through ``MathRAG.ask`` on the benchmark
index of ``bench/answer_choice.py`` (the model not asked: ``answers.quote.model_adds`` off, as the verdict's live
measure) and writes, per question, what the answer showed: the ranking (the sources' docnos), the quoted numbers,
who chose them, the verdict and its confidence, the text's hash, and whether the first quote is judged to answer.
``compare`` reads two such files and lists every question whose answer differs, with the settles counts of each side
per set (so a difference is also measured).

    python bench/answer_snapshot.py take NAME [--index DIR]     # ~/.cache/rag-app-choice/snapshot-NAME.jsonl
    python bench/answer_snapshot.py compare BEFORE AFTER [--out bench/results/answer_snapshot-BEFORE-AFTER.md]

To take the "before" side of a change, run ``take`` from a checkout of the old commit
(``git worktree add /tmp/before COMMIT``; ``PYTHONPATH=/tmp/before python /tmp/before/bench/answer_snapshot.py``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))
from answer_choice import DEFAULT_WORK, all_sets, open_rag, places

from rag_app.datasets.set_halves import SetHalves

OUT = Path(__file__).resolve().parent / "results"
DOUBT = ("unsure", "not_found")
SHOWN = ("ranking", "picked", "chosen_by", "verdict", "confidence", "text")  # what a difference is read in


def take(name: str, index: Path, side: str = "untouched") -> Path:
    rag = open_rag(index, model_adds=False)
    sets = all_sets()
    halves = SetHalves.of(sets)
    path = DEFAULT_WORK / f"snapshot-{name}.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        for query_set in sets:
            asked = [q for q in query_set.queries if side == "all" or halves.side(query_set.name, q.qid) == side]
            for query in tqdm(asked, desc=query_set.name, unit="q"):
                answer = rag.ask(query.text)
                sources = list(answer.generation.sources) or list(answer.retrieval.hits)
                gold = {docno for docno, grade in query.relevant.items() if grade > 0}
                picked = list(answer.generation.picked)
                read = answer.generation.verdict
                row = {
                    "set": query_set.name,
                    "qid": query.qid,
                    "side": halves.side(query_set.name, query.qid),
                    "ranking": [hit.record.docno for hit in sources],
                    "picked": picked,
                    "chosen_by": answer.generation.chosen_by,
                    "verdict": read.verdict.value if read is not None else None,
                    "confidence": round(read.confidence, 4) if read is not None and read.confidence else None,
                    "text": hashlib.sha1(answer.text.encode()).hexdigest()[:12],
                    "settles": bool(picked) and bool(places(rag, sources[picked[0] - 1]) & gold),
                    "first_settles": bool(sources) and bool(places(rag, sources[0]) & gold),  # the ranker's first
                }
                handle.write(json.dumps(row) + "\n")
    return path


def read(name: str) -> dict[tuple[str, str], dict[str, Any]]:
    path = DEFAULT_WORK / f"snapshot-{name}.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {(row["set"], row["qid"]): row for row in rows}


def compare(before_name: str, after_name: str, out: Path) -> str:
    before, after = read(before_name), read(after_name)
    keys = sorted(before.keys() & after.keys())
    changed = [key for key in keys if any(before[key][f] != after[key][f] for f in SHOWN)]
    what = Counter(f for key in changed for f in SHOWN if before[key][f] != after[key][f])
    per_set: dict[tuple[str, str], list[int]] = {}
    for key in keys:
        counts = per_set.setdefault((key[0], before[key].get("side", "untouched")), [0] * 10)
        counts[0] += 1
        counts[1] += bool(after[key].get("first_settles"))
        for side, row in enumerate((before[key], after[key])):
            undoubted = bool(row["picked"]) and row["verdict"] not in DOUBT
            counts[2 + side] += row["settles"]
            counts[4 + side] += undoubted and row["settles"]
            counts[6 + side] += undoubted and not row["settles"]
            counts[8 + side] += not undoubted and not row["settles"]
    lines = [
        f"# Answers: {before_name} against {after_name}",
        "",
        f"{len(keys)} questions asked on both sides; **{len(changed)} answers differ** "
        f"({', '.join(f'{f}: {n}' for f, n in what.most_common()) or 'in nothing'}).",
        "",
        "Settles: the first quote is a statement judged to answer; first result: quoting the ranker's first result "
        "instead. Undoubted: quoted under a verdict other than `unsure` or `not_found` (the answer presented as "
        "settled): right when its first quote settles, wrong when not. Doubted where it should: `unsure` or "
        "`not_found` on an answer whose first quote does not settle.",
        "",
        "| set | half | questions | first result settles | settles: before | after | undoubted right: before "
        "| after | undoubted wrong: before | after | doubted where it should: before | after |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        *(f"| {name} | {half} | {' | '.join(map(str, counts))} |" for (name, half), counts in sorted(per_set.items())),
        "",
    ]
    if changed:
        lines += ["| set | question | what differs | before | after |", "| --- | --- | --- | --- | --- |"]
        for key in changed:
            fields = [f for f in SHOWN if before[key][f] != after[key][f]]
            show = [f for f in fields if f != "text"] or fields
            b = "; ".join(f"{f}={before[key][f]}" for f in [*show, "settles"])
            a = "; ".join(f"{f}={after[key][f]}" for f in [*show, "settles"])
            lines.append(f"| {key[0]} | {key[1]} | {', '.join(fields)} | {b} | {a} |")
    text = "\n".join(lines) + "\n"
    out.write_text(text, encoding="utf-8")
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    take_parser = commands.add_parser("take")
    take_parser.add_argument("name")
    take_parser.add_argument("--index", type=Path, default=DEFAULT_WORK / "index")
    take_parser.add_argument("--side", choices=("untouched", "tune", "all"), default="untouched")
    compare_parser = commands.add_parser("compare")
    compare_parser.add_argument("before")
    compare_parser.add_argument("after")
    compare_parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.command == "take":
        print(take(args.name, args.index, args.side))
    else:
        out = args.out or OUT / f"answer_snapshot-{args.before}-{args.after}.md"
        print(compare(args.before, args.after, out))


if __name__ == "__main__":
    main()
