"""``train formula``: the formula encoder, its equivalence check, then the MaRF fusion layer.

From an ingested index: the thesis's split (as ``train embed``) keeps held-out statements out of
training. The formula encoder trains on sympy rewrites of random expressions and of the training
statements' parseable formulas, plus formulas that share a statement; it is trained with each
scoring (mean-pooled, MaxSim) and both are checked against BM25 on held-out rewrite pairs. The
fusion layer then trains on (query, statement) pairs of the training statements. The result is a
directory (``card.json``, ``encoder/``, ``encoder-maxsim/``, ``fusion/``, ``split.json``) that ``formula.models``
can name, and that ``scripts/build_formula_models.sh`` copies into the package.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ingestion.records import StatementRecord
from rag_app.datasets.paper_split import PaperSplit
from rag_app.settings import Settings
from rag_app.training.formula_encoder_trainer import FormulaEncoderTrainer
from rag_app.training.formula_equivalence_check import check_equivalence
from rag_app.training.formula_rewrites import MIN_TOKENS, EquivalencePair, generate_pairs
from rag_app.training.fusion_trainer import FusionExample, FusionTrainer
from rag_app.training.index_store import open_index_store
from rag_app.training.training_pairs import pairs_without_llm
from retriever.models.formula_encoder import FormulaEncoderConfig
from retriever.models.marf_fusion import FusionConfig
from retriever.storage.atomic_files import directory_written_whole
from retriever.text.formula_normalizer import normalize_formula
from retriever.text.formula_selection import select_formulas

FORMULA_QUERY_TOKENS = 6  # formula pairs use formulas at least this long (shorter ones name nothing)


@dataclass(frozen=True, slots=True)
class TrainFormulaReport:
    directory: Path
    card: dict[str, object]


class TrainFormulaJob:
    def __init__(self, settings: Settings, index_dir: Path, out_dir: Path | None = None) -> None:
        self.settings = settings
        self.formula = settings.formula
        self.index_dir = index_dir
        stamp = time.strftime("%Y%m%d-%H%M%S")
        self.out_dir = out_dir or settings.data_dir / "models" / "formula" / stamp

    def run(self, show_progress: bool = False, log: Callable[[str], None] = print) -> TrainFormulaReport:
        from rag_app.search.embedder_factory import make_embedder, resolve_device

        formula, training = self.formula, self.settings.training.embed
        device = resolve_device(formula.device or self.settings.embedding.device)
        store, manifest = open_index_store(self.index_dir, self.settings.store.connection())
        records = list(store.iter_records())
        if not records:
            raise ValueError(f"the index in {self.index_dir} holds no statements")
        split = PaperSplit.make(
            records, training.seed, training.unseen_fraction, training.test_fraction, training.min_paper_statements
        )
        train_records = split.training_records(records)
        held_records = [record for record in records if not split.is_training(record)]
        log(f"{len(records):,} statements; {len(train_records):,} train, {len(held_records):,} held out")

        # 1. The formula encoder, trained with each scoring, checked on held-out rewrites.
        started = time.perf_counter()
        workers = formula.workers or os.cpu_count() or 1
        train_formulas = _distinct_formulas(train_records)
        rewrites = generate_pairs(formula.encoder_pairs, training.seed, train_formulas, workers, show_progress)
        cooccurring = cooccurrence_pairs(train_records, formula.cooccurrence_pairs, training.seed)
        held = generate_pairs(formula.heldout_pairs, training.seed + 1, _distinct_formulas(held_records), workers)
        seen = {p.anchor for p in rewrites} | {p.positive for p in rewrites}
        held = [p for p in held if p.anchor not in seen and p.positive not in seen]
        generation_seconds = time.perf_counter() - started
        log(
            f"rewrite pairs: {len(rewrites):,} train, {len(held):,} held out; co-occurrence pairs: {len(cooccurring):,}"
        )
        encoders = {}
        encoder_runs = {}
        for scoring, batch_size in (("mean", formula.encoder_batch_size), ("maxsim", formula.encoder_batch_size // 2)):
            config = FormulaEncoderConfig(
                formula.dim, formula.layers, formula.heads, formula.ffn_dim, formula.max_tokens, scoring=scoring
            )
            trainer = FormulaEncoderTrainer(
                config, formula.encoder_steps, batch_size, formula.encoder_learning_rate, formula.temperature,
                device, training.seed,
            )  # fmt: skip
            run = trainer.train([*rewrites, *cooccurring], train_formulas, show_progress)
            encoders[f"encoder ({scoring})"] = run.encoder
            encoder_runs[scoring] = {"seconds": round(run.seconds, 1), "first_loss": run.first_loss,
                                     "last_loss": run.last_loss, "steps": run.steps}  # fmt: skip
        equivalence = check_equivalence(held, encoders)
        log("held-out equivalence check: " + json.dumps(equivalence))
        encoder = encoders["encoder (mean)"]

        # 2. The fusion layer, both encoders frozen.
        embedder = make_embedder(self.settings)
        embedder.device = device
        examples = fusion_examples(
            train_records, formula.fusion_text_pairs, formula.fusion_formula_pairs, training.per_anchor, training.seed
        )
        log(f"fusion pairs: {_count_kinds(examples)}")
        fusion_config = FusionConfig(embedder.dimension, formula.dim, formula.fusion_heads, formula.fusion_ffn_dim,
                                     formula.max_formulas)  # fmt: skip
        fusion_run = FusionTrainer(
            embedder, encoder, fusion_config, formula.fusion_steps, formula.fusion_batch_size,
            formula.fusion_learning_rate, formula.temperature, formula.maxsim_weight,
            training.max_seq_length, device, training.seed,
        ).train(examples, {record.id: record for record in records}, show_progress)  # fmt: skip

        # 3. The model directory, written whole then moved into place.
        with directory_written_whole(self.out_dir) as partial:
            encoder.save(partial / "encoder")
            encoders["encoder (maxsim)"].save(partial / "encoder-maxsim")
            fusion_run.model.save(partial / "fusion")
            digest = hashlib.sha256((partial / "fusion" / "weights.pt").read_bytes()).hexdigest()[:10]
            card: dict[str, object] = {
                "identity": f"formula-fusion-{digest}",
                "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "machine": f"{platform.platform()}, {os.cpu_count()} CPUs, device {device}",
                "text_embedder": embedder.identity,
                "index": str(self.index_dir),
                "index_statements": len(records),
                "split": split.summary(),
                "settings": formula.model_dump(mode="json"),
                "encoder": {
                    "rewrite_pairs": len(rewrites),
                    "rewrite_kinds": _count_kinds(rewrites),
                    "cooccurrence_pairs": len(cooccurring),
                    "heldout_pairs": len(held),
                    "generation_seconds": round(generation_seconds, 1),
                    "vocabulary": len(encoder.vocabulary),
                    "runs": encoder_runs,
                    "equivalence_check": equivalence,
                },
                "fusion": {
                    "pairs": _count_kinds(examples),
                    "steps": fusion_run.steps,
                    "seconds": round(fusion_run.seconds, 1),
                    "text_state_seconds": round(fusion_run.encode_seconds, 1),
                    "first_loss": fusion_run.first_loss,
                    "last_loss": fusion_run.last_loss,
                },
                "metrics": manifest.get("metrics", {}),
            }
            (partial / "card.json").write_text(json.dumps(card, indent=2))
            split.save(partial / "split.json")  # `eval --split` groups queries by what the models trained on
        return TrainFormulaReport(self.out_dir, card)


def cooccurrence_pairs(records: Sequence[StatementRecord], count: int, seed: int) -> list[EquivalencePair]:
    """Pairs of formulas that share a statement (related, not equal: the encoder learns topic too)."""
    rng = random.Random(seed)
    pairs = []
    for record in records:
        formulas = [f for f in select_formulas(record.formulas, 6) if len(normalize_formula(f).tokens) >= MIN_TOKENS]
        if len(formulas) >= 2:
            first, second = rng.sample(formulas, 2)
            pairs.append(EquivalencePair(first, second, "", "co-occurrence"))
    rng.shuffle(pairs)
    return pairs[:count]


def fusion_examples(
    records: Sequence[StatementRecord], text_pairs: int, formula_pairs: int, per_anchor: int, seed: int
) -> list[FusionExample]:
    """(query, statement) pairs: ``train embed``'s no-LLM pairs, and formula queries."""
    rng = random.Random(seed)
    text = pairs_without_llm(records, per_anchor=per_anchor, seed=seed)
    examples = [FusionExample(p.anchor, p.statement_id, p.negative_id, p.kind) for p in text]
    examples = rng.sample(examples, min(text_pairs, len(examples)))
    formula_examples = []
    for record in records:
        long_enough = [f for f in record.formulas if len(normalize_formula(f).tokens) >= FORMULA_QUERY_TOKENS]
        if not long_enough:
            continue
        chosen = rng.choice(long_enough)
        # A formula alone, or with a few words of context, as a researcher would type it.
        query = f"${chosen}$" if rng.random() < 0.5 or not record.section else f"{record.section}: ${chosen}$"
        formula_examples.append(FusionExample(query, record.id, "", "formula"))
    return examples + rng.sample(formula_examples, min(formula_pairs, len(formula_examples)))


def _distinct_formulas(records: Sequence[StatementRecord]) -> list[str]:
    return sorted({formula for record in records for formula in record.formulas})


def _count_kinds(items: Sequence[EquivalencePair] | Sequence[FusionExample]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in items:
        counts[item.kind] = counts.get(item.kind, 0) + 1
    return counts
