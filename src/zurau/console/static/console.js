// Zurau console front end: a hash-routed single page over the JSON API under /api.
// Plain JavaScript, no dependencies. Every value from the server is inserted as text.
"use strict";

const main = document.getElementById("main");
const errorBox = document.getElementById("error");
let timers = [];
let info = {};
// {login, user, csrf_token} from /api/session: with login, every state-changing request carries
// the token in X-CSRF-Token and a 401 brings the login page back.
let session = { login: false, user: null, csrf_token: null };

// ---------------------------------------------------------------- helpers
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function showError(message) {
  errorBox.textContent = message;
  errorBox.hidden = false;
}

function clearError() {
  errorBox.hidden = true;
  errorBox.textContent = "";
}

class ApiError extends Error {
  constructor(status, message, kind) { super(message); this.status = status; this.kind = kind; }
}

async function api(method, path, body) {
  const opts = { method, headers: {}, credentials: "same-origin" };
  if (method !== "GET" && session.csrf_token) opts.headers["X-CSRF-Token"] = session.csrf_token;
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  let resp;
  try {
    resp = await fetch(path, opts);
  } catch (e) {
    throw new ApiError(0, "the console server cannot be reached: " + e.message);
  }
  let data = null;
  try { data = await resp.json(); } catch (e) { data = null; }
  if (!resp.ok) {
    const msg = data && data.error ? data.error : `HTTP ${resp.status}`;
    throw new ApiError(resp.status, msg, data && data.kind);
  }
  return data;
}

const get = (path) => api("GET", path);
const enc = encodeURIComponent;

function table(headers, rows, opts) {
  const o = opts || {};
  return h("table", { "data-testid": o.testid },
    h("thead", {}, h("tr", {}, headers.map((x) => h("th", { class: o.num && o.num.includes(x) ? "num" : null }, x)))),
    h("tbody", {}, rows));
}

function fmtBytes(n) {
  if (n === null || n === undefined || n < 0) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + " " + units[i];
}

function fmtTime(ms) {
  if (ms === null || ms === undefined || ms < 0) return "–";
  return new Date(ms).toISOString().replace("T", " ").replace("Z", "");
}

function card(label, value, cls, testid) {
  return h("div", { class: "card " + (cls || ""), "data-testid": testid }, h("div", { class: "n" }, value), h("div", { class: "muted" }, label));
}

// A feature the cluster does not serve (info.unsupported, from the brokers' ApiVersions): the
// page shows why in its place and never calls it.
function unsupported(feature) {
  return (info.unsupported || {})[feature] || null;
}

function notSupported(feature, message) {
  return h("p", { class: "unsupported", "data-testid": "unsupported", "data-feature": feature }, message || unsupported(feature));
}

function every(ms, fn) {
  timers.push(setInterval(fn, ms));
}

// A line chart of [t, value] points as SVG; opts.extra adds thinner lines [{name, points}] on the
// same axes, each a path with data-series and data-last, named in a legend.
function lineChart(points, opts) {
  const o = opts || {};
  const W = o.width || 640, H = o.height || 180, P = 36;
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("class", "chart");
  svg.setAttribute("width", W);
  svg.setAttribute("height", H);
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  if (o.testid) svg.setAttribute("data-testid", o.testid);
  const mk = (tag, attrs, text) => {
    const e = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    svg.append(e);
    return e;
  };
  mk("line", { class: "axis", x1: P, y1: H - P / 2, x2: W - 8, y2: H - P / 2 });
  mk("line", { class: "axis", x1: P, y1: 8, x2: P, y2: H - P / 2 });
  if (!points.length) {
    mk("text", { x: W / 2 - 60, y: H / 2 }, "no samples yet");
    return svg;
  }
  const extra = (o.extra || []).filter((sr) => sr.points.length);
  const all = points.concat(...extra.map((sr) => sr.points));
  const ts = all.map((p) => p[0]), vs = points.map((p) => p[1]);
  const t0 = Math.min(...ts), t1 = Math.max(...ts), vmax = Math.max(1, ...all.map((p) => p[1]));
  const x = (t) => P + (t1 === t0 ? (W - P - 8) : ((t - t0) / (t1 - t0)) * (W - P - 8));
  const y = (v) => (H - P / 2) - (v / vmax) * (H - P / 2 - 12);
  const d = points.map((p, i) => `${i ? "L" : "M"}${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" ");
  mk("path", { class: "line", d });
  extra.forEach((sr, i) => {
    const dd = sr.points.map((p, j) => `${j ? "L" : "M"}${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" ");
    mk("path", { class: `line series s${i % 6}`, d: dd, "data-series": sr.name, "data-last": String(sr.points[sr.points.length - 1][1]) });
    mk("text", { class: `legend s${i % 6}`, x: W - 200, y: 14 + 12 * i }, `${sr.name}: ${sr.points[sr.points.length - 1][1]}`);
  });
  mk("text", { x: 2, y: 14 }, String(Math.round(vmax * 100) / 100));
  mk("text", { x: 2, y: H - P / 2 }, "0");
  mk("text", { x: P, y: H - 4 }, fmtTime(t0).slice(11, 19));
  mk("text", { x: W - 70, y: H - 4 }, fmtTime(t1).slice(11, 19));
  svg.dataset.last = String(vs[vs.length - 1]);
  svg.dataset.points = String(points.length);
  return svg;
}

// ---------------------------------------------------------------- pages
async function overviewPage() {
  const o = await get("/api/overview");
  main.replaceChildren(
    h("h1", {}, "Cluster overview"),
    h("div", { class: "cards" },
      card("under-replicated partitions", o.under_replicated, o.under_replicated ? "bad" : "good", "under-replicated"),
      card("offline partitions", o.offline, o.offline ? "bad" : "good", "offline"),
      card("brokers", o.brokers.length, "", "brokers"),
      card("controller", o.controller, "", "controller"),
      card("topics", o.topics, "", "topic-count"),
      card("partitions", o.partitions, "", "partition-count"),
      card("disk used", o.disk_unsupported ? "not supported" : fmtBytes(o.disk_bytes), "", "disk")),
    h("p", { class: "muted" }, "Cluster id ", o.cluster_id || "–"),
    h("h2", {}, "Brokers"),
    table(["id", "host", "port", "rack", "role"], o.brokers.map((b) =>
      h("tr", {}, h("td", {}, b.id), h("td", {}, b.host), h("td", {}, b.port), h("td", {}, b.rack || "–"),
        h("td", {}, b.controller ? h("span", { class: "tag ok" }, "controller") : ""))), { testid: "broker-table" }),
    h("h2", {}, "Log directories"),
    o.disk_unsupported ? notSupported("disk_use", o.disk_unsupported) :
    table(["broker", "directory", "replicas", "size", "usable", "total", "error"], o.disk.map((d) =>
      h("tr", { class: d.error ? "bad" : null }, h("td", {}, d.broker), h("td", {}, d.path || "–"), h("td", { class: "num" }, d.replicas ?? "–"),
        h("td", { class: "num" }, fmtBytes(d.size_bytes)), h("td", { class: "num" }, fmtBytes(d.usable_bytes)),
        h("td", { class: "num" }, fmtBytes(d.total_bytes)), h("td", {}, d.error || ""))), { testid: "disk-table" }));
}

