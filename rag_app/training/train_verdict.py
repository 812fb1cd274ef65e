"""Fitting the verdict reader (``python -m rag_app.training.train_verdict``) and measuring it.

- **Pairs made from the corpus** (:mod:`rag_app.training.verdict_pairs`): questions made from statements of the
  Stacks project, the HoTT book and the thesis sample by a structured procedure, each labelled with what its
  statement settles of it. They are split by statement: four fifths fitted on, one fifth held out (the
  temperature is fitted there, and the held-out figures are reported).
- **The labelled sets** (``eval/questions``): each question against the statement that settles it, labelled from
  its metadata (a true claim: ``yes``; a false one against the statement that refutes it: ``no``; a false one
  against the statement it drops a hypothesis of, reverses, or strengthens: ``related``; an open question:
  ``answers``), and each question no statement answers against its nearest statement of the corpus (``related``
  near the corpus, ``unrelated`` far from it). Their tuning halves (:mod:`rag_app.datasets.set_halves`) are fitted
  on too; their untouched halves are only measured.
- **The model**: scikit-learn's multinomial L2 logistic regression on standardized features
  (:mod:`rag_app.answering.verdict_features`), then one temperature (:func:`fit_temperature`).
- **Reported** in ``bench/results/verdict_reader.md`` and ``.json``: per set and half, the confusion of truth
  against verdict, the share of settling pairs the reader says settle and of non-settling pairs it says do not,
  and the expected calibration error of the probability that the statement settles the question, with a
  reliability plot (``verdict_reader_reliability.png``).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import random
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from ingestion.records import StatementRecord
from rag_app.answering.verdict_features import TEXT_FEATURES, pair_features
from rag_app.answering.verdict_reader import (
    LABELS,
    PACKAGED,
    SETTLING,
    VerdictReader,
    expected_calibration_error,
    fit_temperature,
    softmax,
)
from rag_app.datasets.query_set import QuerySet
from rag_app.datasets.set_halves import TUNE, UNTOUCHED, SetHalves
from rag_app.training.verdict_pairs import VerdictPair, make_pairs

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = ROOT / "eval" / "questions"
LABELLED_SETS = (
    "yes-no-claims.v1.jsonl",
    "research-claims.v1.jsonl",
    "research-questions-apart.v1.jsonl",
    "stacks-research-questions.v1.jsonl",
    "yes-no-questions.v1.jsonl",
    "no-answer-questions.v1.jsonl",
)
SYNTHETIC = "corpus pairs"
HELD_OUT_SHARE = 0.2
TUNING_WEIGHT = 2.0  # a labelled tuning pair counts as this many made ones (they are few, and real questions)


@dataclass(frozen=True, slots=True)
class LabelledPair:
    """A question against one statement, with the truth and where it stands."""

    question: str
    statement: StatementRecord
    label: str
    source: str  # the set's name, or SYNTHETIC
    side: str  # TUNE, UNTOUCHED, or for made pairs "fit" / "held out"


def labelled_pairs(
    sets: Sequence[QuerySet], records: dict[str, StatementRecord], nearest: dict[str, StatementRecord]
) -> list[LabelledPair]:
    """Each question of ``sets`` against the statement that settles it (``records`` by docno), or, for a question
    no statement answers, against ``nearest[qid]``; its side by :class:`SetHalves`."""
    halves = SetHalves.of(sets)
    pairs = []
    for query_set in sets:
        for query in query_set.queries:
            side = halves.side(query_set.name, query.qid)
            metadata = query.metadata or {}
            if metadata.get("expected") == "not_found":
                statement = nearest.get(query.qid)
                if statement is not None:
                    label = "related" if metadata.get("corpus_near") else "unrelated"
                    pairs.append(LabelledPair(query.text, statement, label, query_set.name, side))
                continue
            for docno, grade in query.relevant.items():
                statement = records.get(docno)
                label = _truth(metadata, docno)
                if grade > 0 and statement is not None and label is not None:
                    pairs.append(LabelledPair(query.text, statement, label, query_set.name, side))
    return pairs


def _truth(metadata: dict[str, Any], docno: str) -> str | None:
    expected = metadata.get("expected")
    if expected == "yes":
        return "yes"
    if expected == "":
        return "answers"
    if expected == "no":
        refuted_by = metadata.get("refuted_by")
        if refuted_by == docno or (refuted_by is None and metadata.get("kind") == "opposite"):
            return "no"
        return "related"  # proves it under a hypothesis the claim drops, or the converse, or something weaker
    return None


def docno(record: StatementRecord) -> str:
    return f"{record.paper_id}#{record.label}"


def made_pairs(pairs: Sequence[VerdictPair], records: dict[str, StatementRecord]) -> list[LabelledPair]:
    """The made pairs as labelled pairs, a fifth of the statements held out (by a hash of the statement)."""
    found = []
    for pair in pairs:
        statement = records.get(pair.statement_id)
        if statement is None:
            continue
        held_out = hashlib.sha256(pair.statement_id.encode()).digest()[0] < 256 * HELD_OUT_SHARE
        found.append(LabelledPair(pair.question, statement, pair.label, SYNTHETIC, "held out" if held_out else "fit"))
    return found


def featurize(pairs: Sequence[LabelledPair], embedder: Any) -> np.ndarray:
    """The feature matrix of ``pairs`` (each distinct text embedded once)."""
    questions = sorted({pair.question for pair in pairs})
    statements = {pair.statement.id: pair.statement for pair in pairs}
    question_vectors = dict(zip(questions, embedder.embed_queries(questions, show_progress=True), strict=True))
    statement_ids = sorted(statements)
    texts = [statements[statement_id].search_text() for statement_id in statement_ids]
    statement_vectors = dict(zip(statement_ids, embedder.embed_documents(texts, show_progress=True), strict=True))
    rows = []
    for pair in tqdm(pairs, desc="features", unit="pair"):
        features = pair_features(pair.question, question_vectors[pair.question], pair.statement.text,
                                 pair.statement.kind.value, statement_vectors[pair.statement.id])  # fmt: skip
        rows.append(features.vector(TEXT_FEATURES))
    return np.stack(rows)


def cached_features(pairs: Sequence[LabelledPair], embedder: Any, directory: Path) -> np.ndarray:
    """:func:`featurize`, kept in ``directory`` under a hash of the pairs and the embedder: the embeddings are
    most of a run (some ten minutes on 2 CPUs), and fitting again with other settings then takes a minute."""
    digest = hashlib.sha256(embedder.identity.encode())
    for pair in pairs:
        digest.update(f"{pair.question}\0{pair.statement.id}\0{pair.statement.text}\0".encode())
    path = directory / f"{digest.hexdigest()[:20]}.npy"
    if path.exists():
        return np.load(path)
    x = featurize(pairs, embedder)
    directory.mkdir(parents=True, exist_ok=True)
    np.save(path, x)
    return x


def fit(x: np.ndarray, y: np.ndarray, weights: np.ndarray, c: float = 1.0) -> tuple[np.ndarray, ...]:
    """Standardize, fit the multinomial logistic regression; returns mean, scale, coefficients (features x
    labels) and intercepts."""
    from sklearn.linear_model import LogisticRegression

    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    model = LogisticRegression(C=c, max_iter=2000)
    model.fit((x - mean) / scale, y, sample_weight=weights)
    coefficients = np.zeros((x.shape[1], len(LABELS)))
    intercepts = np.full(len(LABELS), -30.0)  # a label never seen in fitting is never said
    for column, label in enumerate(model.classes_):
        coefficients[:, label] = model.coef_[column]
        intercepts[label] = model.intercept_[column]
    return mean, scale, coefficients, intercepts


def said_thresholds(probabilities: np.ndarray, pairs: Sequence[LabelledPair], wrong_at_most: float = 0.01) -> dict:
    """For "yes" and for "no": the least probability above which saying it was wrong at most ``wrong_at_most`` of
    the times on the labelled tuning halves (the two sides of a verdict: how often it is said, how often wrong)."""
    tuning = [row for row, pair in enumerate(pairs) if pair.source != SYNTHETIC and pair.side == TUNE]
    found = {}
    for label in ("yes", "no"):
        column = probabilities[tuning, LABELS.index(label)]
        right = np.array([pairs[row].label == label for row in tuning])
        found[label] = 1.0
        for threshold in np.linspace(0.5, 0.995, 100):
            said = column >= threshold
            if said.any() and (~right[said]).mean() <= wrong_at_most:
                found[label] = float(threshold)
                break
    return found


def measure(
    probabilities: np.ndarray, pairs: Sequence[LabelledPair], thresholds: dict[str, float] | None = None
) -> dict[str, Any]:
    """Per source and side: the confusion, settle recall and precision, the calibration of P(settles), and with
    ``thresholds`` how often "yes" and "no" are said above them and how often wrongly. ``probabilities``: one row
    of the five readings' calibrated probabilities per pair."""
    settles = probabilities[:, [LABELS.index(label) for label in SETTLING]].sum(axis=1)
    verdicts = [LABELS[i] for i in probabilities.argmax(axis=1)]
    groups: dict[str, list[int]] = {}
    for row, pair in enumerate(pairs):
        groups.setdefault(f"{pair.source} / {pair.side}", []).append(row)
    report: dict[str, Any] = {}
    for name, rows in sorted(groups.items()):
        truth = [pairs[row].label for row in rows]
        said = [verdicts[row] for row in rows]
        settled = np.array([label in SETTLING for label in truth])
        says_settles = settles[rows] >= 0.5
        report[name] = {
            "pairs": len(rows),
            "confusion": {f"{t} -> {s}": n for (t, s), n in sorted(Counter(zip(truth, said, strict=True)).items())},
            "exact": round(float(np.mean([t == s for t, s in zip(truth, said, strict=True)])), 3),
            "settling_said_to_settle": _share(says_settles[settled]),
            "not_settling_said_not_to": _share(~says_settles[~settled]),
            "said_to_settle_that_settle": _share(settled[says_settles]),
            "ece_settles": round(expected_calibration_error(settles[rows], settled.astype(float)), 3),
            "wrong_yes_or_no": int(sum(s in ("yes", "no") and s != t for t, s in zip(truth, said, strict=True))),
        }
        for label, threshold in (thresholds or {}).items():
            above = [row for row in rows if probabilities[row, LABELS.index(label)] >= threshold]
            report[name][f"{label}_said_above_threshold"] = len(above)
            report[name][f"{label}_wrong_above_threshold"] = sum(pairs[row].label != label for row in above)
            report[name][f"{label}_true_pairs"] = sum(pairs[row].label == label for row in rows)
    return report


