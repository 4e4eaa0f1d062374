"""The dashboard's routes: pages rendered on the server from the read-only journal, and
one server-sent-event stream that pushes new attempts and the running stage.

Only GET routes exist. Everything shown passes through Jinja's autoescape; the Content
Security Policy forbids inline and foreign scripts besides.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader
from starlette.applications import Starlette
from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from selfforge.roles.caller import parse_vote
from selfforge.web import diff, plots
from selfforge.web.store import Store
from selfforge.web.views import FILTER_OUTCOMES, PAGE, Filters, Live, Row

POLL_S = 0.5
KEEPALIVE_S = 10.0
COOKIE = "selfforge_token"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}


def create_app(journal: Path, *, token: str | None = None, loopback: bool = True) -> Starlette:
    """The dashboard over ``journal``; ``token`` is required on every request if set, and a
    loopback-only server also refuses Host names other than loopback (DNS rebinding)."""
    store = Store(journal)
    env = _environment(journal)
    pages = Pages(store, env)
    static = Path(__file__).parent / "static"
    routes = [
        Route("/", pages.timeline),
        Route("/attempts/{attempt_id:int}", pages.attempt),
        Route("/runs", pages.runs),
        Route("/plots", pages.plots),
        Route("/backlog", pages.backlog),
        Route("/events", pages.events),
        Route("/static/pygments.css", pages.pygments_css),
        Mount("/static", StaticFiles(directory=static)),
    ]
    app = Starlette(routes=routes)
    return Guard(app, token=token, loopback=loopback)  # type: ignore[return-value]


class Guard:
    """Token, Host and security headers, in front of every route."""

    def __init__(self, app: ASGIApp, *, token: str | None, loopback: bool) -> None:
        self.app, self.token, self.loopback = app, token, loopback

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        if self.loopback and _host_name(request.headers.get("host", "")) not in LOOPBACK_NAMES:
            await PlainTextResponse("this dashboard answers only to localhost", 421)(
                scope, receive, send
            )
            return
        from_query = request.query_params.get("token")
        given = from_query or request.cookies.get(COOKIE) or ""
        if self.token and not hmac.compare_digest(given.encode(), self.token.encode()):
            message = "a token is required: open the URL that `selfforge serve` printed"
            await PlainTextResponse(message, 401)(scope, receive, send)
            return
        set_cookie = bool(self.token and from_query)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for key, value in SECURITY_HEADERS.items():
                    headers[key] = value
                if set_cookie:
                    headers.append(
                        "set-cookie", f"{COOKIE}={self.token}; HttpOnly; SameSite=Strict; Path=/"
                    )
            await send(message)

        await self.app(scope, receive, send_with_headers)


class Pages:
    def __init__(self, store: Store, env: Environment) -> None:
        self.store, self.env = store, env

    def _page(self, name: str, request: Request, **context: Any) -> HTMLResponse:
        with self.store.reader() as reader:
            live = reader.live()
        context.setdefault("events", "rows=0")
        html = self.env.get_template(name).render(
            request=request, live_text=_live_text(live), **context
        )
        return HTMLResponse(html)

    def timeline(self, request: Request) -> HTMLResponse:
        filters = Filters.parse(request.query_params)
        before = _int(request.query_params.get("before"))
        with self.store.reader() as reader:
            rows = reader.timeline(filters, before)
            total = reader.count(filters)
            summary = reader.summary(filters)
            run_ids = reader.run_ids()
            newest = reader.timeline(filters, None, 1) if before else rows[:1]
        # Only the newest page grows live; an older page stays as it was asked for.
        after = newest[0].id if newest else 0
        events = "rows=0" if before else filters.query(rows=1, after=after)
        return self._page(
            "timeline.html",
            request,
            rows=rows,
            total=total,
            summary=summary,
            filters=filters,
            outcomes=FILTER_OUTCOMES,
            run_ids=run_ids,
            older=filters.query(before=rows[-1].id) if len(rows) == PAGE else None,
            newest=filters.query() if before else None,
            events=events,
        )

    def attempt(self, request: Request) -> Response:
        attempt_id = request.path_params["attempt_id"]
        with self.store.reader() as reader:
            page = reader.attempt(attempt_id)
        if page is None:
            return PlainTextResponse(f"no attempt {attempt_id}", 404)
        votes = [(c, parse_vote(c["response"] or "")) for c in page.calls if c["role"] == "review"]
        return self._page(
            "attempt.html",
            request,
            a=page.record,
            calls=page.calls,
            checks=page.checks,
            steps=page.steps,
            trajectory=page.trajectory,
            votes=votes,
            files=diff.side_by_side(page.record.diff or ""),
            cost=sum(c["cost_usd"] or 0 for c in page.calls),
            tokens=sum((c["input_tokens"] or 0) + (c["output_tokens"] or 0) for c in page.calls),
        )

    def runs(self, request: Request) -> HTMLResponse:
        with self.store.reader() as reader:
            runs = reader.runs()
        return self._page("runs.html", request, runs=runs)

    def plots(self, request: Request) -> HTMLResponse:
        with self.store.reader() as reader:
            spend = reader.spend_over_time()
            outcomes = reader.outcomes_by_task()
            stages = reader.seconds_per_stage()
            measured = reader.measures_over_landed()
        charts = [
            plots.line_chart(plots.cumulative([(t, c) for t, c, _ in spend]), "Cost", "$"),
            plots.line_chart(
                plots.cumulative([(t, float(n)) for t, _, n in spend]), "Tokens", "tokens"
            ),
            plots.bar_chart(plots.acceptance_bars(outcomes), "Acceptance by task kind", 1.0),
            plots.bar_chart(plots.stage_bars(stages), "Time per stage"),
        ]
        titles = [
            "Cost over time (cumulative)",
            "Tokens over time (cumulative)",
            "Acceptance rate per task kind (the task's first word)",
            "Time per stage (total)",
        ]
        for name, (unit, points) in measured.items():  # each measure over the landed commits
            charts.append(plots.commits_chart(points, f"measure {name}", unit))
            titles.append(f"measure {name} at each landed commit ({len(points)} points)")
        return self._page("plots.html", request, charts=list(zip(titles, charts, strict=True)))

    def backlog(self, request: Request) -> HTMLResponse:
        before = _int(request.query_params.get("before"))
        with self.store.reader() as reader:
            tasks = reader.tasks()
            lessons = reader.lessons(before)
        older = lessons[-1]["id"] if len(lessons) == 20 else None
        return self._page("backlog.html", request, tasks=tasks, lessons=lessons, older=older)

    def pygments_css(self, request: Request) -> Response:
        return Response(diff.stylesheet(), media_type="text/css")

    async def events(self, request: Request) -> StreamingResponse:
        filters = Filters.parse(request.query_params)
        rows = request.query_params.get("rows") == "1"
        after = _int(request.query_params.get("after")) or 0
        return StreamingResponse(
            self._stream(filters, rows, after),
            media_type="text/event-stream",
            headers={"cache-control": "no-store"},
        )

    async def _stream(self, filters: Filters, rows: bool, after: int) -> AsyncIterator[str]:
        """Poll the journal's change counter; on a change send the rows the page lacks,
        the open rows again (they finish, their cost grows) and the stage."""
        row_template = self.env.get_template("_row.html")
        watching: set[int] = set()
        version, stage, quiet = -1, None, 0
        yield "retry: 1000\n\n"
        with self.store.reader() as reader:
            while True:
                quiet += 1
                if quiet * POLL_S >= KEEPALIVE_S:  # a write is how a gone client shows
                    quiet = 0
                    yield ": keepalive\n\n"
                now = reader.data_version()
                if now != version:
                    version = now
                    changed: list[Row] = []
                    if rows:
                        changed = reader.rows(sorted(watching)) + reader.newer(filters, after)
                    for row in changed:
                        after = max(after, row.id)
                        (watching.add if row.outcome is None else watching.discard)(row.id)
                        html = row_template.render(row=row)
                        yield _event("row", {"id": row.id, "html": html})
                    text = _live_text(reader.live())
                    if text != stage:
                        stage = text
                        yield _event("stage", {"text": text})
                await asyncio.sleep(POLL_S)


def _event(name: str, data: dict[str, Any]) -> str:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n"


def _live_text(live: Live | None) -> str:
    if live is None:
        return ""
    parts = [f"run {live.run_id} running"]
    if live.attempt_id is not None:
        parts.append(f"attempt {live.attempt_id} (cycle {live.cycle})")
    if live.stage:
        parts.append(live.stage)
    return " · ".join(parts)


def _int(text: str | None) -> int | None:
    return int(text) if text and text.isdigit() else None


def _host_name(host: str) -> str:
    if host.startswith("["):  # [::1]:8000
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _environment(journal: Path) -> Environment:
    env = Environment(loader=PackageLoader("selfforge.web", "templates"), autoescape=True)
    env.globals["repo"] = str(journal.parent.parent)
    env.filters["clock"] = lambda t: time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))
    env.filters["took"] = _took
    env.filters["money"] = lambda v: f"${v or 0:.4f}"
    env.filters["thousands"] = lambda v: f"{v or 0:,}"
    env.filters["duration"] = lambda s: _took(0.0, float(s or 0))
    return env


def _took(start: float | None, end: float | None) -> str:
    if start is None or end is None:
        return "…"
    seconds = end - start
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, seconds = divmod(int(seconds), 60)
    return f"{minutes}m {seconds:02d}s" if minutes < 60 else f"{minutes // 60}h {minutes % 60:02d}m"
