"""The console's web server: Starlette on uvicorn in a thread of its own, on 127.0.0.1, with its doors.

Doors, in order, for every request: the Host header must name this server (127.0.0.1 or localhost and its port: a
page on another site cannot reach it by a DNS name that resolves here); an Origin header, where a browser sends one,
must be this server's; then the caller must hold the session cookie, which only a visit to the printed URL with its
one-time token sets (HttpOnly, SameSite=Strict; the token is then spent and the URL it was in redirected away). A
changing request (POST) must also carry the CSRF token the page was served with, and is refused while the console is
read-only (an account's, unless started with ``allow_changes``).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from smneuron.console import api
from smneuron.errors import MissingDependencyError, SmneuronError, UsageError, from_client_error
from smneuron.serving.ports import check_port_free, free_port
from smneuron.session import Session
from smneuron.specs.models import ScalingSpec

COOKIE = "smneuron_console"
CSRF_HEADER = "x-smneuron-csrf"
STATIC = ("console.js", "console.css")


@dataclass
class Console:
    """A running console (``start``/``stop``, or a context manager): ``url`` holds the one-time token."""

    session: Session
    allow_changes: bool = False
    port: int = 0
    cli_prefix: list[str] = field(
        default_factory=list
    )  # how the CLI reaches the same SageMaker (from the session)
    scaling: ScalingSpec = field(default_factory=ScalingSpec)  # the project's, under `scale`'s flags
    reports: Path | None = None  # a folder of bench / compare HTML reports to list and show
    token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    _cookie: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    _server: Any = None
    _thread: threading.Thread | None = None

    def __post_init__(self) -> None:
        if not self.cli_prefix:
            local = bool(self.session.endpoint_url)
            self.cli_prefix = (
                ["smneuron", "--local"] if local else ["smneuron", "--region", self.session.region]
            )

    @property
    def url(self) -> str:
        """The URL to open, with the one-time token (spent by its first visit)."""
        return f"http://127.0.0.1:{self.port}/?token={self.token}"

    def start(self) -> Console:
        try:
            import starlette  # noqa: F401  (the app's)
            import uvicorn
        except ImportError as e:
            raise MissingDependencyError(
                e.name or "uvicorn",
                "smneuron console",
                "Install the serve extra: pip install 'smneuron[serve]'.",
            ) from e

        # a given port another program holds is said as `local up` and `serve` say it, before uvicorn starts (its
        # server thread died on the bind, with its own ERROR line above the console's)
        if self.port:
            check_port_free("127.0.0.1", self.port)
        self.port = self.port or free_port()
        config = uvicorn.Config(
            build_app(self), host="127.0.0.1", port=self.port, log_level="warning", lifespan="off"
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="smneuron-console", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started and self._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        if not self._server.started:
            raise SmneuronError(
                f"The console did not start on 127.0.0.1:{self.port}.", hint="Try another --port."
            )
        return self

    @property
    def running(self) -> bool:
        """Whether its server still serves (False once stopped, or if it died)."""
        return self._thread is not None and self._thread.is_alive()

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> Console:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _repr_html_(self) -> str:  # a notebook shows the link
        return f'<a href="{self.url}" target="_blank">smneuron console</a> (127.0.0.1:{self.port})'

    # the doors, in the order the module's docstring gives
    def refusal(self, request: Any) -> tuple[int, str] | None:
        hosts = {f"127.0.0.1:{self.port}", f"localhost:{self.port}"}
        if request.headers.get("host") not in hosts:
            return 403, "This console answers only at 127.0.0.1 or localhost."
        origin = request.headers.get("origin")
        if origin is not None and origin not in {f"http://{h}" for h in hosts}:
            return 403, f"Requests from {origin} are refused: only the console's own page may call it."
        if not hmac.compare_digest(request.cookies.get(COOKIE, ""), self._cookie):
            return 401, "Open the URL `smneuron console` printed (it carries a one-time token)."
        if request.method == "POST" and not hmac.compare_digest(
            request.headers.get(CSRF_HEADER, ""), self.csrf
        ):
            return 403, "The request lacks the page's CSRF token."
        return None

    def welcome(self, token: str) -> bool:
        """Spend the one-time token: True the first time it is shown."""
        if not token or not hmac.compare_digest(token, self.token):
            return False
        self.token = secrets.token_urlsafe(32)  # spent: a leaked URL opens nothing later
        return True


def build_app(console: Console) -> Any:
    """The console's routes: the page, its files, and the API (``api``), each behind ``Console.refusal``."""
    from starlette.applications import Starlette
    from starlette.routing import Route

    h, s, name = _Handlers(console), console.session, lambda r: r.path_params["name"]
    call, post, cli = h.call, ["POST"], console.cli_prefix
    routes = [
        Route("/", h.index),
        Route("/static/{name}", h.static),
        Route("/api/overview", call(lambda r, b: _overview(console))),
        Route("/api/endpoints", call(lambda r, b: api.endpoints(s))),
        Route("/api/endpoints/{name}", call(lambda r, b: api.endpoint(s, name(r)))),
        Route("/api/endpoints/{name}/metrics", call(lambda r, b: api.metrics(s, name(r), int(r.query_params.get("minutes", 30))))),
        Route("/api/endpoints/{name}/logs", h.logs),
        Route("/api/endpoints/{name}/invoke", call(lambda r, b: api.invoke(s, name(r), str(b.get("body", "")),
              str(b.get("content_type") or "application/json"), cli), changes=True), methods=post),
        Route("/api/endpoints/{name}/scale", call(lambda r, b: api.set_scaling(s, name(r), int(b["min"]), int(b["max"]),
              cli, console.scaling), changes=True), methods=post),
        Route("/api/endpoints/{name}/delete", call(lambda r, b: api.remove(s, name(r), str(b.get("confirm", "")), cli),
              changes=True), methods=post),
        Route("/api/endpoints/{name}/stream", h.stream, methods=post),
        Route("/api/jobs", call(lambda r, b: api.jobs(s))),
        Route("/api/reports", call(lambda r, b: [{k: v for k, v in x.items() if k != "path"} for x in api.reports(console.reports)])),
        Route("/reports/{name}", h.report),
        Route("/api/matrix", call(lambda r, b: api.compatibility())),
        Route("/api/doctor", call(lambda r, b: api.check_artifact(s, r.query_params.get("artifact", ""),
              r.query_params.get("instance"), cli))),
    ]  # fmt: skip
    return Starlette(routes=routes)


