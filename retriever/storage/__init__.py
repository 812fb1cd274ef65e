"""The bottom of retrieval: files and connections that every store reads and writes (atomic files, the
SQLite file, the Chroma connection, the BM25 files, the statement graph and the citing text)."""
