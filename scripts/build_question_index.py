"""Build the index the question sets are judged against: the development index, plus the demo corpus,
the real-paper style fixtures and the Math StackExchange threads we wrote.

``eval/questions/user-questions.v1.jsonl`` asks about all four; ``research-questions.v1``
and the Stacks slogans are judged on the same index so that one ``rag-app eval`` run compares a change
on the three sets, paired. The development index (``rag-app eval --dev`` builds it) is copied once and
never changed; rerunning adds nothing new (ingest is idempotent).

    python scripts/build_question_index.py [--work ~/.cache/rag-app-questions]   # prints the index path
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from rag_app import MathRAG, Settings
from rag_app.evaluation.runner import eval_index_dir
from rag_app.evaluation.written_mse import WRITTEN_MSE_THREADS, write_posts_xml

ROOT = Path(__file__).resolve().parents[1]
STYLE_FIXTURES = ROOT / "tests" / "fixtures" / "latex_styles"


def build(work: Path) -> Path:
    index = work / "index"
    if not (index / "manifest.json").exists():
        dev_index = eval_index_dir(Settings())
        if not (dev_index / "manifest.json").exists():
            sys.exit(f"no development index at {dev_index}: run `rag-app eval --dev` first")
        shutil.rmtree(index, ignore_errors=True)
        shutil.copytree(dev_index, index)
    rag = MathRAG(Settings(data_dir=work / "data", index_dir=index))
    print(rag.ingest_demo(show_progress=True).summary(), file=sys.stderr)
    papers = sorted(path for path in STYLE_FIXTURES.iterdir() if path.is_dir())
    print(rag.ingest(papers, show_progress=True).summary(), file=sys.stderr)
    posts = work / "mse-written" / "Posts.xml"
    write_posts_xml(WRITTEN_MSE_THREADS, posts)
    print(rag.ingest_mse(posts).summary(), file=sys.stderr)
    return index


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=Path.home() / ".cache" / "rag-app-questions")
    print(build(parser.parse_args().work.expanduser()))


if __name__ == "__main__":
    main()