class _Handlers:
    """The console's request handlers; each passes ``Console.refusal``'s doors first."""

    def __init__(self, console: Console) -> None:
        from starlette import responses

        self.console, self.r = console, responses

    def refused(self, request: Any) -> Any:
        why = self.console.refusal(request)
        return self.r.JSONResponse({"error": why[1]}, status_code=why[0]) if why else None

    async def index(self, request: Any) -> Any:
        r, console = self.r, self.console
        if "token" in request.query_params:
            if not console.welcome(request.query_params["token"]):
                return r.HTMLResponse(_page("The token is wrong or was spent: open the URL the console printed "
                                            "last, or start it again."), status_code=401)  # fmt: skip
            out = r.RedirectResponse("/", status_code=303)
            out.set_cookie(COOKIE, console._cookie, httponly=True, samesite="strict", path="/")
            return out
        if (no := self.refused(request)) is not None:
            return r.HTMLResponse(_page(json.loads(no.body)["error"]), status_code=no.status_code)
        html = resources.files("smneuron.console.static").joinpath("index.html").read_text()
        return r.HTMLResponse(html.replace("{{CSRF}}", console.csrf), headers=_NO_STORE)

    async def static(self, request: Any) -> Any:
        name = request.path_params["name"]
        if name not in STATIC:
            return self.r.Response(status_code=404)
        kind = "text/javascript" if name.endswith(".js") else "text/css"
        return self.r.Response(
            resources.files("smneuron.console.static").joinpath(name).read_bytes(), media_type=kind
        )

    def call(self, work: Any, changes: bool = False) -> Any:
        """A JSON route: ``work(request, body)`` in a thread; a known error in words (4xx), AWS's refusal in words."""

        async def handler(request: Any) -> Any:
            if (no := self.refused(request) or (self.read_only() if changes else None)) is not None:
                return no
            body = await request.json() if request.method == "POST" else {}
            try:
                answer = await asyncio.to_thread(work, request, body)
            except SmneuronError as e:
                return self.r.JSONResponse(
                    {"error": str(e)}, status_code=400 if isinstance(e, UsageError) else 409
                )
            except Exception as e:  # a ClientError: AWS's refusal, in words
                if hasattr(e, "response"):
                    return self.r.JSONResponse({"error": str(from_client_error(e))}, status_code=409)
                raise
            return self.r.Response(api.dumps(answer), media_type="application/json", headers=_NO_STORE)

        return handler

    def read_only(self) -> Any:
        if self.console.allow_changes:
            return None
        return self.r.JSONResponse({"error": "This console is read-only (an account's): start it with "
                                             "--allow-changes to scale, invoke or delete."}, status_code=403)  # fmt: skip

    async def logs(self, request: Any) -> Any:
        if (no := self.refused(request)) is not None:
            return no
        return self.r.StreamingResponse(
            _follow(self.console, request), media_type="text/event-stream", headers=_NO_STORE
        )

    async def stream(self, request: Any) -> Any:
        if (no := self.refused(request) or self.read_only()) is not None:
            return no
        body, c = await request.json(), self.console
        pieces = api.stream(c.session, request.path_params["name"], str(body.get("prompt", "")),
                            int(body.get("max_tokens") or 64), c.cli_prefix)  # fmt: skip
        return self.r.StreamingResponse(_lines(pieces), media_type="application/x-ndjson", headers=_NO_STORE)

    async def report(self, request: Any) -> Any:
        if (no := self.refused(request)) is not None:
            return no
        found = {x["name"]: x for x in api.reports(self.console.reports)}.get(request.path_params["name"])
        if found is None:  # only a report the listing shows: no path reaches outside the folder
            return self.r.Response(status_code=404)
        return self.r.HTMLResponse(found["path"].read_text(errors="replace"), headers=_NO_STORE)