async function topicsPage(query) {
  const search = query.get("search") || "";
  const data = await get("/api/topics?search=" + enc(search));
  const input = h("input", { type: "search", name: "search", placeholder: "search topics", value: search, "data-testid": "topic-search" });
  const createForm = h("form", { class: "inline", "data-testid": "create-topic" },
    h("label", {}, "name", h("input", { name: "name", required: true })),
    h("label", {}, "partitions", h("input", { name: "partitions", type: "number", min: 1, value: 1 })),
    h("label", {}, "replication factor", h("input", { name: "replication_factor", type: "number", min: 1, value: 1 })),
    h("label", {}, "configs (name=value, one per line)", h("textarea", { name: "configs" })),
    h("button", { type: "submit" }, "Create topic"));
  createForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const f = new FormData(createForm);
    const configs = {};
    for (const line of String(f.get("configs") || "").split("\n")) {
      const t = line.trim();
      if (!t) continue;
      const i = t.indexOf("=");
      if (i < 1) { showError(`config line "${t}" is not name=value`); return; }
      configs[t.slice(0, i).trim()] = t.slice(i + 1).trim();
    }
    try {
      await api("POST", "/api/topics", {
        name: f.get("name"), partitions: Number(f.get("partitions")), replication_factor: Number(f.get("replication_factor")), configs,
      });
      location.hash = "#/topics/" + enc(String(f.get("name")));
    } catch (e) { showError(e.message); }
  });
  const searchForm = h("form", { class: "inline" }, input, h("button", { type: "submit" }, "Search"));
  searchForm.addEventListener("submit", (ev) => {
    ev.preventDefault();
    location.hash = "#/topics?search=" + enc(input.value);
  });
  main.replaceChildren(
    h("h1", {}, "Topics"),
    searchForm,
    table(["name", "partitions", "replication", "under-replicated", "offline", "messages"], data.topics.map((t) =>
      h("tr", { class: t.offline ? "bad" : t.under_replicated ? "warn" : null, "data-topic": t.name },
        h("td", {}, h("a", { href: "#/topics/" + enc(t.name) }, t.name), t.internal ? h("span", { class: "tag" }, " internal") : ""),
        h("td", { class: "num" }, t.partitions ?? "–"), h("td", { class: "num" }, t.replication_factor ?? "–"),
        h("td", { class: "num" }, t.under_replicated ?? "–"), h("td", { class: "num" }, t.offline ?? "–"),
        h("td", { class: "num" }, t.error ? t.error : t.messages))),
      { testid: "topic-table", num: ["partitions", "replication", "under-replicated", "offline", "messages"] }),
    h("p", { class: "muted" }, `${data.topics.length} topic(s)`),
    h("h2", {}, "Create a topic"), unsupported("create_topic") ? notSupported("create_topic") : createForm);
}

function configRow(topic, c) {
  const fixed = c.read_only || !!unsupported("edit_configs");
  const input = h("input", { value: c.value ?? "", name: c.name, "data-config": c.name, disabled: fixed });
  const save = h("button", { type: "button", class: "secondary", "data-save": c.name, disabled: fixed }, "Save");
  const reset = h("button", { type: "button", class: "secondary", "data-reset": c.name, disabled: fixed || !c.overridden }, "Reset to default");
  save.addEventListener("click", async () => {
    try {
      await api("PATCH", `/api/topics/${enc(topic)}/configs`, { set: { [c.name]: input.value } });
      await route();
      showNotice(`${c.name} set to ${input.value}`);
    } catch (e) { showError(e.message); }
  });
  reset.addEventListener("click", async () => {
    try {
      await api("PATCH", `/api/topics/${enc(topic)}/configs`, { delete: [c.name] });
      await route();
      showNotice(`${c.name} reset to its default`);
    } catch (e) { showError(e.message); }
  });
  return h("tr", { "data-config-row": c.name }, h("td", {}, c.name), h("td", {}, input),
    h("td", {}, c.overridden ? h("span", { class: "tag ok" }, c.source) : h("span", { class: "muted" }, c.source)),
    h("td", {}, save, " ", reset));
}

function showNotice(text) {
  const n = h("div", { class: "notice", "data-testid": "notice" }, text);
  main.prepend(n);
}

async function topicPage(name) {
  const t = await get("/api/topics/" + enc(name));
  // A tiered topic's remote tier and copy lag come from the broker metrics (--metrics-url) only.
  const tiers = t.remote_storage && info.metrics_url
    ? await get(`/api/topics/${enc(name)}/tiers`).catch((e) => ({ error: e.message }))
    : null;
  const del = h("button", { type: "button", class: "danger", "data-testid": "delete-topic" }, "Delete topic");
  del.addEventListener("click", async () => {
    if (del.dataset.armed !== "1") {
      del.dataset.armed = "1";
      del.textContent = `Really delete ${name}?`;
      return;
    }
    try {
      await api("DELETE", "/api/topics/" + enc(name));
      location.hash = "#/topics";
    } catch (e) { showError(e.message); }
  });
  const produce = unsupported("produce") ? notSupported("produce") : produceForm(name, t.partitions.length);
  let configs;
  if (t.configs === null) configs = notSupported("topic_configs", t.configs_unsupported);
  else if (!t.configs.length) configs = h("p", { class: "muted", "data-testid": "no-configs" }, "The broker reports no configs for this topic.");
  else configs = table(["name", "value", "source", ""], t.configs.map((c) => configRow(name, c)), { testid: "config-table" });
  main.replaceChildren(
    h("h1", {}, "Topic ", name),
    h("div", { class: "row" },
      unsupported("browse") ? notSupported("browse") :
        h("a", { href: `#/topics/${enc(name)}/messages`, "data-testid": "browse-link" }, "Browse messages"),
      unsupported("delete_topic") ? notSupported("delete_topic") : del),
    h("div", { class: "cards" },
      card("partitions", t.partitions.length), card("replication factor", t.replication_factor),
      t.remote_storage ? card("remote storage", "on", "", "remote-storage") : null,
      card("messages", t.messages), card("under-replicated", t.partitions.filter((p) => p.under_replicated).length, t.partitions.some((p) => p.under_replicated) ? "bad" : "good")),
    h("h2", {}, "Partitions"),
    ...partitionTable(t, tiers),
    h("h2", {}, "Produce a message"), produce,
    h("h2", {}, "Configs"), configs,
    t.configs && t.configs.length && unsupported("edit_configs") ? notSupported("edit_configs") : "");
}

// A tiered topic (remote.storage.enable) also shows where its local tier starts, the last offset
// in remote storage (-1: none yet) and the leader's local bytes; with a metrics URL (tiers: the
// answer of /api/topics/{t}/tiers) also the local segments, the remote bytes and segments and the
// copy lag of each partition whose leader is the scraped broker ("leader not scraped" otherwise).
const TIER_COLUMNS = [
  ["local_segments", "local segments", String],
  ["remote_size", "remote size", fmtBytes],
  ["remote_segments", "remote segments", String],
  ["copy_lag_bytes", "copy lag", fmtBytes],
  ["copy_lag_segments", "copy lag segments", String],
];

