"""Development query sets built from the third-party corpora in ``../shared``.

Every set is judged against one development corpus (the Stacks project, the HoTT book and the
reference thesis's sample rows, ingested together), so the other corpora act as distractors.
We tune on these sets; reports say so. ``scripts/build_dev_sets.py`` writes them as versioned files.
"""

from __future__ import annotations

import csv
import hashlib
import json
import random
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from ingestion import StatementKind, StatementRecord
from rag_app.datasets.dev_corpora import HOTT, STACKS, THESIS_SAMPLE, read_corpus
from rag_app.datasets.query_set import EvalQuery, Protocol, QuerySet
from rag_app.datasets.statement_names import label_words, plain_name, reserved_for_evaluation
from retriever.text.formula_share import formula_tokens

# Human-written one-line paraphrases of Stacks statements (their `slogan`s), with the statement's label.
STACKS_SLOGANS = "dev-queries/stacks-slogans-dev.jsonl"
DEV_CORPUS = (STACKS, HOTT, THESIS_SAMPLE)
BUILT_BY = "scripts/build_dev_sets.py"
VERSION = 2  # 2: statements cleaned (macros expanded, math normalized, refs resolved)
MANIFEST = "MANIFEST.json"
# The label-words set: thousands of short author-written keyword queries, none of them in
# stacks-labels (tuned and trained on) and none ever made a training query (reserved_for_evaluation).
LABEL_WORDS_SAMPLE = 2_000


