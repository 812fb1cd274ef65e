"""Benchmark: how long is the question's walk through the code, and is each of its readings made once?

Follows questions through ``MathRAG.ask`` (after one warm-up question, so that loading models is not counted) with
a profiler hook and counts, per question: the project's files and functions the walk passes through, how many times
control enters the module that composes the answer (from a function outside it), and how many times each reading
of the question is made (the readability check, "does it ask yes or no", its LaTeX, its typed notation, the claim
reading, "does it ask for a proof").

    python bench/question_walk.py [--index DIR] [--composer rag_app/answering/answerer.py] [--name NAME]

Writes ``bench/results/question_walk-NAME.md``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from answer_choice import DEFAULT_WORK, open_rag

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("rag_app", "retriever", "ingestion", "prompts")
# the question's readings: function names (qualified where a bare name would be ambiguous)
READINGS = (
    "check_readable",
    "is_yes_no_question",
    "question_latex",
    "read_typed_notation",
    "AskedQuestion.read",
    "asks_for_proof",
)
QUESTIONS = (
    "Is every finitely generated flat module over a local ring free?",
    "What is a univalent universe?",
    "If $f: X \\to Y$ is proper and $Y$ is separated, is $X$ separated?",
    "Does every abelian category have enough injectives?",
)


class Walk:
    """What one traced call saw: the files and functions entered, the composer's entries, the readings made."""

    def __init__(self, root: Path, composer: str) -> None:
        self.root = str(root)
        self.composer = str(root / composer)
        self.files: set[str] = set()
        self.functions: set[tuple[str, str]] = set()
        self.composer_entries = 0
        self.composer_resumes = 0  # a generator of the composer resumed from outside (the stream read on)
        self._entered: list[FrameType] = []  # kept alive, so that a resumed generator's frame is known by identity
        self.readings: Counter[str] = Counter()

    def _ours(self, filename: str) -> str | None:
        if not filename.startswith(self.root):
            return None
        relative = filename[len(self.root) + 1 :]
        return relative if relative.split("/", 1)[0] in PACKAGES else None

    def hook(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        code = frame.f_code
        relative = self._ours(code.co_filename)
        if relative is None or code.co_name.startswith("<"):  # comprehensions and lambdas are their function's
            return
        self.files.add(relative)
        self.functions.add((relative, code.co_qualname))
        caller = frame.f_back
        if code.co_filename == self.composer and (caller is None or caller.f_code.co_filename != self.composer):
            if any(frame is entered for entered in self._entered):
                self.composer_resumes += 1
            else:
                self.composer_entries += 1
                self._entered.append(frame)
        for reading in READINGS:
            if (code.co_qualname == reading or code.co_name == reading) and not _already_read(reading, frame):
                self.readings[reading] += 1


def _already_read(reading: str, frame: FrameType) -> bool:
    """A reading called on what was read already returns it at once: not a reading (a checked text, a question
    already read)."""
    code = frame.f_code
    names = [name for name in code.co_varnames[: code.co_argcount] if name not in ("self", "cls")]
    first = frame.f_locals.get(names[0]) if names else None
    read_already = {"check_readable": "ReadableText", "AskedQuestion.read": "AskedQuestion"}
    return type(first).__name__ == read_already.get(reading)


def trace(rag: Any, question: str, composer: str) -> Walk:
    walk = Walk(ROOT, composer)
    sys.setprofile(walk.hook)
    try:
        rag.ask(question)
    finally:
        sys.setprofile(None)
    return walk


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, default=DEFAULT_WORK / "index")
    parser.add_argument("--composer", default="rag_app/answering/answerer.py")
    parser.add_argument("--name", default="now")
    args = parser.parse_args()
    rag = open_rag(args.index, model_adds=False)
    rag.ask("What is a flat module?")  # warm-up: models loaded, caches filled
    walks = [(question, trace(rag, question, args.composer)) for question in QUESTIONS]
    lines = [
        f"# The question's walk through `MathRAG.ask` ({args.name})",
        "",
        f"Composer: `{args.composer}`; the model not asked (`answers.quote.model_adds` off); after a warm-up.",
        "",
        "| question | files (rag_app) | functions (rag_app) | composer entered (its stream resumed) | "
        + " | ".join(f"`{r}`" for r in READINGS)
        + " |",
        "| --- | --- | --- | ---: | " + " | ".join("---:" for _ in READINGS) + " |",
    ]
    for question, walk in walks:
        counts = " | ".join(str(walk.readings[r]) for r in READINGS)
        ours = [f for f in walk.files if f.startswith("rag_app/")]
        our_functions = [f for f in walk.functions if f[0].startswith("rag_app/")]
        files, functions = f"{len(walk.files)} ({len(ours)})", f"{len(walk.functions)} ({len(our_functions)})"
        entered = f"{walk.composer_entries} ({walk.composer_resumes})"
        lines.append(f"| {question} | {files} | {functions} | {entered} | {counts} |")
    text = "\n".join(lines) + "\n"
    out = ROOT / "bench/results" / f"question_walk-{args.name}.md"
    out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
