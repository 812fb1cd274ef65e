"""One query's embedding through ONNX Runtime: the same vector as sentence-transformers, in half the time.

A query is a dozen tokens; at that size torch's eager matrix products run far below the CPU's speed:
all-MiniLM-L6-v2 takes 19-23 ms a query in torch and 9 ms in ONNX Runtime on one core of this
machine, with vectors equal to torch's (cosine 0.9999998 on 60 questions; bench/results/search_profile.md).
Statements are embedded in batches, where torch is fast enough, and stay on torch.

The model is exported once per model (``directory``/``<identity>.onnx``, written whole) and checked once
per process against the sentence-transformers pipeline on probe texts: a model whose pipeline is not
transformer -> mean pooling -> normalize, or whose export disagrees, is not served here
(:meth:`OnnxQueryEncoder.build` returns None and the embedder keeps torch).
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from retriever.models.torch_threads import torch_threads

logger = logging.getLogger(__name__)

# Agreement asked of the export on the probes (float32 rounding gives about 1 - 3e-7)
MIN_COSINE = 0.9999
OPSET = 17  # the ONNX opset the export is written in (part of its file's name: export_path)
PROBES = ("Nakayama's lemma for finitely generated modules", "when is $\\int_0^1 f(x)\\,dx = 0$?", "x")
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# Sessions that passed the check, shared by the process's embedders of the same model: building one
# (graph optimization) and checking it cost about 0.5 s, paid once per process, not per embedder.
# Keyed by the file's stamp, so a file exported again is loaded and checked again.
_checked_sessions: dict[tuple[str, int, int, str, int], Any] = {}
_checked_lock = threading.Lock()


class OnnxQueryEncoder:
    def __init__(self, session: Any, model: Any, inputs: tuple[str, ...]) -> None:
        self.session = session  # onnxruntime.InferenceSession: its run is safe from many threads
        self.model = model  # the SentenceTransformer, for its tokenizer settings (truncation, lower case)
        self.inputs = inputs

    def embed(self, text: str) -> np.ndarray:
        """The unit vector of one text (already in the form the model reads)."""
        features = self.model.preprocess([text])
        feed = {name: features[name].numpy().astype(np.int64) for name in self.inputs}
        return np.asarray(self.session.run(None, feed)[0][0], dtype=np.float32)

    @classmethod
    def build(cls, model: Any, identity: str, directory: Path, threads: int = 1) -> OnnxQueryEncoder | None:
        """The encoder for ``model`` (a loaded SentenceTransformer), exported to ``directory`` when not there
        yet; None when the model cannot be served this way (its pipeline, a missing ``onnx``, a disagreement)."""
        if not _mean_pooled(model):
            logger.info("%s: not transformer -> mean pooling -> normalize; queries stay on torch", identity)
            return None
        try:
            import onnxruntime
        except ImportError:
            return None
        path = export_path(directory, identity)
        with _checked_lock:
            session = _checked_sessions.get(_key(path, identity, threads))
        if session is not None:
            return cls(session, model, tuple(i.name for i in session.get_inputs()))
        for attempt in ("load", "export"):
            if attempt == "export" or not path.is_file():
                try:
                    _export(model, path)
                except Exception as error:  # an architecture the exporter cannot trace: torch serves it
                    logger.warning("%s: ONNX export failed (%s); queries stay on torch", identity, error)
                    return None
            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            try:
                session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
            except Exception as error:  # a damaged or partial file from elsewhere: export it again
                logger.warning("%s: cannot load %s (%s)", identity, path, error)
                continue
            inputs = tuple(i.name for i in session.get_inputs())
            encoder = cls(session, model, inputs)
            if encoder.agrees_with(model):
                with _checked_lock:
                    _checked_sessions[_key(path, identity, threads)] = session
                return encoder
            logger.warning("%s: %s disagrees with the model", identity, path)
        logger.warning("%s: queries stay on torch (the ONNX export does not reproduce the model)", identity)
        return None

    def agrees_with(self, model: Any) -> bool:
        """Whether the export gives the model's own vectors on the probe texts."""
        with torch_threads(1):
            expected = model.encode(
                list(PROBES), normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
            )
        got = np.stack([self.embed(text) for text in PROBES])
        return bool(np.min(np.sum(expected * got, axis=1)) >= MIN_COSINE)


def export_path(directory: Path, identity: str) -> Path:
    """Where ``identity``'s export lives, keyed by what it depends on: the model, and the torch that
    traced it at opset ``OPSET``. Another torch writes another file; the old one is never read as this one's."""
    import torch

    return directory / f"{identity}.torch-{torch.__version__.split('+')[0]}.opset{OPSET}.onnx"


def _key(path: Path, identity: str, threads: int) -> tuple[str, int, int, str, int]:
    try:
        stat = path.stat()
    except OSError:
        return (str(path), -1, -1, identity, threads)
    return (str(path), stat.st_mtime_ns, stat.st_size, identity, threads)


def _mean_pooled(model: Any) -> bool:
    names = [type(module).__name__ for module in model]
    if names not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        return False
    config = model[1].get_config_dict()
    return config.get("pooling_mode") == "mean" or bool(config.get("pooling_mode_mean_tokens"))


def _export(model: Any, path: Path) -> None:
    """The transformer with mean pooling and normalization as one ONNX graph, written whole."""
    import torch

    transformer = model[0].auto_model.eval()
    sample = model.preprocess(["a query of a few words"])
    inputs = tuple(name for name in _INPUTS if name in sample)

    class MeanPooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
            named = dict(zip(inputs, tensors, strict=True))
            states = self.transformer(**named).last_hidden_state
            mask = named["attention_mask"].unsqueeze(-1).to(states.dtype)
            pooled = (states * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, dim=-1)

    path.parent.mkdir(parents=True, exist_ok=True)
    handle, partial = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    os.close(handle)
    try:
        # The tracer warns of branches it fixes (no key-value cache, a mask given): those hold for every
        # query, and the probes check the export on texts of other lengths.
        with torch.inference_mode(False), torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                MeanPooled().eval(),
                tuple(sample[name] for name in inputs),
                partial,
                input_names=list(inputs),
                output_names=["embedding"],
                dynamic_axes={name: {0: "batch", 1: "tokens"} for name in inputs},
                opset_version=OPSET,
                dynamo=False,
            )
        os.replace(partial, path)
    finally:
        Path(partial).unlink(missing_ok=True)