function partitionTable(t, tiers) {
  const tiered = !!t.remote_storage;
  const scraped = tiered && tiers && !tiers.error ? Object.fromEntries(tiers.partitions.map((x) => [x.partition, x])) : null;
  const offset = (n) => (n === null || n === undefined || n < 0 ? "–" : n);
  const headers = ["partition", "leader", "replicas", "ISR", "start offset"];
  if (tiered) headers.push("local start offset", "highest remote offset");
  headers.push("end offset", "messages");
  if (tiered) headers.push("local size");
  if (scraped) headers.push(...TIER_COLUMNS.map(([, label]) => label));
  const num = headers.filter((x) => !["replicas", "ISR"].includes(x));
  const tierCells = (p) => {
    const x = scraped[p.partition];
    if (!x || !x.scraped) {
      return h("td", { colspan: TIER_COLUMNS.length, class: "muted", "data-testid": "tier-not-scraped" }, "leader not scraped");
    }
    return TIER_COLUMNS.map(([field, , fmt]) =>
      h("td", { class: "num", "data-testid": "tier-" + field.replaceAll("_", "-") }, x[field] == null ? "–" : fmt(x[field])));
  };
  const rows = t.partitions.map((p) =>
    h("tr", { class: p.offline ? "bad" : p.under_replicated ? "warn" : null },
      h("td", { class: "num" }, p.partition), h("td", { class: "num" }, p.leader < 0 ? "none" : p.leader),
      h("td", {}, p.replicas.join(", ")), h("td", {}, p.isr.join(", ")),
      h("td", { class: "num" }, p.log_start_offset),
      tiered ? [h("td", { class: "num", "data-testid": "local-start" }, offset(p.local_log_start_offset)),
        h("td", { class: "num", "data-testid": "highest-remote" }, offset(p.highest_offset_in_remote))] : null,
      h("td", { class: "num" }, p.log_end_offset),
      h("td", { class: "num" }, p.messages ?? "–"),
      tiered ? h("td", { class: "num", "data-testid": "local-size" }, fmtBytes(p.local_size)) : null,
      scraped ? tierCells(p) : null));
  const out = [table(headers, rows, { testid: "partition-table", num })];
  if (tiered) {
    let source;
    if (!info.metrics_url) source = "The remote size and copy lag are broker metrics: start the console with --metrics-url to see them.";
    else if (tiers.error) source = `The remote tier's metrics are unavailable: ${tiers.error}`;
    else if (!tiers.remote_tier_exported) source = `The broker at ${tiers.metrics_url} exports no remote tier metrics.`;
    else {
      source = `Remote size, segments and copy lag are the metrics of the broker at ${tiers.metrics_url}` +
        (tiers.scraped_broker !== null ? ` (broker ${tiers.scraped_broker})` : "") +
        ", which has them only for the partitions it leads (\"leader not scraped\" for the others).";
    }
    out.push(h("p", { class: "muted", "data-testid": "tiered-note" },
      "Tiered topic: offsets from start offset up to local start offset are in remote storage only. " + source));
  }
  return out;
}

function produceForm(topic, partitions) {
  const form = h("form", { class: "inline", "data-testid": "produce-form" },
    h("label", {}, "partition", h("select", { name: "partition" }, h("option", { value: "" }, "by key"),
      Array.from({ length: partitions }, (_, i) => h("option", { value: i }, i)))),
    h("label", {}, "key", h("input", { name: "key" })),
    h("label", {}, "value", h("textarea", { name: "value" })),
    h("label", {}, "encoding", h("select", { name: "encoding" }, ["string", "json", "hex", "base64"].map((x) => h("option", { value: x }, x)))),
    h("label", {}, "headers (name=value, one per line)", h("textarea", { name: "headers" })),
    h("button", { type: "submit" }, "Produce"));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const f = new FormData(form);
    const headers = [];
    for (const line of String(f.get("headers") || "").split("\n")) {
      const t = line.trim();
      if (!t) continue;
      const i = t.indexOf("=");
      headers.push(i < 0 ? { key: t, value: null } : { key: t.slice(0, i), value: t.slice(i + 1) });
    }
    const key = String(f.get("key") || "");
    try {
      const r = await api("POST", `/api/topics/${enc(topic)}/messages`, {
        key: key === "" ? null : key, value: String(f.get("value") || ""), encoding: f.get("encoding"),
        key_encoding: "string", headers, partition: f.get("partition") === "" ? null : Number(f.get("partition")),
      });
      clearError();
      showNotice(`produced to partition ${r.partition} at offset ${r.offset}`);
    } catch (e) { showError(e.message); }
  });
  return form;
}

function showValue(d) {
  if (!d || d.data === null || d.data === undefined) return h("span", { class: "muted" }, "null");
  const text = typeof d.data === "string" ? d.data : JSON.stringify(d.data, null, 1);
  return h("div", {}, h("pre", {}, text),
    h("span", { class: "tag" }, d.encoding + (d.schema_id !== undefined ? ` #${d.schema_id}` : "")),
    d.error ? h("span", { class: "tag bad" }, d.error) : "");
}

async function messagesPage(name, query) {
  const t = await get("/api/topics/" + enc(name));
  const q = (k, dflt) => query.get(k) ?? dflt;
  const fmtSel = (nm) => h("select", { name: nm }, ["auto", "string", "json", "hex", "registry"].map((x) =>
    h("option", { value: x, selected: q(nm, "auto") === x }, x)));
  const form = h("form", { class: "inline", "data-testid": "browse-form" },
    h("label", {}, "partition", h("select", { name: "partition" }, h("option", { value: "" }, "all"),
      t.partitions.map((p) => h("option", { value: p.partition, selected: q("partition", "") === String(p.partition) }, p.partition)))),
    h("label", {}, "from", h("select", { name: "start" }, ["beginning", "end", "offset", "timestamp"].map((x) =>
      h("option", { value: x, selected: q("start", "beginning") === x }, x)))),
    h("label", {}, "offset", h("input", { name: "offset", type: "number", min: 0, value: q("offset", "") })),
    h("label", {}, "timestamp (ms or ISO 8601)", h("input", { name: "timestamp", value: q("timestamp", "") })),
    h("label", {}, "key as", fmtSel("key_format")),
    h("label", {}, "value as", fmtSel("value_format")),
    h("label", {}, "max results", h("input", { name: "limit", type: "number", min: 1, max: 500, value: q("limit", "50") })),
    h("label", {}, "max scanned", h("input", { name: "max_scan", type: "number", min: 1, value: q("max_scan", "100000") })),
    h("label", {}, "time budget (ms)", h("input", { name: "time_budget_ms", type: "number", min: 1, value: q("time_budget_ms", "10000") })),
    h("label", {}, "filter, e.g. value.op == \"c\" and not contains(key, \"heartbeat\")",
      h("input", { name: "filter", class: "wide", value: q("filter", ""), "data-testid": "filter-input" })),
    h("button", { type: "submit", "data-testid": "browse-button" }, "Search"));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const params = new URLSearchParams();
    for (const [k, v] of new FormData(form).entries()) if (String(v) !== "") params.set(k, String(v));
    const target = `#/topics/${enc(name)}/messages?${params}`;
    if (location.hash === target) route(); else location.hash = target;
  });
  const results = h("div", { "data-testid": "browse-results" });
  main.replaceChildren(h("h1", {}, "Messages in ", h("a", { href: "#/topics/" + enc(name) }, name)), form, results);
  if (unsupported("browse")) {
    form.hidden = true;
    results.append(notSupported("browse"));
    return;
  }
  if (!query.has("start")) {
    results.append(h("p", { class: "muted" }, "Choose where to start and press Search."));
    return;
  }
  const params = new URLSearchParams(query);
  results.append(h("p", { class: "muted" }, "Scanning…"));
  let r;
  try {
    r = await get(`/api/topics/${enc(name)}/messages?${params}`);
  } catch (e) {
    results.replaceChildren(h("p", { class: "muted", "data-testid": "browse-failed" }, "The search failed."));
    throw e;
  }
  const why = { end: "reached the end of the log", limit: "found the maximum number of results", max_scan: "scanned the maximum number of records", time_budget: "ran out of its time budget" }[r.stopped];
  results.replaceChildren(
    h("p", { class: "scanstats", "data-testid": "scan-stats", "data-scanned": r.scanned, "data-matched": r.matched, "data-stopped": r.stopped },
      `${r.matched} record(s) shown; scanned ${r.scanned} record(s) in ${r.elapsed_ms} ms; stopped because it ${why}.`,
      r.filter_errors ? ` ${r.filter_errors} record(s) could not be evaluated (${r.filter_first_error}).` : "",
      r.stopped !== "end" ? " Resume from: " + r.partitions.filter((p) => p.resume_at < p.log_end).map((p) => `p${p.partition}@${p.resume_at}`).join(", ") : ""),
    table(["partition", "offset", "timestamp", "key", "value", "headers"], r.records.map((m) =>
      h("tr", { "data-offset": m.offset, "data-partition": m.partition },
        h("td", { class: "num" }, m.partition), h("td", { class: "num" }, m.offset),
        h("td", {}, fmtTime(m.timestamp)), h("td", {}, showValue(m.key)), h("td", {}, showValue(m.value)),
        h("td", {}, m.headers.map((x) => h("div", {}, h("b", {}, x.key), "=", x.value === null ? "null" : x.value))))),
    { testid: "message-table" }));
}

