#!/usr/bin/env python3
"""The dashboard page in a real browser (issue 20, acceptance 1 and 4).

Starts floodgate-demo with rules of its own, drives traffic until a circuit breaker is open,
then breaks the rule file so the last reload failed, and loads http://127.0.0.1:<admin>/ in
headless Chromium, driven over the DevTools protocol on a pipe (Python's standard library only).
Once the page's scripts ran it reads the DOM and asserts what an operator must see:

  page      resource rows, charts holding data, the breaker "open" with a countdown, the
            reload error, no horizontal scrolling on a narrow screen; no script error and no
            Content-Security-Policy violation; screenshots (PNG) under the build directory.
  escaping  a resource, a rule name and an origin spelled `<img src=x onerror=alert(1)>` show
            as that text, and the page holds no <img> element and opened no dialog.

Usage: browser_test.py page|escaping DEMO_BINARY OUTPUT_DIR
Exits 77 (skipped) only when Chromium is missing or cannot start.
"""
import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

SKIP = 77
XSS = "<img src=x onerror=alert(1)>"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--remote-debugging-pipe"]

RULES = """
flow:
  - resource: "GET:/hello"
    count: 40
  - name: "<img src=x onerror=alert(2)>"
    resource: "<img src=x onerror=alert(1)>"
    count: 10
degrade:
  - name: status-errors
    resource: "GET:/status/{code}"
    grade: error_ratio
    count: 0.5
    minRequestAmount: 5
    statIntervalMs: 10000
    timeWindow: 120
  - name: "<img src=x onerror=alert(2)>"
    resource: "<img src=x onerror=alert(1)>"
    grade: error_count
    count: 5
    timeWindow: 10
system:
  - maxThread: 5000
"""
BROKEN_RULES = "flow:\n  - resource: \"GET:/hello\"\n    count: -1\n"


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


