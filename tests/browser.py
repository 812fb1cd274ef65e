"""Chromium for the browser tests: Debian's package, installed on first use where possible."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Page

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


def wait_for_the_run_to_end(page: Page, seconds: float) -> None:
    """Wait until the app's script has run to its end (Streamlit's "Running..." icon is gone). While it runs the
    page is redrawn, and a click then may land on an element being replaced: the click does nothing."""
    page.get_by_test_id("stStatusWidgetRunningIcon").wait_for(state="detached", timeout=seconds * 1000)


@contextmanager
def chat_page(command: list[str], url: str, env: dict[str, str], work: Path, viewport: dict[str, int],
              seconds: float) -> Iterator[Page]:  # fmt: skip
    """Start the chat (``command``, serving ``url``; its log in ``work``), wait until it is healthy, and
    yield a headless Chromium page opened on it; both are stopped after. Raises SystemExit with the
    chat's log when it does not come up (the screenshot scripts' one failure)."""
    from playwright.sync_api import sync_playwright

    log = work / "ui.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=env, cwd=work)
    try:
        try:
            wait_for_streamlit(url, process, log, seconds)
        except RuntimeError as error:
            raise SystemExit(str(error)) from None
        with sync_playwright() as driver:
            flags = ["--headless", "--no-sandbox", "--disable-gpu"]
            browser = driver.chromium.launch(executable_path=chromium_executable(), headless=True, args=flags)
            page = browser.new_page(viewport=viewport, device_scale_factor=1)
            page.goto(url)
            yield page
            browser.close()
    finally:
        process.terminate()
        process.wait(timeout=60)
