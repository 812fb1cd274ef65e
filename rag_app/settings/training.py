"""Settings of the `train` commands, all under one key, ``training``: ``training.embed``,
``training.query_adapter``, ``training.rerank`` and ``training.ranker``.

The older keys (the embedding trainer's fields directly under ``training``, ``query_adapter_training``,
``rerank.training``, ``ranker.training``) are not read: a settings source that sets one is refused with the
key to use (``rag_app.settings.removed_keys``).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field, model_validator


class EmbedTrainingSettings(BaseModel):
    """``train embed``: training pairs, the thesis's split, hard negatives and the trainer."""

    base_model: str = Field("packaged:all-MiniLM-L6-v2", description="embedder spec to fine-tune")
    name: str = Field("math-embedding", description="registry name; each run adds a version")
    device: str | None = Field(None, description="cpu, cuda, ...; unset: embedding.device")
    # The thesis's split: small papers train only; whole papers held out; 90/10 in the rest.
    seed: int = 2026
    unseen_fraction: float = Field(0.15, ge=0, lt=1, description="share of papers held out whole")
    test_fraction: float = Field(0.1, ge=0, lt=1, description="share of statements held out of other papers")
    min_paper_statements: int = Field(4, ge=1, description="papers with fewer statements are train-only")
    # Pairs.
    per_anchor: int = Field(3, ge=1, description="statements paired with one section title, name or term")
    mse_min_score: int = Field(1, description="MSE answers paired with their question: accepted or this score")
    pair_kinds: list[str] = Field(
        default_factory=lambda: ["name", "defined-term", "section", "label", "mse", "formula", "question"],
        description="training pair kinds (see rag_app.training.training_pairs)",
    )
    # One cap for every kind, or a cap per kind named ({"section": 400}; a kind not named is kept whole).
    max_pairs_per_kind: int | dict[str, int] | None = Field(
        None, description="seeded sample of at most this many pairs of each kind; unset: all"
    )
    max_pairs: int | None = Field(None, ge=2, description="seeded sample of the pairs; unset: all")
    llm_questions: bool = Field(False, description="also generate one question per statement with the LLM")
    # The generation job fills a file over many sessions (`train questions --background`); a fine-tune
    # on what it holds so far must not wait for the LLM to ask about every statement.
    questions_file: Path | None = Field(
        None, description="train on the LLM questions this file holds (none generated); implies llm_questions"
    )
    question_concurrency: int = Field(4, ge=1)
    question_attempts: int = Field(3, ge=1, description="requests per statement before giving up on it")
    # A search-box query needs the statement's gist, and on 2 CPUs reading is most of a question's cost
    # (a 1,500-character Stacks statement took about 11 s a question, its first 600 about 4 s).
    question_statement_chars: int = Field(600, ge=100, description="characters of a statement the LLM reads")
    # Hard negatives.
    hard_negatives: bool = True
    negative_candidates: int = Field(30, ge=1, description="BM25 candidates reranked by the model's cosine")
    # Trainer.
    lora: bool = Field(True, description="train a PEFT LoRA adapter (a few MB) instead of the whole model")
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    lora_target_modules: list[str] = Field(default_factory=lambda: ["query", "key", "value", "dense"])
    epochs: int = Field(1, ge=1)
    max_steps: int | None = Field(None, ge=1, description="stop after this many steps (overrides epochs)")
    batch_size: int = Field(64, ge=2, description="examples per step: each is a negative for the others")
    mini_batch_size: int = Field(16, ge=1, description="examples embedded at once (memory, not quality)")
    learning_rate: float | None = Field(None, gt=0, description="unset: 2e-4 with LoRA, 2e-5 without")
    warmup_ratio: float = Field(0.1, ge=0, lt=1)
    max_seq_length: int = Field(128, ge=16, description="tokens per text while training")
    checkpoint_steps: int = Field(50, ge=1, description="a checkpoint every N steps; a rerun resumes from it")

    @model_validator(mode="after")
    def _caps_are_positive(self) -> EmbedTrainingSettings:
        caps = self.max_pairs_per_kind
        values = caps.values() if isinstance(caps, dict) else [] if caps is None else [caps]
        if any(cap < 1 for cap in values):
            raise ValueError("max_pairs_per_kind must be at least 1")
        return self


class QueryAdapterTrainingSettings(BaseModel):
    """``train query-adapter``: a linear map on query vectors, trained against the index's stored vectors."""

    name: str = Field("math-query-adapter", description="directory name under DATA_DIR/models/query-adapters")
    pair_kinds: list[str] = Field(
        default_factory=lambda: ["name", "defined-term", "label", "mse", "question", "formula"],
        description="training pair kinds (see rag_app.training.training_pairs); section titles name a topic",
    )
    # The second model's list counts for nothing on a formula typed alone (the ensemble's formula
    # gating), so its adapter skips formula pairs, the longest and dearest for a base-size model to read.
    second_pair_kinds: list[str] = Field(
        default_factory=lambda: ["name", "defined-term", "label", "mse", "question"],
        description="pair kinds of `train query-adapter --second-embedding`",
    )
    epochs: int = Field(4, ge=1)
    batch_size: int = Field(256, ge=2)
    learning_rate: float = Field(1e-3, gt=0)
    temperature: float = Field(0.05, gt=0, description="softmax temperature over cosine similarities")
    identity_weight: float = Field(
        1e-3, ge=0, description="pull toward the identity map (the base model): unseen queries stay near it"
    )
    seed: int = 2026


