// sluice web approver. Everything an agent wrote arrives as JSON strings
// cut into segments by the server and is put in the page with textContent
// only: this file never assigns innerHTML, outerHTML or insertAdjacentHTML.
"use strict";

const $ = (id) => document.getElementById(id);

const st = {
  session: null,   // {paired, device, as, csrf, grace_ms}
  queue: [],
  history: [],
  sel: null,       // selected request id
  detail: null,    // its detail as served
  readyAt: 0,      // performance.now() when the grace has passed
  endSeen: false,  // the end of the request has been on screen
  busy: false,
  decided: false,
  es: null,        // the events stream
  out: null,       // the output stream
  seen: new Set(), // pending ids already notified
  notes: [],       // times of the page's own notifications
};

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

// seg renders one segment: plain text, an escaped hidden character, a fold.
function seg(s) {
  if (!s.k) return document.createTextNode(s.t);
  const e = el("span", s.k === "esc" ? "esc" : "fold", s.t);
  e.title = s.k === "esc" ? "a hidden character, shown escaped" : "folded";
  return e;
}

// line renders a one-line Shown.
function line(sh, cls) {
  const e = el("span", "agent " + (cls || ""));
  if (sh && sh.lines) {
    sh.lines.forEach((l, i) => {
      if (i > 0) e.appendChild(document.createTextNode(" "));
      l.forEach((s) => e.appendChild(seg(s)));
    });
  }
  return e;
}

// block renders a many-line Shown as a pre; diff lines are coloured.
function block(sh, diff) {
  const pre = el("pre", "block agent");
  sh.lines.forEach((l) => {
    const ln = el("span", "ln");
    if (diff && l.length > 0 && !l[0].k) {
      const c = l[0].t.charAt(0);
      if (l[0].t.startsWith("+++") || l[0].t.startsWith("---")) ln.classList.add("hunk");
      else if (c === "+") ln.classList.add("add");
      else if (c === "-") ln.classList.add("del");
      else if (c === "@") ln.classList.add("hunk");
    }
    l.forEach((s) => ln.appendChild(seg(s)));
    ln.appendChild(document.createTextNode("\n"));
    pre.appendChild(ln);
  });
  return pre;
}

function plain(sh) {
  if (!sh || !sh.lines) return "";
  return sh.lines.map((l) => l.map((s) => s.t).join("")).join(" ");
}

function age(t) {
  if (!t) return "";
  const s = Math.max(0, Math.floor((Date.now() - Date.parse(t)) / 1000));
  if (s < 60) return s + "s";
  if (s < 3600) return Math.floor(s / 60) + "m";
  if (s < 172800) return Math.floor(s / 3600) + "h";
  return Math.floor(s / 86400) + "d";
}

function left(t) {
  if (!t) return "";
  const s = Math.floor((Date.parse(t) - Date.now()) / 1000);
  if (s <= 0) return "expiring";
  if (s < 120) return s + "s left";
  return Math.floor(s / 60) + "m left";
}

async function api(method, path, body) {
  const opt = { method, headers: {}, credentials: "same-origin" };
  if (method !== "GET") {
    opt.headers["X-Sluice-CSRF"] = st.session ? st.session.csrf : "";
    opt.headers["Content-Type"] = "application/json";
    opt.body = JSON.stringify(body || {});
  }
  const r = await fetch(path, opt);
  let j = {};
  try { j = await r.json(); } catch (e) { j = {}; }
  return { status: r.status, ok: r.ok, body: j };
}

// ---- session and pairing ----

async function start() {
  const r = await api("GET", "/api/session");
  st.session = r.body;
  if (!st.session.paired) return showPair();
  showApp();
}

function showPair(msg) {
  if (st.es) { st.es.close(); st.es = null; }
  $("app").hidden = true;
  $("pair").hidden = false;
  $("who").textContent = "";
  $("conn").textContent = "not paired";
  $("conn").className = "conn";
  const m = /(?:^#|&)pair=([A-Za-z0-9-]{4,40})/.exec(location.hash);
  if (m) $("pair-code").value = m[1];
  setMsg($("pair-msg"), msg || "", "bad");
}

$("pair-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  $("pair-go").disabled = true;
  try {
    if (!st.session) st.session = (await api("GET", "/api/session")).body;
    const r = await api("POST", "/api/pair", { code: $("pair-code").value });
    if (!r.ok) return setMsg($("pair-msg"), r.body.error || "pairing failed", "bad");
    history.replaceState(null, "", location.pathname);
    st.session = r.body;
    showApp();
  } finally {
    $("pair-go").disabled = false;
  }
});

