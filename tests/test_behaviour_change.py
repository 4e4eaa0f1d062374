"""A teammate's behaviour change is a question for a person, not a rejection
(`selfforge check`): a base test that fails on the new code and whose expectation the
change rewrote — a new error message, an expected-failure data entry removed, a Go test
updated for a new signature — needs review (exit 3) with the failure and the old and new
assertion side by side. The same commit with the failing test weakened, skipped,
xfailed, deleted, or left untouched is still rejected; a declaration lists what the
change did to each test and the counts; `run` still refuses every case."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import check_json, cli, directives, git, log_json, make_repo

VERSION = """\
def parse(text):
    if len(text) > 1 and text.startswith("0"):
        raise ValueError("leading zero in " + text)
    return int(text)
"""
# the behaviour change: a new message
RENAMED = VERSION.replace('"leading zero in "', '"no leading zeros: "')
# the behaviour change: a leading zero is accepted now
ACCEPTS = VERSION.replace('len(text) > 1 and text.startswith("0")', 'text.startswith("00")')

TESTS = """\
from pathlib import Path

import pytest

from version import parse

INVALID = Path(__file__).parent / "data" / "invalid"


def test_parse():
    assert parse("12") == 12


def test_message():
    with pytest.raises(ValueError, match="leading zero in 0012"):
        parse("0012")


@pytest.mark.parametrize("name", sorted(p.name for p in INVALID.iterdir()))
def test_invalid(name):
    with pytest.raises(ValueError):
        parse((INVALID / name).read_text().strip())
"""
NEW_MESSAGE = TESTS.replace("leading zero in 0012", "no leading zeros: 0012")
DATA = {"tests/data/invalid/leading_zero.txt": "012\n", "tests/data/invalid/sign.txt": "1-\n"}


def _branch(repo: Path, name: str, message: str, files: dict[str, str | None]) -> str:
    """A commit on the base (``main``), on a branch of its own: the checks of every
    variant share the base's measured baseline."""
    git(repo, "checkout", "-q", "-B", name, "main")
    for path, text in files.items():
        if text is None:
            (repo / path).unlink()
            continue
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    sha = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "main")
    return sha


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    files = {"version.py": VERSION, "tests/test_version.py": TESTS, **DATA}
    return make_repo(tmp_path / "r", files, directives())


def test_a_new_error_message_with_its_test_rewritten_needs_review(repo: Path) -> None:
    sha = _branch(repo, "message", "Say it plainly", {
        "version.py": RENAMED, "tests/test_version.py": NEW_MESSAGE,
    })  # fmt: skip
    code, verdict = check_json(repo, sha)
    assert (code, verdict["verdict"]) == (3, "needs_review"), verdict["reason"]
    [item] = verdict["review"]
    assert "tests/test_version.py::test_message fails (" in item  # the base's failure
    assert "Regex pattern did not match" in item
    # the old and the new assertion, side by side
    assert "match='leading zero in 0012')` → `pytest.raises(ValueError, match='no leading" in item
    assert "tests: 4 before, 4 after" in item
    assert log_json(repo)[-1]["outcome"] == "needs_review"


def test_an_expected_failure_entry_removed_for_input_now_accepted_needs_review(
    repo: Path,
) -> None:
    sha = _branch(repo, "accept", "Accept a leading zero", {
        "version.py": ACCEPTS, "tests/data/invalid/leading_zero.txt": None,
    })  # fmt: skip
    code, verdict = check_json(repo, sha)
    assert (code, verdict["verdict"]) == (3, "needs_review"), verdict["reason"]
    item = " ".join(verdict["review"])
    assert "tests/test_version.py::test_invalid[leading_zero.txt] fails (" in item
    assert "in tests/data/invalid/leading_zero.txt" in item
    assert "`tests/data/invalid/leading_zero.txt: 012` → `removed`" in item
    assert "tests: 4 before, 3 after" in item


def test_a_new_member_in_an_expected_table_of_the_module_needs_review(tmp_path: Path) -> None:
    """The test is untouched; the table it compares with, at the top of its module, has a
    new entry (a new enum member that appears in a logged dict)."""
    code = (
        "COLOURS = ('red', 'green')\n\n\ndef logged():\n    return {c: len(c) for c in COLOURS}\n"
    )
    test = (
        "from colours import logged\n\nEXPECTED = {'red': 3, 'green': 5}\n\n\n"
        "def test_logged():\n    assert logged() == EXPECTED\n"
    )
    repo = make_repo(tmp_path / "r", {"colours.py": code, "test_colours.py": test}, directives())
    sha = _branch(repo, "blue", "Blue", {
        "colours.py": code.replace("'green')", "'green', 'blue')"),
        "test_colours.py": test.replace("'green': 5}", "'green': 5, 'blue': 4}"),
    })  # fmt: skip
    code_, verdict = check_json(repo, sha)
    assert (code_, verdict["verdict"]) == (3, "needs_review"), verdict["reason"]
    assert "rewrote in its EXPECTED: `(nothing)` → `'blue': 4`" in verdict["review"][0]