// Consumer groups and share groups (KIP-932) in one list; a share group's line also has its
// member count and total lag (null, shown "–", while any partition's lag is unknown).
async function groupsPage() {
  if (unsupported("groups")) {
    main.replaceChildren(h("h1", {}, "Groups"), notSupported("groups"),
      unsupported("group") ? "" : groupLookupForm());
    return;
  }
  const data = await get("/api/groups");
  const share = (g) => g.type === "share";
  const shares = data.groups.filter(share).length;
  main.replaceChildren(h("h1", {}, "Groups"),
    table(["group", "type", "state", "protocol", "members", "total lag"], data.groups.map((g) =>
      h("tr", { "data-group": g.group, "data-type": g.type || "" },
        h("td", {}, h("a", { href: (share(g) ? "#/share-groups/" : "#/groups/") + enc(g.group) }, g.group)),
        h("td", {}, g.type || "–"), h("td", {}, g.state || "–"), h("td", {}, g.protocol_type || "–"),
        h("td", { class: "num", "data-members": g.members ?? "" }, share(g) ? g.members ?? "–" : ""),
        h("td", { class: "num", "data-lag": g.total_lag ?? "" }, share(g) ? g.total_lag ?? "–" : ""))),
    { testid: "group-table", num: ["members", "total lag"] }),
    h("p", { class: "muted" }, `${data.groups.length} group(s), ${shares} of them share group(s)`,
      shares ? "; members and lag are shown for share groups (a consumer group's are on its page)" : ""));
}

// Without ListGroups a group can still be looked up by name.
function groupLookupForm() {
  const form = h("form", { class: "inline", "data-testid": "group-lookup" },
    h("label", {}, "group id", h("input", { name: "group", required: true })), h("button", { type: "submit" }, "Show group"));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    location.hash = "#/groups/" + enc(String(new FormData(form).get("group")));
  });
  return form;
}

// The reset form of a group page: a dry-run preview and Apply (hidden when the cluster does not
// serve ``feature``), POSTed to ``path``; the plan is shown below it, and an applied reset
// reloads the page.
function resetForm(path, topics, feature, emptyMeans) {
  const out = h("div", { "data-testid": "reset-result" });
  const form = h("form", { class: "inline", "data-testid": "reset-form" },
    h("label", {}, `topics (comma-separated; empty: ${emptyMeans})`, h("input", { name: "topics", value: topics.join(",") })),
    h("label", {}, "to", h("select", { name: "mode" }, ["earliest", "latest", "offset", "timestamp"].map((x) => h("option", { value: x }, x)))),
    h("label", {}, "offset or timestamp", h("input", { name: "value" })),
    h("button", { type: "submit", name: "preview", "data-testid": "reset-preview" }, "Preview (dry run)"),
    h("button", { type: "button", class: "danger", "data-testid": "reset-apply", hidden: !!unsupported(feature) }, "Apply"));
  const doReset = async (dry) => {
    const f = new FormData(form);
    try {
      const r = await api("POST", path, {
        topics: String(f.get("topics") || ""), mode: f.get("mode"), value: String(f.get("value") || ""), dry_run: dry,
      });
      clearError();
      out.replaceChildren(h("p", {}, r.applied ? "Applied:" : "Plan (nothing changed yet):"),
        table(["topic", "partition", "current", "new", "clamped"], r.plan.map((p) =>
          h("tr", {}, h("td", {}, p.topic), h("td", { class: "num" }, p.partition), h("td", { class: "num" }, p.current ?? "–"),
            h("td", { class: "num" }, p.new), h("td", {}, p.clamped ? "yes" : ""))), { testid: "reset-plan", num: ["partition", "current", "new"] }));
      if (r.applied) setTimeout(route, 300);
    } catch (e) { showError(e.message); }
  };
  form.addEventListener("submit", (ev) => { ev.preventDefault(); doReset(true); });
  form.querySelector("[data-testid=reset-apply]").addEventListener("click", () => doReset(false));
  return [form, unsupported(feature) ? notSupported(feature) : "", out];
}

