"""Replies that must be refused with nothing written: wrong, ambiguous, lazy or unsafe."""

from __future__ import annotations

import difflib

from edit_corpus.case import Case, modify, sr, text, window
from edit_corpus.source import repeated_window, stripped_count


def _refuse(src, reply: str, **kw) -> Case:
    return Case("", True, {src.rel: src.text}, reply, **kw)


def not_found(rng, src, n):
    """One line of the SEARCH was misremembered (a typo in a name)."""
    found = window(rng, src)
    if found is None:
        return None
    lines, s, e = found
    search = list(lines[s:e])
    j = rng.choice([i for i, x in enumerate(search) if x.strip()])
    body = search[j].strip()
    cut = rng.randrange(len(body) + 1)
    search[j] = search[j][: len(search[j]) - len(body)] + body[:cut] + "zq" + body[cut:]
    if stripped_count(lines, [search[j]]) != 0:
        return None
    return _refuse(src, sr(src.rel, search, modify(search, n)))


def ambiguous(rng, src, n):
    lines = src.lines
    size = rng.choice([1, 2])
    start = repeated_window(rng, lines, size)
    if start is None:
        return None
    search = lines[start : start + size]
    return _refuse(src, sr(src.rel, search, modify(search, n)))


def uneven_indent(rng, src, n):
    """The SEARCH's lines are re-indented unevenly: no uniform shift explains them."""
    found = window(rng, src, size=rng.randint(3, 6))
    if found is None:
        return None
    lines, s, e = found
    search = list(lines[s:e])
    nonblank = [i for i, x in enumerate(search) if x.strip()]
    j = rng.choice(nonblank[1:])
    search[j] = "  " + search[j]
    return _refuse(src, sr(src.rel, search, modify(search, n)))


def _unsafe(path: str, **kw):
    def make(rng, src, n):
        return _refuse(src, sr(path, [], [f"pwned = {n}"]), **kw)

    make.__name__ = kw.pop("name")
    return make


def outside_link(rng, src, n):
    reply = sr(f"escape_link/evil_{n}.py", [], ["pwned = 1"])
    return _refuse(src, reply, outside_link="escape_link")


def protected(rng, src, n):
    path = rng.choice(["selfforge.toml", ".github/workflows/ci.yml", "tests/conftest.py"])
    return _refuse(
        src, sr(path, [], ["x = 1"]), protected=("selfforge.toml", ".github/**", "**/conftest.py")
    )


def no_edits(rng, src, n):
    snippet = "\n".join(src.lines[:8])
    reply = rng.choice(
        [
            "I looked at the code and I think the bug is in the parser.",
            f"Here is how it works:\n\n```python\n{snippet}\n```\n",
            "",
            f"In `{src.rel}` the relevant code is:\n\n```python\n{snippet}\n```\n",
        ]
    )
    return _refuse(src, reply)


def unterminated(rng, src, n):
    found = window(rng, src)
    if found is None:
        return None
    lines, s, e = found
    reply = sr(src.rel, lines[s:e], modify(lines[s:e], n))
    if rng.random() < 0.5:
        reply = reply.rsplit(">>>>>>> REPLACE", 1)[0]
    else:
        reply = reply.replace("=======\n", "", 1).rsplit(">>>>>>> REPLACE", 1)[0]
    return _refuse(src, reply)


def lazy_placeholder(rng, src, n):
    lines = src.lines
    cut = len(lines) // 3
    placeholder = rng.choice(
        [
            "# ... rest of the code unchanged ...",
            "# rest of the file as before",
            "    # ... existing methods ...",
            "# (remaining code unchanged)",
        ]
    )
    new = text([*lines[:cut], placeholder, *lines[-cut:]])
    return _refuse(src, f"{src.rel}\n```python\n{new}```\n")


def lazy_truncated(rng, src, n):
    lines = src.lines
    if sum(1 for x in lines if x.strip()) < 40:
        return None
    new = text(lines[: len(lines) // 3])
    return _refuse(src, f"**{src.rel}**\n```python\n{new}```\n")


def one_bad_of_several(rng, src, n):
    good = window(rng, src)
    bad = not_found(rng, src, n)
    if good is None or bad is None:
        return None
    lines, s, e = good
    reply = sr(src.rel, lines[s:e], modify(lines[s:e], n)) + "\n" + bad.reply
    reply += sr(f"created_{n}.py", [], ["VALUE = 1"])
    return _refuse(src, reply)


def udiff_mismatch(rng, src, n):
    bad = not_found(rng, src, n)
    found = window(rng, src)
    if bad is None or found is None:
        return None
    lines, s, e = found
    new_lines = lines[:s] + modify(lines[s:e], n) + lines[e:]
    diff = list(difflib.unified_diff(lines, new_lines, f"a/{src.rel}", f"b/{src.rel}", lineterm=""))
    ctx = next((i for i, x in enumerate(diff[3:], 3) if x.startswith(" ") and x.strip()), None)
    if ctx is None:
        return None
    diff[ctx] = diff[ctx] + "zq"
    return _refuse(src, "\n".join(diff) + "\n")


def udiff_ambiguous(rng, src, n):
    lines = src.lines
    start = repeated_window(rng, lines, 2)
    if start is None:
        return None
    a, b = lines[start], lines[start + 1]
    reply = f"--- a/{src.rel}\n+++ b/{src.rel}\n@@ -1,2 +1,2 @@\n {a}\n-{b}\n+{b}  # sf\n"
    return _refuse(src, reply)


def missing_file(rng, src, n):
    found = window(rng, src)
    if found is None:
        return None
    lines, s, e = found
    return _refuse(src, sr(f"no_such_dir/missing_{n}.py", lines[s:e], modify(lines[s:e], n)))


def elision_mismatch(rng, src, n):
    found = window(rng, src, size=8)
    if found is None:
        return None
    lines, s, e = found
    w = lines[s:e]
    return _refuse(src, sr(src.rel, [*w[:2], "...", *w[-2:]], modify(w, n)))


def recreate_existing(rng, src, n):
    """An empty SEARCH re-sending the whole file would append a second copy."""
    return _refuse(src, sr(src.rel, [], src.lines))


def several_dividers(rng, src, n):
    """A block whose `=======` lines allow two readings that both match."""
    found = window(rng, src, size=3)
    if found is None:
        return None
    lines, s, e = found
    w = lines[s:e]
    body = [w[0], "=======", *w[1:], "=======", w[0], "=======", *w[1:]]
    return _refuse(src, f"{src.rel}\n<<<<<<< SEARCH\n{text(body)}>>>>>>> REPLACE\n")


REFUSALS = {
    f.__name__: f
    for f in (
        not_found,
        ambiguous,
        uneven_indent,
        outside_link,
        protected,
        no_edits,
        unterminated,
        lazy_placeholder,
        lazy_truncated,
        one_bad_of_several,
        udiff_mismatch,
        udiff_ambiguous,
        missing_file,
        elision_mismatch,
        recreate_existing,
        several_dividers,
        _unsafe("../escape.py", name="parent_escape"),
        _unsafe("sub/../../../escape.py", name="deep_escape"),
        _unsafe("/tmp/selfforge_bench_escape.py", name="absolute"),
        _unsafe(".git/hooks/pre-commit", name="git_dir"),
        _unsafe("./.git/config", name="git_dir_dotted"),
    )
}
