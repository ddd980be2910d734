"""Headless Chromium driven over the DevTools protocol on a pipe
(--remote-debugging-pipe: NUL-separated JSON on file descriptors 3 and 4), so
the page tests need no WebSocket library and no network.

    with Browser() as b:
        tab = b.open("/abs/page.html", offline=True)
        tab.eval("document.title")
        tab.requests      # every URL the page asked for
"""
import base64
import json
import os
import shutil
import subprocess
import tempfile
import time


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Error(Exception):
    pass


class Browser:
    def __init__(self, width=1280, height=900):
        exe = find_chromium()
        if not exe:
            raise Error("no chromium on PATH")
        self.profile = tempfile.mkdtemp(prefix="tileopt-chromium-")
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()

        def fds():
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)
            # dup2 onto itself (a pipe that was 3 already) keeps close-on-exec
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)

        self.proc = subprocess.Popen(
            [exe, "--headless", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
             "--no-first-run", "--no-default-browser-check", "--disable-extensions",
             "--disable-background-networking", "--disable-sync", "--mute-audio",
             "--hide-scrollbars", f"--window-size={width},{height}",
             f"--user-data-dir={self.profile}", "about:blank"],
            # the child's 3 and 4 are set after fork: subprocess would close
            # them as fds it was not told to keep
            close_fds=False, preexec_fn=fds,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.width, self.height = width, height
        self.next_id = 0
        self.buf = b""
        self.events = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self.to_chrome, self.from_chrome):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def _read(self, deadline):
        while b"\0" not in self.buf:
            if time.monotonic() > deadline:
                raise Error("chromium did not answer in time")
            import select
            r, _, _ = select.select([self.from_chrome], [], [], 0.5)
            if r:
                chunk = os.read(self.from_chrome, 1 << 20)
                if not chunk:
                    raise Error("chromium closed the pipe")
                self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=None, timeout=60):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_chrome, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            m = self._read(deadline)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise Error(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method, session, timeout=60):
        deadline = time.monotonic() + timeout
        while True:
            for i, m in enumerate(self.events):
                if m.get("method") == method and m.get("sessionId") == session:
                    return self.events.pop(i)
            self.events.append(self._read(deadline))

    def open(self, path, offline=True, timeout=60):
        """A new tab on file `path`, the network off; returns a Tab once loaded."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget",
                            {"targetId": target, "flatten": True})["sessionId"]
        tab = Tab(self, session)
        for m in ("Page.enable", "Network.enable", "Runtime.enable", "Log.enable"):
            self.call(m, session=session)
        if offline:
            self.call("Network.emulateNetworkConditions",
                      {"offline": True, "latency": 0, "downloadThroughput": 0,
                       "uploadThroughput": 0}, session=session)
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": self.width, "height": self.height, "deviceScaleFactor": 1,
                   "mobile": False}, session=session)
        url = "file://" + os.path.abspath(path)
        t0 = time.monotonic()
        self.call("Page.navigate", {"url": url}, session=session)
        self.wait_event("Page.loadEventFired", session, timeout)
        tab.load_s = time.monotonic() - t0
        tab.url = url
        return tab


class Tab:
    def __init__(self, browser, session):
        self.b, self.session = browser, session

    def eval(self, expr, timeout=60):
        r = self.b.call("Runtime.evaluate",
                        {"expression": expr, "returnByValue": True, "awaitPromise": True},
                        session=self.session, timeout=timeout)
        if "exceptionDetails" in r:
            raise Error(f"{expr[:60]}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def dom(self):
        root = self.b.call("DOM.getDocument", {"depth": -1}, session=self.session)["root"]
        return self.b.call("DOM.getOuterHTML", {"nodeId": root["nodeId"]},
                           session=self.session)["outerHTML"]

    def screenshot(self):
        r = self.b.call("Page.captureScreenshot", {"format": "png"}, session=self.session)
        return base64.b64decode(r["data"])

    def _mine(self, method):
        return [m["params"] for m in self.b.events
                if m.get("sessionId") == self.session and m.get("method") == method]

    @property
    def requests(self):
        """URLs the page asked for (the page itself included)."""
        return [p["request"]["url"] for p in self._mine("Network.requestWillBeSent")]

    @property
    def errors(self):
        """Exceptions thrown and console or log errors (CSP violations among them)."""
        out = [str(p.get("exceptionDetails", {}).get("text")) + " " +
               str(p.get("exceptionDetails", {}).get("exception", {}).get("description"))
               for p in self._mine("Runtime.exceptionThrown")]
        out += [p["entry"]["text"] for p in self._mine("Log.entryAdded")
                if p["entry"].get("level") == "error"]
        out += [" ".join(str(a.get("value")) for a in p.get("args", []))
                for p in self._mine("Runtime.consoleAPICalled") if p.get("type") == "error"]
        return out