async function groupPage(group) {
  if (unsupported("group")) {
    main.replaceChildren(h("h1", {}, "Consumer group ", group), notSupported("group"));
    return;
  }
  const g = await get("/api/groups/" + enc(group));
  const chartBox = h("div", { "data-testid": "lag-chart-box" });
  const drawChart = async () => {
    try {
      const hist = await get(`/api/groups/${enc(group)}/lag-history`);
      // the total, and the ten partitions with the most lag now
      const latest = hist.points.length ? hist.points[hist.points.length - 1].partitions : {};
      const names = Object.keys(latest).sort((a, b) => (latest[b] || 0) - (latest[a] || 0)).slice(0, 10);
      const extra = names.map((n) => ({
        name: n, points: hist.points.filter((p) => p.partitions[n] !== undefined && p.partitions[n] !== null).map((p) => [p.t, p.partitions[n]]),
      }));
      chartBox.replaceChildren(lineChart(hist.points.map((p) => [p.t, p.total]), { testid: "lag-chart", extra }),
        h("p", { class: "muted" }, `total lag (thick) and lag per partition, sampled every ${hist.interval_ms} ms by the console (${hist.points.length} samples)`));
    } catch (e) { showError(e.message); }
  };
  const topics = [...new Set(g.offsets.map((r) => r.topic))];
  const reset = resetForm(`/api/groups/${enc(group)}/reset-offsets`, topics, "reset_offsets", "all committed");
  main.replaceChildren(
    h("h1", {}, "Consumer group ", group),
    h("div", { class: "cards" }, card("state", g.state, "", "group-state"), card("members", g.members.length),
      card("total lag", g.total_lag, g.total_lag ? "bad" : "good", "total-lag"), card("coordinator", g.coordinator.id)),
    h("h2", {}, "Lag over time"), chartBox,
    h("h2", {}, "Offsets and lag"),
    table(["topic", "partition", "committed", "log end", "lag", "member", "host"], g.offsets.map((r) =>
      h("tr", { "data-tp": `${r.topic}-${r.partition}` }, h("td", {}, r.topic), h("td", { class: "num" }, r.partition),
        h("td", { class: "num" }, r.committed ?? "–"), h("td", { class: "num" }, r.log_end ?? "–"),
        h("td", { class: "num", "data-lag": r.lag ?? "" }, r.lag ?? "–"), h("td", {}, r.member || "–"), h("td", {}, r.host || ""))),
    { testid: "lag-table", num: ["partition", "committed", "log end", "lag"] }),
    h("h2", {}, "Members"),
    table(["member", "client id", "host", "assignment"], g.members.map((m) =>
      h("tr", {}, h("td", {}, m.member_id), h("td", {}, m.client_id), h("td", {}, m.host),
        h("td", {}, m.assignment.map((a) => `${a.topic}-${a.partition}`).join(", ") || m.assignment_error || "–"))), { testid: "member-table" }),
    h("h2", {}, "Reset offsets"), ...reset);
  await drawChart();
  every(Math.max(500, info.lag_sample_interval_ms || 5000), drawChart);
}

// A share group (KIP-932): its members and, per share partition, the start offset (where the
// group's undelivered records begin), the lag and the members it is assigned to (several
// members may share a partition); its start offsets can be reset while it has no members.
async function shareGroupPage(group) {
  if (unsupported("share_groups")) {
    main.replaceChildren(h("h1", {}, "Share group ", group), notSupported("share_groups"));
    return;
  }
  const g = await get("/api/share-groups/" + enc(group));
  const topics = [...new Set(g.offsets.map((r) => r.topic))];
  const lagKnown = g.total_lag !== null && g.total_lag !== undefined;
  main.replaceChildren(
    h("h1", {}, "Share group ", group),
    h("div", { class: "cards" }, card("state", g.state, "", "group-state"), card("members", g.members.length, "", "member-count"),
      card("total lag", lagKnown ? g.total_lag : "–", lagKnown ? (g.total_lag ? "bad" : "good") : "", "total-lag"),
      card("coordinator", g.coordinator.id), card("group epoch", g.group_epoch)),
    h("h2", {}, "Share partitions"),
    table(["topic", "partition", "start offset", "lag", "members"], g.offsets.map((r) =>
      h("tr", { "data-tp": `${r.topic}-${r.partition}` }, h("td", {}, r.topic), h("td", { class: "num" }, r.partition),
        h("td", { class: "num", "data-start": r.start_offset ?? "" }, r.start_offset ?? "–"),
        h("td", { class: "num", "data-lag": r.lag ?? "" }, r.lag ?? "–"),
        h("td", {}, r.members.join(", ") || r.error || "–"))),
    { testid: "share-offset-table", num: ["partition", "start offset", "lag"] }),
    lagKnown ? "" : h("p", { class: "muted" }, "–: the broker does not know the lag (no share-partition state with a delivered count yet, or a broker before DescribeShareGroupOffsets v1)."),
    h("h2", {}, "Members"),
    table(["member", "client id", "host", "assignment"], g.members.map((m) =>
      h("tr", { "data-member": m.member_id }, h("td", {}, m.member_id), h("td", {}, m.client_id), h("td", {}, m.host),
        h("td", {}, m.assignment.map((a) => `${a.topic}-${a.partition}`).join(", ") || "–"))), { testid: "member-table" }),
    h("h2", {}, "Reset start offsets"),
    h("p", { class: "muted" }, "Only a share group without members can be reset; Preview works at any time."),
    ...resetForm(`/api/share-groups/${enc(group)}/reset-offsets`, topics, "reset_share_offsets", "all with a start offset"));
}

// The self-balancing cluster (GET /api/balancer, what `zurau balancer status` shows): per broker
// load and state, the moves in flight with their progress, whether a rebalance is under way; the
// dry-run plan (GET /api/balancer/plan, `zurau balancer plan`) on demand; and the actions, each
// a POST: start a rebalance, remove a broker (its first click previews the plan of the removal,
// the second removes), cancel (two clicks). The status refreshes every 3 s.
const BROKER_STATES = {
  removing: "being removed: the controller moves its replicas and leaderships away",
  offline: "not in the cluster's metadata (fenced or shut down) yet holding replicas",
  unreachable: "in the cluster, but its log directories did not answer",
  serving: "serving",
};

function brokerState(b) {
  return b.removing ? "removing" : !b.live ? "offline" : !b.reachable ? "unreachable" : "serving";
}

