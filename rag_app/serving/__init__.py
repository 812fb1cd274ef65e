"""Servers this app talks to or starts: the answering LLM (an OpenAI-compatible endpoint, or a local
llama.cpp or vLLM server), the packaged GGUF models it loads, and a local Chroma server."""