_NO_STORE = {"Cache-Control": "no-store"}


def _overview(console: Console) -> dict:
    s = console.session
    return {"where": s.endpoint_url or f"AWS account, {s.region}", "embedded": bool(s.endpoint_url),
            "region": s.region, "read_only": not console.allow_changes, "cli": " ".join(console.cli_prefix)}  # fmt: skip


async def _lines(pieces: Any) -> Any:
    """A blocking generator of JSON lines, read in a thread a line at a time."""
    done = object()
    while (line := await asyncio.to_thread(next, pieces, done)) is not done:
        yield line


async def _follow(console: Console, request: Any) -> Any:
    """Server-sent events: the newest log lines, then each new one as CloudWatch has it (every 2 s)."""
    name, since = request.path_params["name"], None
    try:
        while True:
            events = await asyncio.to_thread(api.logs, console.session, name, 200, since)
            for stamp, message in events:
                since = stamp + 1
                yield f"data: {json.dumps(message)}\n\n"
            since = since or int(time.time() * 1000)
            if await request.is_disconnected():
                return
            yield ": waiting\n\n"  # a comment: keeps the stream open, tells a dead client apart
            await asyncio.sleep(2)
    except SmneuronError as e:
        yield f"event: failure\ndata: {json.dumps(str(e))}\n\n"


def _page(message: str) -> str:
    import html

    return f"<!doctype html><meta charset=utf-8><title>smneuron console</title><p>{html.escape(message)}</p>"


def console(
    *,
    session: Session | None = None,
    allow_changes: bool | None = None,
    port: int = 0,
    scaling: ScalingSpec | None = None,
    reports: str | Path | None = None,
) -> Console:
    """Start the console in this process (a thread) and return it: open ``.url`` (a notebook shows the link).

    Args:
        session: where it looks (default ``Session.from_env()``: the embedded SageMaker under SMNEURON_LOCAL=1).
        allow_changes: invoke, scale and delete from the page; default: yes on the embedded SageMaker, no on an
            account (read-only unless asked).
        port: 0 picks a free one.
        reports: a folder of bench / compare HTML reports (``--html``) the page lists and shows.
    """
    session = session or Session.from_env()
    embedded = bool(session.endpoint_url)  # the embedded SageMaker: changes allowed unless said otherwise
    return Console(session, embedded if allow_changes is None else allow_changes, port, [],
                   scaling or ScalingSpec(), Path(reports) if reports else None).start()  # fmt: skip