async function balancerPage() {
  main.replaceChildren(h("h1", {}, "Balancer"));
  if (unsupported("balancer")) { main.append(notSupported("balancer")); return; }
  const canAct = !unsupported("balancer_actions");
  const statusBox = h("div", { "data-testid": "balancer-status" });
  const planBox = h("div", { "data-testid": "balancer-plan" });
  let armed = null;  // the button that asks for confirmation: a broker id (its Remove) or "cancel"

  const act = async (path, body, done) => {
    try {
      const r = await api("POST", path, body);
      clearError();
      armed = null;
      planBox.replaceChildren();  // a plan shown before the action is out of date
      await refresh();
      showNotice(done(r));
    } catch (e) { showError(e.message); }
  };
  const showPlan = async (remove) => {
    planBox.replaceChildren(h("p", { class: "muted" }, "Planning…"));
    let p;
    try {
      p = await get("/api/balancer/plan" + (remove === undefined ? "" : "?remove=" + enc(remove)));
    } catch (e) {
      planBox.replaceChildren(e.kind === "unsupported" ? notSupported("balancer_plan", e.message) : "");
      if (e.kind !== "unsupported") showError(e.message);
      return;
    }
    const title = remove === undefined ? "Plan (dry run: nothing is changed)" : `Plan if broker ${remove} is removed (dry run)`;
    const empty = !p.reassignments.length && !p.leadership_moves.length;
    planBox.replaceChildren(h("h2", {}, title),
      h("p", { "data-testid": "plan-summary", "data-moves": p.reassignments.length, "data-bytes": p.bytes_to_move },
        empty ? "The cluster is balanced: the plan proposes no move." :
          `${p.reassignments.length} replica move(s), ${p.leadership_moves.length} leadership move(s); ${fmtBytes(p.bytes_to_move)} to copy` +
          (p.estimated_seconds ? `, about ${Math.round(p.estimated_seconds)} s at the replication throttle` : "") + "."),
      p.reassignments.length ? table(["topic", "partition", "from", "to", "size", "why"], p.reassignments.map((m) =>
        h("tr", { "data-topic": m.topic, "data-partition": m.partition },
          h("td", {}, m.topic), h("td", { class: "num" }, m.partition), h("td", {}, m.from.join(", ")), h("td", {}, m.to.join(", ")),
          h("td", { class: "num" }, fmtBytes(m.bytes)), h("td", {}, m.reasons.join("; ")))),
      { testid: "plan-moves", num: ["partition", "size"] }) : "",
      p.leadership_moves.length ? table(["topic", "partition", "leader from", "leader to", "why"], p.leadership_moves.map((m) =>
        h("tr", {}, h("td", {}, m.topic), h("td", { class: "num" }, m.partition), h("td", { class: "num" }, m.from),
          h("td", { class: "num" }, m.to), h("td", {}, m.reasons.join("; ")))), { testid: "plan-leaders" }) : "",
      p.unresolved.map((u) => h("p", { class: "bad", "data-testid": "plan-unresolved" }, "Unresolved: ", u)));
  };
  const removeButton = (b) => {
    if (!canAct || b.removing) return "";
    const really = armed === b.id;
    return h("button", { type: "button", class: really ? "danger" : "secondary", "data-remove": b.id, onclick: async () => {
      if (!really) {
        armed = b.id;
        render(last);
        await showPlan(b.id);
        return;
      }
      await act("/api/balancer/remove-broker", { broker_id: b.id }, () =>
        `Broker ${b.id} is being removed: the controller moves its replicas and leaderships to the other brokers.`);
    } }, really ? `Really remove broker ${b.id}?` : "Remove");
  };
  let last = null;
  const render = (s) => {
    last = s;
    const removing = s.brokers.filter((b) => b.removing).map((b) => b.id);
    const underWay = s.rebalancing || removing.length > 0 || s.moves.length > 0;
    const cancel = h("button", { type: "button", class: "danger", "data-testid": "balancer-cancel", disabled: !underWay },
      armed === "cancel" ? "Really cancel the rebalance, every removal and the moves in flight?" : "Cancel");
    cancel.addEventListener("click", async () => {
      if (armed !== "cancel") {
        armed = "cancel";
        render(last);
        return;
      }
      await act("/api/balancer/cancel", {}, (r) => `Cancelled: ${r.reassignments_cancelled} move(s)` +
        (r.removals_ended.length ? `; removal of broker(s) ${r.removals_ended.join(", ")} ended.` : "."));
    });
    const rebalance = h("button", { type: "button", "data-testid": "balancer-rebalance", onclick: () =>
      act("/api/balancer/rebalance", {}, () => "Rebalance requested: the active controller moves replicas until its plan proposes nothing.") },
    "Start a rebalance");
    statusBox.replaceChildren(
      h("div", { class: "cards" },
        card("balancer enabled", s.enabled === null ? "not reported" : s.enabled, s.enabled === "true" ? "good" : "", "balancer-enabled"),
        card("rebalance under way", s.rebalancing ? "yes" : "no", "", "balancer-rebalancing"),
        card("moves in flight", s.moves.length, "", "balancer-move-count"),
        card("brokers being removed", removing.length ? removing.join(", ") : "none", removing.length ? "bad" : "", "balancer-removing")),
      s.enabled === null ? h("p", { class: "muted" }, "The brokers report no confluent.balancer.enable: this cluster may have no self-balancing.") : "",
      s.enabled === "false" && (s.rebalancing || removing.length) ? h("p", { class: "bad", "data-testid": "balancer-disabled" },
        "The balancer is disabled (confluent.balancer.enable=false): the controller starts the rebalance and removals asked for once it is enabled.") : "",
      canAct ? h("div", { class: "row" }, rebalance, cancel) : notSupported("balancer_actions"),
      h("h2", {}, "Brokers"),
      table(["broker", "rack", "replicas", "leaders", "disk used", "capacity", "used", "state", ""], s.brokers.map((b) =>
        h("tr", { "data-broker": b.id, class: b.removing ? "warn" : !b.reachable ? "bad" : null },
          h("td", { class: "num" }, b.id), h("td", {}, b.rack || "–"), h("td", { class: "num" }, b.replicas),
          h("td", { class: "num" }, b.leaders), h("td", { class: "num" }, fmtBytes(b.disk_bytes)), h("td", { class: "num" }, fmtBytes(b.capacity_bytes)),
          h("td", { class: "num" }, b.capacity_bytes > 0 ? (100 * b.disk_bytes / b.capacity_bytes).toFixed(1) + "%" : "–"),
          h("td", { "data-state": brokerState(b), title: BROKER_STATES[brokerState(b)] },
            h("span", { class: "tag " + (brokerState(b) === "serving" ? "ok" : "bad") }, brokerState(b))),
          h("td", {}, removeButton(b)))),
      { testid: "balancer-brokers", num: ["broker", "replicas", "leaders", "disk used", "capacity", "used"] }),
      h("h2", {}, "Moves in flight"),
      s.moves.length ? table(["topic", "partition", "adding", "removing", "copied", "progress"], s.moves.map((m) => {
        const pct = m.total_bytes > 0 ? Math.min(100, Math.floor(100 * m.copied_bytes / m.total_bytes)) : 100;
        return h("tr", { "data-topic": m.topic, "data-partition": m.partition },
          h("td", {}, m.topic), h("td", { class: "num" }, m.partition), h("td", {}, m.adding.join(", ")), h("td", {}, m.removing.join(", ")),
          h("td", { class: "num" }, `${fmtBytes(m.copied_bytes)} of ${fmtBytes(m.total_bytes)}`),
          h("td", {}, h("progress", { max: 100, value: pct }), ` ${pct}%`));
      }), { testid: "balancer-moves", num: ["partition", "copied"] }) : h("p", { class: "muted", "data-testid": "no-moves" }, "No replica is moving."));
  };
  const refresh = async () => render(await get("/api/balancer"));
  await refresh();
  const planButton = h("button", { type: "button", class: "secondary", "data-testid": "balancer-plan-button", onclick: () => showPlan() }, "Show the plan (dry run)");
  main.append(statusBox, h("h2", {}, "Dry-run plan"),
    last.plan_available ? h("div", { class: "row" }, planButton) :
      h("p", { class: "unsupported", "data-feature": "balancer_plan" }, "This console was started without the balancer's planner: run it with zurau console to see plans."),
    planBox);
  every(3000, async () => {
    try { await refresh(); } catch (e) { showError(e.message); }
  });
}

async function schemasPage() {
  const data = await get("/api/schemas/subjects");
  main.replaceChildren(h("h1", {}, "Schema registry subjects"),
    table(["subject", "versions", "latest"], data.subjects.map((s) =>
      h("tr", { "data-subject": s.subject }, h("td", {}, h("a", { href: "#/schemas/" + enc(s.subject) }, s.subject)),
        h("td", {}, s.versions.join(", ")), h("td", { class: "num" }, s.latest ?? "–"))), { testid: "subject-table" }),
    h("p", { class: "muted" }, `${data.subjects.length} subject(s) at ${info.registry_url}`));
}

