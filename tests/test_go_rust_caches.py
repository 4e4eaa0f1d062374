"""Go's build cache (and cargo's target dir) persist per repository, under its git dir:
the baseline's trusted runs fill them, a candidate's check reads them through a copy it
cannot write back; go vet and the tests run once per check. Real go, real sandbox."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import directives, git, make_repo, needs_cargo, trees_dir

needs_go = pytest.mark.skipif(shutil.which("go") is None, reason="needs the go toolchain")

GO_MOD = "module example.com/mathx\n\ngo 1.19\n"
MATHX = "package mathx\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n"
MATHX_TEST = """package mathx

import "testing"

func TestAdd(t *testing.T) {
	if Add(2, 3) != 5 {
		t.Fatal("Add")
	}
}
"""
# A candidate's new test: it finds the trusted cache's entries through its GOCACHE (the
# check fails if it finds none: nothing was reused), then writes through every link, into
# its GOCACHE, and straight at the read-only trusted folder.
POISON_TEST = """package mathx

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestPoison(t *testing.T) {
	cache := os.Getenv("GOCACHE")
	links := 0
	filepath.WalkDir(cache, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type()&fs.ModeSymlink != 0 {
			links++
			os.WriteFile(p, []byte("poison"), 0o644)
			if target, err := os.Readlink(p); err == nil {
				os.WriteFile(target, []byte("poison"), 0o644)
				os.Chmod(target, 0o777)
			}
		}
		return nil
	})
	os.WriteFile(filepath.Join(cache, "poison"), []byte("x"), 0o644)
	os.WriteFile("/tmp/.selfforge-trusted/go-build/poison", []byte("x"), 0o644)
	if links == 0 {
		t.Fatalf("no entry of the trusted cache in %s", cache)
	}
}
"""


def _go_repo(tmp_path: Path, extra: dict[str, str] | None = None) -> Path:
    files = {"go.mod": GO_MOD, "mathx.go": MATHX, "mathx_test.go": MATHX_TEST, **(extra or {})}
    return make_repo(tmp_path / "repo", files, directives("go test ./...", lint="go vet ./..."))


def _branch(repo: Path, name: str, files: dict[str, str]) -> None:
    git(repo, "checkout", "-q", "-b", name)
    for rel, text in files.items():
        (repo / rel).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", f"change {name}")
    git(repo, "checkout", "-q", "main")


def _check(repo: Path, rev: str, env: dict[str, str] | None = None) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "selfforge", "check", "--repo", str(repo), rev, "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
    )
    assert proc.stdout.strip(), proc.stderr
    return json.loads(proc.stdout)


def _trusted_go_cache(repo: Path) -> Path:
    common = git(repo, "rev-parse", "--git-common-dir").strip()
    return (repo / common).resolve() / "selfforge" / "cache" / "go-build"


def _contents(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() or p.is_symlink()
    }


@needs_go
def test_a_check_reuses_the_trusted_go_cache_and_cannot_write_into_it(tmp_path: Path) -> None:
    repo = _go_repo(tmp_path)
    _branch(repo, "a", {"mathx.go": MATHX.replace("a + b", "b + a")})
    _branch(repo, "b", {"mathx.go": MATHX.replace("a + b", "b + a"), "poison_test.go": POISON_TEST})
    first = _check(repo, "a")
    assert first["verdict"] == "accepted", first
    cache = _trusted_go_cache(repo)
    before = _contents(cache)
    assert len(before) > 10  # the baseline's runs filled it
    assert not any("go-build" in p for p in git(repo, "ls-files", "-o").split())  # not in the tree
    second = _check(repo, "b")
    # not rejected: the candidate's test found the trusted entries through its GOCACHE
    # (its poison test checks nothing the change does: a person reviews that)
    assert second["verdict"] in ("accepted", "needs_review"), second
    assert "passed before and fail now" not in second["reason"], second
    assert _contents(cache) == before  # nothing it wrote reached the trusted cache


@needs_go
def test_go_vet_and_the_tests_run_once_when_the_change_reaches_every_package(
    tmp_path: Path,
) -> None:
    # A suite over 2 s whose tests each take 0.00 s (the time is the binary's start): the
    # focused first pass once chose every test, then the suite ran them all again.
    slow_start = (
        'package mathx\n\nimport "time"\n\nfunc init() { time.Sleep(2100 * time.Millisecond) }\n'
    )
    repo = _go_repo(tmp_path, {"start_test.go": slow_start})
    _branch(repo, "a", {"mathx.go": MATHX.replace("a + b", "b + a")})
    verdict = _check(repo, "a")
    assert verdict["verdict"] == "accepted", verdict
    names = [s["name"] for s in verdict["steps"]]
    assert names.count("lint") == 1, names
    assert names.count("tests") == 1 and "tests:affected" not in names, names


# A module with a dependency, example.com/greet, that only a module cache of the test's
# own holds: put there by go itself, offline, from a file:// proxy (a folder of zips).
GREET_MOD = "module example.com/greet\n\ngo 1.19\n"
GREET = 'package greet\n\nfunc Hello() string { return "hello" }\n'
APP_MOD = "module example.com/app\n\ngo 1.19\n\nrequire example.com/greet v1.0.0\n"
APP = 'package app\n\nimport "example.com/greet"\n\nfunc Say() string { return greet.Hello() }\n'
APP_TEST = """package app