WEAKENED = {
    # the match dropped: a looser assertion, not a new expectation
    "weakened": NEW_MESSAGE.replace(', match="no leading zeros: 0012"', ""),
    "skipped": NEW_MESSAGE.replace("def test_message", "@pytest.mark.skip\ndef test_message"),
    "xfailed": NEW_MESSAGE.replace("def test_message", "@pytest.mark.xfail\ndef test_message"),
    "deleted": NEW_MESSAGE.replace(
        'def test_message():\n    with pytest.raises(ValueError, match="no leading zeros: 0012")'
        ':\n        parse("0012")\n\n\n',
        "",
    ),
    # the message rewritten in another test; the failing one left as it was
    "untouched": TESTS + '\n\ndef test_other():\n    assert parse("7") == 7\n',
}


@pytest.mark.slow  # five checks, some 35 s
def test_the_same_change_with_its_failing_test_hidden_or_untouched_is_rejected(
    repo: Path,
) -> None:
    shas = {
        kind: _branch(
            repo,
            kind,
            f"New message, test {kind}",
            {
                "version.py": RENAMED,
                "tests/test_version.py": tests,
            },
        )
        for kind, tests in WEAKENED.items()
    }
    assert WEAKENED["deleted"].count("def test_") == TESTS.count("def test_") - 1
    for kind, sha in shas.items():
        code, verdict = check_json(repo, sha)
        assert (code, verdict["verdict"]) == (1, "rejected"), (kind, verdict["reason"])
        assert "tests/test_version.py::test_message: passed → failed" in verdict["reason"], kind
        said = {
            "weakened": "weakened (`pytest.raises(ValueError, match=",
            "skipped": "skipped (a skip mark added)",
            "xfailed": "xfailed (an xfail mark added)",
            "deleted": "deleted (its function is gone)",
        }
        if kind in said:
            assert said[kind] in verdict["reason"], (kind, verdict["reason"])
        else:
            assert "what the change did to it" not in verdict["reason"]


def test_a_declaration_lists_what_the_change_did_to_each_test_and_the_counts(
    repo: Path,
) -> None:
    legit = _branch(repo, "legit", "Say it plainly", {
        "version.py": RENAMED, "tests/test_version.py": NEW_MESSAGE,
    })  # fmt: skip
    cheat = _branch(repo, "cheat", "Say it plainly", {
        "version.py": RENAMED, "tests/test_version.py": WEAKENED["deleted"],
    })  # fmt: skip
    code, verdict = check_json(repo, legit, "--changes", "test_message")
    assert (code, verdict["verdict"]) == (3, "needs_review"), verdict["reason"]
    [item] = verdict["review"]
    assert "declares a change of tested behaviour: tests/test_version.py::test_message: " in item
    assert "rewrote the expectation: `pytest.raises(ValueError, match='leading zero in" in item
    assert "tests: 4 before, 4 after" in item
    code, verdict = check_json(repo, cheat, "--changes", "test_message")
    assert (code, verdict["verdict"]) == (3, "needs_review"), verdict["reason"]
    [item] = verdict["review"]  # not the same line: the reviewer sees the deletion
    assert "tests/test_version.py::test_message: deleted (its function is gone)" in item
    assert "tests: 4 before, 3 after" in item


def test_a_declared_name_selects_only_the_test_the_change_edits(tmp_path: Path) -> None:
    """``--changes test_decorator_attributes`` named the test of that name in every file:
    the one in a file the change does not touch is another test."""
    deco = "def wraps(f):\n    f.wrapped = True\n    return f\n"
    test = (
        "from deco import wraps\n\n\ndef test_decorator_attributes():\n"
        "    assert wraps(lambda: 0).wrapped is True\n"
    )
    repo = make_repo(
        tmp_path / "r",
        {"deco.py": deco, "tests/test_sync.py": test, "tests/test_async.py": test},
        directives(),
    )
    sha = _branch(repo, "one", "wrapped says how, one file", {
        "deco.py": deco.replace("f.wrapped = True", "f.wrapped = True\n    f.kind = 'sync'"),
        "tests/test_sync.py": test.replace("is True", "is True\n    assert wraps(lambda: 1).kind"),
    })  # fmt: skip
    code, verdict = check_json(repo, sha, "--changes", "test_decorator_attributes")
    assert (code, verdict["verdict"]) == (3, "needs_review"), verdict["reason"]
    [item] = verdict["review"]
    assert "tests/test_sync.py::test_decorator_attributes" in item
    assert "tests/test_async.py" not in item, item


