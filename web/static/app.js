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
  ready: new Map(), // a row's showing (view token) → performance.now() when the server takes its approval
  quietUntil: 0,   // the list's buttons are inert until then after its rows moved
  listBusy: new Set(), // ids whose decision from the list is under way
};

// QUIET_MS: after rows came, went or moved, the list's approve buttons
// wait this long (the console's quiet grace), so that a tap meant for one
// row never lands on another that slid under the finger.
const QUIET_MS = 450;
// CONNECT_SETTLE_MS: a connect request needs no reading beyond its host,
// but its row must have been on screen this long before it is answered.
const CONNECT_SETTLE_MS = 450;

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
  const before = [...old.keys()].join(" ");
  const now = performance.now();
  const rows = st.queue.map((it) => {
    // wait_ms counts down at each push; the row's showing is its token.
    const sig = JSON.stringify(Object.assign({}, it, { approve: it.approve ? { digest: it.approve.digest, view: it.approve.view } : null }));
    if (it.approve && !st.ready.has(it.approve.view)) st.ready.set(it.approve.view, now + (it.approve.wait_ms || 0));
    let li = old.get(it.id);
    if (!li || li.dataset.sig !== sig) li = queueRow(it, sig);
    li.classList.toggle("sel", it.id === st.sel);
    return li;
  });
  rows.forEach((li, i) => { if (ul.children[i] !== li) ul.insertBefore(li, ul.children[i] || null); });
  while (ul.children.length > rows.length) ul.removeChild(ul.lastChild);
  old.forEach((li) => { if (!li.isConnected) rowObserver().unobserve(li); });
  if (rows.map((li) => li.dataset.id).join(" ") !== before) st.quietUntil = now + QUIET_MS;
  const views = new Set(st.queue.filter((it) => it.approve).map((it) => it.approve.view));
  st.ready.forEach((_, v) => { if (!views.has(v)) st.ready.delete(v); });
  tickList();
}

function queueRow(it, sig) {
  const li = el("li", "item");
  li.dataset.id = it.id;
  li.dataset.sig = sig;
  const pending = it.state === "pending";
  const conn = it.connect;
  const r1 = el("div", "row1");
  if (!pending) r1.appendChild(badge(it.state, "running"));
  else if (conn) r1.appendChild(badge("connect", "connect")).title = "a networked run asks to reach a host outside its set";
  else if (it.verdict) r1.appendChild(badge(it.verdict.action));
  else r1.appendChild(badge("ask"));
  const hidden = it.flagged || (it.where && it.where.hidden);
  if (hidden) r1.appendChild(el("span", "flag", it.approve ? "⚠ hidden characters" : "!")).title = "hidden characters (shown escaped and marked) or folded runs";
  r1.appendChild(line(it.agent, "agent-name"));
  if (it.box) r1.appendChild(el("span", "box", it.box));
  r1.appendChild(el("span", "age", age(it.since)));
  if (it.expires_at && pending) r1.appendChild(el("span", "left", left(it.expires_at)));
  li.appendChild(r1);
  const sum = el("div", "sum" + (it.approve ? " whole" : ""));
  if (conn) {
    sum.appendChild(el("span", "run mono", conn.run)).title = "the run that asks: " + conn.run_id;
    sum.appendChild(document.createTextNode("'s "));
    sum.appendChild(line(conn.command, "cmd"));
    sum.appendChild(document.createTextNode(" wants "));
    sum.appendChild(line(conn.target, "target"));
  } else {
    sum.appendChild(line(it.summary));
  }
  li.appendChild(sum);
  if (it.where) {
    const w = el("div", "where", "in ");
    w.appendChild(line(it.where));
    li.appendChild(w);
  }
  if (it.error) li.appendChild(el("div", "msg bad", it.error));
  const btns = el("div", "btns");
  const button = (cls, text, fn) => {
    const b = el("button", cls, text);
    b.type = "button";
    b.addEventListener("click", fn);
    btns.appendChild(b);
    return b;
  };
  if (pending && it.approve && conn) {
    listApproveButton(button("approve list-approve", "Allow once", () => approveFromList(it, "once")), it);
    listApproveButton(button("approve list-approve run", "Allow for this run", () => approveFromList(it, "run")), it);
    button("deny", "Refuse", (ev) => denyFromList(it.id, ev.currentTarget, ""));
    button("open small", "Details", () => select(it.id));
  } else if (pending && it.approve) {
    listApproveButton(button("approve list-approve", "Approve", () => approveFromList(it, "")), it);
    button("deny", "Deny", () => denyPrompt(li, it.id));
    button("open", "Review", () => select(it.id));
  } else {
    button("open", pending ? "Review" : "Watch", () => select(it.id));
    if (pending) button("deny", conn ? "Refuse" : "Deny", (ev) => conn ? denyFromList(it.id, ev.currentTarget, "") : denyPrompt(li, it.id));
  }
  li.appendChild(btns);
  if (it.approve) rowObserver().observe(li);
  return li;
}

