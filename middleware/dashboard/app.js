// The floodgate dashboard: read-only views of the admin API, live over Server-Sent Events.
// Every string from the server reaches the page through textContent, never as markup.
(function () {
  "use strict";

  const HISTORY = 300;         // seconds of snapshots kept, as on the server
  const CHARTS = 6;            // resource charts drawn at most (only those on screen update)
  const PAGE = 50;             // table rows per "show more"
  const REASONS = ["flow", "param_flow", "degrade", "system", "authority", "custom"];
  const COLUMNS = { pass: 1, block: 2, success: 3, error: 4, rt: 5, inflight: 6 };
  const SERIES = [
    { key: "pass", label: "pass/s", color: "#1e6b35", dash: [] },
    { key: "block", label: "block/s", color: "#b3261e", dash: [6, 3] },
    { key: "success", label: "success/s", color: "#3a5bd9", dash: [2, 2] },
    { key: "error", label: "error/s", color: "#8a5a00", dash: [8, 2, 2, 2] },
  ];

  const $ = (id) => document.getElementById(id);
  const history = [];               // {t, rows: Map(name -> row), blocked}
  const totals = new Map();         // name -> [pass, block] summed over the history
  let latest = null;                // the newest snapshot
  let receivedAt = 0;               // performance.now() when `latest` arrived
  let chosen = null;                // the resource whose origins are shown
  let shownRows = PAGE;
  let rulesVersion = null;
  let renderQueued = false;
  const charts = new Map();         // name -> {card, chart, visible}
  let blockedChart = null;

  function el(tag, text, className) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (className) e.className = className;
    return e;
  }
  function fmt(v, digits) {
    if (v === null || v === undefined || Number.isNaN(v)) return "–";
    const d = digits === undefined ? (Math.abs(v) >= 100 ? 0 : 1) : digits;
    return Number(v).toFixed(d).replace(/\.0+$/, "");
  }
  function clock(ms) {
    return ms ? new Date(ms).toLocaleTimeString([], { hour12: false }) : "–";
  }
  function getJson(path) {
    return fetch(path, { cache: "no-store", credentials: "omit" }).then((r) => {
      if (!r.ok) throw new Error(path + ": HTTP " + r.status);
      return r.json();
    });
  }

  // ---- data -------------------------------------------------------------------------------

  function accept(snapshot) {
    if (history.length && snapshot.t <= history[history.length - 1].t) return;
    const rows = new Map();
    for (const row of snapshot.resources || []) rows.set(row[0], row);
    const entry = { t: snapshot.t, rows: rows, blocked: snapshot.blocked || null };
    history.push(entry);
    addTotals(entry, 1);
    while (history.length > HISTORY) addTotals(history.shift(), -1);
    latest = snapshot;
    receivedAt = performance.now();
    if (rulesVersion !== snapshot.rulesVersion) {
      rulesVersion = snapshot.rulesVersion;
      loadRules();
    }
    queueRender();
  }
  // Per resource: [pass, block, snapshots it is in] over the history.
  function addTotals(entry, sign) {
    for (const [name, row] of entry.rows) {
      const t = totals.get(name) || [0, 0, 0];
      t[0] += sign * (row[COLUMNS.pass] || 0);
      t[1] += sign * (row[COLUMNS.block] || 0);
      t[2] += sign;
      if (t[2] <= 0) totals.delete(name);
      else totals.set(name, t);
    }
  }
  function latestRow(name) {
    return history.length ? history[history.length - 1].rows.get(name) : undefined;
  }

  // ---- live feed: the stream, else polling ------------------------------------------------

  let source = null;
  let pollTimer = null;
  function connect() {
    if (!("EventSource" in window)) return startPolling("no EventSource");
    source = new EventSource("/floodgate/stream");
    source.onopen = () => setConnection("live (stream)");
    source.onmessage = (e) => {
      try { accept(JSON.parse(e.data)); } catch (err) { setConnection("bad data: " + err.message); }
    };
    source.onerror = () => {
      if (source.readyState === EventSource.CLOSED) {
        source = null;
        startPolling("stream refused");
        setTimeout(() => { stopPolling(); connect(); }, 30000);
      } else {
        setConnection("reconnecting");
      }
    };
  }
  function setConnection(text) { $("connection").textContent = text; }

  let lastBlockedTotals = null;
  function startPolling(why) {
    setConnection("polling (" + why + ")");
    if (pollTimer) return;
    const poll = () => Promise.all([
      getJson("/floodgate/resources"), getJson("/floodgate/breakers"),
      getJson("/floodgate/reload").catch(() => null),
      fetch("/metrics", { cache: "no-store" }).then((r) => (r.ok ? r.text() : "")).catch(() => ""),
    ]).then(([resources, breakers, reload, metrics]) => {
      const now = Date.now();
      const blockedTotals = metricSums(metrics, "floodgate_blocked_requests_total", "reason");
      const blocked = {};
      for (const r of REASONS) {
        blocked[r] = lastBlockedTotals ? Math.max(0, (blockedTotals[r] || 0) - (lastBlockedTotals[r] || 0)) : 0;
      }
      lastBlockedTotals = blockedTotals;
      const cpu = metricSums(metrics, "floodgate_system_cpu_usage_ratio", null)[""];
      const load = metricSums(metrics, "floodgate_system_load1", null)[""];
      accept({
        t: now,
        resources: resources.map((r) => [r.resource, r.passQps, r.blockQps, r.successQps, r.exceptionQps, r.avgRt, r.concurrency]),
        resourceCount: resources.length,
        blocked: blocked,
        breakers: breakers.map((b) => ({
          resource: b.resource, rule: b.rule, state: b.state,
          nextProbeInMs: b.nextProbeTime === null ? null : Math.max(0, b.nextProbeTime - now),
          transitions: null,
        })),
        reload: reload,
        rulesVersion: reload ? reload.successes : null,
        system: systemRules && cpu !== undefined ? { cpuUsage: cpu, load1: load } : null,
      });
    }).catch((err) => setConnection("polling: " + err.message));
    poll();
    pollTimer = setInterval(poll, 1000);
  }
  function stopPolling() {
    if (pollTimer) clearInterval(pollTimer);
    pollTimer = null;
  }
  // Sums of one metric's samples by one label, from the Prometheus text format.
  function metricSums(text, name, label) {
    const out = {};
    for (const line of text.split("\n")) {
      if (!line.startsWith(name)) continue;
      const rest = line.slice(name.length);
      if (rest[0] !== "{" && rest[0] !== " ") continue;
      const value = Number(line.slice(line.lastIndexOf(" ") + 1));
      let key = "";
      if (label) {
        const m = rest.match(new RegExp(label + '="([^"]*)"'));
        if (!m) continue;
        key = m[1];
      }
      out[key] = (out[key] || 0) + value;
    }
    return out;
  }

  // ---- rendering --------------------------------------------------------------------------

  function queueRender() {
    if (renderQueued) return;
    renderQueued = true;
    requestAnimationFrame(() => { renderQueued = false; render(); });
  }
  function render() {
    if (!latest) return;
    $("updated").textContent = "updated " + clock(latest.t);
    $("resource-count").textContent = (latest.resourceCount || 0) + " resources" +
      (latest.overflow ? ", " + latest.overflow + " over the cap" : "");
    renderTotals();
    renderResources();
    renderBlocked();
    renderBreakers();
    renderReload();
    renderSystem();
  }

  function renderTotals() {
    const sum = [0, 0, 0, 0, 0, 0, 0];
    for (const row of latest.resources || []) for (let i = 1; i <= 6; i++) sum[i] += row[i] || 0;
    $("total-pass").textContent = fmt(sum[COLUMNS.pass]);
    $("total-block").textContent = fmt(sum[COLUMNS.block]);
    $("total-success").textContent = fmt(sum[COLUMNS.success]);
    $("total-error").textContent = fmt(sum[COLUMNS.error]);
    $("total-inflight").textContent = fmt(sum[COLUMNS.inflight], 0);
  }

  // The resources seen in the last 5 minutes matching the filter, busiest first.
  function rankedResources() {
    const filter = $("filter").value.trim().toLowerCase();
    const names = [];
    for (const [name, t] of totals) {
      if (!filter || name.toLowerCase().includes(filter)) names.push([name, t[0] + t[1]]);
    }
    names.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
    return names.map((n) => n[0]);
  }

  function renderResources() {
    const names = rankedResources();
    if (chosen === null && names.length) chooseResource(names[0]);
    const tbody = $("resources").tBodies[0];
    const rows = [];
    for (const name of names.slice(0, shownRows)) {
      const row = latestRow(name) || [name, 0, 0, 0, 0, null, 0];
      const t = totals.get(name) || [0, 0];
      const tr = el("tr");
      tr.dataset.resource = name;
      if (name === chosen) tr.className = "chosen";
      tr.tabIndex = 0;
      tr.appendChild(el("td", name));
      for (const c of ["pass", "block", "success", "error"]) tr.appendChild(el("td", fmt(row[COLUMNS[c]])));
      tr.appendChild(el("td", fmt(row[COLUMNS.rt])));
      tr.appendChild(el("td", fmt(row[COLUMNS.inflight], 0)));
      tr.appendChild(el("td", fmt(t[0], 0)));
      tr.appendChild(el("td", fmt(t[1], 0)));
      rows.push(tr);
    }
    tbody.replaceChildren(...rows);
    $("more").hidden = names.length <= shownRows;
    $("resource-note").textContent = names.length
      ? "Showing " + Math.min(names.length, shownRows) + " of " + names.length + " resources" +
        (totals.size !== names.length ? " matching the filter" : "") + "; charts for the top " +
        Math.min(names.length, CHARTS) + "."
      : (totals.size ? "No resource matches the filter." : "No traffic in the last 5 minutes.");
    renderCharts(names.slice(0, CHARTS));
  }

  function chooseResource(name) {
    chosen = name;
    $("origins-resource").textContent = name;
    loadOrigins();
    for (const tr of $("resources").tBodies[0].rows) {
      tr.classList.toggle("chosen", tr.dataset.resource === name);
    }
  }

  const visibility = "IntersectionObserver" in window ? new IntersectionObserver((entries) => {
    for (const e of entries) {
      const c = charts.get(e.target.dataset.resource);
      if (c) { c.visible = e.isIntersecting; if (c.visible) updateChart(c); }
    }
  }) : null;

  function renderCharts(names) {
    const box = $("charts");
    for (const [name, c] of charts) {
      if (!names.includes(name)) {
        if (visibility) visibility.unobserve(c.card);
        if (c.chart) c.chart.destroy();
        c.card.remove();
        charts.delete(name);
      }
    }
    names.forEach((name, i) => {
      let c = charts.get(name);
      if (!c) {
        const card = el("div", null, "chart-card");
        card.dataset.resource = name;
        card.appendChild(el("h3", name));
        const holder = el("div", null, "chart-box");
        const canvas = el("canvas");
        canvas.setAttribute("role", "img");
        canvas.setAttribute("aria-label", "pass, block, success and error per second and average RT of " + name);
        holder.appendChild(canvas);
        card.appendChild(holder);
        c = { name: name, card: card, canvas: canvas, chart: null, visible: !visibility };
        charts.set(name, c);
        if (visibility) visibility.observe(card);
      }
      if (box.children[i] !== c.card) box.insertBefore(c.card, box.children[i] || null);
      if (c.visible) updateChart(c);
    });
  }

  function seriesOf(name, column) {
    return history.map((h) => {
      const row = h.rows.get(name);
      return { x: h.t, y: row ? row[column] : 0 };
    });
  }

  function timeAxis() {
    return {
      type: "linear",
      ticks: { maxTicksLimit: 6, callback: (v) => new Date(v).toLocaleTimeString([], { hour12: false }) },
    };
  }

  function updateChart(c) {
    const datasets = SERIES.map((s) => ({
      label: s.label, data: seriesOf(c.name, COLUMNS[s.key]), borderColor: s.color,
      backgroundColor: s.color, borderDash: s.dash, borderWidth: 1.5, pointRadius: 0, yAxisID: "qps",
    }));
    datasets.push({
      label: "avg RT ms", data: seriesOf(c.name, COLUMNS.rt), borderColor: "#6b4fa0",
      backgroundColor: "#6b4fa0", borderDash: [1, 3], borderWidth: 1.5, pointRadius: 0, yAxisID: "rt",
    });
    if (!c.chart) {
      c.chart = new Chart(c.canvas, {
        type: "line",
        data: { datasets: datasets },
        options: {
          animation: false, responsive: true, maintainAspectRatio: false, parsing: false,
          normalized: true, interaction: { mode: "nearest", axis: "x", intersect: false },
          scales: {
            x: timeAxis(),
            qps: { type: "linear", position: "left", beginAtZero: true, title: { display: true, text: "per second" } },
            rt: { type: "linear", position: "right", beginAtZero: true, grid: { drawOnChartArea: false }, title: { display: true, text: "ms" } },
          },
          plugins: { legend: { labels: { boxWidth: 12 } } },
        },
      });
    } else {
      c.chart.data.datasets.forEach((d, i) => { d.data = datasets[i].data; });
      c.chart.update("none");
    }
    c.canvas.dataset.points = String(history.length);
  }

  function renderBlocked() {
    const last = history[history.length - 1];
    const sums = {};
    for (const h of history) {
      if (!h.blocked) continue;
      for (const r of REASONS) sums[r] = (sums[r] || 0) + (h.blocked[r] || 0);
    }
    const tbody = $("blocked").tBodies[0];
    tbody.replaceChildren(...REASONS.filter((r) => r !== "custom" || sums.custom).map((r) => {
      const tr = el("tr");
      tr.appendChild(el("td", r));
      tr.appendChild(el("td", last.blocked ? fmt(last.blocked[r] || 0, 0) : "–"));
      tr.appendChild(el("td", fmt(sums[r] || 0, 0)));
      return tr;
    }));
    const datasets = REASONS.filter((r) => r !== "custom" || sums.custom).map((r, i) => ({
      label: r, borderColor: ["#b3261e", "#8a5a00", "#6b4fa0", "#1d2330", "#3a5bd9", "#5b6475"][i],
      borderDash: [[], [6, 3], [2, 2], [8, 2, 2, 2], [1, 3], [4, 4]][i], borderWidth: 1.5, pointRadius: 0,
      data: history.map((h) => ({ x: h.t, y: h.blocked ? h.blocked[r] || 0 : 0 })),
    }));
    const canvas = $("blocked-chart");
    if (!blockedChart) {
      blockedChart = new Chart(canvas, {
        type: "line", data: { datasets: datasets },
        options: {
          animation: false, responsive: true, maintainAspectRatio: false, parsing: false,
          scales: { x: timeAxis(), y: { beginAtZero: true } },
          plugins: { legend: { labels: { boxWidth: 12 } } },
        },
      });
    } else {
      blockedChart.data.datasets = datasets;
      blockedChart.update("none");
    }
    canvas.dataset.points = String(history.length);
  }

  const STATE_MARK = { open: "■ open", half_open: "◐ half_open", closed: "○ closed" };
  function renderBreakers() {
    const breakers = latest.breakers || [];
    $("breakers-empty").hidden = breakers.length > 0;
    $("breakers").tBodies[0].replaceChildren(...breakers.map((b) => {
      const tr = el("tr");
      tr.dataset.state = b.state;
      tr.appendChild(el("td", b.resource));
      tr.appendChild(el("td", b.rule));
      tr.appendChild(el("td", STATE_MARK[b.state] || b.state, "state state-" + b.state));
      const probe = el("td", "–", "countdown");
      if (b.state === "open" && b.nextProbeInMs !== null) probe.dataset.deadline = String(receivedAt + b.nextProbeInMs);
      tr.appendChild(probe);
      tr.appendChild(el("td", b.transitions === null ? "–" :
        b.transitions.map((x) => x.from + "→" + x.to + " ×" + x.count).join(", ") || "none"));
      return tr;
    }));
    tickCountdowns();
  }
  function tickCountdowns() {
    const now = performance.now();
    for (const td of document.querySelectorAll("#breakers td.countdown[data-deadline]")) {
      const left = Math.max(0, Number(td.dataset.deadline) - now);
      td.textContent = left > 0 ? "probe in " + (left / 1000).toFixed(1) + " s" : "probe due";
    }
  }

  function renderReload() {
    const r = latest.reload;
    if (!r) {
      $("reload-result").textContent = "no rule file";
      return;
    }
    $("rule-file").textContent = r.file;
    const result = $("reload-result");
    result.textContent = r.ok ? "ok" : "failed";
    result.className = r.ok ? "" : "failed";
    $("reload-time").textContent = r.time ? new Date(r.time).toLocaleString([], { hour12: false }) : "–";
    $("reload-counts").textContent = r.successes + " loaded, " + r.failures + " failed";
    const error = $("reload-error");
    error.hidden = r.ok;
    error.textContent = r.ok ? "" : "The last good rules stay in force. Errors:\n" + (r.error || "");
  }

  let systemRules = false;
  function renderSystem() {
    const s = latest.system;
    $("system-section").hidden = !s;
    if (!s) return;
    $("system-cpu").textContent = s.cpuUsage === null || s.cpuUsage < 0 ? "–" : fmt(s.cpuUsage * 100) + " %";
    $("system-load").textContent = s.load1 === null || s.load1 < 0 ? "–" : fmt(s.load1, 2);
  }

  function loadRules() {
    getJson("/floodgate/rules").then((rules) => {
      systemRules = Array.isArray(rules.system) && rules.system.length > 0;
      $("rules").textContent = JSON.stringify(rules, null, 2);
    }).catch((err) => { $("rules").textContent = "unavailable: " + err.message; });
  }

  function loadOrigins() {
    if (chosen === null) return;
    const name = chosen;
    getJson("/floodgate/origins?resource=" + encodeURIComponent(name)).then((origins) => {
      if (name !== chosen) return;
      $("origins").tBodies[0].replaceChildren(...origins.map((o) => {
        const tr = el("tr");
        tr.appendChild(el("td", o.origin === "" ? "(none)" : o.origin));
        for (const k of ["passQps", "blockQps", "successQps", "exceptionQps", "avgRt"]) tr.appendChild(el("td", fmt(o[k])));
        tr.appendChild(el("td", fmt(o.concurrency, 0)));
        return tr;
      }));
    }).catch(() => {});
  }

  function treeList(nodes) {
    const ul = el("ul");
    for (const n of nodes) {
      const li = el("li");
      li.appendChild(el("span", n.resource));
      li.appendChild(el("span", " " + n.type + (n.passQps === undefined ? "" :
        " · pass " + fmt(n.passQps) + "/s · block " + fmt(n.blockQps) + "/s"), "kind"));
      if (n.children && n.children.length) li.appendChild(treeList(n.children));
      ul.appendChild(li);
    }
    return ul;
  }
  function loadTree() {
    getJson("/floodgate/tree").then((root) => {
      $("tree").replaceChildren(treeList([root]));
    }).catch(() => {});
  }

  // ---- wiring -----------------------------------------------------------------------------

  $("filter").addEventListener("input", () => { shownRows = PAGE; queueRender(); });
  $("more").addEventListener("click", () => { shownRows += PAGE; queueRender(); });
  const pick = (e) => {
    const tr = e.target.closest("tr[data-resource]");
    if (tr) chooseResource(tr.dataset.resource);
  };
  $("resources").addEventListener("click", pick);
  $("resources").addEventListener("keydown", (e) => { if (e.key === "Enter") pick(e); });

  Chart.defaults.font.size = 11;
  connect();
  loadTree();
  setInterval(loadTree, 5000);
  setInterval(loadOrigins, 2000);
  setInterval(tickCountdowns, 200);
})();
