#!/usr/bin/env python3
"""Proves examples/observability/ against the real thing (issue 20).

Starts the real demo under traffic (passed, blocked by flow / param_flow / authority / degrade,
errors, an open breaker, a failed reload, unmatched paths) and a real Prometheus scraping it every
second with the alert rules loaded, then runs every PromQL expression of the Grafana dashboard and
of the alert rules through Prometheus' HTTP API: each must return data. Each expression is also
checked against the demo's own scrape: a metric, label or label value the demo does not export
fails the test. `promtool check rules`, `promtool test rules` and `promtool check config` run first.

usage: prometheus_test.py DEMO_BINARY SOURCE_DIR
Exits 77 (ctest SKIP_RETURN_CODE) only when Prometheus cannot be started.
"""

import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

SKIP = 77
STARTUP_TIMEOUT = 30.0
DATA_TIMEOUT = 40.0

# `$resource` (multi-value, so a regex) and Grafana's interval variables, as Grafana would fill
# them in. The regex names real resources of the demo.
SUBSTITUTIONS = {
    "$resource": "GET:/hello|GET:/users/.*|GET:/status/.*|<unmatched>",
    "$__rate_interval": "10s",
    "$__interval": "10s",
    "$__range": "1m",
}

# Labels Prometheus attaches to every scraped series.
TARGET_LABELS = {"instance", "job"}

PROMQL_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool",
                   "offset", "and", "or", "unless", "inf", "nan"}

GOOD_RULES = """\
flow:
  - name: hello-qps
    resource: "GET:/hello"
    count: 5
degrade:
  # Errors open the breaker; it stays open for the whole test.
  - name: status-errors
    resource: "GET:/status/{code}"
    grade: error_ratio
    count: 0.5
    minRequestAmount: 5
    statIntervalMs: 10000
    timeWindow: 300
authority:
  - resource: "GET:/users/{id}"
    strategy: black
    limitApp: scraper
paramFlow:
  - name: hello-per-user
    resource: "GET:/hello"
    param: {from: header, name: X-User}
    count: 1000
    items:
      - {value: blocked, count: 0}
"""

BAD_RULES = """\
flow:
  - resource: "GET:/hello"
    grade: not-a-grade
    count: 5
"""


class Failure(Exception):
    pass


class Skip(Exception):
    pass


def log(*args):
    print(*args, flush=True)


# ---------------------------------------------------------------- HTTP

def http_get(url, headers=None, timeout=5.0):
    """Returns (status, body); HTTP errors are answers, not exceptions."""
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------- processes

class Process:
    """A child process whose output is collected by a reader thread."""

    def __init__(self, argv, cwd=None):
        self.argv = argv
        self.proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, bufsize=1)
        self.output = []
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            with self.lock:
                self.output.append(line)

    def text(self):
        with self.lock:
            return "".join(self.output)

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(timeout=5)


def start_demo(binary, rules_path):
    demo = Process([binary, "--port", "0", "--admin-port", "0", "--threads", "2",
                    "--rules", rules_path])
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        text = demo.text()
        main = re.search(r"listening on http://([^\s]+):(\d+)", text)
        admin = re.search(r"admin on http://127\.0\.0\.1:(\d+)", text)
        if main and admin:
            return demo, f"http://{main.group(1)}:{main.group(2)}", f"127.0.0.1:{admin.group(1)}"
        if not demo.alive():
            break
        time.sleep(0.05)
    demo.stop()
    raise Failure("the demo did not start:\n" + demo.text())


