"""Benchmark: how many of a corpus's references the records keep, and how many resolve.

Recall is counted against an independent reading of the sources (not the ingestor's parser): each
theorem-like environment found by a plain scan, with the proof right after it, and the labels of the
reference commands inside them (``\\ref``, ``\\eqref``, ``\\cref``/``\\Cref`` lists, ``\\autoref``,
``\\hyperref[..]``) by a plain pattern. A reference counts as kept when the record carrying that
statement's label lists it. Resolution is over every reference the records keep: to a statement or a
section by its own paper at ingest, or to another paper's statement by the statement graph.

Citations are counted the same way: the keys of ``\\cite``-like commands in each statement and its proof
by a plain pattern, against the keys the record keeps; then how many the paper's bibliography gives an
arXiv id (a paper-level edge wherever that paper is in the index).

    python bench/reference_recall.py [--corpus ../shared/corpora/stacks-project] [--out bench/results]

Results: ``bench/results/reference_recall.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from collections import Counter
from pathlib import Path

from ingestion.parallel_latex_ingestor import ParallelLatexIngestor
from ingestion.sources import ingest_sources
from retriever.storage.statement_graph import StatementGraph

ENVIRONMENTS = (
    "lemma|proposition|theorem|definition|remark|remarks|example|examples|exercise|exercises|situation|"
    "corollary|conjecture|construction|notation|question|claim|fact|observation|axiom|assumption|"
    "thm|lem|lemm|prop|cor|coro|defn|dfn|defi|definicion|rem|rmk|ex|exa|conj|obs|theo|lema|teorema|proposicion"
)
STATEMENT = re.compile(
    r"\\begin\{((?:" + ENVIRONMENTS + r")\*?)\}(.*?)\\end\{\1\}(\s*\\begin\{proof\}(.*?)\\end\{proof\})?",
    re.S | re.I,
)
REFERENCE = re.compile(r"\\(?:ref|eqref|cref|Cref|autoref)\*?\{([^{}]*)\}|\\hyperref\[([^\]]*)\]")
LABEL = re.compile(r"\\label\{([^{}]*)\}")
CITE = re.compile(r"\\[cC]ite[a-z]*\*?(?:\[[^\]]*\])*\{([^{}]*)\}")


def papers_as_text(corpus: Path) -> dict[str, str]:
    """Each paper's LaTeX, by the paper id the ingestor gives it: a file at the top (the Stacks project's
    chapters, by file name), or a directory (the style fixtures, by directory name) with every file in it."""
    papers = {path.stem: path.read_text(encoding="utf-8", errors="replace") for path in corpus.glob("*.tex")}
    for directory in sorted(path for path in corpus.iterdir() if path.is_dir()):
        files = sorted(directory.rglob("*.tex"))
        if files:
            papers[directory.name] = "\n".join(f.read_text(encoding="utf-8", errors="replace") for f in files)
    return papers


def independent_references(text: str, pattern: re.Pattern[str] = REFERENCE) -> dict[str, set[str]]:
    """Statement label -> the labels referenced (``pattern``: or the keys cited) in it and its proof,
    read with plain patterns."""
    found: dict[str, set[str]] = {}
    for match in STATEMENT.finditer(text):
        body, proof = match.group(2), match.group(4) or ""
        label = LABEL.search(body)
        if label is None:
            continue
        refs = found.setdefault(label.group(1).strip(), set())
        for ref in pattern.finditer(body + "\n" + proof):
            groups = [group for group in ref.groups() if group]
            refs.update(part.strip() for part in (groups[0] if groups else "").split(",") if part.strip())
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=Path("../shared/corpora/stacks-project"))
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    parser.add_argument("--name", default="reference_recall", help="result file name (without suffix)")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    started = time.perf_counter()
    papers = list(ingest_sources([args.corpus], ParallelLatexIngestor(workers=args.workers)))
    parse_s = time.perf_counter() - started
    records = [record for paper in papers for record in paper.records]
    kept: dict[tuple[str, str], set[str]] = {}
    kept_citations: dict[tuple[str, str], set[str]] = {}
    for record in records:  # a statement split in parts: its first part holds the references
        if record.label:
            kept.setdefault((record.paper_id, record.label), set()).update(ref.label for ref in record.references)
            kept_citations.setdefault((record.paper_id, record.label), set()).update(c.key for c in record.citations)
    expected = found = cites_expected = cites_found = 0
    missed: Counter[str] = Counter()
    for paper_id, text in papers_as_text(args.corpus).items():
        for label, refs in independent_references(text).items():
            ours = kept.get((paper_id, label))
            if ours is None:
                continue  # a statement the ingestor did not keep is counted by the extraction benchmarks
            expected += len(refs)
            found += len(refs & ours)
            missed.update(f"{paper_id}: {label} -> {ref}" for ref in refs - ours)
        for label, keys in independent_references(text, CITE).items():
            ours = kept_citations.get((paper_id, label))
            if ours is not None:
                cites_expected += len(keys)
                cites_found += len(keys & ours)
    citations = [citation for record in records for citation in record.citations]
    arxiv_cited = [citation.arxiv_id for citation in citations if citation.arxiv_id]
    with tempfile.TemporaryDirectory() as directory:
        graph = StatementGraph(Path(directory))
        graph.add(records)
        edges = [edge for record in records if record.references for edge in graph.uses(record.id, include_self=True)]
    total = len(edges)
    to_statement = sum(1 for edge in edges if edge.target_id)
    to_section = sum(1 for edge in edges if edge.section and not edge.target_id)
    unresolved = Counter(edge.label for edge in edges if not edge.resolved)
    result = {
        "corpus": str(args.corpus),
        "papers": len(papers),
        "statements": len(records),
        "parse_seconds": round(parse_s, 1),
        "independent_references": expected,
        "kept": found,
        "recall": round(found / expected, 4) if expected else None,
        "references": total,
        "resolved_to_statement": to_statement,
        "resolved_to_section": to_section,
        "resolution": round((to_statement + to_section) / total, 4) if total else None,
        "independent_citations": cites_expected,
        "citations_kept": cites_found,
        "citations": len(citations),
        "arxiv_citations": len(arxiv_cited),
        "arxiv_papers_cited": len(set(arxiv_cited)),
        "unresolved_examples": unresolved.most_common(15),
        "missed_examples": missed.most_common(15),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    lines = [
        "# References kept and resolved",
        "",
        f"- corpus: `{args.corpus}` ({len(papers)} papers, {len(records)} statements, parsed in {parse_s:.0f} s)",
        f"- recall against an independent reading: {found} of {expected} references "
        f"({100 * found / max(expected, 1):.2f}%)",
        f"- resolution: {to_statement} to a statement, {to_section} to a section, of {total} "
        f"({100 * (to_statement + to_section) / max(total, 1):.2f}%)",
        f"- citations: {cites_found} of {cites_expected} cited keys kept "
        f"({100 * cites_found / max(cites_expected, 1):.2f}%);"
        f" of the {len(citations)} kept, {len(arxiv_cited)} name an arXiv paper by the bibliography"
        f" ({len(set(arxiv_cited))} distinct papers)",
        "",
        "Unresolved labels (most frequent): "
        + ", ".join(f"`{label}` ({n})" for label, n in unresolved.most_common(10)),
        "",
        "Missed (first): " + "; ".join(f"`{item}`" for item, _ in missed.most_common(10)),
    ]
    (args.out / f"{args.name}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