async function subjectPage(subject, query) {
  const s = await get("/api/schemas/subjects/" + enc(subject));
  const versions = s.versions;
  const from = query.get("from") || String(versions.length > 1 ? versions[versions.length - 2] : versions[0]);
  const to = query.get("to") || String(versions[versions.length - 1]);
  const sel = (nm, cur) => h("select", { name: nm }, versions.map((v) => h("option", { value: v, selected: String(v) === cur }, v)));
  const form = h("form", { class: "inline", "data-testid": "diff-form" },
    h("label", {}, "from version", sel("from", from)), h("label", {}, "to version", sel("to", to)),
    h("button", { type: "submit" }, "Diff"));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const f = new FormData(form);
    location.hash = `#/schemas/${enc(subject)}?from=${enc(f.get("from"))}&to=${enc(f.get("to"))}`;
  });
  const d = await get(`/api/schemas/subjects/${enc(subject)}/diff?from=${enc(from)}&to=${enc(to)}`);
  const diffBox = h("div", { class: "diff", "data-testid": "schema-diff", "data-added": d.added, "data-removed": d.removed },
    d.diff.length ? d.diff.map((ln) => h("span", {
      class: ln.startsWith("@@") ? "hunk" : ln.startsWith("+") && !ln.startsWith("+++") ? "add" : ln.startsWith("-") && !ln.startsWith("---") ? "del" : null,
    }, ln + "\n")) : "the two versions are the same");
  main.replaceChildren(h("h1", {}, "Subject ", subject),
    h("p", {}, `versions ${versions.join(", ")}; compatibility ${s.compatibility || "–"}; latest id ${s.latest ? s.latest.id : "–"} (${s.latest ? s.latest.schema_type : ""})`),
    h("h2", {}, "Diff"), form, diffBox,
    h("h2", {}, `Version ${d.to.version}`), h("div", { class: "diff", "data-testid": "schema-text" }, d.to.schema));
}

async function connectPage() {
  const data = await get("/api/connect/connectors");
  const restart = async (name, task) => {
    try {
      if (task === undefined) await api("POST", `/api/connect/connectors/${enc(name)}/restart?include_tasks=true&only_failed=false`);
      else await api("POST", `/api/connect/connectors/${enc(name)}/tasks/${task}/restart`);
      await route();
      showNotice(task === undefined ? `restarted ${name}` : `restarted task ${task} of ${name}`);
    } catch (e) { showError(e.message); }
  };
  main.replaceChildren(h("h1", {}, "Kafka Connect connectors"),
    table(["connector", "type", "state", "tasks", ""], data.connectors.map((c) =>
      h("tr", { class: c.state === "FAILED" || c.failed_tasks ? "bad" : null, "data-connector": c.name },
        h("td", {}, c.name, h("div", { class: "muted" }, c.class || "")), h("td", {}, c.type || "–"),
        h("td", {}, h("span", { class: "tag " + (c.state === "RUNNING" ? "ok" : "bad") }, c.state || "–")),
        h("td", {}, c.tasks.map((t) => h("div", {}, `#${t.id} ${t.state} `,
          h("button", { type: "button", class: "secondary", onclick: () => restart(c.name, t.id) }, "restart task")))),
        h("td", {}, h("button", { type: "button", "data-restart": c.name, onclick: () => restart(c.name) }, "Restart")))),
    { testid: "connector-table" }),
    h("p", { class: "muted" }, `${data.connectors.length} connector(s) at ${info.connect_url}`));
}

async function restProxyPage() {
  const p = await get("/api/rest-proxy");
  const state = !p.up ? "down" : p.auth_required ? "up (asks for credentials)" : "up";
  main.replaceChildren(h("h1", {}, "Kafka REST proxy"),
    h("div", { class: "cards" },
      card("status", state, p.up ? "good" : "bad", "rest-proxy-status"),
      card("latency", p.latency_ms === null ? "–" : `${p.latency_ms} ms`, "", "rest-proxy-latency")),
    p.error ? h("p", { class: p.up ? "muted" : "bad", "data-testid": "rest-proxy-error" }, p.error) : "",
    h("h2", {}, "Clusters"),
    table(["cluster id", "this console's cluster", "URL"], p.clusters.map((c) =>
      h("tr", { "data-cluster": c.cluster_id }, h("td", {}, c.cluster_id || "–"),
        h("td", {}, p.same_cluster === null ? "–" : h("span", { class: "tag " + (p.same_cluster ? "ok" : "bad") }, p.same_cluster ? "yes" : "no")),
        h("td", {}, c.self || "–"))), { testid: "rest-proxy-clusters" }),
    h("p", { class: "muted" }, `REST proxy at ${p.url}`));
}

// Live charts from the broker's Prometheus endpoint: counters as a rate per second (the sum over
// labels, difference of two polls over their time apart), gauges as their value.
const FEATURED_METRICS = [
  ["kafka_server_brokertopicmetrics_messagesin", "messages in per second"],
  ["kafka_server_brokertopicmetrics_bytesin", "bytes in per second"],
  ["kafka_server_brokertopicmetrics_bytesout", "bytes out per second"],
  ["kafka_server_brokertopicmetrics_remotecopybytes", "bytes copied to remote storage per second"],
  ["kafka_server_brokertopicmetrics_remotefetchbytes", "bytes read from remote storage per second"],
  ["kafka_consumergroup_lag", "consumer group lag (all groups)"],
];

function metricTotal(snap, name) {
  const f = snap.families.find((x) => x.name === name);
  if (!f) return null;
  return f.samples.filter((s) => !s.name.endsWith("_created")).reduce((a, s) => a + (s.value || 0), 0);
}

async function metricsPage() {
  let prev = await get("/api/metrics");
  const types = Object.fromEntries(prev.families.map((f) => [f.name, f.type]));
  const names = prev.families.filter((f) => f.type === "counter" || f.type === "gauge").map((f) => f.name);
  const select = h("select", { "data-testid": "metric-select" }, names.map((n) => h("option", { value: n }, n)));
  const featured = FEATURED_METRICS.filter(([n]) => types[n]);
  const boxes = Object.fromEntries(featured.map(([n]) => [n, h("div", { "data-metric": n })]));
  const chosenBox = h("div", { "data-testid": "metric-chosen" });
  const series = {};
  const valueOf = (snap, name) => {
    const now = metricTotal(snap, name), before = metricTotal(prev, name);
    if (now === null) return null;
    if (types[name] !== "counter") return now;
    return Math.max(0, (now - (before || 0)) / Math.max(0.001, (snap.t - prev.t) / 1000));
  };
  const redraw = () => {
    for (const [n, label] of featured) {
      boxes[n].replaceChildren(h("h2", {}, label), lineChart(series[n] || [], { testid: "metric-chart-" + n }));
    }
    const n = select.value;
    chosenBox.replaceChildren(lineChart(series[n] || [], { testid: "metric-chart" }),
      h("p", { class: "muted" }, types[n] === "counter" ? "rate per second (sum over labels)" : "value (sum over labels)"));
  };
  const poll = async () => {
    try {
      const snap = await get("/api/metrics");
      for (const n of new Set([...featured.map(([x]) => x), select.value])) {
        const v = valueOf(snap, n);
        if (v !== null) (series[n] = series[n] || []).push([snap.t, v]);
      }
      prev = snap;
      redraw();
    } catch (e) { showError(e.message); }
  };
  select.addEventListener("change", redraw);
  main.replaceChildren(h("h1", {}, "Broker metrics"), h("p", { class: "muted" }, `from ${info.metrics_url}, polled every 2 s`),
    ...featured.map(([n]) => boxes[n]), h("h2", {}, "Any series"), h("label", {}, "series", select), chosenBox);
  redraw();
  every(2000, poll);
}

