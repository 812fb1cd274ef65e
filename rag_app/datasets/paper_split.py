"""The reference thesis's split of a corpus into training and held-out statements.

Papers with fewer than ``min_statements`` statements are training-only (too few to hold any out);
a seeded share of the other papers is held out whole ("unseen papers"); in every remaining paper a
seeded ``test_fraction`` of the statements is held out ("seen papers"). Training pairs are made from
the training statements only, and evaluation reports seen and unseen papers apart.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ingestion import StatementRecord

if TYPE_CHECKING:
    from rag_app.settings import EmbedTrainingSettings

# Evaluation groups of a query (see PaperSplit.group).
TRAINED, SEEN, UNSEEN = "statements trained on", "papers seen in training", "unseen papers"


@dataclass(frozen=True)
class PaperSplit:
    """Which statements train, and which papers and statements are held out (by docno and paper id)."""

    seed: int
    train_only_papers: frozenset[str] = field(default_factory=frozenset)
    seen_papers: frozenset[str] = field(default_factory=frozenset)
    unseen_papers: frozenset[str] = field(default_factory=frozenset)
    held_out: frozenset[str] = field(default_factory=frozenset)  # docnos held out of seen papers

    @classmethod
    def make(
        cls,
        records: Sequence[StatementRecord],
        seed: int = 2026,
        unseen_fraction: float = 0.15,
        test_fraction: float = 0.1,
        min_statements: int = 4,
    ) -> PaperSplit:
        by_paper: dict[str, list[str]] = defaultdict(list)
        for record in records:
            if record.docno not in by_paper[record.paper_id]:
                by_paper[record.paper_id].append(record.docno)
        rng = random.Random(seed)
        small = sorted(p for p, docnos in by_paper.items() if len(docnos) < min_statements)
        eligible = sorted(p for p, docnos in by_paper.items() if len(docnos) >= min_statements)
        unseen_count = round(len(eligible) * unseen_fraction) if len(eligible) > 1 else 0
        unseen = set(rng.sample(eligible, unseen_count))
        seen = [p for p in eligible if p not in unseen]
        held_out: set[str] = set()
        for paper in seen:
            docnos = sorted(by_paper[paper])
            count = max(1, round(len(docnos) * test_fraction))
            held_out.update(random.Random(f"{seed}:{paper}").sample(docnos, count))
        return cls(seed, frozenset(small), frozenset(seen), frozenset(unseen), frozenset(held_out))

    def is_training(self, record: StatementRecord) -> bool:
        if record.paper_id in self.unseen_papers:
            return False
        return record.docno not in self.held_out

    def training_records(self, records: Iterable[StatementRecord]) -> list[StatementRecord]:
        return [record for record in records if self.is_training(record)]

    def group(self, relevant: Iterable[str], paper_ids: Iterable[str]) -> str:
        """The evaluation group of a query from its gold docnos and papers.

        ``unseen papers`` when every gold paper was held out whole; ``papers seen in training`` when
        the gold statements were held out of papers trained on; else ``statements trained on``.
        """
        papers = set(paper_ids)
        if papers and papers <= self.unseen_papers:
            return UNSEEN
        docnos = set(relevant)
        unseen_docnos = {d for d in docnos if d.split("#", 1)[0] in self.unseen_papers}
        if docnos and docnos - unseen_docnos <= self.held_out:
            return SEEN
        return TRAINED

    def summary(self) -> dict[str, int]:
        return {
            "train_only_papers": len(self.train_only_papers),
            "seen_papers": len(self.seen_papers),
            "unseen_papers": len(self.unseen_papers),
            "held_out_statements_of_seen_papers": len(self.held_out),
        }

    def save(self, path: Path) -> None:
        data = {
            "seed": self.seed,
            "train_only_papers": sorted(self.train_only_papers),
            "seen_papers": sorted(self.seen_papers),
            "unseen_papers": sorted(self.unseen_papers),
            "held_out": sorted(self.held_out),
        }
        path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> PaperSplit:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(
                seed=int(data["seed"]),
                train_only_papers=frozenset(data["train_only_papers"]),
                seen_papers=frozenset(data["seen_papers"]),
                unseen_papers=frozenset(data["unseen_papers"]),
                held_out=frozenset(data["held_out"]),
            )
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise ValueError(f"{path}: not a split file written by `train embed` ({error})") from error


def split_of(records: Sequence[StatementRecord], settings: EmbedTrainingSettings) -> PaperSplit:
    """The split the training settings ask for: ``train embed``, ``train rerank`` and ``train questions``
    all use it, so one set of statements and papers is held out from every trained model."""
    return PaperSplit.make(
        records, settings.seed, settings.unseen_fraction, settings.test_fraction, settings.min_paper_statements
    )