def get(port, path, headers=None):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def eventually(condition, what, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    fail("timed out waiting for " + what)


class Demo:
    def __init__(self, binary, rules):
        self.proc = subprocess.Popen([binary, "--port", "0", "--admin-port", "0", "--rules", rules,
                                      "--threads", "2"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.port = self.admin = None
        for _ in range(2):
            line = self.proc.stdout.readline()
            m = re.search(r"(listening|admin) on http://[^:]+:(\d+)", line)
            if not m:
                fail("demo did not start: %r %s" % (line, self.proc.stderr.read()))
            if m.group(1) == "listening":
                self.port = int(m.group(2))
            else:
                self.admin = int(m.group(2))

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class Traffic(threading.Thread):
    """Steady requests while the page is open: /hello (some blocked), with an origin."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port = port
        self.stopped = threading.Event()

    def run(self):
        while not self.stopped.is_set():
            for _ in range(10):
                get(self.port, "/hello", {"X-Origin": XSS})
            get(self.port, "/users/7")
            get(self.port, "/no/such/path")
            self.stopped.wait(0.05)


class Browser:
    """Chromium driven over --remote-debugging-pipe: JSON messages ending in NUL on fds 3/4."""

    def __init__(self, profile):
        binary = os.environ.get("CHROMIUM", "/usr/bin/chromium")
        if not shutil.which(binary):
            print("SKIP: Chromium not found at %s (Debian package chromium)" % binary, flush=True)
            sys.exit(SKIP)
        to_child_r, self.to_child = os.pipe()
        self.from_child, from_child_w = os.pipe()

        def fds():
            # Through fresh numbers first: a pipe end that is already 3 or 4 would keep its
            # close-on-exec flag through a dup2 onto itself.
            read_end, write_end = os.dup(to_child_r), os.dup(from_child_w)
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)

        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([binary, *CHROMIUM_FLAGS, "--user-data-dir=" + profile,
                                      "about:blank"], preexec_fn=fds,
                                     stdout=self.log, stderr=self.log, close_fds=False)
        os.close(to_child_r)
        os.close(from_child_w)
        self.next_id = 0
        self.buffer = b""
        self.events = []
        self.session = None
        try:
            self.call("Browser.getVersion", timeout=30)
        except Exception as e:  # noqa: BLE001 - any failure here means Chromium cannot start
            self.log.seek(0)
            print("SKIP: Chromium cannot start (%s): %s" % (e, self.log.read()[-2000:].decode(
                errors="replace")), flush=True)
            self.close()
            sys.exit(SKIP)

    def _read_message(self, deadline):
        while b"\0" not in self.buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("no answer from Chromium")
            import select
            ready, _, _ = select.select([self.from_child], [], [], 0.5)
            if ready:
                chunk = os.read(self.from_child, 1 << 20)
                if not chunk:
                    raise EOFError("Chromium closed the pipe")
                self.buffer += chunk
        raw, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method, params=None, timeout=20, session=True):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self.to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            m = self._read_message(deadline)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            if "method" in m:
                self.events.append(m)

    def open(self, url):
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": target["targetId"], "flatten": True},
                                 session=False)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(domain + ".enable")
        self.viewport(1200, 1000)
        self.call("Page.navigate", {"url": url})

    def viewport(self, width, height):
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600})

    def evaluate(self, expression):
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in r:
            raise RuntimeError("evaluate: %s" % r["exceptionDetails"])
        return r["result"].get("value")

    def screenshot(self, path, whole_page=True):
        data = self.call("Page.captureScreenshot",
                         {"format": "png", "captureBeyondViewport": whole_page})
        with open(path, "wb") as f:
            f.write(base64.b64decode(data["data"]))

    def problems(self):
        """Script errors, CSP violations and dialogs seen so far."""
        out = []
        for e in self.events:
            m, p = e["method"], e.get("params", {})
            if m == "Runtime.exceptionThrown":
                out.append("exception: %s" % p["exceptionDetails"].get("exception", {}).get(
                    "description", p["exceptionDetails"].get("text")))
            elif m == "Log.entryAdded" and p["entry"]["level"] == "error" and \
                    "ERR_CONNECTION_REFUSED" not in p["entry"]["text"]:
                out.append("console: %s" % p["entry"]["text"])
            elif m == "Page.javascriptDialogOpening":
                out.append("dialog opened: %s" % p.get("message"))
        return out

    def close(self):
        try:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        except Exception:  # noqa: BLE001
            self.proc.kill()


# What the page shows, read from the DOM after its scripts ran.
FACTS = r"""(() => {
  const rows = [...document.querySelectorAll('#resources tbody tr[data-resource]')];
  const canvases = [...document.querySelectorAll('canvas')].map(c => {
    const chart = Chart.getChart(c);
    return {id: c.id, resource: c.closest('[data-resource]') ? c.closest('[data-resource]').dataset.resource : null,
            points: chart ? Math.max(0, ...chart.data.datasets.map(d => d.data.length)) : 0,
            width: c.width, height: c.height};
  });
  const breakers = [...document.querySelectorAll('#breakers tbody tr')].map(tr => ({
    resource: tr.cells[0].textContent, rule: tr.cells[1].textContent, state: tr.cells[2].textContent,
    probe: tr.cells[3].textContent, transitions: tr.cells[4].textContent}));
  return {
    connection: document.getElementById('connection').textContent,
    rows: rows.map(r => r.dataset.resource),
    rowText: rows.map(r => r.cells[0].textContent),
    canvases: canvases,
    breakers: breakers,
    reloadResult: document.getElementById('reload-result').textContent,
    reloadError: document.getElementById('reload-error').hidden ? '' : document.getElementById('reload-error').textContent,
    ruleFile: document.getElementById('rule-file').textContent,
    rules: document.getElementById('rules').textContent,
    origins: [...document.querySelectorAll('#origins tbody tr')].map(tr => tr.cells[0].textContent),
    originsOf: document.getElementById('origins-resource').textContent,
    tree: document.getElementById('tree').textContent,
    system: document.getElementById('system-section').hidden ? null : document.getElementById('system-cpu').textContent,
    blocked: [...document.querySelectorAll('#blocked tbody tr')].map(tr => [tr.cells[0].textContent, tr.cells[2].textContent]),
    images: document.images.length,
    imgTags: document.querySelectorAll('img').length,
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
  };
})()"""


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("page", "escaping"):
        print(__doc__)
        return 2
    mode, demo_binary, out_dir = sys.argv[1:]
    os.makedirs(out_dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="floodgate-dashboard-")
    rules = os.path.join(work, "rules.yaml")
    with open(rules, "w") as f:
        f.write(RULES)
    demo = Demo(demo_binary, rules)
    traffic = Traffic(demo.port)
    browser = None
    try:
        # An open breaker: errors on /status/{code} past the ratio.
        for _ in range(8):
            get(demo.port, "/status/500")
        eventually(lambda: any(b["state"] == "open" and b["resource"] == "GET:/status/{code}"
                               for b in json.loads(get(demo.admin, "/floodgate/breakers")[1])),
                   "the breaker to open")
        # A failed reload: the file is broken after start; the last good rules stay.
        with open(rules + ".tmp", "w") as f:
            f.write(BROKEN_RULES)
        os.replace(rules + ".tmp", rules)
        eventually(lambda: json.loads(get(demo.admin, "/floodgate/reload")[1])["ok"] is False,
                   "the reload to fail")
        traffic.start()
        time.sleep(1.5)  # a few seconds of history before the page opens (not a correctness wait)

        browser = Browser(os.path.join(work, "profile"))
        browser.open("http://127.0.0.1:%d/" % demo.admin)
        ready = ("(() => { try { return document.querySelectorAll('#resources tbody tr').length > 0 &&"
                 " document.querySelector('#breakers td.countdown') !== null &&"
                 " /probe in/.test(document.querySelector('#breakers').textContent) &&"
                 " document.getElementById('rules').textContent.length > 0 &&"
                 " document.querySelectorAll('#origins tbody tr').length > 0 &&"
                 " document.getElementById('tree').textContent.length > 0 &&"
                 " [...document.querySelectorAll('#charts canvas')].some(c => Chart.getChart(c) &&"
                 " Chart.getChart(c).data.datasets[0].data.length >= 2); } catch (e) { return false; } })()")
        deadline = time.monotonic() + 30
        while not browser.evaluate(ready):
            if time.monotonic() > deadline:
                print(json.dumps(browser.evaluate(FACTS), indent=1))
                fail("the page did not show its data within 30 s; problems: %s" % browser.problems())
            time.sleep(0.2)
        facts = browser.evaluate(FACTS)
        print(json.dumps(facts, indent=1))
        check(mode, facts, demo)
        browser.screenshot(os.path.join(out_dir, "dashboard-%s.png" % mode))
        if mode == "page":  # what a person sees first (the README's picture)
            browser.screenshot(os.path.join(out_dir, "dashboard-top.png"), whole_page=False)
        if mode == "page":
            browser.viewport(390, 844)
            eventually(lambda: browser.evaluate("window.innerWidth") == 390,
                       "the page to take the 390 px viewport")
            narrow = browser.evaluate(FACTS)  # reading the widths lays the page out anew
            if narrow["innerWidth"] != 390 or narrow["scrollWidth"] > narrow["innerWidth"]:
                fail("the page scrolls sideways on a 390 px screen: %d > %d"
                     % (narrow["scrollWidth"], narrow["innerWidth"]))
            browser.screenshot(os.path.join(out_dir, "dashboard-narrow.png"))
        problems = browser.problems()
        if problems:
            fail("the page reported problems: %s" % problems)
        if mode == "page":
            check_polling_fallback(browser, demo)  # its refused stream logs an error, on purpose
        print("screenshots in %s" % out_dir)
        print("PASS")
        return 0
    finally:
        traffic.stopped.set()
        if browser:
            browser.close()
        demo.stop()
        shutil.rmtree(work, ignore_errors=True)


def check_polling_fallback(browser, demo):
    """With the stream full (16 subscribers), a page opened then polls the JSON endpoints."""
    import socket
    held = []
    try:
        browser.call("Page.navigate", {"url": "about:blank"})  # the page's own place frees
        deadline = time.monotonic() + 20
        while len(held) < 16:
            s = socket.create_connection(("127.0.0.1", demo.admin), timeout=10)
            s.sendall(b"GET /floodgate/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            if s.recv(64).startswith(b"HTTP/1.1 200"):
                held.append(s)
            else:
                s.close()
                if time.monotonic() > deadline:
                    fail("the closed page's stream place was not freed")
                time.sleep(0.1)
        s = socket.create_connection(("127.0.0.1", demo.admin), timeout=10)
        s.sendall(b"GET /floodgate/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        if not s.recv(64).startswith(b"HTTP/1.1 503"):
            fail("the stream accepted a 17th subscriber")
        s.close()
        browser.viewport(1280, 900)
        browser.call("Page.navigate", {"url": "http://127.0.0.1:%d/" % demo.admin})
        ready = ("(() => { try { return"
                 " document.getElementById('connection').textContent.startsWith('polling') &&"
                 " document.querySelectorAll('#resources tbody tr').length > 0 &&"
                 " /probe in/.test(document.querySelector('#breakers').textContent) &&"
                 " document.getElementById('reload-result').textContent === 'failed';"
                 " } catch (e) { return false; } })()")
        deadline = time.monotonic() + 30
        while not browser.evaluate(ready):
            if time.monotonic() > deadline:
                print(json.dumps(browser.evaluate(FACTS), indent=1))
                fail("a page refused by the full stream did not fall back to polling")
            time.sleep(0.2)
        print("polling fallback: %s" % browser.evaluate(
            "document.getElementById('connection').textContent"))
    finally:
        for s in held:
            s.close()


def check(mode, facts, demo):
    if mode == "page":
        if facts["connection"] != "live (stream)":
            fail("the page is not on the stream: %r" % facts["connection"])
        for r in ("GET:/hello", "GET:/status/{code}", "GET:/users/{id}", "<unmatched>"):
            if r not in facts["rows"]:
                fail("no resource row for %s: %s" % (r, facts["rows"]))
        if facts["rows"][0] != "GET:/hello":
            fail("the busiest resource is not first: %s" % facts["rows"])
        charts = [c for c in facts["canvases"] if c["resource"]]
        if not charts or not any(c["points"] >= 2 and c["width"] > 0 for c in charts):
            fail("no resource chart holds data: %s" % facts["canvases"])
        blocked = [c for c in facts["canvases"] if c["id"] == "blocked-chart"]
        if not blocked or blocked[0]["points"] < 2:
            fail("the blocked-by-reason chart holds no data: %s" % facts["canvases"])
        if not any(r == "flow" and int(n) > 0 for r, n in facts["blocked"]):
            fail("no flow blocks shown by reason: %s" % facts["blocked"])
        status = [b for b in facts["breakers"] if b["resource"] == "GET:/status/{code}"]
        if not status or "open" not in status[0]["state"].split():
            fail("the breaker of GET:/status/{code} is not shown open: %s" % facts["breakers"])
        if not re.fullmatch(r"probe in \d+\.\d s", status[0]["probe"]):
            fail("no countdown to the next probe: %r" % status[0]["probe"])
        if "closed→open ×1" not in status[0]["transitions"]:
            fail("the transition is not shown: %r" % status[0]["transitions"])
        if facts["reloadResult"] != "failed":
            fail("the failed reload is not shown: %r" % facts["reloadResult"])
        if "flow[0].count" not in facts["reloadError"] or "must be >= 0" not in facts["reloadError"]:
            fail("the reload error line is not shown: %r" % facts["reloadError"])
        if not facts["ruleFile"].endswith("rules.yaml"):
            fail("the rule file path is not shown: %r" % facts["ruleFile"])
        if '"GET:/hello"' not in facts["rules"] or '"count": 40' not in facts["rules"]:
            fail("the rules in force (the last good ones) are not shown: %r" % facts["rules"][:300])
        if "http-inbound" not in facts["tree"] or "GET:/hello" not in facts["tree"]:
            fail("the statistics tree is not shown: %r" % facts["tree"][:300])
        if facts["system"] is None:
            fail("system readings are not shown although a system rule is loaded")
    else:
        if facts["images"] != 0 or facts["imgTags"] != 0:
            fail("an <img> element made it into the page: %d" % facts["imgTags"])
        if not any(b["resource"] == XSS and b["rule"] == XSS.replace("1", "2")
                   for b in facts["breakers"]):
            fail("the breaker of the resource %r is not shown as text: %s" % (XSS, facts["breakers"]))
        if facts["originsOf"] != "GET:/hello" or XSS not in facts["origins"]:
            fail("the origin %r of GET:/hello is not shown as text: %s %s"
                 % (XSS, facts["originsOf"], facts["origins"]))
        if json.dumps(XSS) not in facts["rules"]:
            fail("the rule resource %r is not shown as text" % XSS)
        if "<unmatched>" not in facts["rowText"]:
            fail("the resource <unmatched> is not shown as text: %s" % facts["rowText"])


if __name__ == "__main__":
    sys.exit(main())
