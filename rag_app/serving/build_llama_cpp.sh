#!/usr/bin/env bash
# Build llama-cpp-python (the chat model's local server) for what this CPU really runs, and install it
# into the app's environment. Called by scripts/setup.sh (through scripts/build_llama_cpp.sh) and by `rag-app llm
# build` (rag_app/serving/llama_build.py); safe to run again (a build that is cached is only installed).
# It ships inside the rag_app package, so an installed rag-app (a wheel, no checkout) builds its own server:
#   - in a source checkout (rag_app/serving/ under a directory with pyproject.toml and scripts/): it works in the
#     checkout and installs into its .venv, the version pinned in its pyproject.toml;
#   - anywhere else (site-packages): it installs into the environment of RAG_APP_VENV_PYTHON (`rag-app llm build`
#     passes its own interpreter; default $PYTHON), the version pinned in that environment's rag-app metadata.
#
# Why not pip's own build: it compiles ggml with -march=native, i.e. for whatever the CPU *advertises*;
# a cloud VM that lists AMX and AVX-512 but traps on them kills the server with SIGILL at its first
# answer. And pip caches the wheel under a key that ignores CMAKE_ARGS, so changing the flags changed
# nothing. Here:
#   - rag_app/serving/cpu_features.py checks which instructions run (CPUID, XCR0, a probe in a child)
#     and names the build: "haswell" (AVX2, FMA, F16C, BMI2: every x86-64 CPU since 2013) or "x64";
#   - the wheel is built without pip's cache and kept under a key of its version, flags and Python;
#   - a second libggml-cpu.so without any extension (the "x64" variant) is built beside it: the app
#     retries with it when the server dies of SIGILL anyway (a venv moved to another machine).
# Environment: PYTHON (the interpreter for the probe), RAG_APP_VENV_PYTHON (the interpreter whose environment
# gets llama-cpp-python; default: the checkout's .venv/bin/python, else $PYTHON), RAG_APP_BUILD_CACHE (default
# ~/.cache/rag-app/builds), RAG_APP_LLAMA_PROFILE (force "haswell" or "x64"), RAG_APP_BUILD_VERBOSE=1 (the
# compiler's progress in the output: the background build's log, which the chat's sidebar reads).
# --if-cached: install a build already in the cache and exit 3 without building when there is none (the first
# command then starts the build in the background: rag_app/serving/llama_build.py).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"  # rag_app/serving: in a checkout or in site-packages
root="$(cd "$here/../.." && pwd)"
only_cached=0
[ "${1:-}" = "--if-cached" ] && only_cached=1

PYTHON="${PYTHON:-python3}"
if [ -f "$root/pyproject.toml" ] && [ -f "$root/scripts/build_llama_cpp.sh" ]; then  # a source checkout
    cd "$root"
    VENV_PY="${RAG_APP_VENV_PYTHON:-.venv/bin/python}"
    version="$(sed -n 's/.*"llama-cpp-python\[server\]==\([0-9.]*\)".*/\1/p' pyproject.toml)"
    [ -n "$version" ] || { echo "pyproject.toml pins no llama-cpp-python[server]==VERSION" >&2; exit 1; }
else  # an installed rag-app: the pin of its `llm` extra, from the metadata of the environment it installs into
    VENV_PY="${RAG_APP_VENV_PYTHON:-$PYTHON}"
    version="$("$VENV_PY" -c 'import importlib.metadata as m, re
for requirement in m.requires("rag-app") or []:
    pin = re.match(r"llama-cpp-python\[server\]\s*==\s*([0-9.]+)", requirement)
    if pin:
        print(pin.group(1))
        break' || true)"
    [ -n "$version" ] || { echo "rag-app's metadata in $VENV_PY's environment pins no llama-cpp-python[server]==VERSION" >&2; exit 1; }
fi
profile="${RAG_APP_LLAMA_PROFILE:-$("$PYTHON" "$here/cpu_features.py" --profile)}"
cmake_args="$("$PYTHON" "$here/cpu_features.py" --cmake-args "$profile")"
safe_args="$("$PYTHON" "$here/cpu_features.py" --cmake-args x64)"
# the Python tag of the wheel and the environment's prefix, where its build is recorded (llm_server.llama_build_dir)
target="$("$VENV_PY" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}"); print(sys.prefix)')"
pytag="${target%%$'\n'*}"
key="$(printf '%s\n' "llama-cpp-python==$version" "$cmake_args" "$safe_args" "$(uname -m)" "$pytag" \
    | sha256sum | cut -c1-16)"
