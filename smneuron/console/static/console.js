// smneuron console: each view reads the console's JSON API (the SDK calls the CLI makes) and draws it; no library.
"use strict";
const csrf = document.querySelector('meta[name="csrf"]').content;
const main = document.getElementById("main");
let overview = null;
let stream = null;

function esc(v) {
  return String(v === null || v === undefined ? "-" : v).replace(/[&<>"']/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
}

async function get(path) {
  const r = await fetch(path, {credentials: "same-origin"});
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

async function post(path, data) {
  const r = await fetch(path, {method: "POST", credentials: "same-origin",
    headers: {"Content-Type": "application/json", "X-Smneuron-CSRF": csrf}, body: JSON.stringify(data)});
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

function table(headers, rows, id) {
  const head = headers.map(h => `<th>${esc(h)}</th>`).join("");
  const body = rows.map(r => `<tr>${r.map(c => `<td>${c}</td>`).join("")}</tr>`).join("");
  return `<table${id ? ` id="${id}"` : ""}><tr>${head}</tr>${body}</table>`;
}

async function listView() {
  const rows = await get("/api/endpoints");
  main.innerHTML = `<h2>Endpoints</h2>` + (rows.length ? table(
    ["endpoint", "status", "instance", "count", "$/hour", "created"],
    rows.map(r => [`<a href="#/endpoint/${encodeURIComponent(r.name)}">${esc(r.name)}</a>`,
      `<span class="status-${esc(r.status)}">${esc(r.status)}</span>`, esc(r.instance_type), esc(r.instance_count),
      esc(r.hourly_usd), esc(r.created)]), "endpoints")
    : `<p id="endpoints">No endpoints managed by smneuron here.</p>`) +
    `<p class="cli">${esc(overview.cli)} list</p>`;
}

function kv(pairs) {
  return table(["", ""], pairs.filter(p => p[1] !== null && p[1] !== undefined).map(p => [esc(p[0]), esc(p[1])]));
}

async function endpointView(name) {
  const s = await get(`/api/endpoints/${encodeURIComponent(name)}`);
  const o = s.summary, c = s.controls, m = s.model;
  const env = Object.entries(m.Environment || {}).map(([k, v]) => [esc(k), esc(v)]);
  const ask = o.kind === "text-generation" ?
    `<section><h3>Generate (streamed)</h3><textarea id="prompt">Tell me about Inferentia</textarea><br>
      max tokens <input id="max-tokens" size="4" value="64"> <button id="generate">Generate</button>
      <span id="latency"></span><pre id="answer"></pre><div class="cli" id="invoke-cli"></div></section>` :
    `<section><h3>Invoke</h3><textarea id="body">{"inputs": "I loved this movie"}</textarea><br>
      <button id="invoke">Invoke</button> <span id="latency"></span><pre id="answer"></pre><div class="cli" id="invoke-cli"></div></section>`;
  const changes = overview.read_only ? `<p>Read-only: start the console with --allow-changes to act on an account's endpoints.</p>` : ask + `
    <section><h3>Scale</h3>min <input id="min" size="3" value="1"> max <input id="max" size="3" value="2">
      <button id="scale">Set autoscaling</button> <span id="scaled"></span><div class="cli" id="scale-cli"></div></section>
    <section><h3>Delete</h3>Type <b>${esc(name)}</b> to confirm: <input id="confirm" size="24">
      <button id="delete">Delete</button> <span id="deleted"></span></section>`;
  main.innerHTML = `<h2>${esc(name)}: <span class="status-${esc(o.status)}" id="status">${esc(o.status)}</span></h2>` +
    (o.failure_reason ? `<p class="error" id="failure">${esc(o.failure_reason)}</p>` : "") +
    kv([["kind", o.kind], ["instance", o.instance_type], ["instances", o.instances], ["workers", o.workers],
        ["copies", o.copies], ["model", o.model], ["image", m.Image],
        ["host", s.config.InferenceAmiVersion || "SageMaker's default for the image"], ["model data", o.model_data],
        ["$ / hour", o.cost_per_hour_usd], ["price", o.price_source], ["VPC", c.vpc ? JSON.stringify(c.vpc) : "none"],
        ["network isolation", c.network_isolation], ["KMS key", c.kms_key || "none"],
        ["data capture", c.data_capture ? "on" : "off"], ["tags", JSON.stringify(c.tags)]]) +
    components(s) + scalingActivities(s) + backlog(s) +
    `<h3>Metrics (last 30 minutes, per minute)</h3><div class="charts" id="charts">Loading...</div>` + changes +
    `<section><h3>Logs (following)</h3><pre id="logs"></pre></section>` +
    `<h3>Environment (secrets masked)</h3>` + table(["variable", "value"], env, "environment") +
    `<p class="cli">${esc(overview.cli)} status ${esc(name)}</p>`;
  wire(name);
  follow(name);
  charts(name);
}

function components(s) {
  if (!s.components || !s.components.length) return "";
  return `<h3>Inference components</h3>` + table(["component", "status", "copies", "desired", "model", "failure"],
    s.components.map(c => [esc(c.InferenceComponentName), esc(c.InferenceComponentStatus), esc(c.CurrentCopyCount),
      esc(c.CopyCount), esc(c.ModelName), esc(c.FailureReason)]), "components");
}

function scalingActivities(s) {
  const acts = (s.autoscaling && s.autoscaling.activities) || [];
  if (!acts.length) return "";
  return `<h3>Scaling activities</h3>` + table(["when", "status", "what", "cause"], acts.slice(0, 10).map(a =>
    [esc(a.StartTime), esc(a.StatusCode), esc(a.Description), esc(a.Cause)]), "activities");
}

function backlog(s) {
  if (!s.asynchronous) return "";
  const b = s.backlog || {};
  return `<h3>Asynchronous queue</h3>` + kv([["queued (latest minute)", b.queued], ["oldest request, s", b.oldest_s],
    ["answers to", s.asynchronous.OutputConfig && s.asynchronous.OutputConfig.S3OutputPath]]);
}

function wire(name) {
  const q = id => document.getElementById(id);
  if (!q("scale")) return;
  const path = `/api/endpoints/${encodeURIComponent(name)}`;
  if (q("generate")) q("generate").onclick = () => generate(path, q);
  if (q("invoke")) q("invoke").onclick = async () => {
    q("answer").textContent = "...";
    try {
      const r = await post(`${path}/invoke`, {body: q("body").value, content_type: "application/json"});
      q("answer").textContent = JSON.stringify(r.answer, null, 1);
      q("latency").textContent = `${r.status}, ${r.latency_ms} ms`;
      q("invoke-cli").textContent = r.cli;
    } catch (e) { q("answer").innerHTML = `<span class="error">${esc(e.message)}</span>`; }
  };
  q("scale").onclick = async () => {
    try {
      const r = await post(`${path}/scale`, {min: +q("min").value, max: +q("max").value});
      q("scaled").textContent = `autoscaling ${r.min}-${r.max}`;
      q("scale-cli").textContent = r.cli;
    } catch (e) { q("scaled").innerHTML = `<span class="error">${esc(e.message)}</span>`; }
  };
  q("delete").onclick = async () => {
    try {
      const r = await post(`${path}/delete`, {confirm: q("confirm").value});
      q("deleted").textContent = `deleted: ${r.deleted.join(", ")} (${r.cli})`;
    } catch (e) { q("deleted").innerHTML = `<span class="error">${esc(e.message)}</span>`; }
  };
}

// a streamed generation: JSON lines, a piece each, then {"done": ...}; a stream that ends without it broke
async function generate(path, q) {
  q("answer").textContent = "";
  q("latency").textContent = "";
  const r = await fetch(`${path}/stream`, {method: "POST", credentials: "same-origin", headers: {"Content-Type":
    "application/json", "X-Smneuron-CSRF": csrf}, body: JSON.stringify({prompt: q("prompt").value, max_tokens: +q("max-tokens").value})});
  if (!r.ok) { q("answer").innerHTML = `<span class="error">${esc((await r.json()).error)}</span>`; return; }
  const reader = r.body.getReader(), text = new TextDecoder();
  let rest = "", done = null;
  for (;;) {
    const {value, done: end} = await reader.read();
    if (end) break;
    rest += text.decode(value, {stream: true});
    let at;
    while ((at = rest.indexOf("\n")) >= 0) {
      const line = JSON.parse(rest.slice(0, at));
      rest = rest.slice(at + 1);
      if (line.piece !== undefined) q("answer").textContent += line.piece;
      else if (line.error) q("answer").innerHTML += `<br><span class="error">${esc(line.error)}</span>`;
      else if (line.done) done = line;
    }
  }
  q("latency").textContent = done ? `first token ${done.first_token_ms} ms, all ${done.latency_ms} ms` : "the stream broke";
  if (done) q("invoke-cli").textContent = done.cli;
}

function follow(name) {
  if (stream) stream.close();
  const out = document.getElementById("logs");
  stream = new EventSource(`/api/endpoints/${encodeURIComponent(name)}/logs`);
  stream.onmessage = e => { out.textContent += JSON.parse(e.data) + "\n"; out.scrollTop = out.scrollHeight; };
  stream.addEventListener("failure", e => { out.textContent += JSON.parse(e.data) + "\n"; stream.close(); });
}

function chart(title, points) {
  const w = 300, h = 140, pad = 30;
  if (!points.length) return `<div class="chart"><b>${esc(title)}</b><br><small>no datapoints yet</small></div>`;
  const xs = points.map(p => p[0]), ys = points.map(p => p[1]);
  const x0 = Math.min(...xs), x1 = Math.max(...xs) || x0 + 1, y1 = Math.max(...ys) || 1;
  const px = x => pad + (w - pad - 8) * (x1 === x0 ? 0.5 : (x - x0) / (x1 - x0));
  const py = y => h - 18 - (h - 30) * y / y1;
  const line = points.map(p => `${px(p[0]).toFixed(1)},${py(p[1]).toFixed(1)}`).join(" ");
  const dots = points.map(p => `<circle cx="${px(p[0]).toFixed(1)}" cy="${py(p[1]).toFixed(1)}" r="2.5"/>`).join("");
  return `<div class="chart"><b>${esc(title)}</b><br><svg class="series" width="${w}" height="${h}" data-points="${points.length}">` +
    `<line x1="${pad}" y1="${h - 18}" x2="${w - 8}" y2="${h - 18}" stroke="#888"/><line x1="${pad}" y1="8" x2="${pad}" y2="${h - 18}" stroke="#888"/>` +
    `<text x="2" y="14" font-size="10">${esc(+y1.toPrecision(3))}</text>` +
    `<polyline fill="none" stroke="#1f77b4" stroke-width="1.5" points="${line}"/><g fill="#1f77b4">${dots}</g></svg></div>`;
}

async function charts(name) {
  const box = document.getElementById("charts");
  try {
    const m = await get(`/api/endpoints/${encodeURIComponent(name)}/metrics?minutes=30`);
    box.innerHTML = Object.entries(m.series).map(([k, v]) => chart(k, v)).join("");
  } catch (e) { box.innerHTML = `<span class="error">${esc(e.message)}</span>`; }
}

async function jobsView() {
  const rows = await get("/api/jobs");
  main.innerHTML = `<h2>Transform jobs</h2>` + table(["job", "status", "progress", "created", "ended", "failure"],
    rows.map(j => [esc(j.TransformJobName), esc(j.TransformJobStatus), esc(j.progress), esc(j.CreationTime),
      esc(j.TransformEndTime), esc(j.FailureReason)]), "jobs") + `<p class="cli">${esc(overview.cli)} transform status JOB</p>`;
}

async function matrixView() {
  const rows = await get("/api/matrix");
  main.innerHTML = `<h2>Neuron compatibility matrix</h2>` + table(["family", "image", "Neuron SDK", "torch", "compiler",
    "runtime", "status", "source"], rows.map(r => [esc(r.family), esc(`${r.repository}:${r.tag}`), esc(r.neuron_sdk),
    esc(r.torch), esc(r.compiler), esc(r.runtime), esc(r.status), esc(r.source)]), "matrix") +
    `<p class="cli">${esc(overview.cli)} images --matrix</p>`;
}

async function reportsView() {
  const rows = await get("/api/reports");
  main.innerHTML = `<h2>Bench and compare reports</h2>` + (rows.length ? table(["report", "written"], rows.map(r =>
    [`<a href="/reports/${encodeURIComponent(r.name)}" target="_blank">${esc(r.name)}</a>`, esc(r.modified)]), "reports")
    : `<p id="reports">No reports: start the console with --reports DIR (the folder your --html reports go to).</p>`);
}

async function doctorView() {
  main.innerHTML = `<h2>Check an artifact (doctor)</h2><p>artifact <input id="artifact" size="60" placeholder="out/ or model.tar.gz or s3://...">
    instance <input id="instance" size="18" placeholder="(its target's default)"> <button id="check">Check</button></p>
    <div id="findings"></div>`;
  const q = id => document.getElementById(id);
  q("check").onclick = async () => {
    q("findings").textContent = "...";
    try {
      const f = await get(`/api/doctor?artifact=${encodeURIComponent(q("artifact").value)}&instance=${encodeURIComponent(q("instance").value)}`);
      q("findings").innerHTML = `<p id="verdict">${esc(f.artifact)} can be deployed to ${esc(f.instance_type)} with ${esc(f.image_uri)}.</p>` +
        `<ul>${f.notes.map(n => `<li>${esc(n)}</li>`).join("")}</ul><p class="cli">${esc(f.cli)}</p>`;
    } catch (e) { q("findings").innerHTML = `<p class="error" id="verdict">${esc(e.message)}</p>`; }
  };
}

async function route() {
  if (stream) { stream.close(); stream = null; }
  try {
    overview = overview || await get("/api/overview");
    document.getElementById("where").textContent = `${overview.where}${overview.read_only ? " (read-only)" : ""}`;
    const hash = location.hash || "#/";
    if (hash.startsWith("#/endpoint/")) await endpointView(decodeURIComponent(hash.slice(11)));
    else if (hash === "#/jobs") await jobsView();
    else if (hash === "#/matrix") await matrixView();
    else if (hash === "#/reports") await reportsView();
    else if (hash === "#/doctor") await doctorView();
    else await listView();
    document.body.dataset.ready = hash;
  } catch (e) {
    main.innerHTML = `<p class="error" id="failure">${esc(e.message)}</p>`;
    document.body.dataset.ready = "failed";
  }
}

window.addEventListener("hashchange", route);
route();
