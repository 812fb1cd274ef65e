"""Settings of search: the embedders, the channels and their fusion, the rankers, papers and duplicates."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator


class PerTask(BaseModel):
    """A stage switched per task, the same from every front end: ``search`` for every search (the
    CLI's, ``/v1/search``, MCP's, the chat's Search page), ``answer`` for every answer's sources. Each stage
    declares both with its own defaults (keys per front end, ``ask`` and ``chat``, are refused: ``removed_keys``)."""

    search: bool
    answer: bool


class EmbeddingSettings(BaseModel):
    model: str = Field(
        "packaged:all-MiniLM-L6-v2",
        description="packaged:NAME, registry:NAME[@vN] (a fine-tune from `train embed`), a local path or a hub id",
    )
    device: str = Field("cpu", description='"cpu", "cuda", "cuda:1", or "auto" (the GPU when there is one)')
    batch_size: int = 64
    max_seq_length: int | None = 256
    query_threads: int | None = Field(
        1, ge=1, description="CPU threads for one query's embedding (unset: torch's own; batches keep every thread)"
    )
    query_runtime: Literal["onnx", "torch"] = Field(
        "onnx", description='"onnx": one query embedded through ONNX Runtime on the CPU (same vector, half the time)'
    )
    onnx_dir: Path | None = Field(None, description="the query encoders exported for ONNX Runtime; unset: a cache")
    # Unicode beat LaTeX on 6 of the 8 development sets, slogans and formulas included
    # (docs/retrieval-and-evaluation.md, "Mathematics as the embedder reads it"); changing it re-embeds the index.
    math_text: Literal["unicode", "latex"] = Field(
        "unicode", description='"unicode": statements and queries embedded with their LaTeX rendered as Unicode'
    )
    registry_dir: Path | None = Field(None, description="fine-tuned models; defaults to DATA_DIR/models/embeddings")


class RetrievalSettings(BaseModel):
    top_k: int = Field(5, ge=1, description="statements returned by search and given to the LLM")
    mode: Literal["hybrid", "dense", "bm25", "hybrid-formula", "formula", "fusion", "fusion-maxsim"] = "hybrid-formula"
    candidates: int = Field(50, ge=1, description="results each channel contributes before fusion")
    # Linear fusion beat RRF on all seven development sets (eval/runs/formula).
    fusion: Literal["rrf", "linear"] = Field("linear", description="min-max linear fusion, or reciprocal rank fusion")
    rrf_k: float = Field(60.0, gt=0, description="reciprocal rank fusion constant")
    dense_weight: float = 1.0
    bm25_weight: float = 1.0
    formula_weight: float = Field(1.0, description="weight of the lexical formula channel in fusion")
    # `auto` beat the base vectors on every development set but formulas (docs/models-and-training.md, "Query adapter").
    query_adapter: str | None = Field(
        "auto",
        description="the dense channel's query adapter: `auto` (the packaged one, if trained for this embedder), "
        "`packaged`, a `train query-adapter` directory, or `none`",
    )
    typed_notation: bool = Field(
        True,
        description="read mathematics typed in ASCII or words as LaTeX before searching (`mu_p` -> `$\\mu_p$`, "
        "`P^3` -> `$\\mathbb{P}^3$`); a query holding `$` or a backslash is left as typed",
    )
    # What a statement's citers say of it, as one more lexical channel fused after the learned ranker
    # (retriever/search/citing_fusing_searcher.py; docs/retrieval-and-evaluation.md, "How others cite a
    # statement"). 0 turns it off.
    citing_weight: float = Field(
        0.1, ge=0, description="the citing channel's weight against the learned ranker's order (0: off)"
    )
    statement_rewrite: Literal["off", "answers", "always"] = Field(
        "off",
        description="the LLM writes the statement a query looks for, searched beside the query and fused by rank: "
        "`answers` for answers only, `always` for search too (seconds per new query on a CPU)",
    )

    @field_validator("statement_rewrite", mode="before")
    @classmethod
    def _answers_not_ask(cls, value: Any) -> Any:
        # "ask", the old name of "answers", would read as the command, not as "answers only": refused
        if value == "ask":
            raise ValueError('"ask" was renamed "answers" in issue 93 (the rewrite for answers only)')
        return value
    rewrite_weight: float = Field(
        0.5, gt=0, description="the rewrite's ranking's weight in the fusion (the query's: 1)"
    )
    # The answering statement is in the top 5 for about 6 questions in 10 and in the top 25 for about 8: a
    # list a reader scans in seconds. Found by the answer's own search, not a second one.
    next_results: int = Field(
        50,
        ge=0,
        description="results kept after an answer's sources, found by the same search (`next_results` of "
        "`ask --json`): the chat lists `ui.next_results_shown` of them at first, the rest on request; 0: none",
    )


class SecondEmbeddingSettings(PerTask):
    """A second embedding model fused with the first as one more channel (docs/retrieval-and-evaluation.md)."""

    # Opt-in: with its query adapter it lifts the typed paraphrases (slogans MRR@10 0.451 -> 0.510, p 0.0002)
    # and no development set is worse, but ingestion embeds with it too (about 4.5 statements/s on 2 CPUs
    # against MiniLM's 19). docs/retrieval-and-evaluation.md.
    model: str | None = Field(
        None,
        description="embedder spec of the second model, e.g. packaged:all-mpnet-base-v2, "
        "packaged:nomic-embed-text-v1.5 (GGUF, read by llama.cpp), gguf:PATH, or openai:MODEL@BASE_URL "
        "(an OpenAI-compatible /v1/embeddings server such as vLLM); unset or `none`: off",
    )
    max_seq_length: int = Field(128, ge=16, description="tokens per statement (the cost of ingesting grows with it)")
    batch_size: int = Field(32, ge=1)
    # A slow model (nomic-embed-text-v1.5 through llama.cpp: about 4 statements/s on 2 CPUs, MiniLM 19)
    # would hold an arXiv month's ingest back five times over; its vectors can follow instead.
    at_ingest: bool = Field(
        True,
        description="embed new statements with it during ingest; false: ingest leaves them to "
        "`rag-app build-dense2 --background` (niced, resumable) and search reads the vectors built so far",
    )
    # 0.5 beat 0.75-2 in a simulation over the development sets; less for formula queries.
    weight: float = Field(
        0.5, ge=0, description="weight of its list beside the first stage's, times 1 - the query's formula share"
    )
    candidates: int = Field(50, ge=1, description="results of each list before fusion")
    # With its packaged adapter no development set is worse than the first stage alone (names were,
    # 0.577 -> 0.545, with the base vectors). docs/retrieval-and-evaluation.md.
    query_adapter: str | None = Field(
        "auto",
        description="the second model's query adapter: `auto` (the packaged one, if trained for this model), "
        "`packaged`, a `train query-adapter --second-embedding` directory, or `none`",
    )
    # Its query costs about 90 ms on 2 CPUs: over plain search's 100 ms budget, small beside an answer.
    search: bool = Field(False, description="every search uses it: `rag-app search`, the HTTP API, MCP, the chat")
    answer: bool = Field(True, description="every answer's sources use it")

    @property
    def enabled(self) -> bool:
        return bool(self.model) and str(self.model).lower() != "none"


class FormulaSettings(BaseModel):
    """The formula side of retrieval: the formula encoder, MaRF fusion, and how they are trained."""

    models: str = Field("packaged", description="formula encoder + fusion layer: `packaged` or a directory")
    token_dim: int = Field(128, ge=8, description="token vectors kept for MaxSim are compressed to this many dims")
    maxsim_candidates: int = Field(50, ge=1, description="first-stage results reranked by MaxSim")
    # The formula encoder.
    dim: int = 128
    layers: int = 2
    heads: int = 4
    ffn_dim: int = 256
    max_tokens: int = Field(64, ge=8, description="normalized tokens per formula")
    encoder_pairs: int = Field(12_000, ge=10, description="sympy rewrite pairs to train on")
    cooccurrence_pairs: int = Field(3_000, ge=0, description="formula pairs that share a statement")
    heldout_pairs: int = Field(1_500, ge=10, description="rewrite pairs of the held-out equivalence check")
    encoder_steps: int = Field(600, ge=1)
    encoder_batch_size: int = Field(128, ge=2)
    encoder_learning_rate: float = 5e-4
    temperature: float = Field(0.05, gt=0)
    # The fusion layer.
    fusion_heads: int = 4
    fusion_ffn_dim: int = 768
    max_formulas: int = Field(4, ge=1, description="formulas fused per text (the longest)")
    fusion_text_pairs: int = Field(3_000, ge=0, description="name/term/section/label pairs (as `train embed`)")
    fusion_formula_pairs: int = Field(3_000, ge=0, description="a statement's formula finds the statement")
    fusion_steps: int = Field(400, ge=1)
    fusion_batch_size: int = Field(32, ge=2)
    fusion_learning_rate: float = 3e-4
    maxsim_weight: float = Field(0.5, ge=0, description="weight of the MaxSim loss beside the pooled one")
    device: str | None = Field(None, description="cpu, cuda, ...; unset: embedding.device")
    workers: int | None = Field(None, ge=1, description="processes generating rewrites; unset: one per core")


class RerankSettings(PerTask):
    """The cross-encoder reranking stage after fusion, on or off per entry point."""

    model: str = Field("packaged", description="`packaged` (shipped in the package) or a `train rerank` directory")
    candidates: int = Field(30, ge=1, description="fused results the cross-encoder rescores (N)")
    max_length: int = Field(128, ge=16, description="tokens per (query, statement) pair")
    weight: float = Field(
        0.8, ge=0, le=1, description="share of the cross-encoder in the final score (the rest: the fused score)"
    )
    batch_size: int = Field(32, ge=1)
    device: str | None = Field(None, description="cpu, cuda, ...; unset: embedding.device")
    int8_on_cpu: bool = Field(
        False, description="on a CPU, int8 linear layers (dynamic quantization); opt-in: unmeasured on a trained model"
    )
    search: bool = Field(False, description="every search reranks (also: search --rerank): CLI, HTTP, MCP, chat")
    # Off until a trained reranker that beats fusion ships in the package (docs/models-and-training.md).
    answer: bool = Field(False, description="every answer reranks its sources")


class RankerSettings(BaseModel):
    """The learned ranker (LightGBM LambdaMART) over the first stage's top candidates."""

    # `auto` beat the first stage on both development sets (research questions MRR@10 0.776 -> 0.797,
    # slogans 0.445 -> 0.489, both p < 0.05; docs/retrieval-and-evaluation.md, "The learned ranker").
    model: str | None = Field(
        "auto",
        description="`auto` (the packaged one, if trained for this embedder), `packaged`, a `train ranker` "
        "directory, or `none`",
    )
    candidates: int = Field(100, ge=1, description="first-stage results the ranker reorders")
    # A set made of label words (stacks-labels, stacks-label-words) tests nothing where the ranker reads the
    # gold's label: evaluations of those sets hide it (docs/retrieval-and-evaluation.md).
    hide_features: list[str] = Field(
        default_factory=list, description='features the ranker reads as missing, e.g. ["query_in_label"]'
    )


class PaperSettings(BaseModel):
    """Paper search (`search --papers`): papers ranked from their statements' scores."""

    aggregation: Literal["max", "top-m", "max-plus"] = Field(
        "max", description="a paper's score: its best statement's (max), the sum of its best m, or max + 0.1 × the next"
    )
    top_m: int = Field(3, ge=1, description="statements per paper counted by top-m and max-plus")
    depth: int = Field(100, ge=1, description="statements searched to rank papers")
    hits_per_paper: int = Field(3, ge=1, description="best statements shown under each paper")


class DuplicateSettings(BaseModel):
    """The same statement in several papers or posts: found at ingest, shown once by searches."""

    detect: bool = Field(True, description="find duplicates of new statements at ingest")
    collapse: bool = Field(True, description="searches and answers show one result per duplicate group")
    threshold: float = Field(0.97, ge=0, le=1, description="embedding cosine for near-duplicates (with equal formulas)")
    max_word_difference: int = Field(1, ge=0, description="near-duplicates: words outside formulas that may differ")