// listApproveButton makes b a list approval of it: inert until tickList
// finds the row whole, on screen long enough, and the server ready.
function listApproveButton(b, it) {
  b.disabled = true;
  b.dataset.label = b.textContent;
  b.dataset.view = it.approve.view;
}

// The rows that offer an approval are watched: seen.get(li) is when the
// whole row came on screen (0: it is not on screen now).
const seen = new WeakMap();
let rowObs = null;

function rowObserver() {
  if (rowObs) return rowObs;
  const top = $("top").getBoundingClientRect().height;
  rowObs = new IntersectionObserver((entries) => {
    const now = performance.now();
    entries.forEach((e) => {
      const whole = e.isIntersecting && e.intersectionRatio >= 0.99;
      if (!whole) { seen.set(e.target, 0); delete e.target.dataset.visibleSince; }
      else if (!seen.get(e.target)) { seen.set(e.target, now); e.target.dataset.visibleSince = String(now); }
    });
    tickList();
  }, { threshold: [0, 0.5, 0.99, 1], rootMargin: "-" + Math.ceil(top) + "px 0px 0px 0px" }); // the sticky header covers what is under it
  return rowObs;
}

// A page in the background is not being looked at: every row is seen
// anew when it comes back.
document.addEventListener("visibilitychange", () => {
  if (!rowObs) return;
  document.querySelectorAll("#items > li").forEach((li) => {
    seen.set(li, 0);
    delete li.dataset.visibleSince;
    if (!document.hidden && li.querySelector(".list-approve")) { rowObs.unobserve(li); rowObs.observe(li); }
  });
  tickList();
});

// tickList enables a row's approval once the row shows its request whole
// (its text not cut), has been on screen for the grace period (a connect
// request's for a moment), the server takes it, and the list has been
// still; the button says what it waits for.
function tickList() {
  const now = performance.now();
  const grace = st.session ? st.session.grace_ms || 0 : 0;
  document.querySelectorAll("#items > li").forEach((li) => {
    const bs = li.querySelectorAll("button.list-approve");
    if (!bs.length) return;
    const it = st.queue.find((x) => x.id === li.dataset.id);
    const sum = li.querySelector(".sum");
    const cut = sum.scrollWidth > sum.clientWidth + 1 || sum.scrollHeight > sum.clientHeight + 1;
    const since = seen.get(li) || 0;
    const need = it && it.connect ? CONNECT_SETTLE_MS : grace;
    bs.forEach((b) => {
      let wait = "";
      if (cut) {
        // Not shown whole after all (a narrow screen): read it in full.
        b.hidden = true;
        return;
      }
      const ready = st.ready.get(b.dataset.view) || 0;
      if (!it || st.listBusy.has(it.id)) wait = "…";
      else if (!since) wait = "scroll to it";
      else {
        const left = Math.max(since + need, ready, st.quietUntil) - now;
        if (left > 0) wait = (left / 1000).toFixed(1) + " s";
      }
      const text = wait ? b.dataset.label + " (" + wait + ")" : b.dataset.label;
      if (b.textContent !== text) b.textContent = text;
      b.disabled = wait !== "";
      if (!wait && !b.dataset.enabledAt) b.dataset.enabledAt = String(now);
      if (wait) delete b.dataset.enabledAt;
    });
    const review = li.querySelector("button.open");
    if (cut && review) review.classList.add("primary");
  });
}
setInterval(tickList, 100);

async function approveFromList(it, scope) {
  const li = document.querySelector("#items > li[data-id='" + CSS.escape(it.id) + "']");
  const b = li && li.querySelector("button.list-approve");
  if (!it.approve || !b || b.disabled || st.listBusy.has(it.id)) return;
  st.listBusy.add(it.id);
  tickList();
  try {
    const r = await api("POST", "/api/request/" + encodeURIComponent(it.id) + "/approve",
      { digest: it.approve.digest, view: it.approve.view, scope: scope || undefined });
    if (r.ok) {
      const what = it.connect ? (scope === "run" ? "Allowed for the rest of its run" : "Allowed once") : "Approved";
      setMsg($("q-msg"), what + " as " + r.body.by + ": " + plain(it.connect ? it.connect.target : it.summary), "good");
    } else {
      alertMsg(r);
    }
  } finally {
    st.listBusy.delete(it.id);
    tickList();
  }
}

