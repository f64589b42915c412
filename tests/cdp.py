"""A headless Chromium driven through the DevTools protocol over a pipe, for tests that
do more with a page than dump it: run a script in it and read the answer, press, drag and
double-click the mouse, see every request the page made and every error it threw.

``--remote-debugging-pipe`` makes Chromium read commands on its fd 3 and answer on its fd 4,
each message JSON ended by a NUL byte: no port, no websocket library. Every wait is bounded.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.requirements import missing

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--remote-debugging-pipe"]
# Nothing the page could ask for over the network would arrive: every request goes to a
# closed port (the tests also check that none is made).
OFFLINE = ["--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>"]
TIMEOUT = 30.0


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        missing("no chromium; make system installs it")
    return found


class Browser:
    """One headless Chromium; :meth:`open` loads a page in a new tab. A context manager."""

    def __init__(self, profile: Path, *, width: int = 1200, height: int = 900) -> None:
        # Chromium's ends of the two pipes go to its fds 3 and 4; they are first moved above
        # 10 here so that placing them cannot overwrite one with the other.
        to_chrome, self._out = os.pipe()
        self._in, from_chrome = os.pipe()
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (to_chrome, from_chrome)]
        os.close(to_chrome)
        os.close(from_chrome)

        def onto_3_and_4() -> None:
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)

        profile.mkdir(parents=True, exist_ok=True)
        self._log = profile / "chromium.log"
        with self._log.open("wb") as log:
            self._proc = subprocess.Popen(
                [chromium(), *FLAGS, *OFFLINE, f"--window-size={width},{height}",
                 f"--user-data-dir={profile}", "about:blank"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, close_fds=False,
                preexec_fn=onto_3_and_4, start_new_session=True)
        for fd in high:
            os.close(fd)
        self._buffer = b""
        self._id = 0
        self.events: list[dict[str, Any]] = []

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None,
             timeout: float = TIMEOUT) -> dict[str, Any]:
        """Send one command and return its result (events that arrive meanwhile are kept)."""
        ident = self._send(method, params, session)
        deadline = time.monotonic() + timeout
        while True:
            answer = self._read(deadline, what=method)
            if answer.get("id") == ident:
                if "error" in answer:
                    raise AssertionError(f"{method}: {answer['error']}")
                result: dict[str, Any] = answer["result"]
                return result
            self.events.append(answer)

    def wait_for(self, method: str, session: str, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The first event ``method`` of ``session`` not yet waited for."""
        deadline = time.monotonic() + timeout
        while True:
            for i, event in enumerate(self.events):
                if event.get("method") == method and event.get("sessionId") == session:
                    return self.events.pop(i)
            self.events.append(self._read(deadline, what=method))

    def open(self, url: str) -> Page:
        """A new tab, loaded from ``url`` (its requests and errors recorded from the start)."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Network", "Runtime"):
            self.call(f"{domain}.enable", session=session)
        self.call("Page.navigate", {"url": url}, session)
        self.wait_for("Page.loadEventFired", session)
        return Page(self, session)

    def close(self) -> None:
        """Ask Chromium to quit; kill its process group if it has not within 10 s."""
        # Not waiting for the answer: Chromium may quit before it sends one.
        if self._proc.poll() is None:
            self._send("Browser.close")
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait(timeout=10)
        finally:
            os.close(self._in)
            os.close(self._out)

    def _send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> int:
        self._id += 1
        message: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        data = json.dumps(message).encode() + b"\0"
        while data:
            data = data[os.write(self._out, data):]
        return self._id

    def _read(self, deadline: float, *, what: str) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no answer from chromium to {what} in time; its log: {self._tail()}")
            ready, _, _ = select.select([self._in], [], [], left)
            if ready:
                chunk = os.read(self._in, 1 << 16)
                if not chunk:
                    raise AssertionError(f"chromium closed the pipe during {what}; its log: {self._tail()}")
                self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\0")
        message: dict[str, Any] = json.loads(raw)
        return message

    def _tail(self) -> str:
        return self._log.read_text(errors="replace")[-2000:]


class Page:
    """A loaded tab."""

    def __init__(self, browser: Browser, session: str) -> None:
        self.browser = browser
        self.session = session

    def evaluate(self, expression: str) -> Any:
        """The value of a script expression (awaited when it is a promise); a script error
        fails the test with its message."""
        result = self.browser.call("Runtime.evaluate", {"expression": expression, "awaitPromise": True,
                                                        "returnByValue": True}, self.session)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise AssertionError(f"script failed: {details.get('exception', {}).get('description')}"
                                 f" ({details.get('text')})")
        return result["result"].get("value")

    def requests(self) -> list[str]:
        """Every URL the page has asked for so far."""
        return [e["params"]["request"]["url"] for e in self._events("Network.requestWillBeSent")]

    def exceptions(self) -> list[str]:
        """Every uncaught script error so far."""
        return [str(e["params"]["exceptionDetails"].get("exception", {}).get("description"))
                for e in self._events("Runtime.exceptionThrown")]

    def mouse(self, kind: str, x: float, y: float, *, clicks: int = 1, pressed: bool = False) -> None:
        """One mouse event at viewport (CSS pixel) coordinates: ``kind`` is mousePressed,
        mouseMoved or mouseReleased; ``pressed`` holds the left button down while moving."""
        params: dict[str, Any] = {"type": kind, "x": x, "y": y, "button": "left", "clickCount": clicks}
        if kind == "mouseMoved":
            params.update(button="left" if pressed else "none", buttons=1 if pressed else 0, clickCount=0)
        self.browser.call("Input.dispatchMouseEvent", params, self.session)

    def drag(self, x0: float, x1: float, y: float, steps: int = 8) -> None:
        """Press at (x0, y), move to (x1, y) in steps, release."""
        self.mouse("mouseMoved", x0, y)
        self.mouse("mousePressed", x0, y)
        for i in range(1, steps + 1):
            self.mouse("mouseMoved", x0 + (x1 - x0) * i / steps, y, pressed=True)
        self.mouse("mouseReleased", x1, y)

    def double_click(self, x: float, y: float) -> None:
        for clicks in (1, 2):
            self.mouse("mousePressed", x, y, clicks=clicks)
            self.mouse("mouseReleased", x, y, clicks=clicks)

    def _events(self, method: str) -> list[dict[str, Any]]:
        # A round trip first: the events sent before its answer are read on the way.
        self.browser.call("Runtime.evaluate", {"expression": "0"}, self.session)
        return [e for e in self.browser.events
                if e.get("method") == method and e.get("sessionId") == self.session]
