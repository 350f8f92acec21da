// pylog console: one page, hash routes, JSON from /api/, charts by the vendored uPlot.
"use strict";

const page = document.getElementById("page");
let features = {};
let refreshTimer = null;
let charts = [];

function esc(v) {
  if (v === null || v === undefined) return "";
  return String(v).replace(/[&<>"']/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
}
function enc(s) { return encodeURIComponent(s); }
// thousands separators without Intl (toLocaleString costs ~a microsecond a call: 10,000 rows feel it)
function num(n) {
  if (n === null || n === undefined || n === "") return "";
  const s = String(n);
  return /^-?\d{4,}$/.test(s) ? s.replace(/\B(?=(\d{3})+(?!\d))/g, ",") : s;
}
function bytes(n) {
  if (n === null || n === undefined) return "";
  const u = ["B", "KiB", "MiB", "GiB", "TiB"]; let i = 0; n = Number(n);
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + " " + u[i];
}
function time(ms) { return ms === null || ms === undefined || ms < 0 ? "" : new Date(ms).toISOString().replace("T", " ").replace("Z", ""); }
function tag(s) { return `<span class="tag ${esc(s)}">${esc(s)}</span>`; }

async function api(path, opts) {
  const r = await fetch("/api" + path, opts);
  const body = await r.json().catch(() => ({error: r.statusText}));
  if (!r.ok) { const e = new Error(body.error || r.statusText); e.status = r.status; throw e; }
  return body;
}
function send(method, path, body) {
  return api(path, {method, headers: {"Content-Type": "application/json"}, body: JSON.stringify(body || {})});
}
function flash(msg, isError) {
  const d = document.createElement("div");
  d.textContent = msg; if (isError) d.className = "error";
  document.getElementById("flash").appendChild(d);
  setTimeout(() => d.remove(), 6000);
}

// table(columns, rows): columns are [title, fn(row) -> html, "num"?]; one string, one innerHTML
function table(cols, rows, id) {
  let h = `<table${id ? ` id="${id}"` : ""}><thead><tr>`;
  for (const c of cols) h += `<th${c[2] ? ` class="${c[2]}"` : ""}>${esc(c[0])}</th>`;
  h += "</tr></thead><tbody>";
  const parts = [];
  for (const r of rows) {
    let tr = "<tr>";
    for (const c of cols) tr += `<td${c[2] ? ` class="${c[2]}"` : ""}>${c[1](r)}</td>`;
    parts.push(tr + "</tr>");
  }
  return h + parts.join("") + "</tbody></table>";
}
// a long table a page at a time: rows [from, from + PAGE) and links to the others (?rows=N)
const PAGE = 500;
function pagedTable(cols, rows, id, params, base) {
  const from = Math.max(0, +(params.get("rows") || 0));
  const link = n => { const p = new URLSearchParams(params); p.set("rows", n); return `${base}?${p}`; };
  let nav = "";
  if (rows.length > PAGE) {
    nav = `<p class="muted" id="${id}-pages">rows ${num(from + 1)} to ${num(Math.min(rows.length, from + PAGE))} of ${num(rows.length)}`
      + (from > 0 ? ` · <a href="${link(Math.max(0, from - PAGE))}">previous</a>` : "")
      + (from + PAGE < rows.length ? ` · <a id="${id}-next" href="${link(from + PAGE)}">next</a>` : "") + "</p>";
  }
  return nav + table(cols, rows.slice(from, from + PAGE), id);
}
function cards(items) {
  return `<div class="cards">${items.map(([l, n]) => `<div class="card"><div class="n">${n}</div><div class="l">${esc(l)}</div></div>`).join("")}</div>`;
}
function chart(el, title, xs, series, width) {
  if (!window.uPlot || !xs.length) { el.innerHTML = `<div class="muted">${esc(title)}: no samples yet</div>`; return; }
  const colors = ["#2f6fdb", "#b4532a", "#2a9d5b", "#8a4fd1"];
  const opts = {title, width: width || 560, height: 200, scales: {x: {time: true}},
    series: [{}].concat(series.map((s, i) => ({label: s[0], stroke: colors[i % colors.length], width: 2})))};
  charts.push(new uPlot(opts, [xs].concat(series.map(s => s[1])), el));
}

function setPage(name, html) {
  charts.forEach(c => c.destroy()); charts = [];
  page.innerHTML = html;
  page.dataset.page = name;
  document.querySelectorAll("#nav a").forEach(a => a.classList.toggle("active", a.dataset.nav === name.split("-")[0]));
}
function ready(name) {
  const start = window.routeStart;
  window.lastRenderMs = performance.now() - start;  // answer fetched and tables in the DOM
  window.lastPaintMs = null;
  // and drawn: the frame after the one that laid the page out
  requestAnimationFrame(() => requestAnimationFrame(() => { window.lastPaintMs = performance.now() - start; }));
  page.dataset.ready = name;
}
function writeForm(html) { return features.writes ? html : ""; }
function onSubmit(id, fn) {
  const f = document.getElementById(id);
  if (f) f.addEventListener("submit", async ev => {
    ev.preventDefault();
    try { await fn(new FormData(f)); } catch (e) { flash(e.message, true); showError(e); }
  });
}
function showError(e) {
  let el = document.getElementById("error");
  if (!el) { el = document.createElement("p"); el.id = "error"; el.className = "error"; page.prepend(el); }
  el.textContent = e.message;
}

// ------------------------------------------------------------------ pages
const pages = {};

pages.overview = async () => {
  const o = await api("/overview");
  features = o.features;
  const mode = document.getElementById("mode");
  mode.textContent = features.writes ? "writes allowed" : "read-only";
  mode.className = features.writes ? "writes" : "";
  let h = `<h1>Cluster ${esc(o.cluster_id || "")}</h1>` + cards([["brokers", o.brokers.length], ["topics", o.topics],
    ["partitions", num(o.partitions)], ["offline partitions", o.offline_partitions],
    ["under-replicated", o.under_replicated_partitions], ["controller", o.controller]]);
  h += "<h2>Brokers</h2>" + table([["node", b => esc(b.node_id) + (b.controller ? " " + tag("controller") : "")],
    ["host", b => esc(b.host)], ["port", b => esc(b.port), "num"], ["rack", b => esc(b.rack)]], o.brokers, "brokers");
  if (o.broker) {
    const s = o.broker.status || {};
    h += `<h2>Broker ${esc(s.node_id)} health</h2>` + cards([["ready", s.ready ? "yes" : "no"], ["uptime s", num(s.uptime_s)],
      ["partitions", num(s.partitions)], ["groups", num(s.groups)], ["messages in", num((s.totals || {}).messages_in)]]);
    h += (s.log_dirs || []).length ? "<h2>Log dirs</h2>" + table([["dir", d => esc(d.path || d.dir)],
      ["online", d => d.online ? "yes" : tag("error")]], s.log_dirs) : "";
    h += `<h2>Over time</h2><div id="c-msgs" class="chart"></div><div id="c-bytes" class="chart"></div><div id="c-conn" class="chart"></div>`;
  } else {
    h += `<p class="muted">Metrics over time are shown when the console runs in pylog's broker (or is given its metrics listener).</p>`;
  }
  setPage("overview", h);
  if (o.broker) {
    const s = o.broker.series;
    chart(document.getElementById("c-msgs"), "messages in /s", s.t, [["messages in", s.messages_in], ["requests", s.requests]]);
    chart(document.getElementById("c-bytes"), "bytes /s", s.t, [["in", s.bytes_in], ["out", s.bytes_out]]);
    chart(document.getElementById("c-conn"), "connections", s.t, [["connections", s.connections]]);
  }
  ready("overview");
};

pages.topics = async () => {
  const o = await api("/topics");
  let h = `<h1>Topics</h1>` + writeForm(`<form id="create" class="inline"><label>name<input name="name" required></label>
    <label>partitions<input name="partitions" type="number" value="1" min="1"></label>
    <label>replication<input name="rf" type="number" value="1" min="1"></label>
    <label>configs (k=v, comma)<input name="configs" placeholder="cleanup.policy=compact"></label><button>Create topic</button></form>`);
  h += table([["name", t => `<a href="#/topic/${enc(t.name)}">${esc(t.name)}</a>` + (t.internal ? " " + tag("internal") : "")],
    ["partitions", t => num(t.partitions), "num"], ["replication", t => t.replication_factor, "num"],
    ["records", t => num(t.records), "num"], ["size", t => bytes(t.size), "num"],
    ["", t => `<a href="#/messages/${enc(t.name)}">messages</a>`]], o.topics, "topics");
  setPage("topics", h);
  onSubmit("create", async fd => {
    const configs = {};
    (fd.get("configs") || "").split(",").filter(x => x.trim()).forEach(kv => { const [k, v] = kv.split("="); configs[k.trim()] = (v || "").trim(); });
    await send("POST", "/topics", {name: fd.get("name"), partitions: +fd.get("partitions"), replication_factor: +fd.get("rf"), configs});
    flash("created topic " + fd.get("name")); route();
  });
  ready("topics");
};

pages.topic = async (name, q) => {
  const params = new URLSearchParams(q);
  const t = await api("/topics/" + enc(name));
  let h = `<h1>Topic ${esc(t.name)}</h1><p class="muted">id ${esc(t.topic_id)} · <a href="#/messages/${enc(name)}">browse messages</a></p>`;
  h += "<h2>Partitions</h2>" + pagedTable([["partition", p => p.partition, "num"], ["leader", p => p.leader, "num"],
    ["replicas", p => esc(p.replicas.join(","))], ["isr", p => esc(p.isr.join(","))],
    ["start offset", p => num(p.start_offset), "num"], ["end offset", p => num(p.end_offset), "num"],
    ["records", p => num(Math.max(0, p.end_offset - p.start_offset)), "num"], ["size", p => bytes(p.size), "num"]],
    t.partitions, "partitions", params, `#/topic/${enc(name)}`);
  h += "<h2>Configs</h2>" + writeForm(`<form id="alter" class="inline"><label>config<input name="key" required></label>
    <label>value (empty: back to default)<input name="value"></label><button>Alter</button></form>`);
  h += table([["name", c => esc(c.name)], ["value", c => c.sensitive ? "(sensitive)" : esc(c.value), "val"],
    ["source", c => esc(c.source)]], t.configs, "configs");
  h += writeForm(`<h2>Delete</h2><button class="danger" id="delete">Delete topic ${esc(name)}</button>`);
  setPage("topic", h);
  onSubmit("alter", async fd => {
    const k = fd.get("key"), v = fd.get("value");
    await send("POST", `/topics/${enc(name)}/configs`, v ? {set: {[k]: v}} : {delete: [k]});
    flash(`altered ${k}`); route();
  });
  const del = document.getElementById("delete");
  if (del) del.onclick = async () => {
    if (!confirm(`Delete topic ${name}?`)) return;
    try { await send("DELETE", "/topics/" + enc(name)); flash("deleted " + name); location.hash = "#/topics"; }
    catch (e) { flash(e.message, true); }
  };
  ready("topic");
};

pages.messages = async (name, q) => {
  const params = new URLSearchParams(q);
  const t = await api("/topics/" + enc(name));
  const p = params.get("partition") || "0", start = params.get("start") || "end", fmt = params.get("format") || "auto";
  const page = await api(`/topics/${enc(name)}/messages?` + params.toString());
  const opt = (v, cur, label) => `<option value="${v}"${v === cur ? " selected" : ""}>${label || v}</option>`;
  let h = `<h1>Messages of <a href="#/topic/${enc(name)}">${esc(name)}</a></h1>
  <form id="browse" class="inline">
    <label>partition<select name="partition">${t.partitions.map(x => opt(String(x.partition), p)).join("")}</select></label>
    <label>from<select name="start">${["end", "offset", "time", "beginning"].map(v => opt(v, start)).join("")}</select></label>
    <label>offset<input name="offset" type="number" value="${esc(params.get("offset") || "")}"></label>
    <label>time (ISO or ms)<input name="time" value="${esc(params.get("time") || "")}"></label>
    <label>limit<input name="limit" type="number" value="${esc(params.get("limit") || "50")}" min="1" max="500"></label>
    <label>key<input name="key" value="${esc(params.get("key") || "")}"></label>
    <label>search<input name="search" value="${esc(params.get("search") || "")}"></label>
    <label>format<select name="format">${["auto", "registry", "json", "text", "hex"].map(v => opt(v, fmt)).join("")}</select></label>
    <button>Show</button></form>
  <p class="muted" id="range">offsets ${num(page.start_offset)} to ${num(page.end_offset)} · showing from ${num(page.from)} · next ${num(page.next)} · scanned ${num(page.scanned)}
   ${page.next < page.end_offset ? `· <a id="next" href="#/messages/${enc(name)}?${nextParams(params, page.next)}">next page</a>` : ""}</p>`;
  h += table([["offset", r => num(r.offset), "num"], ["timestamp", r => esc(time(r.timestamp))],
    ["key", r => esc(r.key), "val"], ["value", r => esc(r.value) + ` <span class="tag">${esc(r.value_as)}</span>`, "val"],
    ["headers", r => r.headers.map(([k, v]) => `${esc(k)}=${esc(v)}`).join("<br>"), "val"]], page.records, "records");
  h += writeForm(`<h2>Produce a record</h2><form id="produce" class="inline">
    <label>partition<input name="partition" type="number" placeholder="any"></label><label>key<input name="key"></label>
    <label>value<textarea name="value" rows="2" cols="40"></textarea></label>
    <label>headers (k=v, comma)<input name="headers"></label><button>Produce</button></form>`);
  setPage("messages", h);
  onSubmit("browse", async fd => {
    const n = new URLSearchParams();
    for (const [k, v] of fd.entries()) if (v !== "" && k !== "time") n.set(k, v);
    const tv = fd.get("time");
    if (tv) { n.set("time", tv); n.set("timestamp", /^\d+$/.test(tv) ? tv : String(Date.parse(tv))); }
    location.hash = `#/messages/${enc(name)}?` + n.toString();
  });
  onSubmit("produce", async fd => {
    const headers = (fd.get("headers") || "").split(",").filter(x => x.trim()).map(kv => { const i = kv.indexOf("="); return [kv.slice(0, i).trim(), kv.slice(i + 1)]; });
    const r = await send("POST", `/topics/${enc(name)}/messages`, {key: fd.get("key"), value: fd.get("value"), partition: fd.get("partition"), headers});
    flash(`produced to ${r.topic}-${r.partition} at offset ${r.offset}`);
    location.hash = `#/messages/${enc(name)}?partition=${r.partition}&start=end&format=${fmt}&t=${Date.now()}`;
  });
  ready("messages");
};
function nextParams(params, next) { const n = new URLSearchParams(params); n.set("start", "offset"); n.set("offset", next); return n.toString(); }

pages.groups = async () => {
  const o = await api("/groups");
  const link = g => g.type === "share" ? `#/share/${enc(g.group_id)}` : `#/group/${enc(g.group_id)}`;
  setPage("groups", `<h1>Groups</h1>` + table([["group", g => `<a href="${link(g)}">${esc(g.group_id)}</a>`],
    ["type", g => tag(g.type)], ["state", g => tag(g.state)], ["protocol type", g => esc(g.protocol_type)]], o.groups, "groups"));
  ready("groups");
};

pages.group = async (id, q) => {
  const params = new URLSearchParams(q);
  const g = await api("/groups/" + enc(id));
  let h = `<h1>Group ${esc(id)}</h1>` + cards([["type", esc(g.type)], ["state", esc(g.state)], ["members", g.members.length],
    ["partitions", num(g.partitions.length)], ["total lag", `<span id="total-lag">${num(g.total_lag)}</span>`]]);
  h += `<div id="c-lag" class="chart"></div>`;
  h += "<h2>Members</h2>" + table([["member", m => esc(m.member_id)], ["client", m => esc(m.client_id)], ["host", m => esc(m.host)],
    ["instance", m => esc(m.instance_id)], ["partitions", m => m.assignment, "num"]], g.members, "members");
  h += writeForm(`<h2>Reset offsets</h2><form id="reset" class="inline"><label>to<select name="to"><option>earliest</option>
    <option>latest</option><option>offset</option><option>timestamp</option></select></label><label>value<input name="value"></label>
    <label>topic (all: empty)<input name="topic"></label><button>Reset</button></form>`);
  // the most lagging partitions first
  const byLag = g.partitions.length > PAGE ? g.partitions.slice().sort((a, b) => (b.lag || 0) - (a.lag || 0)) : g.partitions;
  h += "<h2>Lag per partition</h2>" + pagedTable([["topic", r => esc(r.topic)], ["partition", r => r.partition, "num"],
    ["committed", r => num(r.committed), "num"], ["end offset", r => num(r.end_offset), "num"], ["lag", r => num(r.lag), "num"],
    ["member", r => esc(r.member)]], byLag, "lag", params, `#/group/${enc(id)}`);
  setPage("group", h);
  chart(document.getElementById("c-lag"), "total lag", g.history.map(p => p[0]), [["lag", g.history.map(p => p[1])]]);
  onSubmit("reset", async fd => {
    await send("POST", `/groups/${enc(id)}/reset`, {to: fd.get("to"), value: fd.get("value") || null, topic: fd.get("topic")});
    flash("offsets reset"); route();
  });
  ready("group");
  autoRefresh(5000);
};

pages.share = async (id) => {
  const g = await api("/share-groups/" + enc(id));
  let h = `<h1>Share group ${esc(id)}</h1>` + cards([["state", esc(g.state)], ["members", g.members.length],
    ["group epoch", g.group_epoch], ["assignor", esc(g.assignor)]]);
  h += "<h2>Members</h2>" + table([["member", m => esc(m.member_id)], ["client", m => esc(m.client_id)],
    ["host", m => esc(m.host)], ["epoch", m => m.member_epoch, "num"], ["partitions", m => m.assignment, "num"]], g.members, "members");
  h += "<h2>Share-partitions</h2>" + table([["topic", p => esc(p.topic)], ["partition", p => p.partition, "num"],
    ["start offset", p => num(p.start_offset), "num"], ["lag", p => num(p.lag), "num"]], g.partitions, "share-partitions");
  if (g.in_flight === null) {
    h += `<p class="muted">In-flight records are shown when the broker is pylog's (Kafka exposes a share-partition's start offset and lag only).</p>`;
  } else {
    h += "<h2>In-flight records</h2>";
    const rows = [];
    for (const sp of g.in_flight) for (const r of sp.records) rows.push(Object.assign({topic: sp.topic, partition: sp.partition}, r));
    h += table([["topic", r => esc(r.topic)], ["partition", r => r.partition, "num"], ["offset", r => num(r.offset), "num"],
      ["state", r => tag(r.state)], ["holder", r => esc(r.member)], ["delivery count", r => r.delivery_count, "num"],
      ["lock expires", r => esc(time(r.lock_expiry_ms))]], rows, "in-flight");
  }
  setPage("share", h);
  ready("share");
  autoRefresh(5000);
};

pages.transactions = async (_, q) => {
  const params = new URLSearchParams(q);
  const hanging = params.get("hanging");  // find-hanging asks every partition's leader: only when asked
  const o = await api("/transactions" + (hanging ? "?hanging_minutes=" + enc(hanging) : ""));
  let h = `<h1>Transactions</h1>` + table([["transactional id", t => esc(t.transactional_id)], ["state", t => tag(t.state)],
    ["producer", t => `${t.producer_id}/${esc(t.producer_epoch)}`], ["coordinator", t => t.coordinator, "num"],
    ["started", t => esc(time(t.start_time_ms))], ["running ms", t => num(t.duration_ms), "num"],
    ["partitions", t => esc((t.partitions || []).join(", "))]], o.transactions, "transactions");
  h += `<h2>Hanging transactions${o.hanging ? ` (open longer than ${num(o.hanging_after_ms / 60000)} min, their coordinator gone)` : ""}</h2>
    <form id="hang" class="inline"><label>open longer than (minutes)<input name="hanging" value="${esc(hanging || "15")}"></label><button>Find hanging</button></form>`;
  if (o.hanging) h += table([["partition", x => `${esc(x.topic)}-${x.partition}`], ["producer", x => `${x.producer_id}/${x.producer_epoch}`],
    ["start offset", x => num(x.start_offset), "num"], ["last write", x => esc(time(x.last_timestamp))],
    ["", (x) => features.writes ? `<button class="danger abort" data-x='${esc(JSON.stringify(x))}'>Abort</button>` : ""]], o.hanging, "hanging");
  setPage("transactions", h);
  onSubmit("hang", async fd => { location.hash = "#/transactions?hanging=" + enc(fd.get("hanging")); });
  document.querySelectorAll("button.abort").forEach(b => b.onclick = async () => {
    try { await send("POST", "/transactions/abort", JSON.parse(b.dataset.x)); flash("aborted"); route(); }
    catch (e) { flash(e.message, true); }
  });
  ready("transactions");
};

pages.security = async () => {
  const o = await api("/security");
  let h = `<h1>ACLs</h1>` + (o.acls_error ? `<p class="muted">${esc(o.acls_error)}</p>` : "") +
    table([["resource", a => `${esc(a.resource_type)} ${esc(a.resource_name)}`], ["pattern", a => esc(a.pattern_type)],
      ["principal", a => esc(a.principal)], ["host", a => esc(a.host)], ["operation", a => esc(a.operation)],
      ["permission", a => tag(a.permission)]], o.acls, "acls");
  h += `<h2>SCRAM users</h2>` + (o.users_error ? `<p class="muted">${esc(o.users_error)}</p>` : "") +
    table([["user", u => esc(u.user)], ["credentials", u => u.credentials.map(c => `${esc(c.mechanism)} (${c.iterations})`).join(", ")]], o.users, "users");
  h += `<h2>Client quotas</h2>` + (o.quotas_error ? `<p class="muted">${esc(o.quotas_error)}</p>` : "") +
    table([["entity", q => q.entity.map(e => `${esc(e.type)}=${esc(e.name === null ? "<default>" : e.name)}`).join(", ")],
      ["values", q => Object.entries(q.values).map(([k, v]) => `${esc(k)}=${esc(v)}`).join(", ")]], o.quotas, "quotas");
  setPage("security", h);
  ready("security");
};

pages.registry = async () => {
  if (!features.registry) { setPage("registry", `<h1>Schema registry</h1><p class="muted">No schema registry: start the console with --schema-registry URL.</p>`); ready("registry"); return; }
  const o = await api("/registry/subjects");
  setPage("registry", `<h1>Schema registry subjects</h1>` + table([["subject", s => `<a href="#/subject/${enc(s.subject)}">${esc(s.subject)}</a>`],
    ["versions", s => esc(s.versions.join(", "))], ["latest", s => s.latest, "num"]], o.subjects, "subjects"));
  ready("registry");
};

pages.subject = async (name, q) => {
  const params = new URLSearchParams(q);
  const s = await api(`/registry/subjects/${enc(name)}?` + params.toString());
  const opt = (cur) => s.versions.map(v => `<option${v === cur ? " selected" : ""}>${v}</option>`).join("");
  let h = `<h1>Subject ${esc(name)}</h1><p class="muted">compatibility ${esc(s.compatibility)}</p>
    <form id="pick" class="inline"><label>left<select name="left">${opt(s.left.version)}</select></label>
    <label>right<select name="right">${opt(s.right.version)}</select></label><button>Compare</button></form>
    <div class="sides"><div><h2>version ${s.left.version} (id ${s.left.id}, ${esc(s.left.type)})</h2><pre id="left">${esc(s.left.schema)}</pre></div>
    <div><h2>version ${s.right.version} (id ${s.right.id}, ${esc(s.right.type)})</h2><pre id="right">${esc(s.right.schema)}</pre></div></div>
    <h2>Diff</h2><pre id="diff">${s.diff.map(l => l.startsWith("+") && !l.startsWith("+++") ? `<span class="add">${esc(l)}</span>`
      : l.startsWith("-") && !l.startsWith("---") ? `<span class="del">${esc(l)}</span>` : esc(l) + "\n").join("") || "(same)"}</pre>
    <h2>Compatibility check</h2><form id="check" class="inline"><label>schema<textarea name="schema" rows="6" cols="70">${esc(s.right.schema)}</textarea></label>
    <label>type<select name="type"><option>AVRO</option><option>JSON</option><option>PROTOBUF</option></select></label>
    <button>Check against latest</button></form><p id="verdict"></p>`;
  setPage("subject", h);
  onSubmit("pick", async fd => { location.hash = `#/subject/${enc(name)}?left=${fd.get("left")}&right=${fd.get("right")}`; });
  onSubmit("check", async fd => {
    const r = await send("POST", `/registry/subjects/${enc(name)}/check`, {schema: fd.get("schema"), schemaType: fd.get("type")});
    const v = document.getElementById("verdict");
    v.textContent = (r.is_compatible ? "compatible" : "NOT compatible") + (r.messages.length ? ": " + r.messages.join("; ") : "");
    v.className = r.is_compatible ? "" : "error"; v.dataset.compatible = String(r.is_compatible);
  });
  ready("subject");
};

pages.logdir = async (name, q) => {
  if (!features.log_dirs) { setPage("logdir", `<h1>Log dir</h1><p class="muted">No log dir: start the console with --log-dir DIR, or from the broker.</p>`); ready("logdir"); return; }
  const params = new URLSearchParams(q);
  // verify reads every byte: the whole dir is verified when asked, one partition on its own page
  const start = +(params.get("start") || 0), match = params.get("match") || "";
  const [o, v] = await Promise.all([api(`/logdirs?start=${start}&match=${enc(match)}`),
    params.get("verify") ? api("/logdirs/verify") : {reports: []}]);
  const verdict = {}; v.reports.forEach(r => verdict[r.name] = r);
  const more = new URLSearchParams(params); more.set("start", start + o.partitions.length);
  let h = `<h1>Log dir</h1><form id="find" class="inline"><label>partition name contains<input name="match" value="${esc(match)}"></label><button>Show</button></form>
    <p class="muted">partitions ${num(o.total ? start + 1 : 0)} to ${num(start + o.partitions.length)} of ${num(o.total)}
    ${start + o.partitions.length < o.total ? `· <a id="next" href="#/logdir?${more}">next</a>` : ""}
    ${params.get("verify") ? "" : `· <a id="verify-all" href="#/logdir?verify=1">verify every partition</a>`}</p>`;
  h += table([["partition", p => `<a href="#/logdir-part/${enc(p.name)}">${esc(p.name)}</a>`],
    ["dir", p => esc(p.dir)], ["segments", p => p.segments, "num"], ["size", p => bytes(p.size), "num"],
    ["verify", p => verdict[p.name] ? tag(verdict[p.name].verdict) : ""],
    ["problems", p => ((verdict[p.name] || {}).problems || []).map(x => `${esc(x.kind)}: ${esc(x.message)}`).join("<br>")]],
    o.partitions, "partitions");
  setPage("logdir", h);
  onSubmit("find", async fd => { location.hash = "#/logdir?match=" + enc(fd.get("match")); });
  ready("logdir");
};

pages["logdir-part"] = async (name) => {
  const [s, v] = await Promise.all([api("/logdirs/" + enc(name)), api("/logdirs/verify?name=" + enc(name))]);
  const r = v.reports[0];
  let h = `<h1>${esc(name)}</h1>` + cards([["verdict", tag(r.verdict)], ["batches", num(r.batches)], ["records", num(r.records)],
    ["log start", num(r.log_start_offset)], ["log end", num(r.log_end_offset)]]);
  h += r.problems.length ? "<h2>Problems</h2>" + table([["kind", x => esc(x.kind)], ["file", x => esc(x.file)], ["message", x => esc(x.message)]], r.problems, "problems") : "";
  h += "<h2>Segments</h2>" + table([["segment", x => `<a href="#/logdir-seg/${enc(name)}/${enc(x.file)}">${esc(x.file)}</a>`],
    ["base offset", x => num(x.base_offset), "num"], ["size", x => bytes(x.size), "num"], [".index", x => bytes(x.index), "num"],
    [".timeindex", x => bytes(x.timeindex), "num"], [".txnindex", x => bytes(x.txnindex), "num"]], s.segments, "segments");
  h += `<p class="muted">other files: ${esc(s.other_files.join(", "))}</p>`;
  setPage("logdir-part", h);
  ready("logdir-part");
};

pages["logdir-seg"] = async (name, q, seg) => {
  const params = new URLSearchParams(q);
  const b = await api(`/logdirs/${enc(name)}/${enc(seg)}?position=${enc(params.get("position") || "0")}`);
  let h = `<h1><a href="#/logdir-part/${enc(name)}">${esc(name)}</a> / ${esc(seg)}</h1>`;
  h += b.damage.length ? `<p class="error">${b.damage.map(d => esc(`${d.kind} at ${d.position}: ${d.message}`)).join("<br>")}</p>` : "";
  h += table([["baseOffset", x => num(x.baseOffset ?? x.offset), "num"], ["lastOffset", x => num(x.lastOffset), "num"],
    ["count", x => x.count, "num"], ["producerId", x => x.producerId, "num"], ["producerEpoch", x => x.producerEpoch, "num"],
    ["baseSequence", x => x.baseSequence, "num"], ["partitionLeaderEpoch", x => x.partitionLeaderEpoch, "num"],
    ["isTransactional", x => String(x.isTransactional)], ["isControl", x => String(x.isControl)],
    ["position", x => num(x.position), "num"], ["timestampType", x => esc(x.timestampType)], ["maxTimestamp", x => esc(time(x.maxTimestamp))],
    ["size", x => x.size, "num"], ["compresscodec", x => esc(x.compresscodec)], ["crc", x => x.crc, "num"],
    ["isvalid", x => String(x.isvalid)]], b.batches, "batches");
  if (b.next_position !== null) h += `<p><a id="next" href="#/logdir-seg/${enc(name)}/${enc(seg)}?position=${b.next_position}">next batches</a></p>`;
  setPage("logdir-seg", h);
  ready("logdir-seg");
};

// ------------------------------------------------------------------ routing
function autoRefresh(ms) {
  const hash = location.hash;
  refreshTimer = setTimeout(() => { if (location.hash === hash && !document.activeElement.closest("form")) route(true); else if (location.hash === hash) autoRefresh(ms); }, ms);
}

async function route(quiet) {
  clearTimeout(refreshTimer);
  window.routeStart = performance.now();
  const hash = location.hash.replace(/^#\/?/, "");
  const [path, q] = hash.split("?");
  const parts = path.split("/").map(decodeURIComponent);
  const name = parts[0] || "overview";
  const fn = pages[{topic: "topic", group: "group", share: "share"}[name] || name] || pages.overview;
  if (!quiet) page.dataset.ready = "";
  try {
    if (!Object.keys(features).length && name !== "overview") {
      const o = await api("/overview"); features = o.features;
      const mode = document.getElementById("mode");
      mode.textContent = features.writes ? "writes allowed" : "read-only"; mode.className = features.writes ? "writes" : "";
    }
    await fn(parts[1], q || "", parts[2]);
  } catch (e) {
    setPage(name, `<h1>${esc(name)}</h1>`);
    showError(e);
    ready(name);
  }
}
window.addEventListener("hashchange", () => route());
route();