import "testing"

func TestSay(t *testing.T) {
	if Say() != "hello" {
		t.Fatal(Say())
	}
}
"""
# A candidate's test that makes the dependency's source writable (the check's user owns
# it: only the mount can refuse) and writes into it and beside it.
MODCACHE_POISON_TEST = """package app

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPoison(t *testing.T) {
	cache := os.Getenv("GOMODCACHE")
	source := filepath.Join(cache, "example.com", "greet@v1.0.0", "greet.go")
	os.Chmod(filepath.Dir(source), 0o755)
	os.Chmod(source, 0o644)
	if os.WriteFile(source, []byte("package greet\\n"), 0o644) == nil {
		t.Errorf("wrote into the module cache: %s", source)
	}
	if os.WriteFile(filepath.Join(cache, "poison"), []byte("x"), 0o644) == nil {
		t.Errorf("wrote into the module cache: %s", cache)
	}
}
"""


def _module_cache_with_greet(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A module cache holding example.com/greet v1.0.0, and the app's go.mod and go.sum."""
    at = tmp_path / "proxy" / "example.com" / "greet" / "@v"
    at.mkdir(parents=True)
    (at / "list").write_text("v1.0.0\n")
    (at / "v1.0.0.info").write_text('{"Version": "v1.0.0", "Time": "2020-01-01T00:00:00Z"}')
    (at / "v1.0.0.mod").write_text(GREET_MOD)
    with zipfile.ZipFile(at / "v1.0.0.zip", "w") as archive:
        archive.writestr("example.com/greet@v1.0.0/go.mod", GREET_MOD)
        archive.writestr("example.com/greet@v1.0.0/greet.go", GREET)
    app = tmp_path / "app"
    app.mkdir()
    (app / "go.mod").write_text(APP_MOD)
    (app / "app.go").write_text(APP)
    modcache = tmp_path / "modcache"
    env = {
        **os.environ,
        "GOPROXY": (tmp_path / "proxy").as_uri(),
        "GOSUMDB": "off",
        "GOFLAGS": "-mod=mod",
        "GOMODCACHE": str(modcache),
        "GOCACHE": str(tmp_path / "gocache"),
        "GOPATH": str(tmp_path / "gopath"),
        "GOTOOLCHAIN": "local",
    }
    subprocess.run(["go", "mod", "tidy"], cwd=app, env=env, check=True, capture_output=True)
    assert (modcache / "example.com" / "greet@v1.0.0" / "greet.go").is_file()
    return modcache, {"go.mod": APP_MOD, "go.sum": (app / "go.sum").read_text(), "app.go": APP}


@needs_go
def test_a_go_check_builds_with_the_user_s_module_cache_and_cannot_write_into_it(
    tmp_path: Path,
) -> None:
    modcache, files = _module_cache_with_greet(tmp_path)
    repo = make_repo(
        tmp_path / "repo", {**files, "app_test.go": APP_TEST}, directives("go test ./...")
    )
    _branch(repo, "p", {"poison_test.go": MODCACHE_POISON_TEST})
    before = _contents(modcache)
    verdict = _check(repo, "p", {"GOMODCACHE": str(modcache)})
    # accepted: the package built (the dependency was found in the module cache, offline)
    # and every write into the cache failed. Shown writable (or not shown, go would
    # download into a fresh one: no network), the verdict is rejected. (Its poison test
    # checks nothing the change does: needs review, not accepted, since this session.)
    assert verdict["verdict"] in ("accepted", "needs_review"), verdict
    assert "exited" not in verdict["reason"] and "fail now" not in verdict["reason"], verdict
    assert _contents(modcache) == before