def markdown(title: str, made_by: str, report: dict[str, Any]) -> str:
    """The report as a table: one row per source and half, under ``title`` and the line ``made_by``."""
    lines = [
        f"# {title}",
        "",
        made_by,
        "",
        "Settle: the probability that the statement settles the question (yes, no or answers) is at least 0.5.",
        "",
        "| source / half | pairs | exact | settling said to settle | not settling said not to | said to settle that "
        "do | ECE | wrong yes/no (argmax) | yes above threshold (wrong) | no above threshold (wrong) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, row in report.items():
        yes = f"{row.get('yes_said_above_threshold', '')} ({row.get('yes_wrong_above_threshold', '')})"
        no = f"{row.get('no_said_above_threshold', '')} ({row.get('no_wrong_above_threshold', '')})"
        lines.append(
            f"| {name} | {row['pairs']} | {row['exact']:.3f} | {row['settling_said_to_settle']} | "
            f"{row['not_settling_said_not_to']} | {row['said_to_settle_that_settle']} | {row['ece_settles']:.3f} | "
            f"{row['wrong_yes_or_no']} | {yes} | {no} |"
        )
    return "\n".join(lines) + "\n"


def _share(flags: np.ndarray) -> str:
    return f"{int(flags.sum())}/{len(flags)}"


def reliability_plot(path: Path, curves: dict[str, tuple[np.ndarray, np.ndarray]], bins: int = 10) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(5.5, 5))
    axes.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=1, label="calibrated")
    edges = np.linspace(0, 1, bins + 1)
    for name, (confidence, correct) in curves.items():
        points = []
        for low, high in itertools.pairwise(edges):
            inside = (confidence >= low) & (confidence <= high)
            if inside.sum() >= 5:
                points.append((float(confidence[inside].mean()), float(correct[inside].mean())))
        if points:
            error = expected_calibration_error(confidence, correct)
            axes.plot(*zip(*points, strict=True), marker="o", label=f"{name} (ECE {error:.3f})")
    axes.set_xlabel("P(the statement settles the question)")
    axes.set_ylabel("share that settle")
    axes.set_title("Verdict reader: reliability")
    axes.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def nearest_statements(sets: Sequence[QuerySet], records: Sequence[StatementRecord]) -> dict[str, StatementRecord]:
    """For each question no statement answers, the statement of the corpus BM25 ranks first for it: a statement a
    search would put before the reader (BM25, not the dense model: embedding the whole corpus takes most of an hour
    on 2 CPUs)."""
    from retriever.storage.bm25_index import BM25Index

    asked = [
        query for query_set in sets for query in query_set.queries
        if (query.metadata or {}).get("expected") == "not_found"
    ]  # fmt: skip
    if not asked:
        return {}
    by_id = {record.id: record for record in records}
    index = BM25Index.build(list(by_id), [record.search_text() for record in by_id.values()])
    found = {}
    for query in asked:
        best = index.search(query.text, 1)
        if best:
            found[query.qid] = by_id[best[0].id]
    return found