function showApp() {
  $("pair").hidden = true;
  $("app").hidden = false;
  $("who").textContent = st.session.as || "";
  if ("Notification" in window && window.isSecureContext && Notification.permission === "default") $("notify").hidden = false;
  passkeyButton();
  connect();
  const m = /(?:^#|&)req=([0-9A-Za-z_-]{1,64})/.exec(location.hash);
  if (m) select(m[1]);
}

// ---- passkeys (web_require_passkey) ----

function b64u(buf) {
  const b = new Uint8Array(buf);
  let s = "";
  for (let i = 0; i < b.length; i++) s += String.fromCharCode(b[i]);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function unb64u(s) {
  const t = atob(s.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((s.length + 3) % 4));
  const b = new Uint8Array(t.length);
  for (let i = 0; i < t.length; i++) b[i] = t.charCodeAt(i);
  return b.buffer;
}

function passkeyButton() {
  const s = st.session;
  $("passkey").hidden = !(s && s.paired && s.passkeys_on && !s.passkeys && window.PublicKeyCredential && window.isSecureContext);
}

$("passkey").addEventListener("click", async () => {
  const msg = $("d-msg");
  try {
    const b = await api("POST", "/api/passkey/register/begin", {});
    if (!b.ok) return setMsg(msg, b.body.error || "no passkey", "bad");
    const pk = b.body.publicKey;
    pk.challenge = unb64u(pk.challenge);
    pk.user.id = unb64u(pk.user.id);
    (pk.excludeCredentials || []).forEach((c) => { c.id = unb64u(c.id); });
    const cred = await navigator.credentials.create({ publicKey: pk });
    const r = await api("POST", "/api/passkey/register/finish", {
      id: cred.id, rawId: b64u(cred.rawId), type: cred.type,
      response: { attestationObject: b64u(cred.response.attestationObject), clientDataJSON: b64u(cred.response.clientDataJSON) },
      clientExtensionResults: cred.getClientExtensionResults ? cred.getClientExtensionResults() : {},
    });
    if (!r.ok) return setMsg(msg, r.body.error || "the passkey was refused", "bad");
    st.session.passkeys = 1;
    passkeyButton();
    setMsg(msg, "Passkey added.", "good");
  } catch (e) {
    setMsg(msg, "No passkey: " + e.message, "bad");
  }
});

// assertion asks the device's passkey to confirm this showing of d.
async function assertion(d) {
  const b = await api("POST", "/api/request/" + encodeURIComponent(d.id) + "/passkey", { view: d.view });
  if (!b.ok) throw new Error(b.body.error || "no passkey");
  const pk = b.body.publicKey;
  pk.challenge = unb64u(pk.challenge);
  (pk.allowCredentials || []).forEach((c) => { c.id = unb64u(c.id); });
  const a = await navigator.credentials.get({ publicKey: pk });
  return {
    id: a.id, rawId: b64u(a.rawId), type: a.type,
    response: {
      authenticatorData: b64u(a.response.authenticatorData), clientDataJSON: b64u(a.response.clientDataJSON),
      signature: b64u(a.response.signature), userHandle: a.response.userHandle ? b64u(a.response.userHandle) : "",
    },
    clientExtensionResults: a.getClientExtensionResults ? a.getClientExtensionResults() : {},
  };
}

$("notify").addEventListener("click", async () => {
  await Notification.requestPermission();
  $("notify").hidden = true;
});

// ---- the live queue ----

function connect() {
  if (st.es) st.es.close();
  const es = new EventSource("/api/events");
  st.es = es;
  es.addEventListener("open", () => { $("conn").textContent = "live"; $("conn").className = "conn live"; });
  es.addEventListener("error", async () => {
    $("conn").textContent = "reconnecting…";
    $("conn").className = "conn down";
    const r = await api("GET", "/api/session");
    if (!r.body.paired) { st.session = r.body; showPair("This browser is not paired (revoked or expired)."); }
  });
  es.addEventListener("revoked", (ev) => {
    es.close();
    st.session = null;
    showPair(JSON.parse(ev.data).error);
  });
  es.addEventListener("queue", (ev) => { st.queue = JSON.parse(ev.data); renderQueue(); notifyNew(); followSelected(); });
  es.addEventListener("history", (ev) => { st.history = JSON.parse(ev.data); renderHistory(); });
}

function badge(text, cls) { return el("span", "badge " + (cls || text), text); }

function renderQueue() {
  const ul = $("items");
  const pending = st.queue.filter((it) => it.state === "pending").length;
  $("count").textContent = String(pending);
  $("empty").hidden = st.queue.length > 0;
  document.title = pending ? "(" + pending + ") sluice" : "sluice";
  // Rows are kept while their request is unchanged: a tap never lands on
  // a row that was just replaced.
  const old = new Map();
  ul.querySelectorAll(":scope > li").forEach((li) => old.set(li.dataset.id, li));
  const rows = st.queue.map((it) => {
    const sig = JSON.stringify(it);
    let li = old.get(it.id);
    if (!li || li.dataset.sig !== sig) li = queueRow(it, sig);
    li.classList.toggle("sel", it.id === st.sel);
    return li;
  });
  rows.forEach((li, i) => { if (ul.children[i] !== li) ul.insertBefore(li, ul.children[i] || null); });
  while (ul.children.length > rows.length) ul.removeChild(ul.lastChild);
}

function queueRow(it, sig) {
  const li = el("li", "item");
  li.dataset.id = it.id;
  li.dataset.sig = sig;
  const r1 = el("div", "row1");
  if (it.state !== "pending") r1.appendChild(badge(it.state, "running"));
  else if (it.verdict) r1.appendChild(badge(it.verdict.action));
  else r1.appendChild(badge("ask"));
  if (it.flagged) r1.appendChild(el("span", "flag", "!")).title = "hidden characters or folded runs: open it";
  r1.appendChild(line(it.agent, "agent-name"));
  if (it.box) r1.appendChild(el("span", "box", it.box));
  r1.appendChild(el("span", "age", age(it.since)));
  if (it.expires_at && it.state === "pending") r1.appendChild(el("span", "left", left(it.expires_at)));
  li.appendChild(r1);
  const sum = el("div", "sum");
  sum.appendChild(line(it.summary));
  li.appendChild(sum);
  if (it.error) li.appendChild(el("div", "msg bad", it.error));
  const btns = el("div", "btns");
  const open = el("button", "open", it.state === "pending" ? "Review" : "Watch");
  open.type = "button";
  open.addEventListener("click", () => select(it.id));
  btns.appendChild(open);
  if (it.state === "pending") {
    const d = el("button", "deny", "Deny");
    d.type = "button";
    d.addEventListener("click", () => denyFromList(it.id, d));
    btns.appendChild(d);
  }
  li.appendChild(btns);
  return li;
}

async function denyFromList(id, btn) {
  btn.disabled = true;
  const r = await api("POST", "/api/request/" + encodeURIComponent(id) + "/deny", { reason: "" });
  if (!r.ok) {
    btn.disabled = false;
    alertMsg(r);
  }
}

function alertMsg(r) {
  setMsg($("q-msg"), (r.body.error || "refused") + whoWon(r.body.decided), "bad");
}

function whoWon(d) {
  if (!d) return "";
  return " (" + d.event.replace("_", " ") + " by " + plain(d.by) + ")";
}

function renderHistory() {
  const ul = $("past");
  ul.replaceChildren();
  st.history.forEach((p) => {
    const li = el("li", "item");
    const r1 = el("div", "row1");
    r1.appendChild(badge(p.decision.replace("_", " "), p.decision));
    r1.appendChild(el("span", "by", "by "));
    r1.lastChild.appendChild(line(p.by));
    if (p.status && p.status !== p.decision) r1.appendChild(el("span", "status", p.status + (p.exit_code !== undefined && p.exit_code !== null ? ", exit " + p.exit_code : "")));
    r1.appendChild(el("span", "age", age(p.at)));
    li.appendChild(r1);
    const sum = el("div", "sum");
    sum.appendChild(line(p.what));
    li.appendChild(sum);
    if (p.reason && p.reason.lines && plain(p.reason)) {
      const rs = el("div", "reason");
      rs.appendChild(line(p.reason));
      li.appendChild(rs);
    }
    ul.appendChild(li);
  });
}

function notifyNew() {
  const now = Date.now();
  st.queue.forEach((it) => {
    if (it.state !== "pending" || st.seen.has(it.id)) return;
    st.seen.add(it.id);
    if (!document.hidden || !("Notification" in window) || Notification.permission !== "granted") return;
    st.notes = st.notes.filter((t) => now - t < 60000);
    if (st.notes.length >= 6) return;
    st.notes.push(now);
    new Notification("sluice: " + (plain(it.agent) || "an agent") + " asks", { body: plain(it.summary).slice(0, 200), tag: it.id });
  });
}

// followSelected fetches the selected request again when its file changed.
function followSelected() {
  if (!st.sel || !st.detail) return;
  const it = st.queue.find((x) => x.id === st.sel);
  if (!it) { if (st.detail.state === "pending" && !st.decided) select(st.sel); return; }
  if (it.state === "pending" && it.digest && st.detail.digest && it.digest !== st.detail.digest) {
    select(st.sel, "The request changed while you read it: this is the new one.");
  }
}

// ---- one request ----

let observer = null;

async function select(id, note) {
  st.sel = id;
  st.detail = null;
  st.endSeen = false;
  st.decided = false;
  if (st.out) { st.out.close(); st.out = null; }
  if (observer) { observer.disconnect(); observer = null; }
  renderQueue();
  if (!id) {
    $("detail").hidden = true;
    document.body.classList.remove("viewing");
    return;
  }
  $("detail").hidden = false;
  document.body.classList.add("viewing");
  $("d-out").hidden = true;
  $("out").replaceChildren();
  $("reason").value = "";
  setMsg($("d-msg"), note || "", note ? "bad" : "");
  const r = await api("GET", "/api/request/" + encodeURIComponent(id));
  if (st.sel !== id) return;
  const d = r.body;
  st.detail = d;
  renderDetail(d);
  $("d-end").hidden = r.status === 410;
  if (r.status === 410) {
    setMsg($("d-msg"), "No longer waiting" + whoWon(d.decided) + ".", "");
    st.decided = true;
    watchOutput(id);
    return;
  }
  if (d.state !== "pending") { st.decided = true; watchOutput(id); }
  st.readyAt = performance.now() + (d.wait_ms || 0);
  observer = new IntersectionObserver((entries) => {
    entries.forEach((e) => { if (e.isIntersecting) st.endSeen = true; });
  });
  observer.observe($("d-end"));
}

function renderDetail(d) {
  const head = $("d-head");
  head.replaceChildren();
  if (d.verdict) head.appendChild(badge(d.verdict.action));
  head.appendChild(el("span", "kind", d.kind || ""));
  if (d.state && d.state !== "pending") head.appendChild(badge(d.state, "running"));
  if (d.passkey) head.appendChild(badge("passkey", "ask")).title = "approving it needs this device's passkey";
  head.appendChild(el("span", "mono id", d.id));
  const flags = $("d-flags");
  flags.replaceChildren();
  if (d.hidden) flags.appendChild(el("div", "", "⚠ Hidden characters (controls, escapes, bidi or invisible Unicode) are shown escaped and marked."));
  if (d.folded) flags.appendChild(el("div", "", "⚠ Long runs of blank lines or spaces are folded and marked."));
  const v = $("d-verdict");
  v.replaceChildren();
  if (d.verdict) {
    v.appendChild(el("div", "", d.verdict.action + " · " + d.verdict.category + " · risk " + d.verdict.risk));
    if (d.verdict.sandbox) v.appendChild(el("div", "sandbox", d.verdict.sandbox));
    if (d.verdict.reasons && d.verdict.reasons.length) {
      const ul = el("ul");
      d.verdict.reasons.forEach((rs) => { const li = el("li"); li.appendChild(line(rs)); ul.appendChild(li); });
      v.appendChild(ul);
    }
  } else if (d.kind) {
    v.appendChild(el("div", "sandbox", "No verdict recorded for it yet."));
  }
  const body = $("d-body");
  body.replaceChildren();
  if (d.command) body.appendChild(block(d.command));
  if (d.path) { const p = el("div", "mono"); p.appendChild(line(d.path)); body.appendChild(p); }
  if (d.tool) { const p = el("div", "mono", "tool "); p.appendChild(line(d.tool)); body.appendChild(p); }
  if (d.input) body.appendChild(block(d.input));
  if (d.diff) body.appendChild(block(d.diff, true));
  if (d.diff_error) { const p = el("div", "msg bad", "No diff: "); p.appendChild(line(d.diff_error)); body.appendChild(p); }
  const meta = $("d-meta");
  meta.replaceChildren();
  const row = (k, sh) => {
    if (!sh || !plain(sh)) return;
    meta.appendChild(el("dt", "", k));
    const dd = el("dd");
    dd.appendChild(line(sh));
    meta.appendChild(dd);
  };
  row("cwd", d.cwd);
  row("agent", d.agent);
  row("session", d.session);
  row("note", d.note);
  if (d.since) { meta.appendChild(el("dt", "", "age")); meta.appendChild(el("dd", "", age(d.since) + (d.expires_at ? " · " + left(d.expires_at) : ""))); }
  $("d-actions").hidden = d.state !== "pending" || !d.digest;
  tickApprove();
}

// tickApprove enables approve once the end of the request has been on
// screen and the grace period has passed; it says which is missing.
function tickApprove() {
  const b = $("approve");
  const d = st.detail;
  if (!d || !d.digest || st.decided) { b.disabled = true; b.textContent = "Approve"; return; }
  const wait = st.readyAt - performance.now();
  if (st.busy) { b.disabled = true; return; }
  if (!st.endSeen) { b.disabled = true; b.textContent = "Approve (read to the end first)"; return; }
  if (wait > 0) { b.disabled = true; b.textContent = "Approve in " + (wait / 1000).toFixed(1) + " s"; return; }
  b.disabled = false;
  b.textContent = "Approve";
}
setInterval(tickApprove, 100);
setInterval(() => { if (st.queue.length) renderQueueAges(); }, 1000);

function renderQueueAges() {
  document.querySelectorAll("#items .item").forEach((li) => {
    const it = st.queue.find((x) => x.id === li.dataset.id);
    if (!it) return;
    const a = li.querySelector(".age"); if (a) a.textContent = age(it.since);
    const l = li.querySelector(".left"); if (l) l.textContent = left(it.expires_at);
  });
}

$("approve").addEventListener("click", async () => {
  const d = st.detail;
  if (!d || $("approve").disabled) return;
  st.busy = true;
  tickApprove();
  setMsg($("d-msg"), "Approving…", "");
  try {
    const body = { digest: d.digest, view: d.view };
    if (d.passkey) {
      setMsg($("d-msg"), "Confirm with your passkey…", "");
      try {
        body.assertion = await assertion(d);
      } catch (e) {
        setMsg($("d-msg"), "Not approved: " + e.message, "bad");
        return;
      }
    }
    const r = await api("POST", "/api/request/" + encodeURIComponent(d.id) + "/approve", body);
    if (r.ok) {
      st.decided = true;
      $("d-actions").hidden = true;
      setMsg($("d-msg"), "Approved as " + r.body.by + ".", "good");
      watchOutput(d.id);
      $("d-msg").scrollIntoView({ block: "start" });
    } else {
      setMsg($("d-msg"), (r.body.error || "refused") + whoWon(r.body.decided), "bad");
      if (r.body.decided) { st.decided = true; $("d-actions").hidden = true; watchOutput(d.id); }
    }
  } finally {
    st.busy = false;
  }
});

$("deny").addEventListener("click", async () => {
  const d = st.detail;
  if (!d) return;
  $("deny").disabled = true;
  try {
    const r = await api("POST", "/api/request/" + encodeURIComponent(d.id) + "/deny", { reason: $("reason").value });
    if (r.ok) {
      st.decided = true;
      $("d-actions").hidden = true;
      setMsg($("d-msg"), "Denied as " + r.body.by + ".", "good");
    } else {
      setMsg($("d-msg"), (r.body.error || "refused") + whoWon(r.body.decided), "bad");
    }
  } finally {
    $("deny").disabled = false;
  }
});

// watchOutput streams a run's output into the page. The stream's event
// ids are offsets: a reconnect (EventSource's own) goes on where it was.
function watchOutput(id) {
  if (st.out) st.out.close();
  $("d-out").hidden = false;
  const state = $("out-state");
  state.textContent = "running…";
  delete state.dataset.done;
  const pre = $("out");
  pre.replaceChildren();
  const es = new EventSource("/api/output/" + encodeURIComponent(id) + "?from=0");
  st.out = es;
  es.addEventListener("out", (ev) => {
    const m = JSON.parse(ev.data);
    const stick = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 8;
    pre.appendChild(document.createTextNode(m.text));
    if (stick) pre.scrollTop = pre.scrollHeight;
  });
  es.addEventListener("end", (ev) => {
    const m = JSON.parse(ev.data);
    es.close();
    let s = "ended";
    if (m.status) s = m.status + (m.exit_code !== undefined && m.exit_code !== null ? " (exit " + m.exit_code + ")" : "");
    if (m.decided) s += whoWon(m.decided);
    if (m.error) s = m.error;
    state.textContent = s;
    state.dataset.done = "1";
    if (!pre.textContent) pre.appendChild(el("span", "fold", "(no output)"));
  });
  es.addEventListener("revoked", () => es.close());
}

$("back").addEventListener("click", () => select(null));

$("tab-queue").addEventListener("click", () => tab("queue"));
$("tab-history").addEventListener("click", () => tab("history"));
function tab(which) {
  $("queue").hidden = which !== "queue";
  $("history").hidden = which !== "history";
  $("tab-queue").setAttribute("aria-selected", String(which === "queue"));
  $("tab-history").setAttribute("aria-selected", String(which === "history"));
}

function setMsg(e, text, cls) {
  e.textContent = text;
  e.className = "msg" + (cls ? " " + cls : "");
}

start();
