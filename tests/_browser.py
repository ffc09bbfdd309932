"""A small headless-Chromium driver over the DevTools protocol, for the browser tests.

No browser package is installed: the tests use the system's Chromium (Debian package
``chromium``; ``.ci/run`` installs it) and talk to it with ``websocket-client``. The network
is disabled: every non-loopback request goes to a dead proxy, host names do not resolve, and
every request any frame makes is recorded so a test can assert that nothing external was
asked for. Sandboxed iframes may run in their own process; they are attached automatically
(``Target.setAutoAttach`` with ``flatten``), so console errors and requests inside them are
seen too.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import websocket

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
LOCAL_PREFIXES = ("file:", "data:", "about:", "blob:", "http://127.0.0.1", "ws://127.0.0.1",
                  "http://localhost", "ws://localhost", "chrome", "devtools:")  # fmt: skip


def find_chromium() -> str | None:
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    """One headless Chromium with one page; use as a context manager (always cleaned up)."""

    def __init__(self, executable: str, *, timeout: float = 60.0):
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="course-chromium-")
        args = [
            executable, "--headless=new", "--no-sandbox", "--disable-gpu",
            "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check",
            "--disable-extensions", "--disable-background-networking", "--disable-sync",
            "--disable-component-update", "--mute-audio", "--window-size=1280,900",
            f"--user-data-dir={self.profile}", "--remote-debugging-port=0",
            # No network: loopback goes direct (implicit proxy bypass), the rest to port 9.
            "--proxy-server=http://127.0.0.1:9",
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
            "about:blank",
        ]  # fmt: skip
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.next_id = 0
        self.responses: dict[int, dict] = {}
        self.contexts: dict[tuple[str, int], dict] = {}  # (session, context id) -> auxData
        self.console_errors: list[dict] = []  # {"text", "context", "session"}
        self.requests: list[dict] = []  # {"url", "frame", "session"}
        try:
            self.ws = websocket.create_connection(
                self._endpoint(), timeout=self.timeout, suppress_origin=True
            )
            self.session = self._open_page()
        except BaseException:
            self.close()
            raise

    # -- plumbing -----------------------------------------------------------------------------
    def _endpoint(self) -> str:
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"chromium exited with code {self.proc.returncode}")
            if port_file.exists():
                lines = port_file.read_text().split("\n")
                if len(lines) >= 2 and lines[1]:
                    return f"ws://127.0.0.1:{lines[0]}{lines[1]}"
            time.sleep(0.1)
        raise TimeoutError("chromium did not open its DevTools port")

    def _post(self, method: str, params: dict | None = None, session: str | None = None) -> int:
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self.ws.send(json.dumps(msg))
        return self.next_id

    def _read(self, deadline: float) -> bool:
        """Read one message (False when the deadline passed first)."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        self.ws.settimeout(remaining)
        try:
            msg = json.loads(self.ws.recv())
        except websocket.WebSocketTimeoutException:
            return False
        if "id" in msg:
            self.responses[msg["id"]] = msg
        else:
            self._event(msg)
        return True

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        msg_id = self._post(method, params, session)
        deadline = time.monotonic() + self.timeout
        while msg_id not in self.responses:
            if not self._read(deadline):
                raise TimeoutError(f"no answer to {method} within {self.timeout} s")
        msg = self.responses.pop(msg_id)
        if "error" in msg:
            raise RuntimeError(f"{method}: {msg['error']}")
        return msg["result"]

    def pump(self, seconds: float) -> None:
        """Process events for ``seconds`` (console messages, new frames, requests)."""
        deadline = time.monotonic() + seconds
        while self._read(deadline):
            pass

    def _setup(self, session: str) -> None:
        # Fire-and-forget (answers are read later): this runs inside the event handler.
        for method in ("Runtime.enable", "Log.enable", "Network.enable", "Page.enable"):
            self._post(method, session=session)
        self._post(
            "Target.setAutoAttach",
            {"autoAttach": True, "waitForDebuggerOnStart": True, "flatten": True},
            session,
        )
        self._post("Runtime.runIfWaitingForDebugger", session=session)

    def _event(self, msg: dict) -> None:
        method, params, session = msg["method"], msg.get("params", {}), msg.get("sessionId")
        if method == "Target.attachedToTarget":
            self._setup(params["sessionId"])
        elif method == "Page.javascriptDialogOpening":
            # JupyterLab's "leave this page?" prompt (a notebook still marked modified while the
            # next one is navigated to) would block Page.navigate: accept it, as a user would.
            self._post("Page.handleJavaScriptDialog", {"accept": True}, session)
        elif method == "Runtime.executionContextCreated":
            ctx = params["context"]
            self.contexts[(session, ctx["id"])] = ctx.get("auxData", {})
        elif method == "Runtime.executionContextDestroyed":
            self.contexts.pop((session, params["executionContextId"]), None)
        elif method == "Runtime.executionContextsCleared":
            for key in [k for k in self.contexts if k[0] == session]:
                del self.contexts[key]
        elif method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in params["args"])
            self.console_errors.append(
                {"text": text, "context": params["executionContextId"], "session": session}
            )
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text", "")
            self.console_errors.append(
                {"text": text, "context": details.get("executionContextId"), "session": session}
            )
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            entry = params["entry"]
            self.console_errors.append(
                {"text": f"{entry.get('text')} {entry.get('url', '')}", "context": None,
                 "session": session}
            )  # fmt: skip
        elif method == "Network.requestWillBeSent":
            self.requests.append(
                {
                    "url": params["request"]["url"],
                    "frame": params.get("frameId"),
                    "session": session,
                }
            )

    def _open_page(self) -> str:
        self.send("Target.setDiscoverTargets", {"discover": True})
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})
        session = session["sessionId"]
        self._setup(session)
        self.pump(0.5)
        return session

    # -- what tests use -----------------------------------------------------------------------
    def navigate(self, url: str) -> None:
        self.send("Page.navigate", {"url": url}, self.session)

    def evaluate(self, expression: str, session: str | None = None, context: int | None = None):
        params = {"expression": expression, "returnByValue": True, "awaitPromise": True}
        if context is not None:
            params["contextId"] = context
        result = self.send("Runtime.evaluate", params, session or self.session)
        if "exceptionDetails" in result:
            raise RuntimeError(f"JavaScript error: {result['exceptionDetails']}")
        return result["result"].get("value")

    def evaluate_everywhere(self, expression: str) -> list[tuple[tuple[str, int], object]]:
        """Run ``expression`` in the main world of every frame; ``[(context key, value)]``."""
        results = []
        for key, aux in list(self.contexts.items()):
            if not aux.get("isDefault", False):
                continue
            try:
                value = self.evaluate(expression, key[0], key[1])
            except RuntimeError:  # the frame went away meanwhile
                continue
            if value is not None:
                results.append((key, value))
        return results

    def wait_for(self, check, timeout: float, what: str):
        """Call ``check()`` (pumping events between calls) until it returns something truthy."""
        deadline = time.monotonic() + timeout
        while True:
            value = check()
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
            self.pump(0.25)

    def external_requests(self) -> list[str]:
        return [r["url"] for r in self.requests if not r["url"].startswith(LOCAL_PREFIXES)]

    def close(self) -> None:
        try:
            if getattr(self, "ws", None):
                self.ws.close()
        finally:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=10)
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# JavaScript run in every frame: describes a course attention view if the frame holds one.
VIEW_STATE_JS = """(() => {
  const root = document.querySelector('div[id^="bertviz-"]');
  if (!root) return null;
  const layer = root.querySelector('#layer');
  const lines = Array.from(root.querySelectorAll('#vis svg line'));
  return {
    id: root.id,
    kind: layer ? 'head' : 'model',
    layers: layer ? Array.from(layer.options).map(o => o.value) : null,
    layer: layer ? layer.value : null,
    lines: lines.length,
    drawing: lines.map(l => [l.getAttribute('y1'), l.getAttribute('y2'),
                             l.getAttribute('stroke-opacity')].join(',')).join(';'),
  };
})()"""

SWITCH_LAYER_JS = """((value) => {
  const select = document.querySelector('div[id^="bertviz-"] #layer');
  select.value = value;
  select.dispatchEvent(new Event('change', {bubbles: true}));
  return select.value;
})(%s)"""


def environment_without_proxies() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env["NO_PROXY"] = "127.0.0.1,localhost"
    return env