// The clients that push their metrics (KIP-714) to the --metrics-url broker: one row each with its
// headline numbers, and every series it pushed under it.
const CLIENT_HEADLINES = [
  ["record_send_rate", "records sent/s"], ["records_consumed_rate", "records consumed/s"],
  ["record_error_rate", "record errors/s"], ["request_latency_avg_ms", "request latency ms (avg)"],
  ["record_queue_time_avg_ms", "queue time ms (avg)"], ["fetch_latency_avg_ms", "fetch latency ms (avg)"],
  ["records_lag_max", "lag (max)"], ["assigned_partitions", "assigned partitions"],
];

function fmtNum(v) {
  if (v === null || v === undefined) return "–";
  return Number.isInteger(v) ? String(v) : v.toFixed(3);
}

async function clientsPage() {
  const show = async () => {
    const d = await get("/api/clients");
    const rows = d.clients.map((c) => h("tr", { "data-client": c.client_instance_id },
      h("td", {}, c.client_id), h("td", {}, [c.software_name, c.software_version].filter(Boolean).join(" ") || "–"),
      h("td", {}, c.source_address || "–"), h("td", {}, fmtTime(c.last_push_ms)),
      h("td", { class: "num" }, c.push_interval_ms === null ? "–" : c.push_interval_ms + " ms"),
      ...CLIENT_HEADLINES.map(([k]) => h("td", { class: "num" }, fmtNum(c.main[k])))));
    const details = d.clients.map((c) => h("details", { "data-testid": "client-series" },
      h("summary", {}, `${c.client_id} (${c.client_instance_id}): ${c.metrics.length} series`),
      table(["series", "labels", "value"], c.metrics.map((m) => h("tr", {}, h("td", {}, m.name),
        h("td", {}, Object.entries(m.labels).map(([k, v]) => `${k}=${v}`).join(", ")),
        h("td", { class: "num" }, fmtNum(m.value)))), { num: ["value"] })));
    main.replaceChildren(h("h1", {}, "Clients"),
      h("p", { class: "muted" }, `Metrics the clients push (KIP-714) to the broker at ${d.metrics_url}, refreshed every 5 s.` +
        " A client pushes only what a client metrics subscription asks for (zurau client-metrics)."),
      d.clients.length
        ? table(["client id", "software", "address", "last push", "interval", ...CLIENT_HEADLINES.map(([, l]) => l)], rows,
          { testid: "clients-table", num: ["interval", ...CLIENT_HEADLINES.map(([, l]) => l)] })
        : h("p", { "data-testid": "no-clients" }, "No client pushes its metrics to this broker."),
      ...details);
  };
  await show();
  every(5000, () => show().catch((e) => showError(e.message)));
}

// ---------------------------------------------------------------- login
function showUser() {
  document.getElementById("user").hidden = !(session.login && session.user);
  document.getElementById("user-name").textContent = session.user ? "user " + session.user : "";
}

function loginPage(message) {
  for (const t of timers) clearInterval(t);
  timers = [];
  clearError();
  session.user = null;
  session.csrf_token = null;
  showUser();
  document.getElementById("nav").hidden = true;
  const failure = h("p", { class: "bad", "data-testid": "login-error", role: "alert", hidden: !message }, message || "");
  const form = h("form", { class: "login", "data-testid": "login-form" },
    h("label", {}, "user name", h("input", { name: "username", autocomplete: "username", required: true })),
    h("label", {}, "password", h("input", { name: "password", type: "password", autocomplete: "current-password" })),
    h("button", { type: "submit", "data-testid": "login-button" }, "Log in"));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const f = new FormData(form);
    const button = form.querySelector("button");
    button.disabled = true;
    try {
      session = await api("POST", "/api/login", { username: String(f.get("username")), password: String(f.get("password")) });
      await start();
    } catch (e) {
      failure.textContent = e.message;
      failure.hidden = false;
      button.disabled = false;
    }
  });
  main.replaceChildren(h("h1", {}, "Log in"),
    h("p", { class: "muted" }, "Log in with your user name and password on the Kafka cluster:" +
      " you see and may do what the cluster's ACLs allow that user."), form, failure);
  document.body.dataset.loaded = "login";
}

async function logout() {
  try { await api("POST", "/api/logout"); } catch (e) { /* the session is gone either way */ }
  loginPage("You have logged out.");
}

// ---------------------------------------------------------------- routing
async function route() {
  if (session.login && !session.user) { loginPage(); return; }
  for (const t of timers) clearInterval(t);
  timers = [];
  clearError();
  const raw = location.hash.replace(/^#/, "") || "/";
  const [path, qs] = raw.split("?");
  const query = new URLSearchParams(qs || "");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const section = parts[0] || "overview";
  const nav = section === "share-groups" ? "groups" : section;
  for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("active", a.dataset.nav === nav);
  try {
    if (section === "overview") await overviewPage();
    else if (section === "topics" && parts.length === 1) await topicsPage(query);
    else if (section === "topics" && parts.length === 2) await topicPage(parts[1]);
    else if (section === "topics" && parts[2] === "messages") await messagesPage(parts[1], query);
    else if (section === "groups" && parts.length === 1) await groupsPage();
    else if (section === "groups") await groupPage(parts[1]);
    else if (section === "share-groups" && parts.length === 1) location.hash = "#/groups";
    else if (section === "share-groups") await shareGroupPage(parts[1]);
    else if (section === "schemas" && parts.length === 1) await schemasPage();
    else if (section === "schemas") await subjectPage(parts[1], query);
    else if (section === "connect") await connectPage();
    else if (section === "rest-proxy") await restProxyPage();
    else if (section === "metrics") await metricsPage();
    else if (section === "clients") await clientsPage();
    else if (section === "balancer") await balancerPage();
    else main.replaceChildren(h("h1", {}, "No such page"), h("p", {}, h("a", { href: "#/" }, "Back to the overview")));
  } catch (e) {
    if (e.status === 401 && session.login) { loginPage("Your session has ended: log in again."); return; }
    if (!(main.querySelector("h1"))) main.replaceChildren(h("h1", {}, "Cannot show this page"));
    if (e.kind === "unsupported") main.append(notSupported("", e.message));
    showError(e.message);
  }
  document.body.dataset.loaded = raw;
}

// Loads what the pages need (after a login, with login) and shows the current page.
async function start() {
  showUser();
  document.getElementById("nav").hidden = false;
  try {
    info = await get("/api/info");
    document.getElementById("cluster").textContent = "cluster " + info.bootstrap_servers;
    for (const [nav, key] of [["schemas", "registry_url"], ["connect", "connect_url"], ["rest-proxy", "rest_proxy_url"], ["metrics", "metrics_url"], ["clients", "metrics_url"]]) {
      document.querySelector(`[data-nav=${nav}]`).hidden = !info[key];
    }
  } catch (e) {
    if (e.status === 401 && session.login) { loginPage("Your session has ended: log in again."); return; }
    showError(e.message);
  }
  await route();
}

async function boot() {
  try {
    session = await get("/api/session");
  } catch (e) { showError(e.message); }
  document.getElementById("logout").addEventListener("click", logout);
  window.addEventListener("hashchange", route);
  if (session.login && !session.user) loginPage();
  else await start();
}

boot();
