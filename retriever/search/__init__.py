"""What searches: one searcher per channel (dense, BM25), their fusion, filters, the rankers over the
fused candidates (learned ranker, cross-encoder), duplicate collapsing and paper search."""
