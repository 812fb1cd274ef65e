"""Trained models and how they are found: the sentence-transformers embedder and its registry, packaged
model archives, the query adapter, the learned ranker and the cross-encoder reranker."""