def sampled(pairs: Sequence[VerdictPair], statements: int, rng: random.Random) -> list[VerdictPair]:
    """The made pairs of ``statements`` statements drawn at random (embedding every statement of the corpus would
    take most of an hour on 2 CPUs)."""
    chosen = sorted({pair.statement_id for pair in pairs})
    keep = set(rng.sample(chosen, min(statements, len(chosen))))
    return [pair for pair in pairs if pair.statement_id in keep]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    parser.add_argument("--out", type=Path, default=PACKAGED)
    parser.add_argument("--report", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--c", type=float, default=0.1, help="the inverse of the L2 penalty")
    parser.add_argument("--tuning-weight", type=float, default=TUNING_WEIGHT)
    parser.add_argument("--statements", type=int, default=3000, help="statements whose made pairs are used")
    args = parser.parse_args()
    started = time.monotonic()

    from rag_app import Settings
    from rag_app.datasets.dev_corpora import HOTT, STACKS, THESIS_SAMPLE, read_corpus
    from rag_app.pipeline import demo_corpus_path
    from rag_app.search.embedder_factory import make_embedder

    corpus = [*read_corpus(args.shared, STACKS), *read_corpus(args.shared, HOTT),
              *read_corpus(args.shared, THESIS_SAMPLE)]  # fmt: skip
    demo = read_corpus(demo_corpus_path().parent, demo_corpus_path().name)
    by_docno = {docno(record): record for record in [*corpus, *demo]}
    by_id = {record.id: record for record in corpus}
    embedder = make_embedder(Settings())
    made_all = make_pairs(corpus, random.Random(args.seed))
    made = made_pairs(sampled(made_all, args.statements, random.Random(args.seed)), by_id)
    sets = [QuerySet.load(QUESTIONS / name) for name in LABELLED_SETS]
    labelled = labelled_pairs(sets, by_docno, nearest_statements(sets, corpus))
    pairs = [*made, *labelled]
    x = cached_features(pairs, embedder, Settings().data_dir / "verdict-features")
    y = np.array([LABELS.index(pair.label) for pair in pairs])
    fitted = np.array([pair.side in ("fit", TUNE) for pair in pairs])
    calibrating = np.array([pair.side == "held out" or (pair.source != SYNTHETIC and pair.side == TUNE)
                            for pair in pairs])  # fmt: skip
    weights = np.where([pair.source == SYNTHETIC for pair in pairs], 1.0, args.tuning_weight)
    mean, scale, coefficients, intercepts = fit(x[fitted], y[fitted], weights[fitted], args.c)
    reader = VerdictReader(TEXT_FEATURES, embedder.dimension, mean, scale, coefficients, intercepts)
    temperature = fit_temperature(reader.logits(x[calibrating]), y[calibrating])
    calibrated = VerdictReader(TEXT_FEATURES, embedder.dimension, mean, scale, coefficients, intercepts, temperature)
    thresholds = said_thresholds(softmax(calibrated.logits(x) / temperature), pairs)
    report = measure(softmax(calibrated.logits(x) / temperature), pairs, thresholds)
    provenance = {
        "trained": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "embedder": embedder.identity,
        "pairs_made": len(made_all),
        "pairs": dict(Counter(f"{pair.source} / {pair.side}" for pair in pairs)),
        "labels": dict(Counter(pair.label for pair in pairs if pair.side in ("fit", TUNE))),
        "c": args.c,
        "tuning_weight": args.tuning_weight,
        "statements": args.statements,
        "temperature": temperature,
        "said_thresholds": thresholds,
        "seconds": round(time.monotonic() - started),
    }
    final = VerdictReader(TEXT_FEATURES, embedder.dimension, mean, scale, coefficients, intercepts, temperature,
                          {**provenance, "measured": report})  # fmt: skip
    final.save(args.out)
    probabilities = softmax(final.logits(x) / temperature)
    settles = probabilities[:, [LABELS.index(label) for label in SETTLING]].sum(axis=1)
    truth = np.array([pair.label in SETTLING for pair in pairs], dtype=float)
    groups = {
        "corpus pairs held out": lambda pair: pair.source == SYNTHETIC and pair.side == "held out",
        "labelled sets, tuning halves": lambda pair: pair.source != SYNTHETIC and pair.side == TUNE,
        "labelled sets, untouched": lambda pair: pair.source != SYNTHETIC and pair.side == UNTOUCHED,
    }
    curves = {}
    for name, belongs in groups.items():
        mask = np.array([belongs(pair) for pair in pairs])
        curves[name] = (settles[mask], truth[mask])
    args.report.mkdir(parents=True, exist_ok=True)
    reliability_plot(args.report / "verdict_reader_reliability.png", curves)
    summary = json.dumps({"provenance": provenance, "measured": report}, indent=1)
    (args.report / "verdict_reader.json").write_text(summary + "\n")
    made_by = (
        f"Made by `python -m rag_app.training.train_verdict` on {provenance['trained']} ({provenance['seconds']} s, "
        f"{provenance['embedder']}): {provenance['pairs_made']} pairs made from the corpus, of "
        f"{provenance['statements']} statements drawn; C = {provenance['c']}, temperature {temperature:.2f}; "
        f"said-thresholds (wrong at most 1 in 100 on the tuning halves): {json.dumps(thresholds)}. The reliability "
        "plot: `verdict_reader_reliability.png`."
    )
    (args.report / "verdict_reader.md").write_text(markdown("Verdict reader (features)", made_by, report))
    print(summary)


if __name__ == "__main__":
    main()