// denyPrompt opens the row's small reason prompt: Deny sends it (a reason
// may be left empty), Cancel or Escape closes it.
function denyPrompt(li, id) {
  let f = li.querySelector("form.deny-inline");
  if (f) { f.querySelector("input").focus(); return; }
  f = el("form", "deny-inline");
  const input = el("input");
  input.type = "text";
  input.maxLength = 500;
  input.placeholder = "reason (the agent sees it)";
  input.setAttribute("aria-label", "reason for denying");
  const go = el("button", "deny", "Deny");
  go.type = "submit";
  const cancel = el("button", "small", "Cancel");
  cancel.type = "button";
  const close = () => f.remove();
  cancel.addEventListener("click", close);
  input.addEventListener("keydown", (ev) => { if (ev.key === "Escape") close(); });
  f.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (await denyFromList(id, go, input.value)) close();
  });
  f.append(input, go, cancel);
  li.appendChild(f);
  input.focus();
}

async function denyFromList(id, btn, reason) {
  btn.disabled = true;
  const r = await api("POST", "/api/request/" + encodeURIComponent(id) + "/deny", { reason: reason || "" });
  btn.disabled = false;
  if (!r.ok) { alertMsg(r); return false; }
  setMsg($("q-msg"), "Denied as " + r.body.by + ".", "good");
  return true;
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
  if (d.connect) head.appendChild(badge("connect", "connect"));
  else if (d.verdict) head.appendChild(badge(d.verdict.action));
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
  if (d.connect) {
    const q = el("div", "question");
    q.appendChild(el("span", "", "Run "));
    q.appendChild(el("span", "run mono", d.connect.run)).title = d.connect.run_id;
    q.appendChild(el("span", "", " wants to reach"));
    body.appendChild(q);
    const t = el("div", "target-big mono");
    t.appendChild(line(d.connect.target, "target"));
    body.appendChild(t);
    if (plain(d.connect.command)) {
      body.appendChild(el("div", "sandbox", "The run's command (not what is asked):"));
      body.appendChild(block(d.connect.command));
    }
  }
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
  const conn = d.connect;
  $("approve").dataset.label = conn ? "Allow once" : "Approve";
  $("approve-run").hidden = !conn;
  $("reason").hidden = !!conn; // a connection is refused without a reason, as at the console
  $("deny").textContent = conn ? "Refuse" : "Deny";
  tickApprove();
}

// tickApprove enables approve once the end of the request has been on
// screen and the grace period has passed; it says which is missing.
function tickApprove() {
  const d = st.detail;
  ["approve", "approve-run"].forEach((bid) => {
    const b = $(bid);
    const label = bid === "approve" ? (b.dataset.label || "Approve") : "Allow for this run";
    if (!d || !d.digest || st.decided) { b.disabled = true; b.textContent = label; return; }
    const wait = st.readyAt - performance.now();
    if (st.busy) { b.disabled = true; return; }
    if (!st.endSeen) { b.disabled = true; b.textContent = label + " (read to the end first)"; return; }
    if (wait > 0) { b.disabled = true; b.textContent = label + " in " + (wait / 1000).toFixed(1) + " s"; return; }
    b.disabled = false;
    b.textContent = label;
  });
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

$("approve").addEventListener("click", () => approveDetail("approve", ""));
$("approve-run").addEventListener("click", () => approveDetail("approve-run", "run"));

async function approveDetail(bid, scope) {
  const d = st.detail;
  if (!d || $(bid).disabled) return;
  st.busy = true;
  tickApprove();
  setMsg($("d-msg"), "Approving…", "");
  try {
    const body = { digest: d.digest, view: d.view };
    if (d.connect) body.scope = scope || "once";
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
      if (d.connect) {
        setMsg($("d-msg"), (scope === "run" ? "Allowed for the rest of its run" : "Allowed once") + " as " + r.body.by + ".", "good");
      } else {
        setMsg($("d-msg"), "Approved as " + r.body.by + ".", "good");
        watchOutput(d.id);
      }
      $("d-msg").scrollIntoView({ block: "start" });
    } else {
      setMsg($("d-msg"), (r.body.error || "refused") + whoWon(r.body.decided), "bad");
      if (r.body.decided) { st.decided = true; $("d-actions").hidden = true; watchOutput(d.id); }
    }
  } finally {
    st.busy = false;
  }
}

$("deny").addEventListener("click", async () => {
  const d = st.detail;
  if (!d) return;
  $("deny").disabled = true;
  try {
    const r = await api("POST", "/api/request/" + encodeURIComponent(d.id) + "/deny", { reason: $("reason").value });
    if (r.ok) {
      st.decided = true;
      $("d-actions").hidden = true;
      setMsg($("d-msg"), (d.connect ? "Refused" : "Denied") + " as " + r.body.by + ".", "good");
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
