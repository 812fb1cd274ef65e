"""Indexing: the one writer loop (``statement_writer``) that embeds records and commits them to the index,
the arXiv month, Stack Exchange dump and Dask jobs that feed it, their reports, and the lowered CPU
priority an ingest runs at. Named apart from the top-level ``ingestion`` package, which parses sources
into records."""