def build_dev_sets(shared_dir: Path, seed: int = 2026, sample: int = 500) -> list[QuerySet]:
    stacks = read_corpus(shared_dir, STACKS)
    hott = read_corpus(shared_dir, HOTT)
    thesis = read_corpus(shared_dir, THESIS_SAMPLE)
    everything = [*stacks, *hott, *thesis]
    labels = stacks_labels(stacks, random.Random(seed), sample)
    return [
        stacks_formulas(stacks, everything, random.Random(seed), sample // 2),
        stacks_names(stacks),
        stacks_sections(stacks, random.Random(seed), sample),
        labels,
        hott_named(hott),
        hott_defined_terms(hott),
        thesis_sample(thesis, shared_dir / THESIS_SAMPLE),
        stacks_slogans(stacks, shared_dir / STACKS_SLOGANS),
        stacks_label_words(stacks, random.Random(seed + 1), LABEL_WORDS_SAMPLE, tuned_on=labels),
    ]


def write_dev_sets(shared_dir: Path, out_dir: Path, seed: int = 2026, sample: int = 500) -> list[Path]:
    """Build the development sets and write them with a manifest of their sizes and sha256 sums.

    The set files quote the third-party corpora (names, titles, formulas, the thesis's questions), so
    they are built where they are used and never committed; the committed ``MANIFEST.json`` pins what
    a build must produce.
    """
    paths, manifest = [], {}
    for query_set in build_dev_sets(shared_dir, seed=seed, sample=sample):
        path = out_dir / f"{query_set.name}.v{query_set.version}.jsonl"
        query_set.save(path)
        paths.append(path)
        manifest[path.name] = {"size": query_set.size, "protocol": query_set.protocol.value, "sha256": _sha256(path)}
    (out_dir / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return paths


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def stacks_names(records: Sequence[StatementRecord]) -> QuerySet:
    return _named_statements(
        records, "stacks-names", "stacks-name", "the Stacks project (`\\begin{lemma}[Nakayama's lemma]`)"
    )


def stacks_sections(records: Sequence[StatementRecord], rng: random.Random, sample: int) -> QuerySet:
    """Section and subsection titles; every statement under the title is relevant."""
    by_title: dict[str, dict[tuple[str, str], list[StatementRecord]]] = defaultdict(lambda: defaultdict(list))
    for record in records:
        if record.section:
            by_title[plain_name(record.section)][(record.paper_id, "section")].append(record)
        subsection = str(record.metadata.get("subsection", ""))
        if subsection:
            by_title[plain_name(subsection)][(record.paper_id, "subsection")].append(record)
    # A title used in several chapters ("Introduction", "Examples") names no single place: dropped.
    unique = {title: next(iter(places.items())) for title, places in by_title.items() if len(places) == 1}
    titles = sorted(title for title in unique if len(title) >= 4)
    chosen = sorted(rng.sample(titles, min(sample, len(titles))))
    queries = []
    for number, title in enumerate(chosen, start=1):
        (paper_id, level), statements = unique[title]
        queries.append(
            EvalQuery(
                qid=f"stacks-section-{number:04d}",
                text=title,
                relevant=dict.fromkeys(sorted({r.docno for r in statements}), 1),
                paper_ids=(paper_id,),
                origin=f"{level} title",
            )
        )
    return _set(
        "stacks-sections",
        Protocol.RELEVANT_SET,
        queries,
        f"Stacks project section and subsection titles used in one chapter only (seeded sample of {len(queries)} "
        f"of {len(titles)}): every statement in that section is relevant. Statement text carries its section "
        "title, so lexical matching is favoured here.",
    )


def stacks_labels(records: Sequence[StatementRecord], rng: random.Random, sample: int) -> QuerySet:
    keys, chosen = _sampled(_group(records, lambda r: label_words(r.label)), rng, sample)
    queries = _known_items("stacks-label", chosen, origin="label words")
    return _set(
        "stacks-labels",
        Protocol.KNOWN_ITEM,
        queries,
        f"The words of Stacks project labels (`lemma-directed-colimit-exact` to `directed colimit exact`; the kind "
        f"prefix and numbers dropped, at least two words left): seeded sample of {len(queries)} of {len(keys)}. "
        "Labels are not indexed, so the words must be matched against the statement itself.",
    )


def stacks_label_words(
    records: Sequence[StatementRecord], rng: random.Random, sample: int, tuned_on: QuerySet
) -> QuerySet:
    """The label-words distribution at scale: reserved label words (never a training query) that
    ``stacks-labels`` does not hold.

    Author-written keyword queries ("characterize closed immersions") are the closest of our sets to the
    short queries people type; stacks-labels' 500 have been tuned on and trained on (the learned ranker
    and the query adapter learned from label words), so these are kept apart to judge a lever with. A
    lever that reads label words (a headline that spells them out) must be judged on other sets.
    """
    seen = {query.text for query in tuned_on.queries}
    groups = _group(records, lambda r: label_words(r.label))
    by_words = {key: group for key, group in groups.items() if key not in seen and reserved_for_evaluation(key)}
    keys, chosen = _sampled(by_words, rng, sample)
    queries = _known_items("stacks-label-words", chosen, origin="label words")
    return _set(
        "stacks-label-words",
        Protocol.KNOWN_ITEM,
        queries,
        f"The words of Stacks project labels as in stacks-labels, at scale: seeded sample of {len(queries)} of the "
        f"{len(keys)} label-word queries reserved from every training job and not in stacks-labels (short keyword "
        "queries written by the statements' authors, the closest of these sets to what people type). Labels are "
        "not indexed. Issue 60's harder distribution: judge every ranking lever on it, except one that reads "
        "label words.",
    )


def stacks_formulas(
    records: Sequence[StatementRecord], corpus: Sequence[StatementRecord], rng: random.Random, sample: int
) -> QuerySet:
    """Search by formula: a formula of a statement is the query; every statement holding it is gold.

    Every other query puts the section title before the formula ("Colimits: $...$"), so the set has
    both formula-only and mixed queries. Formulas of 10 to 60 LaTeX tokens only: shorter ones are
    generic ("$x \\in X$"), longer ones are not what a person types.
    """
    holders: dict[str, set[str]] = defaultdict(set)
    for record in corpus:
        for formula in record.formulas:
            holders[" ".join(formula.split())].add(record.docno)
    candidates: dict[str, StatementRecord] = {}
    for record in records:
        for formula in record.formulas:
            key = " ".join(formula.split())
            if 10 <= len(formula_tokens(key)) <= 60 and key not in candidates:
                candidates[key] = record
    chosen = sorted(rng.sample(sorted(candidates), min(sample, len(candidates))))
    queries = []
    for number, formula in enumerate(chosen, start=1):
        record = candidates[formula]
        mixed = number % 2 == 0 and bool(record.section)
        text = f"{plain_name(record.section)}: ${formula}$" if mixed else f"${formula}$"
        queries.append(
            EvalQuery(
                qid=f"stacks-formula-{number:04d}",
                text=text,
                relevant=dict.fromkeys(sorted(holders[formula]), 1),
                paper_ids=(record.paper_id,),
                origin="section title and formula" if mixed else "formula",
            )
        )
    return _set(
        "stacks-formulas",
        Protocol.KNOWN_ITEM,
        queries,
        f"Formulas of 10-60 LaTeX tokens taken from Stacks project statements (seeded sample of {len(queries)} of "
        f"{len(candidates)} distinct formulas), every other one preceded by its section title: every statement of "
        "the development corpus holding the same formula (up to whitespace) is gold. The formula-heavy set.",
    )


def hott_named(records: Sequence[StatementRecord]) -> QuerySet:
    return _named_statements(records, "hott-named", "hott-name", "the HoTT book (`\\begin{thm}[Univalence]`)")


def _named_statements(records: Sequence[StatementRecord], set_name: str, qid_prefix: str, source: str) -> QuerySet:
    """Statement names as known-item queries: the statement(s) bearing the name are gold."""
    by_name = _group(records, lambda r: plain_name(r.name) if r.name else "")
    queries = _known_items(qid_prefix, by_name, "statement name")
    return _set(
        set_name,
        Protocol.KNOWN_ITEM,
        queries,
        f"Every named statement of {source}: the name, with accents resolved, is the query and the statement(s) "
        f"bearing it are gold ({len(queries)} distinct names).",
    )


def hott_defined_terms(records: Sequence[StatementRecord]) -> QuerySet:
    definitions = [r for r in records if r.kind is StatementKind.DEFINITION]
    by_term: dict[str, list[StatementRecord]] = defaultdict(list)
    for record in definitions:
        for term in str(record.metadata.get("defined_terms", "")).split("; "):
            if len(term) >= 3 and record not in by_term[term]:
                by_term[term].append(record)
    queries = _known_items("hott-term", by_term, origin="defined term")
    return _set(
        "hott-defined-terms",
        Protocol.KNOWN_ITEM,
        queries,
        f"Terms the HoTT book defines (`\\define{{mere proposition}}`, bold or emphasis inside a definition): "
        f"the term is the query, the definition(s) defining it are gold ({len(queries)} terms).",
    )


def thesis_sample(records: Sequence[StatementRecord], csv_path: Path) -> QuerySet:
    """The reference thesis's protocol: its LLM-generated question; every statement of the paper is relevant."""
    with csv_path.open(newline="", encoding="utf-8") as handle:
        rows = {row["id"]: row.get("question") or "" for row in csv.DictReader(handle)}
    by_paper = _group(records, lambda r: r.paper_id)
    queries = []
    for record in records:
        question = rows.get(str(record.metadata.get("row_id", "")), "")
        if not question.strip():
            continue
        queries.append(
            EvalQuery(
                qid=f"thesis-{record.metadata.get('row_id', record.id)}",
                text=question.strip(),
                relevant=dict.fromkeys(sorted({r.docno for r in by_paper[record.paper_id]}), 1),
                paper_ids=(record.paper_id,),
                origin="generated question",
                metadata={"gold": record.docno},
            )
        )
    return _set(
        "thesis-sample",
        Protocol.RELEVANT_SET,
        queries,
        f"The {len(queries)} rows of the reference thesis's sample (arXiv statements of January to March 2025, "
        "one LLM-generated question each): every statement of the question's paper is relevant, as in the thesis.",
    )


def stacks_slogans(records: Sequence[StatementRecord], jsonl_path: Path) -> QuerySet:
    """Human-written paraphrases of Stacks statements: the statement with the slogan's label is gold.

    The query a researcher types: informal, one line, few of the statement's own words. A slogan whose
    statement is not in the corpus is an error (the set and the corpus disagree), not a silent drop.
    """
    by_place = {(record.paper_id, record.label): record for record in records if record.label}
    queries = []
    with jsonl_path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            row = json.loads(line)
            paper_id = Path(row["file"]).stem
            record = by_place.get((paper_id, row["label"]))
            if record is None:
                raise ValueError(f"{jsonl_path}:{number}: no statement labelled {row['label']!r} in {row['file']}")
            queries.append(
                EvalQuery(
                    qid=f"stacks-slogan-{len(queries) + 1:04d}",
                    text=" ".join(row["query"].split()),
                    relevant={record.docno: 1},
                    paper_ids=(record.paper_id,),
                    origin="human-written slogan",
                )
            )
    return _set(
        "stacks-slogans-dev",
        Protocol.KNOWN_ITEM,
        queries,
        f"{len(queries)} human-written informal paraphrases (slogans) of Stacks project statements: the statement "
        "the slogan describes is gold. The questions people type; more of them are kept aside for an independent "
        "check, so a gain only here is overfitting.",
    )


def _group(
    records: Iterable[StatementRecord], key_of: Callable[[StatementRecord], str]
) -> dict[str, list[StatementRecord]]:
    groups: dict[str, list[StatementRecord]] = defaultdict(list)
    for record in records:
        key = key_of(record)
        if key:
            groups[key].append(record)
    return dict(groups)


def _sampled(
    groups: dict[str, list[StatementRecord]], rng: random.Random, sample: int
) -> tuple[list[str], dict[str, list[StatementRecord]]]:
    """Every key (sorted), and a seeded sample of ``sample`` groups in key order."""
    keys = sorted(groups)
    return keys, {key: groups[key] for key in sorted(rng.sample(keys, min(sample, len(keys))))}


def _known_items(prefix: str, groups: dict[str, list[StatementRecord]], origin: str) -> list[EvalQuery]:
    queries = []
    for number, (text, statements) in enumerate(sorted(groups.items()), start=1):
        queries.append(
            EvalQuery(
                qid=f"{prefix}-{number:04d}",
                text=text,
                relevant=dict.fromkeys(sorted({r.docno for r in statements}), 1),
                paper_ids=tuple(sorted({r.paper_id for r in statements})),
                origin=origin,
            )
        )
    return queries


def _set(name: str, protocol: Protocol, queries: list[EvalQuery], description: str) -> QuerySet:
    return QuerySet(
        name=name,
        version=VERSION,
        protocol=protocol,
        queries=tuple(queries),
        description=description + " Judged against the development corpus (Stacks + HoTT + thesis sample).",
        built_by=BUILT_BY,
        corpus=DEV_CORPUS,
        corpus_root="shared",
        tuning=True,
    )
