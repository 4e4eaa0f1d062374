"""bench/local_model.py setup: a portable build (never tuned to the building CPU), a
cached server checked once per setup and rebuilt when it dies by SIGILL or was built
natively by an older setup, and the Python packages setup needs installed by setup
itself. No real build here (minutes): the build function is handed in and records its
calls; the realmodel tests use the real one."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "bench" / "local_model.py"


def _load() -> Any:
    spec = importlib.util.spec_from_file_location("local_model", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


local_model = _load()

DIES_BY_SIGILL = "#!/bin/sh\nkill -ILL $$\n"
STARTS = "#!/bin/sh\nexit 0\n"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SELFFORGE_LLAMA_CACHE", str(tmp_path / "llama"))
    return tmp_path / "llama"


def cached_server(body: str, record: dict[str, object] | None) -> Path:
    binary = local_model.server_path()
    binary.parent.mkdir(parents=True, exist_ok=True)
    binary.write_text(body)
    binary.chmod(0o755)
    if record is not None:
        local_model.record_path().write_text(json.dumps(record))
    return binary


def recording_build(calls: list[str], body: str = STARTS) -> Any:
    """Stands in for the real build (minutes): leaves a server that runs `body` and the
    record the real build writes."""

    def build(profile: str) -> Path:
        calls.append(profile)
        return cached_server(
            body, {"profile": profile, "options": local_model.cmake_options(profile)}
        )

    return build


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
@pytest.mark.parametrize("profile", ["portable", "baseline"])
def test_the_cmake_options_never_tune_the_build_to_this_cpu(profile: str, machine: str) -> None:
    options = local_model.cmake_options(profile, machine)
    assert "-DGGML_NATIVE=OFF" in options
    assert not [o for o in options if "native" in o.lower() and o != "-DGGML_NATIVE=OFF"]
    assert not local_model.is_native(options)
    if profile == "baseline" and machine == "x86_64":
        assert {"-DGGML_AVX=OFF", "-DGGML_AVX2=OFF", "-DGGML_F16C=OFF"} <= set(options)


def test_llama_cpps_default_and_explicit_native_flags_count_as_native() -> None:
    without = [o for o in local_model.CMAKE_OPTIONS if "GGML_NATIVE" not in o]
    assert local_model.is_native(without)  # llama.cpp builds natively unless told not to
    assert local_model.is_native([*local_model.CMAKE_OPTIONS, "-DGGML_NATIVE=ON"])
    assert local_model.is_native([*local_model.CMAKE_OPTIONS, "-DCMAKE_C_FLAGS=-march=native"])


def test_a_cached_server_that_dies_by_sigill_is_rebuilt_for_the_baseline(cache: Path) -> None:
    options = local_model.cmake_options("portable")
    binary = cached_server(DIES_BY_SIGILL, {"profile": "portable", "options": options})
    assert local_model.probe(binary) == -signal.SIGILL
    calls: list[str] = []
    assert local_model.build_server(recording_build(calls)) == binary
    assert calls == ["baseline"]
    assert local_model.probe(binary) == 0


def test_a_server_an_older_setup_built_is_kept_while_it_starts_and_rebuilt_portable_if_not(
    cache: Path,
) -> None:
    cached_server(STARTS, None)  # no record: llama.cpp's default build, native
    calls: list[str] = []
    local_model.build_server(recording_build(calls))
    assert calls == []  # it runs here, whose cache it is: no rebuild of tens of minutes
    cached_server(DIES_BY_SIGILL, None)
    local_model.build_server(recording_build(calls))
    assert calls == ["portable"]
    assert json.loads(local_model.record_path().read_text())["profile"] == "portable"

    native = [*local_model.CMAKE_OPTIONS[:-1], "-DGGML_NATIVE=ON"]
    cached_server(DIES_BY_SIGILL, {"profile": "portable", "options": native})
    calls.clear()
    local_model.build_server(recording_build(calls))
    assert calls == ["portable"]  # a native build's SIGILL says nothing of the portable one


def test_a_portable_server_that_starts_is_kept_and_a_missing_one_built(cache: Path) -> None:
    calls: list[str] = []
    local_model.build_server(recording_build(calls))
    assert calls == ["portable"]
    local_model.build_server(recording_build(calls))
    assert calls == ["portable"]  # checked once, kept


def test_a_build_that_still_dies_ends_setup_with_one_line(cache: Path) -> None:
    calls: list[str] = []
    with pytest.raises(SystemExit) as ended:
        local_model.build_server(recording_build(calls, DIES_BY_SIGILL))
    assert calls == ["portable", "baseline"]
    assert "SIGILL" in str(ended.value) and "\n" not in str(ended.value)

    calls.clear()
    local_model.record_path().unlink()
    with pytest.raises(SystemExit) as ended:  # a server that fails otherwise: no loop
        local_model.build_server(recording_build(calls, "#!/bin/sh\nexit 3\n"))
    assert calls == ["portable"]
    assert "exit 3" in str(ended.value) and "\n" not in str(ended.value)


@pytest.mark.slow  # pip reaches the package index
def test_setup_installs_what_reading_the_sdist_needs_into_a_fresh_venv(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    has_scm = [str(python), "-c", "import setuptools_scm"]
    assert subprocess.run(has_scm, capture_output=True).returncode != 0  # the starting point
    env = {**os.environ, "SELFFORGE_LLAMA_CACHE": str(tmp_path / "llama")}
    done = subprocess.run(
        [str(python), str(SCRIPT), "deps"], capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "installing setuptools>=77, setuptools-scm>=8" in done.stdout
    assert subprocess.run(has_scm, capture_output=True).returncode == 0
    again = subprocess.run([str(python), str(SCRIPT), "deps"], capture_output=True, text=True)
    assert again.returncode == 0 and "installing" not in again.stdout  # only when missing