@needs_go
def test_go_vet_sees_the_module_cache_and_finds_what_the_change_adds(tmp_path: Path) -> None:
    # go vet ran without the module cache (nor GOPROXY=off): on base and candidate alike it
    # failed to load the package, one identical finding each, so the lint gate saw nothing
    # new and a change vet would refuse was accepted.
    modcache, files = _module_cache_with_greet(tmp_path)
    repo = make_repo(
        tmp_path / "repo",
        {**files, "app_test.go": APP_TEST},
        directives("go test ./...", lint="go vet ./..."),
    )
    # a self-assignment: vet's "assign" check, not one of those go test runs itself
    misuse = APP + "\nfunc Twice() string {\n\ts := greet.Hello()\n\ts = s\n\treturn s + s\n}\n"
    _branch(repo, "vet", {"app.go": misuse})
    verdict = _check(repo, "vet", {"GOMODCACHE": str(modcache)})
    assert verdict["verdict"] == "rejected", verdict
    assert "lint" in verdict["reason"], verdict


# The target dir a candidate's test runs with (its CARGO_TARGET_DIR, else the folder its own
# executable was built in) and every file under a folder.
RUST_HELPERS = """fn target_dir() -> std::path::PathBuf {
    match std::env::var("CARGO_TARGET_DIR") {
        Ok(dir) => dir.into(),
        Err(_) => std::env::current_exe().unwrap().ancestors().nth(3).unwrap().to_path_buf(),
    }
}

fn files(dir: &std::path::Path, found: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() { files(&path, found) } else { found.push(path) }
    }
}
"""
CARGO_TOML = '[package]\nname = "adder"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n'
LIB = """pub fn add(a: i32, b: i32) -> i32 {
    a + b
}

#[cfg(test)]
mod tests {
    #[test]
    fn adds() {
        assert_eq!(super::add(2, 3), 5);
    }
}
"""
IT = "#[test]\nfn integration_add() {\n    assert_eq!(adder::add(2, 2), 4);\n}\n"
# What a candidate's test does to the target dir it runs with: counts the trusted run's
# files it finds there with their mtimes (a copy keeps them; a fresh or empty target dir
# has none), then overwrites every file, adds one, and writes at the trusted cache's path.
CARGO_POISON_TEST = """use std::path::Path;
use std::time::UNIX_EPOCH;

const TRUSTED: &[(&str, u128)] = &[@FILES@];
const TRUSTED_DIR: &str = r#"@DIR@"#;

@HELPERS@
fn mtime(path: &Path) -> Option<u128> {
    let modified = std::fs::metadata(path).ok()?.modified().ok()?;
    Some(modified.duration_since(UNIX_EPOCH).ok()?.as_nanos())
}

#[test]
fn poison() {
    assert_eq!(adder::add(2, 3), 5); // it checks the crate too: it can fail
    let target = target_dir();
    let reused = TRUSTED.iter().filter(|(rel, ns)| mtime(&target.join(rel)) == Some(*ns)).count();
    let mut found = Vec::new();
    files(&target, &mut found);
    for path in &found {
        let _ = std::fs::write(path, b"poison"); // a running test binary refuses: no matter
    }
    let _ = std::fs::write(target.join("poison"), b"poison");
    let _ = std::fs::create_dir_all(TRUSTED_DIR);
    let _ = std::fs::write(Path::new(TRUSTED_DIR).join("poison"), b"poison");
    assert!(reused > 0, "nothing of the trusted target dir in {}", target.display());
}
"""


def _crate(tmp_path: Path) -> Path:
    files = {"Cargo.toml": CARGO_TOML, "src/lib.rs": LIB, "tests/it.rs": IT}
    repo = make_repo(tmp_path / "repo", files, directives("cargo test --offline"))
    _branch(repo, "a", {"src/lib.rs": LIB.replace("a + b", "b + a")})
    return repo


def _trusted_cargo_target(repo: Path) -> Path:
    return _trusted_go_cache(repo).parent / "cargo-target"


