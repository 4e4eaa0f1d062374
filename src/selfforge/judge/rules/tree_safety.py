"""What a change may never bring, read from what git stores (never the worktree):

- a symlink whose target leaves the tree (selfforge, outside the sandbox, would read
  through it; a landed one points your checkout at your home), or a nested repository
  (a gitlink: code from elsewhere);
- a change to the directives: ``selfforge.toml`` or pyproject.toml's ``[tool.selfforge]``
  table (network on, the sandbox off, more readable places). Directives come from the
  user; the rest of pyproject.toml is not this gate's (its dependencies are the
  dependency rule's, integrity_lang.py).
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from selfforge.judge.verdict import PASS, Verdict
from selfforge.repo import git

_LINK, _GITLINK = "120000", "160000"
_MAX_HOPS = 40  # as the kernel's own limit on symlinks followed in one lookup


def links_gate(tree: Path, base: str, commit: str) -> Verdict:
    """No added or changed symlink leads out of the tree; no nested repository."""
    problems = []
    links: dict[str, str] | None = None
    for new_mode, sha, path in _raw_changes(tree, base, commit):
        if new_mode == _GITLINK:
            problems.append(f"adds a nested git repository at {path}")
        elif new_mode == _LINK:
            links = _links(tree, commit) if links is None else links
            if resolve_in_tree(path, links) is None:
                target = git.git("cat-file", "blob", sha, cwd=tree)
                problems.append(f"adds a symlink {path} -> {target} that leads out of the tree")
    if not problems:
        return PASS
    reason = "integrity: the change " + "; ".join(problems[:3])
    return Verdict(
        False, reason, reason + "; every file of the change stays inside the tree.", problems
    )


def resolve_in_tree(path: str, links: dict[str, str]) -> str | None:
    """``path`` with every symlink of ``links`` (tree path → target) followed, as the
    kernel would; None when it leaves the tree (an absolute target, `..` above the top,
    a loop)."""
    done: list[str] = []
    todo = path.split("/")
    hops = 0
    while todo:
        part = todo.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            if not done:
                return None
            done.pop()
            continue
        done.append(part)
        target = links.get("/".join(done))
        if target is None:
            continue
        hops += 1
        if hops > _MAX_HOPS or target.startswith("/"):
            return None
        done.pop()
        todo = target.split("/") + todo
    return "/".join(done)


def _raw_changes(tree: Path, base: str, commit: str) -> list[tuple[str, str, str]]:
    """(new mode, new blob, path) of each path ``commit`` adds or changes."""
    out = git.git("diff-tree", "-r", "-z", "--no-renames", base, commit, cwd=tree)
    fields = out.split("\0")
    found = []
    for meta, path in zip(fields[0::2], fields[1::2], strict=False):
        parts = meta.lstrip(":").split()
        if len(parts) == 5 and parts[4] != "D":
            found.append((parts[1], parts[3], path))
    return found


def _links(tree: Path, commit: str) -> dict[str, str]:
    """Every symlink ``commit`` holds (a new link may lead out through an old one)."""
    out = git.git("ls-tree", "-r", "-z", commit, cwd=tree)
    links = {}
    for entry in out.split("\0"):
        meta, _, path = entry.partition("\t")
        if meta.startswith(_LINK):
            sha = meta.split()[2]
            links[path] = git.git("cat-file", "blob", sha, cwd=tree)
    return links


# --- directives --------------------------------------------------------------------------

_WEAKER = {  # sandbox keys, and what a weaker value is
    "mode": lambda old, new: new == "off" and old != "off",
    "network": lambda old, new: bool(new) and not old,
    "readable": lambda old, new: bool(set(new or []) - set(old or [])),
    "env": lambda old, new: bool(set(new or []) - set(old or [])),
    "hidden": lambda old, new: bool(set(old or []) - set(new or [])),
}


def directives_gate(tree: Path, base: str, commit: str, changed: dict[str, str]) -> Verdict:
    """The change leaves the directives as they were: selfforge.toml (added, changed or
    deleted) and pyproject.toml's [tool.selfforge] table, whether or not they exist yet."""
    for path, where in (("selfforge.toml", "selfforge.toml"), ("pyproject.toml", None)):
        if path not in changed:
            continue
        before = _table(path, _show(tree, base, path))
        after = _table(path, _show(tree, commit, path))
        if before == after:
            continue
        place = where or "pyproject.toml [tool.selfforge]"
        keys = _changed_keys(before, after)
        reason = f"integrity: the change edits the directives in {place}: {', '.join(keys[:4])}"
        feedback = (
            reason + "; directives (goals, checks, the sandbox) are the user's, never a "
            "change's: undo that edit"
            + ("" if where else " (the rest of pyproject.toml, e.g. its version, may change)")
            + "."
        )
        return Verdict(False, reason, feedback, [reason])
    return PASS


def _show(tree: Path, commit: str, path: str) -> str | None:
    proc = git.call("show", f"{commit}:{path}", cwd=tree)
    return proc.stdout if proc.returncode == 0 else None


def _table(path: str, text: str | None) -> object:
    """The directives a file holds as data (None: none); "unparsable" when it is not TOML."""
    if text is None:
        return None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return "unparsable"
    if path == "pyproject.toml":
        tool = data.get("tool")
        return tool.get("selfforge") if isinstance(tool, dict) else None
    return data


def _changed_keys(before: object, after: object) -> list[str]:
    """The dotted keys that differ, the sandbox's weakening ones first and marked so."""
    if after == "unparsable":
        return ["the file no longer parses as TOML"]
    old = _flat(before) if isinstance(before, dict) else {}  # none yet: the defaults
    new = _flat(after) if isinstance(after, dict) else {}
    keys = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    if not keys:  # e.g. an empty table added or removed
        return ["the table itself (added)" if before is None else "the table itself (removed)"]
    weak = []
    for key in keys:
        section, _, name = key.partition(".")
        test = _WEAKER.get(name) if section == "sandbox" else None
        if test is not None and test(old.get(key), new.get(key)):
            was, now = _value(old.get(key)), _value(new.get(key))
            weak.append(f"{key} ({was} -> {now}: weakens the sandbox)")
    return weak + [k for k in keys if not any(w.startswith(k + " ") for w in weak)]


def _value(value: object) -> str:
    return "unset" if value is None else json.dumps(value)


def _flat(data: dict[str, object], prefix: str = "") -> dict[str, object]:
    flat: dict[str, object] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flat(value, name + "."))
        else:
            flat[name] = value
    return flat