def test_run_still_refuses_a_model_that_rewrites_the_expectation(repo: Path, script) -> None:
    reply = (
        "version.py\n<<<<<<< SEARCH\n"
        '        raise ValueError("leading zero in " + text)\n=======\n'
        '        raise ValueError("no leading zeros: " + text)\n>>>>>>> REPLACE\n'
        "tests/test_version.py\n<<<<<<< SEARCH\n"
        '    with pytest.raises(ValueError, match="leading zero in 0012"):\n=======\n'
        '    with pytest.raises(ValueError, match="no leading zeros: 0012"):\n>>>>>>> REPLACE\n'
    )
    extra = "[safety]\nallow_test_edits = true\n"
    (repo / "selfforge.toml").write_text(directives(extra=extra))
    git(repo, "commit", "-qam", "allow test edits")
    cli("run", "--repo", str(repo), "--model", script(propose=[reply]), check=True)
    [attempt] = log_json(repo)
    assert attempt["outcome"] == "rejected", attempt  # never "needs review" in a run


# --- Go: an API change --------------------------------------------------------------------

needs_go = pytest.mark.skipif(shutil.which("go") is None, reason="needs the go toolchain")
GO_MOD = "module example.com/m\n\ngo 1.19\n"
SCALE = "package m\n\nfunc scale(a int) int {\n\treturn a * 2\n}\n\nfunc Double(a int) int {\n\treturn scale(a)\n}\n"  # noqa: E501
SCALE_TEST = """package m

import "testing"

func TestScale(t *testing.T) {
	if scale(3) != 6 {
		t.Fatalf("scale(3) = %d", scale(3))
	}
}

func TestDouble(t *testing.T) {
	if Double(3) != 6 {
		t.Fatal("Double(3)")
	}
}
"""
SCALE_BY = (
    SCALE.replace("scale(a int) int", "scale(a, k int) int")
    .replace("a * 2", "a * k")
    .replace("scale(a)", "scale(a, 2)")
)


@needs_go
def test_a_go_signature_change_with_its_test_updated_needs_review(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "r",
        {"go.mod": GO_MOD, "m.go": SCALE, "m_test.go": SCALE_TEST},
        directives("go test ./..."),
    )
    updated = SCALE_TEST.replace("scale(3)", "scale(3, 2)")
    shas = {
        "updated": _branch(repo, "updated", "scale by k", {"m.go": SCALE_BY, "m_test.go": updated}),
        "untouched": _branch(repo, "untouched", "scale by k", {"m.go": SCALE_BY}),
        "weakened": _branch(
            repo,
            "weakened",
            "scale by k",
            {
                "m.go": SCALE_BY,
                "m_test.go": updated.replace("t.Fatalf(", "t.Logf("),
            },
        ),
    }
    code, verdict = check_json(repo, shas["updated"])
    assert (code, verdict["verdict"]) == (3, "needs_review"), verdict["reason"]
    [item] = verdict["review"]
    assert item.startswith("changes an API (scale): the base's tests of example.com/m"), item
    assert "m_test.go:6:11: not enough arguments in call to scale" in item
    assert "example.com/m::TestScale: rewrote the expectation: `if scale(3) != 6 {" in item
    assert "does not build" not in json.dumps(verdict)
    for kind in ("untouched", "weakened"):
        code, verdict = check_json(repo, shas[kind])
        assert (code, verdict["verdict"]) == (1, "rejected"), (kind, verdict["reason"])
        assert (
            "the base's tests of example.com/m do not build against the change's code"
            in (verdict["reason"])
        ), verdict["reason"]
        assert "does not build" not in verdict["reason"]


# GOPATH mode (a history older than modules, as gobwas/glob's): no go.mod; the tree is
# linked into a GOPATH of its own, and its own files import its subpackage by path
GOPATH_TEST = (
    'd=$(mktemp -d) && mkdir -p $d/src/example.com && ln -s "$PWD" $d/src/example.com/m && '
    "cd $d/src/example.com/m && GO111MODULE=off GOPATH=$d go test ./..."
)
SUB = "package sub\n\nfunc Two() int {\n\treturn 2\n}\n"


@needs_go
def test_a_go_signature_change_in_gopath_mode_with_its_test_updated_needs_review(
    tmp_path: Path,
) -> None:
    code = SCALE.replace("package m\n", 'package m\n\nimport "example.com/m/sub"\n').replace(
        "scale(a)", "scale(a) * sub.Two() / 2"
    )
    repo = make_repo(
        tmp_path / "r",
        {"m.go": code, "m_test.go": SCALE_TEST, "sub/sub.go": SUB},
        directives(GOPATH_TEST),
    )
    changed = code.replace("scale(a int) int", "scale(a, k int) int").replace("a * 2", "a * k")
    changed = changed.replace("scale(a) * sub", "scale(a, 2) * sub")
    updated = SCALE_TEST.replace("scale(3)", "scale(3, 2)")
    sha = _branch(repo, "updated", "scale by k", {"m.go": changed, "m_test.go": updated})
    code, verdict = check_json(repo, sha)
    assert (code, verdict["verdict"]) == (3, "needs_review"), verdict["reason"]
    [item] = verdict["review"]
    assert item.startswith("changes an API (scale): the base's tests of example.com/m"), item