class RerankTrainingSettings(BaseModel):
    """``train rerank``: queries from the index's training statements, hard negatives from our own retriever."""

    name: str = Field("math-reranker", description="the trained reranker's directory name under DATA_DIR/models")
    base_model: str = Field("packaged:all-MiniLM-L6-v2", description="the (plain) model the cross-encoder starts from")
    device: str | None = Field(None, description="cpu, cuda, ...; unset: embedding.device")
    pair_kinds: list[str] = Field(
        default_factory=lambda: ["name", "defined-term", "label", "mse", "question", "formula"],
        description="training pair kinds (see rag_app.training.training_pairs); section titles name a topic, "
        "not a statement, so they are left out",
    )
    questions_file: Path | None = Field(
        None, description="generated questions (`train questions`); unset: DATA_DIR/training/questions.jsonl"
    )
    max_queries: int = Field(4000, ge=2, description="seeded sample of training queries")
    negatives: int = Field(5, ge=1, description="hard negatives per query, from the first stage's top results")
    negative_depth: int = Field(30, ge=2, description="first-stage results the negatives are drawn from")
    negative_mode: str = Field("hybrid-formula", description="the first stage that mines the negatives")
    layers: int = Field(
        4, ge=1, le=6, description="encoder layers kept from the base (4 of MiniLM's 6: about 2/3 of the cost)"
    )
    batch_size: int = Field(8, ge=1, description="queries per step (each with its positive and negatives)")
    max_length: int = Field(128, ge=16, description="tokens per (query, statement) pair while training")
    epochs: int = Field(1, ge=1)
    max_steps: int | None = Field(None, ge=1, description="stop after this many steps (overrides epochs)")
    learning_rate: float = Field(1e-3, gt=0)
    warmup_ratio: float = Field(0.1, ge=0, lt=1)
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    checkpoint_steps: int = Field(50, ge=1, description="a checkpoint every N steps; a rerun resumes from it")
    seed: int = 2026


class RankerTrainingSettings(BaseModel):
    """``train ranker``: LambdaMART over the first stage's candidates for queries made from the index's
    training statements (never from an evaluation set)."""

    name: str = Field("math-ranker", description="directory name under DATA_DIR/models/rankers")
    pair_kinds: list[str] = Field(
        default_factory=lambda: ["name", "defined-term", "section", "label", "mse", "question", "formula"],
        description="training query kinds (see rag_app.training.training_pairs); without section titles the "
        "ranker learned to ignore sections, and lost on topic queries (stacks-sections nDCG@10 0.712 -> 0.670)",
    )
    # Label words outnumber names 30 to 1: a cap per kind keeps one kind from deciding every split.
    max_queries_per_kind: int = Field(1500, ge=1, description="seeded sample of training queries of each kind")
    held_out_queries_per_kind: int = Field(
        300, ge=1, description="queries of each kind from held-out papers: early stopping and the card's figures"
    )
    # Generated questions are a fifth of the training queries; weighing them less was tried and not kept
    # (docs/retrieval-and-evaluation.md, section "the other development sets, and a ranker that varies less").
    kind_weights: dict[str, float] = Field(
        default_factory=dict,
        description="weight of each query kind in the ranking loss (1 for a kind not named), e.g. {question = 0.3}",
    )
    mode: str = Field("hybrid-formula", description="the first stage whose candidates it learns to order")
    second_embedding: bool = Field(False, description="train on the first stage fused with the second model")
    graph_features: bool = Field(
        False,
        description="add the statement graph's features (uses, used by, links to the top candidates); "
        "off: they did not win on both development sets (docs/retrieval-and-evaluation.md)",
    )
    citing_features: bool = Field(
        False,
        description="add the citing sentences' features (how often a statement is cited in a sentence, the "
        "query's terms in those sentences, and in them alone); see docs/retrieval-and-evaluation.md, "
        "\"How others cite a statement\"",
    )
    trees: int = Field(400, ge=1, description="boosting rounds at most (early stopping on held-out queries)")
    learning_rate: float = Field(0.05, gt=0)
    # 15 leaves, 100 rows a leaf: the best of a small grid on both development sets (docs/retrieval-and-evaluation.md).
    leaves: int = Field(15, ge=2)
    min_child_samples: int = Field(100, ge=1)
    # Fits of the same recipe on slightly different queries (1,382 or 1,500 generated questions) moved the
    # named-statement set's MRR by 0.07; trees that each see 60% of the features and 80% of the rows vary
    # less (docs/retrieval-and-evaluation.md, section "the other development sets, and a ranker that varies less").
    feature_fraction: float = Field(0.6, gt=0, le=1, description="share of the features each tree may split on")
    bagging_fraction: float = Field(0.8, gt=0, le=1, description="share of the rows each tree is fitted to")
    seed: int = 2026

    @model_validator(mode="after")
    def _weights_name_kinds(self) -> RankerTrainingSettings:
        unknown = sorted(set(self.kind_weights) - set(self.pair_kinds))
        if unknown:
            raise ValueError(f"kind_weights names no training query kind: {', '.join(unknown)} "
                             f"(kinds: {', '.join(self.pair_kinds)})")  # fmt: skip
        if any(weight < 0 for weight in self.kind_weights.values()):
            raise ValueError("kind_weights must not be negative")
        return self


class TrainingSettings(BaseModel):
    """Every ``train`` command's settings, one sub-key each."""

    embed: EmbedTrainingSettings = Field(default_factory=EmbedTrainingSettings)
    query_adapter: QueryAdapterTrainingSettings = Field(default_factory=QueryAdapterTrainingSettings)
    rerank: RerankTrainingSettings = Field(default_factory=RerankTrainingSettings)
    ranker: RankerTrainingSettings = Field(default_factory=RankerTrainingSettings)
