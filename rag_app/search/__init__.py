"""Search as the app composes it: the search stack (every searcher built from the settings in one place),
the embedders built from the settings, the LLM's statement rewrite, and the llama-index adapter."""
