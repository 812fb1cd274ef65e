"""Chromium for the browser tests: Debian's package, installed on first use where possible."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import httpx
import pytest

CANDIDATES = ("chromium", "chromium-browser")


def chromium_executable() -> str:
    """The Chromium binary; installs Debian's `chromium` when missing and allowed, else skips with the reason."""
    found = _find()
    if found:
        return found
    reason = _install()
    found = _find()
    if found:
        return found
    pytest.skip(f"Chromium is not installed and could not be installed here: {reason}")


def _find() -> str | None:
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


def _install() -> str:
    if shutil.which("apt-get") is None:
        return "no apt-get on this machine (install Chromium and put it on PATH)"
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        return "not root: run `sudo apt-get install chromium chromium-driver`"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    command = ["apt-get", "install", "-y", "-q", "chromium", "chromium-driver"]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    if result.returncode != 0:  # the package lists may be missing or stale
        subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True, timeout=600)
        result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    return "" if result.returncode == 0 else f"`{' '.join(command)}` failed: {result.stderr.strip()[-500:]}"


def wait_for_streamlit(url: str, process: subprocess.Popen[bytes], log: Path, seconds: float) -> None:
    """Wait until the Streamlit app at ``url`` is healthy; fail with its log when it exits or never is."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the app exited early:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{url}/_stcore/health", timeout=1).text == "ok":
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"the app did not come up in {seconds:.0f} s:\n{log.read_text()[-3000:]}")