cache="${RAG_APP_BUILD_CACHE:-$HOME/.cache/rag-app/builds}/llama-cpp-python-$version-$profile-$key"
installed="${target#*$'\n'}/share/rag-app/llama-cpp"
[ "$(cat "$installed/key" 2>/dev/null)" = "$key" ] && exit 0
if [ "$only_cached" = 1 ] && ! ls "$cache"/*.whl >/dev/null 2>&1; then
    exit 3
fi

# One build at a time per cache: a background build and the test command's setup wait for each other, and the
# second finds the first one's wheel.
mkdir -p "$(dirname "$cache")"
exec 9>"$(dirname "$cache")/.build.lock"
# every step of a build has its own deadline below; the wait for another one is bounded as well
flock -w 7200 9 || { echo "another llama.cpp build held the build cache for 2 hours; giving up" >&2; exit 1; }

quiet=--quiet
[ "${RAG_APP_BUILD_VERBOSE:-0}" = 1 ] && quiet=--verbose
if ! ls "$cache"/*.whl >/dev/null 2>&1; then
    echo "Building llama.cpp for this CPU (profile $profile; several minutes, once) ..."
    work="$(mktemp -d "${TMPDIR:-/tmp}/rag-app-llama-build.XXXXXX")"
    trap 'rm -rf "$work"' EXIT
    # Every step has a deadline (timeout): a stuck download or compiler ends the setup with an error.
    timeout 1200 "$VENV_PY" -m pip download --quiet --no-deps --no-binary :all: "llama-cpp-python==$version" -d "$work/src"
    sdist="$(ls "$work"/src/llama_cpp_python-*.tar.gz)"
    CMAKE_ARGS="$cmake_args" timeout 5400 "$VENV_PY" -m pip wheel "$quiet" --no-deps --no-cache-dir "$sdist" -w "$work/wheel"
    mkdir -p "$work/wheel/safe"
    if [ "$safe_args" != "$cmake_args" ] && [ "$(uname -m)" = "x86_64" ]; then
        # Only ggml's CPU library holds instruction-set-specific code (ggml adds its -m flags to that
        # target alone), so the safe variant is that one library, built from the same sources.
        command -v cmake >/dev/null || timeout 1200 "$VENV_PY" -m pip install --quiet cmake
        cmake_bin="$(command -v cmake || echo "$(dirname "$VENV_PY")/cmake")"
        tar -xzf "$sdist" -C "$work"
        # shellcheck disable=SC2086  # the flags are words
        timeout 600 "$cmake_bin" -S "$work"/llama_cpp_python-*/vendor/llama.cpp -B "$work/safe-build" -DCMAKE_BUILD_TYPE=Release \
            -DCMAKE_SKIP_BUILD_RPATH=ON -DBUILD_SHARED_LIBS=ON -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
            -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF $safe_args >"$work/safe-build.log" 2>&1 \
            && timeout 3600 "$cmake_bin" --build "$work/safe-build" --target ggml-cpu -j "$(nproc)" >>"$work/safe-build.log" 2>&1 \
            || { tail -20 "$work/safe-build.log" >&2; echo "building the safe CPU library failed" >&2; exit 1; }
        cp "$(find "$work/safe-build" -name 'libggml-cpu.so' | head -1)" "$work/wheel/safe/libggml-cpu.so"
    fi
    printf '{"version": "%s", "profile": "%s", "cmake_args": "%s", "safe_cmake_args": "%s", "key": "%s"}\n' \
        "$version" "$profile" "$cmake_args" "$safe_args" "$key" >"$work/wheel/build.json"
    mkdir -p "$(dirname "$cache")"
    rm -rf "$cache.partial" && mv "$work/wheel" "$cache.partial" && mv "$cache.partial" "$cache"
fi

timeout 1200 "$VENV_PY" -m pip install --quiet --no-deps --force-reinstall "$cache"/llama_cpp_python-*.whl
rm -rf "$installed" && mkdir -p "$installed"
cp "$cache/build.json" "$installed/build.json"
[ -f "$cache/safe/libggml-cpu.so" ] && mkdir -p "$installed/safe" && cp "$cache/safe/libggml-cpu.so" "$installed/safe/"
echo "$key" >"$installed/key"
echo "llama.cpp: build profile $profile installed ($cache)"
