"""Ingest orchestration: the one writer loop (``statement_writer``) that embeds and commits records, the
arXiv month, Stack Exchange dump and Dask jobs that feed it, their reports, and the lowered CPU priority
an ingest runs at. Parsing itself is the top-level ``ingestion`` package."""
