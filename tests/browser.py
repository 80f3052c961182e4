"""Headless Chromium (Debian's package) driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``:
JSON messages ending in NUL on fds 3 and 4), for tests that use a page as a person does: open it, click, read it back,
take a screenshot. No websocket library, no driver binary."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any


class Browser:
    """One headless Chromium with one page; ``with Browser(tmp) as b: b.open(url); b.js("...")``."""

    def __init__(self, profile: Path) -> None:
        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        assert chromium, "headless Chromium drives the console: scripts/test.sh installs Debian's package"
        to_browser, self._out = os.pipe()  # we write, it reads on fd 3
        self._in, from_browser = os.pipe()  # it writes on fd 4, we read

        def fds() -> (
            None
        ):  # in the child: copies first, so that neither pipe's end is overwritten by the other's
            reads, writes = os.dup(to_browser), os.dup(from_browser)
            os.dup2(reads, 3)  # dup2 makes them inheritable (a pipe's own ends are not)
            os.dup2(writes, 4)

        self.proc = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", "--no-first-run",
             f"--user-data-dir={profile}", "--window-size=1280,1000", "about:blank"],
            preexec_fn=fds, close_fds=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        os.close(to_browser)
        os.close(from_browser)
        self._id, self._buffer, self.session = 0, b"", None
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.send("Page.enable")
        self.send("Runtime.enable")

    def send(self, method: str, **params: Any) -> dict:
        """One DevTools command; its result (events in between are dropped)."""
        self._id += 1
        message = {"id": self._id, "method": method, "params": params}
        if self.session and not method.startswith("Target."):
            message["sessionId"] = self.session
        os.write(self._out, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in self._buffer:
                chunk = os.read(self._in, 1 << 16)
                assert chunk, "Chromium closed the pipe"
                self._buffer += chunk
            raw, self._buffer = self._buffer.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self._id:
                assert "error" not in reply, reply["error"]
                return reply.get("result", {})

    def js(self, expression: str) -> Any:
        """The value of ``expression`` in the page (a promise is awaited)."""
        got = self.send("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        assert "exceptionDetails" not in got, got["exceptionDetails"]
        return got["result"].get("value")

    def open(self, url: str, ready: str = "document.readyState === 'complete'", timeout: float = 30) -> None:
        self.send("Page.navigate", url=url)
        self.wait(ready, timeout)

    def wait(self, condition: str, timeout: float = 30) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                value = self.js(
                    f"(() => {{ try {{ return {condition}; }} catch (e) {{ return false; }} }})()"
                )
            except AssertionError:
                value = False
            if value:
                return value
            time.sleep(0.1)
        raise AssertionError(
            f"the page never had {condition}: {self.js('document.body && document.body.innerText')}"
        )

    def screenshot(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        size = self.send("Page.getLayoutMetrics")["cssContentSize"]  # the whole page, not the window
        clip = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        shot = self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True, clip=clip)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)
        os.close(self._out)
        os.close(self._in)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
