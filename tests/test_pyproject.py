"""Packaging metadata: what an install log shows a new user."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_metadata_builds_without_deprecation_warnings_and_has_an_spdx_license(tmp_path: Path) -> None:
    # The same metadata step `pip install -e .` runs; its warnings land in every install log.
    script = (
        "import sys; from setuptools import build_meta; print(build_meta.prepare_metadata_for_build_wheel(sys.argv[1]))"
    )
    done = subprocess.run(
        [sys.executable, "-W", "always", "-c", script, str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    output = done.stdout + done.stderr
    assert "Deprecat" not in output and "deprecated" not in output, output[-3000:]
    metadata = (tmp_path / done.stdout.strip().splitlines()[-1] / "METADATA").read_text()
    assert "License-Expression: Apache-2.0" in metadata.splitlines()
