"""Result files the project commits, written small and still readable (tracked files stay under 8 MB).

- Charts as palette PNGs: 64 colours hold a bar chart or a screenshot of the app; the file is a
  third of matplotlib's RGBA one.
- JSON with every innermost object or list on one line: a diff still shows which measure of which
  retriever moved, at three quarters of ``indent=2``'s size.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

PALETTE_COLOURS = 64


def save_png(figure: Any, path: Path, dpi: int = 110) -> None:
    """Save a matplotlib ``figure`` to ``path`` as a palette PNG."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    buffer.seek(0)
    _write_palette_png(buffer, Path(path))


def _write_palette_png(source: io.BytesIO, path: Path) -> None:
    from PIL import Image

    with Image.open(source) as image:
        rgb = image.convert("RGB")
    palette = rgb.quantize(colors=PALETTE_COLOURS, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    path.parent.mkdir(parents=True, exist_ok=True)
    palette.save(path, format="PNG", optimize=True)


def json_text(value: Any) -> str:
    """``value`` as JSON: nested objects indented, each innermost object or list on one line."""
    return _json_lines(value, 0) + "\n"


def _json_lines(value: Any, depth: int) -> str:
    if not _has_children(value):
        return json.dumps(value, ensure_ascii=False)
    inner = "  " * (depth + 1)
    if isinstance(value, dict):
        items = [
            f"{inner}{json.dumps(key, ensure_ascii=False)}: {_json_lines(item, depth + 1)}"
            for key, item in value.items()
        ]
        return "{\n" + ",\n".join(items) + "\n" + "  " * depth + "}"
    items = [inner + _json_lines(item, depth + 1) for item in value]
    return "[\n" + ",\n".join(items) + "\n" + "  " * depth + "]"


def _has_children(value: Any) -> bool:
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return any(isinstance(child, dict | list) for child in children)
