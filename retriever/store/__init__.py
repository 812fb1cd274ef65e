"""What stores: Chroma (records and vectors, the source of truth), the stores derived from it (BM25, the
formula index, duplicate groups, the companion model's vectors; ``derived_stores`` lists them), the
statement index that writes them together, and their health checks and repairs."""
