"""An installed rag-app (a wheel, no checkout) builds its own model server: the llama.cpp build script ships as
package data of ``rag_app`` (``rag_app/serving/build_llama_cpp.sh``), and ``rag-app llm build --dry-run`` says what
the build would run without running it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

import rag_app
from rag_app.cli import app
from rag_app.serving.llama_build import BUILD_SCRIPT, LlamaBuild, source_checkout

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = Path(rag_app.__file__).resolve().parent


def test_the_build_script_is_package_data_of_rag_app() -> None:
    assert BUILD_SCRIPT.is_file()
    assert BUILD_SCRIPT.resolve().is_relative_to(PACKAGE), f"{BUILD_SCRIPT} is outside the rag_app package"
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["rag_app"]
    listed = [pattern for pattern in patterns if BUILD_SCRIPT.resolve() in {p.resolve() for p in PACKAGE.glob(pattern)}]
    assert listed, f"no pattern of [tool.setuptools.package-data] rag_app ships {BUILD_SCRIPT.relative_to(PACKAGE)}"


def test_the_checkouts_old_script_runs_the_packaged_one() -> None:
    """scripts/setup.sh (and the docs) call scripts/build_llama_cpp.sh: it hands over to the packaged script."""
    wrapper = ROOT / "scripts" / "build_llama_cpp.sh"
    assert "exec bash" in wrapper.read_text() and "rag_app/serving/build_llama_cpp.sh" in wrapper.read_text()
    assert source_checkout(BUILD_SCRIPT) == ROOT


def test_a_packaged_script_installs_into_the_environment_that_runs_the_app(tmp_path: Path) -> None:
    """Outside a checkout there is no .venv to install into: the build gets the app's own interpreter."""
    script = tmp_path / "site-packages" / "rag_app" / "serving" / "build_llama_cpp.sh"
    script.parent.mkdir(parents=True)
    shutil.copy(BUILD_SCRIPT, script)
    plan = LlamaBuild(tmp_path / "data", script=script).plan()
    assert plan.checkout is None and plan.script == script
    assert plan.knobs["RAG_APP_VENV_PYTHON"] == sys.executable and plan.installs_into == Path(sys.executable)
    checkout_plan = LlamaBuild(tmp_path / "data").plan()
    assert checkout_plan.checkout == ROOT and "RAG_APP_VENV_PYTHON" not in checkout_plan.knobs
    assert checkout_plan.installs_into == ROOT / ".venv" / "bin" / "python"


def test_dry_run_prints_the_command_and_builds_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_APP_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("RAG_APP_BUILD_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(LlamaBuild, "installed", staticmethod(lambda: False))  # it would start, were it not dry

    def no_build(self: LlamaBuild) -> None:
        raise AssertionError("a dry run started the build")

    monkeypatch.setattr(LlamaBuild, "start_in_background", no_build)
    result = CliRunner().invoke(app, ["llm", "build", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert f"script: {BUILD_SCRIPT}" in result.output.splitlines()
    assert f"cache: {tmp_path / 'cache'}" in result.output and "RAG_APP_BUILD_CACHE=" in result.output
    assert "PYTHON=" in result.output and "RAG_APP_BUILD_VERBOSE=1" in result.output
    result = CliRunner().invoke(app, ["llm", "build", "--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.output)
    assert plan["script"] == str(BUILD_SCRIPT) and plan["script_exists"] and plan["would_start"]
    assert plan["environment"]["RAG_APP_BUILD_CACHE"] == str(tmp_path / "cache")
    assert not (tmp_path / "data").exists() and not (tmp_path / "cache").exists()


def _source_tree(destination: Path) -> Path:
    """The working tree as git sees it (tracked and new files, not ignored ones): a clean build, no stale build/
    or egg-info of the checkout's, and nothing written into the checkout."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True, timeout=60,
    ).stdout.decode()  # fmt: skip
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():  # a deletion not staged yet is listed and gone
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    return destination


@pytest.mark.slow
def test_an_installed_wheel_finds_its_own_build_script(tmp_path: Path) -> None:
    """Build the wheel, install it (without its dependencies) into a fresh venv that borrows this venv's packages
    but not its editable rag_app, and ask it from a directory outside the checkout what its build would run."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout to build the wheel from")
    env = {name: value for name, value in os.environ.items() if name not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(HF_HUB_OFFLINE="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1",
               RAG_APP_DATA_DIR=str(tmp_path / "data"), RAG_APP_BUILD_CACHE=str(tmp_path / "cache"))  # fmt: skip

    started = time.monotonic()
    source = _source_tree(tmp_path / "src")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation", "--no-index",
         "--quiet", "-w", str(tmp_path / "wheels")],
        cwd=tmp_path, env=env, check=True, timeout=900,
    )  # fmt: skip
    (wheel,) = (tmp_path / "wheels").glob("rag_app-*.whl")
    print(f"wheel built in {time.monotonic() - started:.1f} s")

    # The dependencies come from this venv's site-packages, added as a plain path: its .pth files (the editable
    # install's finder among them) are not run, so the only rag_app there is the wheel's. (--system-site-packages
    # would add the base interpreter's packages, not this venv's.)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    site_packages = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, check=True, timeout=60,
        ).stdout.strip()
    )  # fmt: skip
    borrowed = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (site_packages / "borrowed-from-the-test-venv.pth").write_text("".join(f"{path}\n" for path in borrowed))
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--force-reinstall", "--ignore-installed",
         "--no-index", str(wheel)],
        cwd=tmp_path, env=env, check=True, timeout=600,
    )  # fmt: skip

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    imported = subprocess.run(
        [str(python), "-c", "import rag_app; print(rag_app.__file__)"],
        cwd=outside, env=env, capture_output=True, text=True, check=True, timeout=120,
    ).stdout.strip()  # fmt: skip
    installed_package = site_packages / "rag_app"
    assert Path(imported).resolve().is_relative_to(installed_package.resolve()), imported

    rag_app_command = venv / "bin" / "rag-app"
    done = subprocess.run(
        [str(rag_app_command), "llm", "build", "--dry-run"],
        cwd=outside, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("script: ")]
    script = Path(line.removeprefix("script: "))
    assert script.resolve().is_relative_to(installed_package.resolve()) and script.is_file(), done.stdout
    assert f"installs into: {python}" in done.stdout, done.stdout
    assert not (tmp_path / "data").exists(), "a dry run writes nothing"

    done = subprocess.run(
        [str(rag_app_command), "llm", "build", "--dry-run", "--json"],
        cwd=outside, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    plan = json.loads(done.stdout)
    assert plan["script"] == str(script) and plan["script_exists"] and plan["checkout"] is None
    assert plan["environment"]["RAG_APP_VENV_PYTHON"] == str(python)

    # The packaged script itself, outside any checkout: it finds the version pinned in the installed metadata, its
    # CPU probe beside it and the venv's prefix, and with an empty cache stops before building (exit 3).
    done = subprocess.run(
        ["bash", str(script), "--if-cached"],
        cwd=outside, env={**env, **plan["environment"]}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr
    assert not (venv / "share" / "rag-app").exists()