def _stamps(folder: Path) -> dict[str, tuple[str, int]]:
    """Every file's content and mtime: cargo judges freshness by mtimes."""
    return {
        rel: (digest, (folder / rel).lstat().st_mtime_ns)
        for rel, digest in _contents(folder).items()
    }


def _poison_test(trusted: Path) -> str:
    listed = ", ".join(f'(r#"{rel}"#, {ns})' for rel, (_, ns) in _stamps(trusted).items())
    test = CARGO_POISON_TEST.replace("@HELPERS@", RUST_HELPERS).replace("@FILES@", listed)
    return test.replace("@DIR@", str(trusted))


def _copies_left(repo: Path) -> list[str]:
    scratch = trees_dir(repo) / "tmp"
    return [p.name for p in scratch.glob("selfforge-target-*")] if scratch.is_dir() else []


@needs_cargo
@pytest.mark.slow
def test_a_cargo_check_starts_from_the_trusted_target_dir_and_cannot_write_back(
    tmp_path: Path,
) -> None:
    repo = _crate(tmp_path)
    first = _check(repo, "a")
    assert first["verdict"] == "accepted", first
    trusted = _trusted_cargo_target(repo)
    # the base's run filled it: the crate's fingerprints and test binaries
    assert list((trusted / "debug" / ".fingerprint").glob("adder-*")), sorted(_contents(trusted))
    assert list((trusted / "debug" / "deps").glob("it-*"))
    before = _stamps(trusted)
    _branch(
        repo,
        "b",
        {"src/lib.rs": LIB.replace("a + b", "(b + a)"), "tests/poison.rs": _poison_test(trusted)},
    )
    second = _check(repo, "b")
    # accepted: the candidate's test found the trusted run's files, mtimes kept, in the
    # target dir it ran with (an empty private target dir would fail it)
    assert second["verdict"] == "accepted", second
    # and nothing it wrote reached the trusted cache (a writable bind of it would show
    # every file overwritten and a 'poison' beside them), nor stays after the check
    assert _stamps(trusted) == before
    assert _copies_left(repo) == []


# autocfg's own tests look their crate up by name, as a build script probing the
# compiler does: `rustc -L target/debug/deps` with `extern crate adder`.
CARGO_BY_NAME_TEST = """@HELPERS@
#[test]
fn found_by_name() {
    let deps = target_dir().join("debug").join("deps");
    let src = std::env::temp_dir().join("by_name.rs");
    let program = "extern crate adder;\\nfn main() { let _ = adder::add(1, 2); }\\n";
    std::fs::write(&src, program).unwrap();
    let out = std::process::Command::new("rustc")
        .args(["--edition=2021", "--emit=metadata", "-o"])
        .arg(std::env::temp_dir().join("by_name.rmeta"))
        .arg("-L").arg(&deps)
        .arg(&src)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(adder::add(2, 3), 5);
}
"""


@needs_cargo
@pytest.mark.slow
def test_a_release_commit_is_judged_with_one_build_of_the_crate(tmp_path: Path) -> None:
    """autocfg 57c8793 ("Release 1.5.0") was rejected: the target dir, copied from the
    base's, held the 1.4.0 and the 1.5.0 library, and its test that looks the crate up by
    name found two. The check's copy keeps the dependencies' builds, not the crate's."""
    test = CARGO_BY_NAME_TEST.replace("@HELPERS@", RUST_HELPERS)
    files = {"Cargo.toml": CARGO_TOML, "src/lib.rs": LIB, "tests/by_name.rs": test}
    repo = make_repo(tmp_path / "repo", files, directives("cargo test --offline"))
    release = CARGO_TOML.replace('version = "0.1.0"', 'version = "0.2.0"')
    _branch(repo, "release", {"Cargo.toml": release, "src/lib.rs": LIB.replace("a + b", "b + a")})
    _branch(repo, "fix", {"src/lib.rs": LIB.replace("a + b", "(a + b)")})
    assert _check(repo, "fix")["verdict"] == "accepted"  # the base's build is kept
    verdict = _check(repo, "release")
    assert verdict["verdict"] == "accepted", verdict
    # the base's build is in the trusted target dir; the release's never was
    libraries = sorted(_trusted_cargo_target(repo).glob("debug/deps/libadder-*.rlib"))
    assert len(libraries) == 1, libraries