def start_prometheus(prometheus, workdir, alerts_path, admin_target):
    config = os.path.join(workdir, "prometheus.yml")
    with open(config, "w") as f:
        f.write(f"""\
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - {json.dumps(alerts_path)}
scrape_configs:
  - job_name: floodgate
    static_configs:
      - targets: [{json.dumps(admin_target)}]
""")
    last_output = ""
    for _ in range(3):  # the free port may be taken between probing and binding
        port = free_port()
        data = tempfile.mkdtemp(prefix="tsdb-", dir=workdir)
        prom = Process([prometheus, f"--config.file={config}", f"--storage.tsdb.path={data}",
                        f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"], cwd=workdir)
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while time.monotonic() < deadline and prom.alive():
            try:
                if http_get(base + "/-/ready", timeout=1.0)[0] == 200:
                    return prom, base
            except OSError:
                pass
            time.sleep(0.1)
        prom.stop()
        last_output = prom.text()
        if "address already in use" not in last_output:
            break
    raise Skip("prometheus did not start:\n" + last_output[-2000:])


# ---------------------------------------------------------------- traffic

def drive_initial_traffic(base):
    for _ in range(30):  # /hello: 5 per second pass, the rest is blocked by flow
        http_get(base + "/hello")
    for _ in range(3):
        http_get(base + "/hello", {"X-User": "blocked"})  # param_flow
        http_get(base + "/users/7", {"X-Origin": "scraper"})  # authority
        http_get(base + "/users/7")
    for _ in range(10):  # errors open the breaker of GET:/status/{code}
        http_get(base + "/status/500")
    for i in range(20):
        http_get(base + f"/no/such/path/{i}")  # <unmatched>
    status, _ = http_get(base + "/status/200")
    if status != 503:
        raise Failure(f"the breaker of GET:/status/{{code}} did not open (got {status})")


class BackgroundTraffic:
    """Keeps every panel's rates non-zero while Prometheus scrapes: ~20 requests a second to
    /hello (above its 5 QPS limit), /users/{id}, the open /status breaker and unmatched paths."""

    def __init__(self, base):
        self.base = base
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        i = 0
        while not self.stop_event.wait(0.05):
            i += 1
            for path in ("/hello", "/users/2", "/status/200", f"/missing/{i % 7}"):
                try:
                    http_get(self.base + path, timeout=2.0)
                except OSError:
                    pass

    def stop(self):
        self.stop_event.set()
        self.thread.join(timeout=10)


def write_rules(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def wait_until(what, predicate, timeout=DATA_TIMEOUT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise Failure(f"timed out waiting for {what}")


# ---------------------------------------------------------------- the scrape

def parse_scrape(text):
    """{sample name: [label dict, ...]} from the Prometheus text format."""
    samples = {}
    pattern = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+\S+')
    label = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = pattern.match(line)
        if not m:
            raise Failure(f"unparsable scrape line: {line}")
        labels = {k: v.replace('\\"', '"').replace("\\\\", "\\")
                  for k, v in label.findall(m.group(3) or "")}
        samples.setdefault(m.group(1), []).append(labels)
    return samples


# ---------------------------------------------------------------- PromQL checks

def substitute(expr):
    for var, value in SUBSTITUTIONS.items():
        expr = expr.replace(var, value)
    return expr


def check_names(expr, samples):
    """Every metric, label and literal label value `expr` names must exist in the scrape.
    Returns a list of problems (empty: fine)."""
    problems = []
    # Selectors with matchers: metric{label op "value", ...}.
    selector = re.compile(r'([a-zA-Z_:][a-zA-Z0-9_:]*)?\s*\{([^}]*)\}')
    matcher = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*')
    for sel in selector.finditer(expr):
        metric = sel.group(1)
        if metric is None:
            problems.append(f"a selector without a metric name: {sel.group(0)}")
            continue
        series = samples.get(metric, [])
        for part in filter(str.strip, sel.group(2).split(",")):
            m = matcher.fullmatch(part)
            if not m:
                problems.append(f"unparsable matcher {part!r}")
                continue
            name, op, value = m.groups()
            if name in TARGET_LABELS:
                continue
            if series and not any(name in s for s in series):
                problems.append(f"{metric} has no label {name!r}")
            elif op == "=" and series and not any(s.get(name) == value for s in series):
                problems.append(f"{metric} has no series with {name}={value!r}")
            elif op == "=~" and series and not any(
                    re.fullmatch(value, s.get(name, "")) for s in series):
                problems.append(f"{metric}: no {name} matches {value!r}")
    # Strip strings, matchers and ranges, then look at the identifiers left.
    bare = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    bare = re.sub(r'\{[^}]*\}', '', bare)
    bare = re.sub(r'\[[^\]]*\]', '', bare)
    metrics = set()
    grouping = []
    for m in re.finditer(r'\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)', bare):
        grouping += [g.strip() for g in m.group(2).split(",") if g.strip()]
    bare_ids = re.sub(r'\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)', '', bare)
    for m in re.finditer(r'(?<![0-9.])\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(\s*\()?', bare_ids):
        name, call = m.group(1), m.group(2)
        if call or name.lower() in PROMQL_KEYWORDS:
            continue  # a function or an operator keyword
        if name not in samples:
            problems.append(f"metric {name!r} is not exported by the demo")
        metrics.add(name)
    known = set(TARGET_LABELS)
    for name in metrics:
        for s in samples.get(name, []):
            known.update(s)
    for g in grouping:
        if g not in known:
            problems.append(f"label {g!r} is on none of {sorted(metrics)}")
    return problems


def query(prom, expr):
    url = prom + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    status, body = http_get(url, timeout=10.0)
    answer = json.loads(body)
    if status != 200 or answer.get("status") != "success":
        raise Failure(f"query failed ({status}): {expr}\n{body}")
    return answer["data"]["result"]


def values_of(result):
    return [float(r["value"][1]) for r in result]


# ---------------------------------------------------------------- the assets

def dashboard_targets(dashboard):
    """(panel title, expr, legendFormat) of every target, rows' nested panels included."""
    out = []

    def walk(panels):
        for p in panels:
            walk(p.get("panels", []))
            for t in p.get("targets", []):
                if t.get("expr"):
                    out.append((p.get("title", "?"), t["expr"], t.get("legendFormat", "")))
    walk(dashboard.get("panels", []))
    return out


def check_dashboard_schema(dashboard):
    if dashboard.get("schemaVersion", 0) < 38:
        raise Failure("the dashboard's schemaVersion is below 38 (Grafana 10)")
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    ds = variables.get("datasource")
    if not ds or ds.get("type") != "datasource" or ds.get("query") != "prometheus":
        raise Failure("no `datasource` variable of type datasource/prometheus")
    res = variables.get("resource")
    definition = res and (res.get("definition") or res.get("query"))
    if not res or res.get("type") != "query" or \
            "label_values(floodgate_requests_total, resource)" not in json.dumps(definition):
        raise Failure("no `resource` variable from label_values(floodgate_requests_total, resource)")

    def walk(panels):
        for p in panels:
            walk(p.get("panels", []))
            if p.get("type") != "row" and p.get("datasource", {}).get("uid") != "${datasource}":
                raise Failure(f"panel {p.get('title')!r} does not use the $datasource variable")
    walk(dashboard["panels"])


def run_promtool(promtool, obs_dir):
    for args in (["check", "rules", "floodgate-alerts.yml"],
                 ["test", "rules", "floodgate-alerts.test.yml"],
                 ["check", "config", "prometheus.yml"]):
        r = subprocess.run([promtool] + args, cwd=obs_dir, capture_output=True, text=True)
        log(f"promtool {' '.join(args)}: exit {r.returncode}")
        if r.returncode != 0:
            raise Failure(f"promtool {' '.join(args)} failed:\n{r.stdout}{r.stderr}")


def self_check(samples, prom):
    """The checks can fail: names the demo does not export are caught."""
    bad = {
        "rate(floodgate_request_total[1m])": "not exported",
        "sum by (pod) (floodgate_requests_total)": "label 'pod'",
        'floodgate_requests_total{result="allowed"}': "result='allowed'",
        'floodgate_inflight_requests{reason="flow"}': "no label 'reason'",
        "sum(rate(http_requests_total[1m]))": "not exported",
    }
    for expr, expected in bad.items():
        problems = check_names(expr, samples)
        if not any(expected in p for p in problems):
            raise Failure(f"self-check: {expr!r} not rejected ({problems})")
    if query(prom, "rate(floodgate_request_total[1m])"):
        raise Failure("self-check: Prometheus answered a metric the demo does not export")
    good = 'sum by (resource) (rate(floodgate_requests_total{result="blocked"}[10s]))'
    if check_names(good, samples):
        raise Failure(f"self-check: {good!r} rejected: {check_names(good, samples)}")


# ---------------------------------------------------------------- main

def run(demo_binary, source_dir):
    obs_dir = os.path.join(source_dir, "examples", "observability")
    prometheus = shutil.which("prometheus")
    if prometheus is None:
        raise Skip("prometheus is not installed (Debian package `prometheus`)")
    promtool = shutil.which("promtool")
    if promtool is None:
        raise Failure("prometheus is installed but promtool is not")
    run_promtool(promtool, obs_dir)

    alerts_path = os.path.join(obs_dir, "floodgate-alerts.yml")
    with open(os.path.join(obs_dir, "floodgate-dashboard.json")) as f:
        dashboard = json.load(f)
    check_dashboard_schema(dashboard)
    targets = dashboard_targets(dashboard)
    if not targets:
        raise Failure("the dashboard has no queries")
    with open(alerts_path) as f:
        alert_names = re.findall(r"^\s*-\s*alert:\s*(\S+)", f.read(), re.M)

    workdir = tempfile.mkdtemp(prefix="floodgate-prometheus-test-")
    demo = prom = traffic = None
    try:
        rules_path = os.path.join(workdir, "rules.yaml")
        write_rules(rules_path, GOOD_RULES)
        demo, base, admin = start_demo(demo_binary, rules_path)
        log(f"demo on {base}, admin on {admin}")
        prom, prom_base = start_prometheus(prometheus, workdir, alerts_path, admin)
        log(f"prometheus on {prom_base}")

        drive_initial_traffic(base)
        traffic = BackgroundTraffic(base)
        write_rules(rules_path, BAD_RULES)
        wait_until("the demo to report the failed reload", lambda: json.loads(
            http_get(f"http://{admin}/floodgate/reload")[1]).get("failures", 0) >= 1)

        # Enough scrapes after the failed reload for every rate over 10 s.
        wait_until("Prometheus to scrape the failed reload",
                   lambda: query(prom_base, "floodgate_rules_last_reload_successful == 0"))
        wait_until("8 scrapes after the failed reload", lambda: any(v >= 8 for v in values_of(query(
            prom_base, "count_over_time((floodgate_rules_last_reload_successful == 0)[30s:1s])"))))

        samples = parse_scrape(http_get(f"http://{admin}/metrics")[1])
        self_check(samples, prom_base)

        failures = []
        # The resource variable, queried as Grafana does, lists the demo's resources.
        variables = {v["name"]: v for v in dashboard["templating"]["list"]}
        metric, label = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)",
                                     variables["resource"]["definition"]).groups()
        if not any(label in s for s in samples.get(metric, [])):
            failures.append(f"$resource: {metric} has no label {label!r} in the scrape")
        body = http_get(prom_base + f"/api/v1/label/{label}/values?" +
                        urllib.parse.urlencode({"match[]": metric}))[1]
        resources = json.loads(body)["data"]
        log(f"$resource values: {resources}")
        for r in ("GET:/hello", "GET:/status/{code}", "GET:/users/{id}", "<unmatched>"):
            if r not in resources:
                failures.append(f"$resource does not offer {r!r}")

        for title, raw, legend in targets:
            expr = substitute(raw)
            problems = check_names(expr, samples)
            result = query(prom_base, expr)
            finite = [v for v in values_of(result) if not math.isnan(v)]
            log(f"dashboard {title!r}: {len(result)} series, {len(finite)} finite: {expr}")
            failures += [f"dashboard {title!r}: {p}: {raw}" for p in problems]
            if not result:
                failures.append(f"dashboard {title!r}: no data: {expr}")
            elif not finite:
                failures.append(f"dashboard {title!r}: only NaN: {expr}")
            for label in re.findall(r"\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}", legend):
                if result and not all(label in r["metric"] for r in result):
                    failures.append(f"dashboard {title!r}: legend label {label!r} not in the result")

        # The alert rules as the running Prometheus loaded them.
        groups = json.loads(http_get(prom_base + "/api/v1/rules")[1])["data"]["groups"]
        rules = [r for g in groups for r in g["rules"] if r["type"] == "alerting"]
        if sorted(r["name"] for r in rules) != sorted(alert_names):
            failures.append(f"Prometheus loaded {[r['name'] for r in rules]}, the file has {alert_names}")
        active = {a["labels"]["alertname"]: a["state"]
                  for a in json.loads(http_get(prom_base + "/api/v1/alerts")[1])["data"]["alerts"]}
        for rule in rules:
            name, expr = rule["name"], rule["query"]
            if rule.get("health") != "ok":
                failures.append(f"alert {name}: health {rule.get('health')}: {rule.get('lastError')}")
            failures += [f"alert {name}: {p}" for p in check_names(expr, samples)]
            result = query(prom_base, expr)
            log(f"alert {name}: {len(result)} series, state {active.get(name, 'inactive')}")
            if name == "FloodgateResourceOverflow":
                # The demo's resources are its four routes, <unmatched> and backend:work, far
                # below the cap: overflow stays 0. The expression's operand must still have
                # data, and the alert must stay quiet.
                operand = re.sub(r"\s*>\s*0\s*$", "", expr)
                if operand == expr or not query(prom_base, operand):
                    failures.append(f"alert {name}: no data for {operand}")
                if result:
                    failures.append(f"alert {name}: fires against the demo: {result}")
                continue
            if not result:
                failures.append(f"alert {name}: no data: {expr}")
            if active.get(name) not in ("pending", "firing"):
                failures.append(f"alert {name}: not pending or firing (state {active.get(name)})")
        if failures:
            raise Failure("\n".join(failures))
        log(f"OK: {len(targets)} dashboard queries and {len(rules)} alert rules return data")
    finally:
        if traffic:
            traffic.stop()
        if prom:
            prom.stop()
        if demo:
            demo.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        run(os.path.abspath(argv[1]), os.path.abspath(argv[2]))
    except Skip as e:
        print(f"SKIP: {e}", flush=True)
        return SKIP
    except Failure as e:
        print(f"FAIL: {e}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
