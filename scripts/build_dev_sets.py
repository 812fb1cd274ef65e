"""Write the development query sets (``eval/sets/*.v1.jsonl``) from the corpora in ``../shared``.

The set files quote the corpora, so they stay out of git; ``eval/sets/MANIFEST.json`` (committed)
holds the size and sha256 of each, and a test checks that a fresh build matches it.

    python scripts/build_dev_sets.py [--shared ../shared] [--out eval/sets] [--seed 2026] [--sample 500]

The output is deterministic: rerunning it on the same corpora rewrites the same files.
``rag-app eval --dev`` runs the same build before it evaluates.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rag_app.evaluation.dev_sets import write_dev_sets
from rag_app.settings import default_shared_dir

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shared", type=Path, default=default_shared_dir())
    parser.add_argument("--out", type=Path, default=ROOT / "eval" / "sets")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--sample", type=int, default=500, help="queries sampled from the larger Stacks sets")
    args = parser.parse_args()
    for path in write_dev_sets(args.shared, args.out, seed=args.seed, sample=args.sample):
        print(path)


if __name__ == "__main__":
    main()
