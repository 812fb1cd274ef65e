"""Bounds that keep one hostile or broken source from hurting a run (set from the settings)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class IngestLimits:
    # Statements longer than this are split at sentence boundaries outside math.
    max_statement_chars: int = 2000
    # Macro expansion: expansions per text and the size an expanded text may reach.
    max_macro_expansions: int = 20_000
    max_expanded_chars: int = 200_000
    # Braces nested deeper than this make a statement refused (real statements nest a few levels:
    # at most 4 in the Stacks project and the HoTT book); a hostile nest would only be noise.
    max_brace_depth: int = 100
    max_include_depth: int = 16
    # One statement's (or proof's) LaTeX source: the longest in the Stacks project is 14k characters,
    # and converting text this long takes time that grows faster than its length.
    max_statement_source_chars: int = 100_000
    # A paper's text with every include inlined: the HoTT book is 1.7M characters; an include bomb
    # (a file read ten times by a file read ten times ...) stops here, the includes past it refused.
    max_paper_chars: int = 16_000_000
    # Files read for one paper, every inclusion counted (a book has a few hundred).
    max_paper_files: int = 5_000
    # Archives: members, unpacked bytes in all, and bytes in one file (decompression bombs).
    max_archive_members: int = 10_000
    max_unpacked_bytes: int = 512 * 1024 * 1024
    max_file_bytes: int = 64 * 1024 * 1024
    # Wall-clock time for parsing one paper in a worker process.
    paper_timeout_s: float = 120.0