# A candidate's test that would make every later check pass, were its target dir the
# trusted one: each test binary replaced by a script printing the base's tests as passed,
# and every file dated 2100, so that cargo takes them as fresh in any later tree and runs
# the scripts instead of building the change (plain cargo does exactly that).
CARGO_FORGE_TEST = """use std::fs::{self, File, FileTimes};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

const TRUSTED_DIR: &str = r#"@DIR@"#;
const PASSED: &str = "test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; \\
0 filtered out; finished in 0.00s";

@HELPERS@
#[test]
fn forge() {
    assert_eq!(adder::add(2, 3), 5); // it checks the crate too: it can fail
    let target = target_dir();
    let deps = target.join("debug").join("deps");
    for entry in fs::read_dir(&deps).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.contains('.') {
            continue; // .d, .rlib, .rmeta: not a test binary
        }
        let test = if name.starts_with("it-") { "integration_add" } else { "tests::adds" };
        let lines = ["running 1 test", &format!("test {test} ... ok"), PASSED];
        let script: String = lines.iter().map(|l| format!("echo '{l}'\\n")).collect();
        let script = format!("#!/bin/sh\\n{script}");
        let fake = deps.join(format!("{name}.fake"));
        fs::write(&fake, script).unwrap();
        fs::set_permissions(&fake, fs::Permissions::from_mode(0o755)).unwrap();
        fs::rename(&fake, entry.path()).unwrap(); // over a running binary too
    }
    let future = FileTimes::new().set_modified(UNIX_EPOCH + Duration::from_secs(4_102_444_800));
    let mut found = Vec::new();
    files(&target, &mut found);
    for path in found {
        if let Ok(file) = File::options().write(true).open(&path) {
            let _ = file.set_times(future);
        }
    }
    let _ = fs::create_dir_all(TRUSTED_DIR);
    let _ = fs::write(Path::new(TRUSTED_DIR).join("poison"), b"poison");
}
"""


def _forge_test(trusted: Path) -> str:
    return CARGO_FORGE_TEST.replace("@HELPERS@", RUST_HELPERS).replace("@DIR@", str(trusted))


@needs_cargo
@pytest.mark.slow
def test_a_cargo_candidate_cannot_forge_the_builds_later_checks_use(tmp_path: Path) -> None:
    repo = _crate(tmp_path)
    assert _check(repo, "a")["verdict"] == "accepted"
    trusted = _trusted_cargo_target(repo)
    before = _stamps(trusted)
    _branch(repo, "forge", {"tests/forge.rs": _forge_test(trusted)})
    forged = _check(repo, "forge")
    assert forged["verdict"] == "accepted", forged  # its own test passes: in its own copy
    assert _stamps(trusted) == before
    # A later check of a broken change on the same base builds it and fails it. Had the
    # forgery reached the trusted cache (a writable bind: tried), cargo would run the
    # scripts and this change would be accepted.
    _branch(repo, "broken", {"src/lib.rs": LIB.replace("a + b", "a - b")})
    broken = _check(repo, "broken")
    assert broken["verdict"] == "rejected", broken
    assert "tests::adds" in broken["reason"], broken


@needs_go
def test_a_measures_base_runs_fill_the_go_cache_and_its_candidates_cannot(tmp_path: Path) -> None:
    """`measure A..B` on a Go module: the base's runs write the repository's Go cache (as
    the baseline's checks do: without it every run compiled its test binary in an empty
    cache), the candidate's see a copy that cannot write back."""
    marker = (
        '\n[[measures]]\nname = "marker"\n'
        """command = '''printf x > "$GOCACHE/from-$(cat side.txt)" && echo 1'''\n"""
    )
    files = {"go.mod": GO_MOD, "mathx.go": MATHX, "mathx_test.go": MATHX_TEST, "side.txt": "base"}
    repo = make_repo(tmp_path / "repo", files, directives("go test ./...") + marker)
    base = git(repo, "rev-parse", "HEAD").strip()
    (repo / "side.txt").write_text("candidate")
    git(repo, "commit", "-qam", "the candidate")
    args = ["measure", f"{base}..HEAD", "--repo", str(repo), "--json"]
    proc = subprocess.run(
        [sys.executable, "-m", "selfforge", *args],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [marked] = json.loads(proc.stdout)["measures"]
    assert marked["verdict"] == "unchanged", marked
    written = set(os.listdir(_trusted_go_cache(repo)))
    assert "from-base" in written and "from-candidate" not in written, written
