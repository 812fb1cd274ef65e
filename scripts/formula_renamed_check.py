"""Formula-only search when the query renames the variables: lexical channel alone vs with the encoder.

Takes the stacks-formulas development set (built by `rag-app eval --dev`), renames the single-letter
variables of every query formula by one fixed, seeded permutation of the alphabet, and searches by
formula in the development index (its fusion vectors built: `rag-app build-fusion`). Prints MRR@10 of
the lexical formula channel alone and fused with the formula encoder's nearest formulas.

    .venv/bin/python scripts/formula_renamed_check.py [SET.jsonl] [--index DIR]
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path

from ingestion.formula_spans import find_formula_spans
from rag_app import MathRAG, Settings
from retriever.search.formula_lexical_searcher import FormulaLexicalSearcher

_LETTERS = list("abcdefghijkmnpqrstuvwxyz")
_VARIABLE = re.compile(r"(?<![\\A-Za-z])([a-z])(?![A-Za-z])")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("set", nargs="?", default="eval/sets/stacks-formulas.v2.jsonl")
    parser.add_argument("--index", type=Path, default=None, help="default: the development index")
    args = parser.parse_args()
    settings = Settings.load()
    index_dir = args.index or settings.data_dir / "eval" / "index" / "packaged-all-MiniLM-L6-v2"
    rag = MathRAG(settings.model_copy(update={"index_dir": index_dir}))
    index = rag.index
    permutation = _LETTERS[:]
    random.Random(5).shuffle(permutation)
    mapping = dict(zip(_LETTERS, permutation, strict=True))
    lexical = FormulaLexicalSearcher(index.formula_lexical_index())
    scores: dict[str, list[float]] = {"lexical formula channel": [], "lexical + formula encoder": []}
    for line in Path(args.set).read_text().splitlines()[1:]:
        query = json.loads(line)
        formulas = [span.latex for span in find_formula_spans(query["query"])]
        renamed = [_VARIABLE.sub(lambda m: mapping.get(m.group(1), m.group(1)), f) for f in formulas]
        if renamed == formulas:
            continue
        gold = set(query["relevant"])
        lexical_ids = [hit.id for hit in lexical.search_formulas(renamed, 10)]
        by_id = {record.id: record for record in index.get(lexical_ids)}
        lexical_docnos = [by_id[i].docno for i in lexical_ids if i in by_id]
        fused_docnos = [
            hit.record.docno
            for hit in rag.search_stack.first_stage().search(" ".join(f"${f}$" for f in renamed), 10, "formula")
        ]
        for name, docnos in zip(scores, (lexical_docnos, fused_docnos), strict=True):
            rank = next((i for i, docno in enumerate(docnos, start=1) if docno in gold), None)
            scores[name].append(1 / rank if rank else 0.0)
    for name, values in scores.items():
        print(f"{name}: MRR@10 {sum(values) / max(len(values), 1):.3f} over {len(values)} renamed queries")


if __name__ == "__main__":
    main()
