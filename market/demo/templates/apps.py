# ruff: noqa: E501  -- data module: embedded JavaScript and UI strings are kept one statement/phrase per line.
"""JavaScript app engines for generated demo bundles.

Every bundle's ``app.js`` is ``"use strict"`` + ``const CONFIG = {...}`` + :data:`PRELUDE_JS`
+ one engine from :data:`ENGINES` + the optional feature blocks it enables. Engines
read everything user-visible (labels, units, goals, option lists) from ``CONFIG``,
so a fork that changes units or adds a field shows up as a readable line diff of
``CONFIG`` (and of ``index.html``), while the logic stays a real, working app.

The JS deliberately uses a small DOM surface (getElementById, createElement,
textContent, addEventListener, canvas 2D) and never ``innerHTML``: whatever
people type into a log can't turn into markup, and the unit tests can smoke-run
every engine in Node against a tiny DOM stand-in.
"""

from __future__ import annotations

PRELUDE_JS = r"""
const T = CONFIG.ui;
const FEATURES = [];

function $(id) {
  return document.getElementById(id);
}

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function clear(node) {
  while (node && node.firstChild) node.removeChild(node.firstChild);
}

function load(suffix, fallback) {
  try {
    const raw = localStorage.getItem(CONFIG.storeKey + (suffix || ""));
    return raw === null ? fallback : JSON.parse(raw);
  } catch (err) {
    return fallback;
  }
}

function save(value, suffix) {
  localStorage.setItem(CONFIG.storeKey + (suffix || ""), JSON.stringify(value));
}

function pad(n) {
  return String(n).padStart(2, "0");
}

function dayKey(date) {
  const d = date || new Date();
  return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate());
}

function addDays(key, n) {
  const d = new Date(key + "T12:00:00");
  d.setDate(d.getDate() + n);
  return dayKey(d);
}

function daysBetween(a, b) {
  return Math.round((new Date(b + "T12:00:00") - new Date(a + "T12:00:00")) / 86400000);
}

function lastDays(n) {
  const today = dayKey();
  const out = [];
  for (let i = n - 1; i >= 0; i--) out.push(addDays(today, -i));
  return out;
}

function clock(iso) {
  const d = new Date(iso);
  return pad(d.getHours()) + ":" + pad(d.getMinutes());
}

function uid() {
  return Date.now().toString(36) + Math.random().toString(36).slice(2, 7);
}

function num(value) {
  const n = parseFloat(value);
  return isNaN(n) ? 0 : n;
}

function fmt(n, digits) {
  const max = digits === undefined ? 1 : digits;
  return num(n).toLocaleString(CONFIG.locale, { maximumFractionDigits: max });
}

function money(n) {
  return num(n).toLocaleString(CONFIG.locale, { style: "currency", currency: CONFIG.currency || "USD" });
}

function shortDay(key) {
  return String(key).slice(5);
}

function field(name) {
  return CONFIG.fields.find((f) => f.name === name) || { name: name, label: name, unit: "" };
}

function optionLabel(name, value) {
  const hit = (field(name).options || []).find((o) => String(o[0]) === String(value));
  return hit ? hit[1] : String(value === undefined ? "" : value);
}

function readFields() {
  const out = {};
  CONFIG.fields.forEach((f) => {
    const input = $("f-" + f.name);
    if (!input) return;
    if (f.type === "number" || f.type === "range") out[f.name] = num(input.value);
    else if (f.type === "checkbox") out[f.name] = Boolean(input.checked);
    else out[f.name] = String(input.value || "").trim();
  });
  return out;
}

function resetFields() {
  CONFIG.fields.forEach((f) => {
    const input = $("f-" + f.name);
    // Selects keep their value: the next entry is usually the same exercise/meal/child.
    if (!input || f.type === "select") return;
    if (f.type === "checkbox") input.checked = Boolean(f.default);
    else if (f.type === "date") input.value = dayKey();
    else input.value = f.default === undefined ? "" : f.default;
  });
}

function extraText(item) {
  return CONFIG.fields
    .filter((f) => f.extra)
    .map((f) => {
      const v = item[f.name];
      if (f.type === "checkbox") return v ? f.label : "";
      if (v === undefined || v === "" || (v === 0 && f.type !== "range")) return "";
      if (f.type === "select") return f.label + ": " + optionLabel(f.name, v);
      return f.label + ": " + v + (f.unit ? " " + f.unit : "");
    })
    .filter(Boolean)
    .join(" · ");
}

function withExtra(text, item) {
  const extra = extraText(item);
  return extra ? text + " · " + extra : text;
}

function showWarnings(items) {
  const box = $("warnings");
  if (!box) return;
  const notes = [];
  CONFIG.fields.forEach((f) => {
    if (f.warnAbove === undefined) return;
    const worst = items.reduce((m, i) => Math.max(m, num(i[f.name])), 0);
    if (worst > f.warnAbove) notes.push(f.warning + " (" + f.label + ": " + fmt(worst) + ")");
  });
  box.textContent = notes.join(" ");
  box.hidden = notes.length === 0;
}

function confirmDelete() {
  return !CONFIG.features.confirmDelete || window.confirm(T.confirmDelete);
}

function button(text, cls, onClick) {
  const b = el("button", cls, text);
  b.type = "button";
  b.addEventListener("click", onClick);
  return b;
}

function deleteButton(onDelete) {
  return button(T.delete, "del", () => {
    if (confirmDelete()) onDelete();
  });
}

function onSubmit(handler, formId) {
  const form = $(formId || "entry-form");
  if (!form) return;
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    if (handler(readFields()) !== false && !formId) resetFields();
  });
}

function makeLog(suffix) {
  const log = { items: load(suffix, []) };
  log.add = (values) => {
    const item = Object.assign({ id: uid(), day: dayKey(), at: new Date().toISOString() }, values);
    if (values.date) item.day = values.date;
    log.items.push(item);
    save(log.items, suffix);
    return item;
  };
  log.remove = (id) => {
    log.items = log.items.filter((i) => i.id !== id);
    save(log.items, suffix);
  };
  log.onDay = (day) => log.items.filter((i) => i.day === day);
  log.since = (days) => {
    const from = addDays(dayKey(), -(days - 1));
    return log.items.filter((i) => i.day >= from);
  };
  log.sumByDay = (days, fn) => days.map((d) => log.onDay(d).reduce((s, i) => s + fn(i), 0));
  log.streak = () => {
    let d = dayKey();
    if (!log.onDay(d).length) d = addDays(d, -1);
    let n = 0;
    while (log.onDay(d).length) {
      n += 1;
      d = addDays(d, -1);
    }
    return n;
  };
  return log;
}

function renderList(container, items, describe, onDelete) {
  if (!container) return;
  clear(container);
  showWarnings(items);
  if (!items.length) {
    container.appendChild(el("li", "empty", T.empty));
    return;
  }
  items.slice().reverse().forEach((item) => {
    const li = el("li", "item");
    li.appendChild(el("span", "item-text", describe(item)));
    if (onDelete) li.appendChild(deleteButton(() => onDelete(item)));
    container.appendChild(li);
  });
}

function progress(fillId, value, target, lowerIsBetter) {
  const fill = $(fillId);
  if (!fill) return;
  const pct = target > 0 ? Math.min(100, Math.round((100 * value) / target)) : 0;
  fill.style.width = pct + "%";
  fill.className = "fill" + (value >= target && target > 0 ? (lowerIsBetter ? " warn" : " good") : "");
}

function progressRow(container, label, value, target, text, mode) {
  // mode: "goal" (green when reached), "limit" (red when exceeded) or "plain".
  const row = el("div", "bar-row");
  row.appendChild(el("span", "bar-label", label));
  const track = el("div", "bar-track");
  let cls = "bar-fill";
  if (mode === "goal" && target > 0 && value >= target) cls += " good";
  if (mode === "limit" && value > target) cls += " warn";
  const fill = el("div", cls);
  fill.style.width = (target > 0 ? Math.min(100, Math.round((100 * value) / target)) : 0) + "%";
  track.appendChild(fill);
  row.appendChild(track);
  row.appendChild(el("span", "bar-value", text));
  container.appendChild(row);
}

function cssBars(container, rows, unit) {
  if (!container) return;
  clear(container);
  const max = Math.max(1, ...rows.map((r) => r.value));
  rows.forEach((r) => progressRow(container, r.label, r.value, max, fmt(r.value) + (unit ? " " + unit : ""), "plain"));
  if (!rows.length) container.appendChild(el("p", "empty", T.empty));
}

function barChart(canvas, labels, values, goal) {
  if (!canvas || !canvas.getContext) return;
  const ctx = canvas.getContext("2d");
  if (!ctx) return;
  const w = canvas.width;
  const h = canvas.height;
  const m = 22;
  const max = Math.max(goal || 0, 1, ...values);
  const slot = (w - m * 2) / Math.max(1, values.length);
  const every = Math.max(1, Math.ceil(values.length / 10));
  ctx.clearRect(0, 0, w, h);
  ctx.font = "10px sans-serif";
  values.forEach((v, i) => {
    const bh = ((h - m * 2) * v) / max;
    ctx.fillStyle = goal && v >= goal ? CONFIG.theme.good : CONFIG.theme.accent;
    ctx.fillRect(m + i * slot + 2, h - m - bh, Math.max(1, slot - 4), bh);
    if (i % every === 0) {
      ctx.fillStyle = CONFIG.theme.muted;
      ctx.fillText(labels[i], m + i * slot, h - 6);
    }
  });
  if (goal) {
    const y = h - m - ((h - m * 2) * goal) / max;
    ctx.strokeStyle = CONFIG.theme.good;
    ctx.beginPath();
    ctx.moveTo(m, y);
    ctx.lineTo(w - m, y);
    ctx.stroke();
  }
}

function lineChart(canvas, labels, series, goal) {
  if (!canvas || !canvas.getContext) return;
  const ctx = canvas.getContext("2d");
  if (!ctx) return;
  const w = canvas.width;
  const h = canvas.height;
  const m = 22;
  const all = [];
  series.forEach((s) => s.values.forEach((v) => { if (v !== null) all.push(v); }));
  if (goal) all.push(goal);
  ctx.clearRect(0, 0, w, h);
  if (!all.length) return;
  const lo = Math.min(...all);
  const span = Math.max(...all) - lo || 1;
  const x = (i) => m + ((w - m * 2) * i) / Math.max(1, labels.length - 1);
  const y = (v) => h - m - ((h - m * 2) * (v - lo)) / span;
  ctx.font = "10px sans-serif";
  ctx.fillStyle = CONFIG.theme.muted;
  ctx.fillText(fmt(lo + span), 2, m - 6);
  ctx.fillText(fmt(lo), 2, h - 6);
  series.forEach((s) => {
    ctx.strokeStyle = s.color;
    ctx.beginPath();
    let started = false;
    s.values.forEach((v, i) => {
      if (v === null) return;
      if (started) ctx.lineTo(x(i), y(v));
      else ctx.moveTo(x(i), y(v));
      started = true;
    });
    ctx.stroke();
  });
  if (goal) {
    ctx.strokeStyle = CONFIG.theme.good;
    ctx.beginPath();
    ctx.moveTo(m, y(goal));
    ctx.lineTo(w - m, y(goal));
    ctx.stroke();
  }
}
"""

# --------------------------------------------------------------------------- engines
# One entry per kind of app. Each defines render() and init(); the bootstrap at the
# end of app.js calls init() and then every enabled feature.

ENGINES: dict[str, str] = {}

ENGINES["tally"] = r"""
// Daily quantity against a goal (water, caffeine, steps, screen time...).
const LOG = makeLog();

function amountOf(item) {
  return num(item.amount);
}

function render() {
  const items = LOG.onDay(dayKey());
  const total = items.reduce((s, i) => s + amountOf(i), 0);
  const limit = CONFIG.goalMode === "atMost";
  $("today-total").textContent = fmt(total) + " / " + fmt(CONFIG.goal) + " " + CONFIG.unit;
  progress("progress-fill", total, CONFIG.goal, limit);
  const left = CONFIG.goal - total;
  let status;
  if (limit) status = left >= 0 ? fmt(left) + " " + CONFIG.unit + " " + T.left : T.overLimit;
  else status = left > 0 ? fmt(left) + " " + CONFIG.unit + " " + T.toGo : T.goalReached;
  $("status").textContent = status + " · " + T.streak + ": " + LOG.streak() + " " + T.days;
  renderList($("list"), items, (i) => withExtra(clock(i.at) + " — " + fmt(amountOf(i)) + " " + CONFIG.unit, i), (i) => {
    LOG.remove(i.id);
    render();
  });
  if (CONFIG.groupBy) {
    const groups = {};
    items.forEach((i) => {
      const key = optionLabel(CONFIG.groupBy, i[CONFIG.groupBy]);
      groups[key] = (groups[key] || 0) + amountOf(i);
    });
    cssBars($("groups"), Object.keys(groups).map((k) => ({ label: k, value: groups[k] })), CONFIG.unit);
  }
  const days = lastDays(CONFIG.chartDays);
  barChart($("chart"), days.map(shortDay), LOG.sumByDay(days, amountOf), limit ? 0 : CONFIG.goal);
}

function init() {
  const quick = $("quick");
  CONFIG.quick.forEach((q) => {
    quick.appendChild(button("+" + fmt(q) + " " + CONFIG.unit, "quick", () => {
      LOG.add(Object.assign(readFields(), { amount: q }));
      render();
    }));
  });
  onSubmit((v) => {
    if (!(v.amount > 0)) return false;
    LOG.add(v);
    render();
    return true;
  });
  render();
}
"""

ENGINES["nutrition"] = r"""
// Food log with calories and macros against daily targets.
const LOG = makeLog();
const MACROS = Object.keys(CONFIG.targets);

function render() {
  const items = LOG.onDay(dayKey());
  const totals = {};
  MACROS.forEach((m) => {
    totals[m] = items.reduce((s, i) => s + num(i[m]), 0);
  });
  $("today-total").textContent = fmt(totals.kcal, 0) + " / " + fmt(CONFIG.targets.kcal, 0) + " kcal";
  const left = CONFIG.targets.kcal - totals.kcal;
  $("status").textContent = left >= 0 ? fmt(left, 0) + " kcal " + T.left : T.overLimit;
  progress("progress-fill", totals.kcal, CONFIG.targets.kcal, true);
  const box = $("macros");
  clear(box);
  MACROS.filter((m) => m !== "kcal").forEach((m) => {
    const f = field(m);
    const text = fmt(totals[m], 0) + " / " + fmt(CONFIG.targets[m], 0) + " " + (f.unit || "");
    progressRow(box, f.label, totals[m], CONFIG.targets[m], text, f.limit ? "limit" : "goal");
  });
  renderList($("list"), items, (i) => withExtra(optionLabel("meal", i.meal) + ": " + (i.food || "?") + " — " + fmt(i.kcal, 0) + " kcal", i), (i) => {
    LOG.remove(i.id);
    render();
  });
  const days = lastDays(CONFIG.chartDays);
  barChart($("chart"), days.map(shortDay), LOG.sumByDay(days, (i) => num(i.kcal)), CONFIG.targets.kcal);
}

function init() {
  onSubmit((v) => {
    if (!v.food && !v.kcal) return false;
    LOG.add(v);
    render();
    return true;
  });
  render();
}
"""

ENGINES["workout"] = r"""
// Sets x reps x weight, training volume per day and personal bests per exercise.
const LOG = makeLog();

function volume(i) {
  return num(i.sets) * num(i.reps) * num(i.weight);
}

function render() {
  const todays = LOG.onDay(dayKey());
  $("today-total").textContent = T.volume + ": " + fmt(todays.reduce((s, i) => s + volume(i), 0), 0) + " " + CONFIG.unit;
  $("status").textContent = T.streak + ": " + LOG.streak() + " " + T.days;
  const describe = (i) => shortDay(i.day) + " · " + optionLabel("exercise", i.exercise) + " " + fmt(i.sets, 0) + "×" + fmt(i.reps, 0) + " @ " + fmt(i.weight) + " " + CONFIG.unit;
  renderList($("list"), LOG.since(14), (i) => withExtra(describe(i), i), (i) => {
    LOG.remove(i.id);
    render();
  });
  const best = {};
  LOG.items.forEach((i) => {
    const key = optionLabel("exercise", i.exercise);
    best[key] = Math.max(best[key] || 0, num(i.weight));
  });
  cssBars($("records"), Object.keys(best).map((k) => ({ label: k, value: best[k] })), CONFIG.unit);
  const days = lastDays(CONFIG.chartDays);
  barChart($("chart"), days.map(shortDay), LOG.sumByDay(days, volume), 0);
}

function init() {
  onSubmit((v) => {
    if (!(v.sets > 0 && v.reps > 0)) return false;
    LOG.add(v);
    render();
    return true;
  });
  render();
}
"""

ENGINES["distance"] = r"""
// Runs, rides and walks: weekly distance against a goal, pace per outing.
const LOG = makeLog();

function pace(i) {
  const d = num(i.distance);
  const m = num(i.minutes);
  if (!d || !m) return "–";
  const p = m / d;
  let mm = Math.floor(p);
  let ss = Math.round((p - mm) * 60);
  if (ss === 60) {
    mm += 1;
    ss = 0;
  }
  return mm + ":" + pad(ss) + " /" + CONFIG.unit;
}

function render() {
  const weekTotal = LOG.since(7).reduce((s, i) => s + num(i.distance), 0);
  $("today-total").textContent = T.thisWeek + ": " + fmt(weekTotal) + " / " + fmt(CONFIG.weeklyGoal) + " " + CONFIG.unit;
  progress("progress-fill", weekTotal, CONFIG.weeklyGoal, false);
  const all = LOG.items.reduce((s, i) => s + num(i.distance), 0);
  const longest = LOG.items.reduce((m, i) => Math.max(m, num(i.distance)), 0);
  $("status").textContent = CONFIG.co2PerUnit
    ? T.co2 + ": " + fmt(all * CONFIG.co2PerUnit) + " kg"
    : T.longest + ": " + fmt(longest) + " " + CONFIG.unit;
  const describe = (i) => shortDay(i.day) + " · " + fmt(i.distance) + " " + CONFIG.unit + " · " + fmt(i.minutes, 0) + " " + T.minutes + " · " + pace(i);
  renderList($("list"), LOG.since(30), (i) => withExtra(describe(i), i), (i) => {
    LOG.remove(i.id);
    render();
  });
  const days = lastDays(CONFIG.chartDays);
  barChart($("chart"), days.map(shortDay), LOG.sumByDay(days, (i) => num(i.distance)), 0);
}

function init() {
  onSubmit((v) => {
    if (!(v.distance > 0)) return false;
    LOG.add(v);
    render();
    return true;
  });
  render();
}
"""

ENGINES["timer"] = r"""
// Practice stopwatch: time a session, save it against a focus, daily minutes goal.
const LOG = makeLog();
let startedAt = null;
let elapsed = 0;
let ticker = null;

function seconds() {
  return elapsed + (startedAt ? (Date.now() - startedAt) / 1000 : 0);
}

function showClock() {
  const s = Math.floor(seconds());
  $("clock").textContent = pad(Math.floor(s / 60)) + ":" + pad(s % 60);
}

function toggle() {
  if (startedAt) {
    elapsed = seconds();
    startedAt = null;
    clearInterval(ticker);
    $("start").textContent = T.start;
  } else {
    startedAt = Date.now();
    ticker = setInterval(showClock, 1000);
    $("start").textContent = T.pause;
  }
  showClock();
}

function resetClock() {
  clearInterval(ticker);
  startedAt = null;
  elapsed = 0;
  $("start").textContent = T.start;
  showClock();
}

function render() {
  const today = LOG.onDay(dayKey()).reduce((s, i) => s + num(i.minutes), 0);
  $("today-total").textContent = fmt(today, 0) + " / " + fmt(CONFIG.dailyGoal, 0) + " " + T.minutes;
  progress("progress-fill", today, CONFIG.dailyGoal, false);
  $("status").textContent = T.streak + ": " + LOG.streak() + " " + T.days;
  const per = {};
  LOG.since(7).forEach((i) => {
    const key = optionLabel("focus", i.focus);
    per[key] = (per[key] || 0) + num(i.minutes);
  });
  cssBars($("groups"), Object.keys(per).map((k) => ({ label: k, value: per[k] })), T.minutes);
  const describe = (i) => shortDay(i.day) + " · " + optionLabel("focus", i.focus) + " · " + fmt(i.minutes, 0) + " " + T.minutes;
  renderList($("list"), LOG.since(14), (i) => withExtra(describe(i), i), (i) => {
    LOG.remove(i.id);
    render();
  });
  const days = lastDays(CONFIG.chartDays);
  barChart($("chart"), days.map(shortDay), LOG.sumByDay(days, (i) => num(i.minutes)), CONFIG.dailyGoal);
}

function init() {
  $("start").addEventListener("click", toggle);
  $("reset").addEventListener("click", resetClock);
  onSubmit((v) => {
    // A typed number wins; otherwise the stopwatch decides (at least one minute).
    const minutes = v.minutes > 0 ? v.minutes : Math.max(1, Math.round(seconds() / 60));
    LOG.add(Object.assign(v, { minutes: minutes }));
    resetClock();
    render();
    return true;
  });
  showClock();
  render();
}
"""

ENGINES["pomodoro"] = r"""
// Focus/break cycles; finished focus blocks are counted against the current task.
const LOG = makeLog();
const TASKS = makeLog(".tasks");
let phase = "work";
let remaining = CONFIG.workMinutes * 60;
let endsAt = null;
let ticker = null;
let completed = 0;
let current = load(".current", "");

function phaseLength(p) {
  if (p === "work") return CONFIG.workMinutes * 60;
  return (p === "long" ? CONFIG.longBreakMinutes : CONFIG.breakMinutes) * 60;
}

function tick() {
  if (endsAt) remaining = Math.max(0, Math.round((endsAt - Date.now()) / 1000));
  $("clock").textContent = pad(Math.floor(remaining / 60)) + ":" + pad(remaining % 60);
  $("phase").textContent = T[phase] + (current ? " · " + current : "");
  if (endsAt && remaining === 0) finishPhase(true);
}

function stopTicker() {
  clearInterval(ticker);
  endsAt = null;
  $("start").textContent = T.start;
}

function finishPhase(counted) {
  stopTicker();
  if (phase === "work") {
    if (counted) {
      LOG.add({ task: current, minutes: CONFIG.workMinutes });
      completed += 1;
    }
    phase = completed > 0 && completed % CONFIG.longEvery === 0 ? "long" : "break";
  } else {
    phase = "work";
  }
  remaining = phaseLength(phase);
  tick();
  render();
}

function toggle() {
  if (endsAt) {
    remaining = Math.max(0, Math.round((endsAt - Date.now()) / 1000));
    stopTicker();
  } else {
    endsAt = Date.now() + remaining * 1000;
    ticker = setInterval(tick, 1000);
    $("start").textContent = T.pause;
  }
  tick();
}

function render() {
  const today = LOG.onDay(dayKey());
  $("today-total").textContent = today.length + " / " + CONFIG.dailyGoal + " 🍅";
  progress("progress-fill", today.length, CONFIG.dailyGoal, false);
  const minutes = today.reduce((s, i) => s + num(i.minutes), 0);
  $("status").textContent = fmt(minutes, 0) + " " + T.minutes + " · " + T.streak + ": " + LOG.streak() + " " + T.days;
  const list = $("tasks");
  clear(list);
  TASKS.items.forEach((task) => {
    const count = today.filter((i) => i.task === task.title).length;
    const li = el("li", task.title === current ? "item active" : "item");
    li.appendChild(button(task.title + " (" + count + ")", "link", () => {
      current = task.title;
      save(current, ".current");
      tick();
      render();
    }));
    li.appendChild(deleteButton(() => {
      TASKS.remove(task.id);
      if (current === task.title) current = "";
      render();
    }));
    list.appendChild(li);
  });
  if (!TASKS.items.length) list.appendChild(el("li", "empty", T.empty));
  const days = lastDays(CONFIG.chartDays);
  barChart($("chart"), days.map(shortDay), LOG.sumByDay(days, () => 1), CONFIG.dailyGoal);
}

function init() {
  $("start").addEventListener("click", toggle);
  $("skip").addEventListener("click", () => finishPhase(false));
  onSubmit((v) => {
    if (!v.title) return false;
    TASKS.add({ title: v.title });
    if (!current) current = v.title;
    render();
    tick();
    return true;
  });
  tick();
  render();
}
"""

ENGINES["mood"] = r"""
// Check-ins on a 1..n scale with tags; daily average chart and tag counts.
const LOG = makeLog();
const chosenTags = {};
let picked = null;

function scaleLabel(v) {
  const hit = CONFIG.scale.find((s) => s[0] === v);
  return hit ? hit[2] + " " + hit[1] : "?";
}

function tagLabel(id) {
  const hit = CONFIG.tags.find((t) => t[0] === id);
  return hit ? hit[1] : id;
}

function paintScale() {
  const box = $("scale");
  clear(box);
  CONFIG.scale.forEach((s) => {
    box.appendChild(button(s[2] + " " + s[1], s[0] === picked ? "chip on" : "chip", () => {
      picked = s[0];
      paintScale();
    }));
  });
}

function paintTags() {
  const box = $("tags");
  clear(box);
  CONFIG.tags.forEach((t) => {
    box.appendChild(button(t[1], chosenTags[t[0]] ? "chip on" : "chip", () => {
      chosenTags[t[0]] = !chosenTags[t[0]];
      paintTags();
    }));
  });
}

function render() {
  if (CONFIG.prompts.length) {
    const n = Math.floor(Date.now() / 86400000) % CONFIG.prompts.length;
    $("prompt").textContent = CONFIG.prompts[n];
  }
  const days = lastDays(CONFIG.chartDays);
  const avg = days.map((d) => {
    const items = LOG.onDay(d);
    return items.length ? items.reduce((s, i) => s + num(i.mood), 0) / items.length : 0;
  });
  const logged = avg.filter((v) => v > 0);
  const mean = logged.length ? logged.reduce((a, b) => a + b, 0) / logged.length : 0;
  $("today-total").textContent = T.average + ": " + (mean ? fmt(mean) : "–") + " / " + CONFIG.scale.length;
  $("status").textContent = T.streak + ": " + LOG.streak() + " " + T.days;
  const counts = {};
  LOG.since(30).forEach((i) => (i.tags || []).forEach((t) => {
    counts[t] = (counts[t] || 0) + 1;
  }));
  cssBars($("groups"), CONFIG.tags.filter((t) => counts[t[0]]).map((t) => ({ label: t[1], value: counts[t[0]] })), "");
  const describe = (i) => shortDay(i.day) + " " + clock(i.at) + " · " + scaleLabel(i.mood) +
    (i.tags && i.tags.length ? " · " + i.tags.map(tagLabel).join(", ") : "") + (i.note ? " — " + i.note : "");
  renderList($("list"), LOG.since(14), (i) => withExtra(describe(i), i), (i) => {
    LOG.remove(i.id);
    render();
  });
  barChart($("chart"), days.map(shortDay), avg, 0);
}

function init() {
  paintScale();
  paintTags();
  onSubmit((v) => {
    if (picked === null) {
      $("status").textContent = T.pickMood;
      return false;
    }
    const tags = CONFIG.tags.filter((t) => chosenTags[t[0]]).map((t) => t[0]);
    LOG.add(Object.assign(v, { mood: picked, tags: tags }));
    picked = null;
    Object.keys(chosenTags).forEach((k) => {
      chosenTags[k] = false;
    });
    paintScale();
    paintTags();
    render();
    return true;
  });
  render();
}
"""

ENGINES["span"] = r"""
// Start/end times -> hours (sleep, naps, fasting windows); crosses midnight.
const LOG = makeLog();

function hoursOf(i) {
  const a = String(i.start || "").split(":").map(Number);
  const b = String(i.end || "").split(":").map(Number);
  if (a.length < 2 || b.length < 2 || a.concat(b).some((n) => isNaN(n))) return 0;
  let mins = b[0] * 60 + b[1] - (a[0] * 60 + a[1]);
  if (mins <= 0) mins += 1440;
  return mins / 60;
}

function hm(h) {
  const total = Math.round(h * 60);
  return Math.floor(total / 60) + " " + T.hours + " " + pad(total % 60) + " " + T.minutes;
}

function render() {
  const days = lastDays(CONFIG.chartDays);
  const perDay = LOG.sumByDay(days, hoursOf);
  const week = perDay.slice(-7).filter((h) => h > 0);
  const avg = week.length ? week.reduce((a, b) => a + b, 0) / week.length : 0;
  const last = LOG.items.length ? hoursOf(LOG.items[LOG.items.length - 1]) : 0;
  $("today-total").textContent = T.latest + ": " + (last ? hm(last) : "–");
  $("status").textContent = T.average + " (7 " + T.days + "): " + (avg ? hm(avg) : "–") + " · " + T.goal + ": " + hm(CONFIG.goalHours);
  progress("progress-fill", avg, CONFIG.goalHours, false);
  const describe = (i) => shortDay(i.day) + " · " + (i.kind ? optionLabel("kind", i.kind) + " · " : "") +
    i.start + "–" + i.end + " · " + hm(hoursOf(i)) + (i.quality ? " · " + optionLabel("quality", i.quality) : "");
  renderList($("list"), LOG.since(14), (i) => withExtra(describe(i), i), (i) => {
    LOG.remove(i.id);
    render();
  });
  barChart($("chart"), days.map(shortDay), perDay, CONFIG.goalHours);
}

function init() {
  onSubmit((v) => {
    if (!hoursOf(v)) return false;
    LOG.add(v);
    render();
    return true;
  });
  render();
}
"""

ENGINES["budget"] = r"""
// Income and expenses for the current month, per-category spending vs limits.
const LOG = makeLog();

function render() {
  const month = dayKey().slice(0, 7);
  const items = LOG.items.filter((i) => String(i.day).slice(0, 7) === month);
  const income = items.filter((i) => i.kind === "income").reduce((s, i) => s + num(i.amount), 0);
  const spent = items.filter((i) => i.kind !== "income").reduce((s, i) => s + num(i.amount), 0);
  $("today-total").textContent = T.balance + ": " + money(income - spent);
  $("status").textContent = T.income + " " + money(income) + " · " + T.expense + " " + money(spent);
  const byCat = {};
  items.filter((i) => i.kind !== "income").forEach((i) => {
    byCat[i.category] = (byCat[i.category] || 0) + num(i.amount);
  });
  const box = $("groups");
  clear(box);
  (field("category").options || []).forEach((o) => {
    const here = byCat[o[0]] || 0;
    const limit = CONFIG.limits[o[0]];
    if (!here && !limit) return;
    progressRow(box, o[1], here, limit || spent || 1, money(here) + (limit ? " / " + money(limit) : ""), limit ? "limit" : "plain");
  });
  const describe = (i) => shortDay(i.day) + " · " + (i.kind === "income" ? "+" : "−") + money(i.amount) + " · " +
    optionLabel("category", i.category) + (i.note ? " · " + i.note : "");
  renderList($("list"), items, (i) => withExtra(describe(i), i), (i) => {
    LOG.remove(i.id);
    render();
  });
  const days = lastDays(CONFIG.chartDays);
  barChart($("chart"), days.map(shortDay), LOG.sumByDay(days, (i) => (i.kind === "income" ? 0 : num(i.amount))), 0);
}

function init() {
  onSubmit((v) => {
    if (!(v.amount > 0)) return false;
    LOG.add(v);
    render();
    return true;
  });
  render();
}
"""

ENGINES["savings"] = r"""
// Savings goals (or kids' jars) with deposits, progress and a projected finish date.
const GOALS = makeLog(".goals");

function savedIn(goal) {
  return (goal.deposits || []).reduce((s, d) => s + num(d.amount), 0);
}

function projection(goal) {
  const deps = goal.deposits || [];
  const left = num(goal.target) - savedIn(goal);
  if (left <= 0) return T.goalReached;
  if (deps.length < 2) return "";
  const perDay = savedIn(goal) / Math.max(1, daysBetween(deps[0].day, dayKey()));
  return perDay > 0 ? T.projected + " " + addDays(dayKey(), Math.ceil(left / perDay)) : "";
}

function deposit(goal, amount) {
  if (!(amount > 0)) return;
  goal.deposits = (goal.deposits || []).concat([{ day: dayKey(), amount: amount }]);
  save(GOALS.items, ".goals");
}

function render() {
  const total = GOALS.items.reduce((s, g) => s + savedIn(g), 0);
  const target = GOALS.items.reduce((s, g) => s + num(g.target), 0);
  $("today-total").textContent = money(total) + " / " + money(target);
  progress("progress-fill", total, target, false);
  $("status").textContent = GOALS.items.filter((g) => savedIn(g) >= num(g.target)).length + " / " + GOALS.items.length + " " + T.goalReached;
  const box = $("goals");
  clear(box);
  GOALS.items.forEach((g) => {
    const card = el("div", "card");
    card.appendChild(el("h3", "", g.name));
    progressRow(card, money(savedIn(g)), savedIn(g), num(g.target), money(g.target), "goal");
    card.appendChild(el("p", "muted", projection(g)));
    const input = el("input", "amount");
    input.type = "number";
    input.min = "0";
    input.step = String(CONFIG.step);
    card.appendChild(input);
    card.appendChild(button(T.contribute, "", () => {
      deposit(g, num(input.value));
      render();
    }));
    card.appendChild(deleteButton(() => {
      GOALS.remove(g.id);
      render();
    }));
    box.appendChild(card);
  });
  if (!GOALS.items.length) box.appendChild(el("p", "empty", T.empty));
}

function payAllowance() {
  const rule = CONFIG.allowance;
  rule.split.forEach((part) => {
    const goal = GOALS.items.find((g) => g.name === part[0]);
    if (goal) deposit(goal, Math.round(rule.amount * part[1]) / 100);
  });
  render();
}

function init() {
  if (!GOALS.items.length && !load(".seeded", false)) {
    CONFIG.starter.forEach((g) => GOALS.add({ name: g[0], target: g[1], deposits: [] }));
    save(true, ".seeded");
  }
  const pay = $("allowance");
  if (pay && CONFIG.allowance) pay.addEventListener("click", payAllowance);
  onSubmit((v) => {
    if (!v.name || !(v.target > 0)) return false;
    GOALS.add({ name: v.name, target: v.target, deposits: [] });
    render();
    return true;
  });
  render();
}
"""

ENGINES["split"] = r"""
// Shared expenses between people, balances and the fewest transfers to settle up.
const LOG = makeLog();
let people = load(".people", null) || CONFIG.people.slice();

function paintPayers() {
  const select = $("f-payer");
  const keep = select.value;
  clear(select);
  people.forEach((p) => {
    const o = el("option", "", p);
    o.value = p;
    select.appendChild(o);
  });
  if (people.indexOf(keep) >= 0) select.value = keep;
}

function balances() {
  const bal = {};
  people.forEach((p) => {
    bal[p] = 0;
  });
  LOG.items.forEach((e) => {
    const among = e.among && e.among.length ? e.among : people;
    const share = num(e.amount) / among.length;
    bal[e.payer] = (bal[e.payer] || 0) + num(e.amount);
    among.forEach((p) => {
      bal[p] = (bal[p] || 0) - share;
    });
  });
  return bal;
}

function settle(bal) {
  const debt = Object.keys(bal).filter((p) => bal[p] < -0.005).map((p) => [p, -bal[p]]);
  const cred = Object.keys(bal).filter((p) => bal[p] > 0.005).map((p) => [p, bal[p]]);
  debt.sort((a, b) => b[1] - a[1]);
  cred.sort((a, b) => b[1] - a[1]);
  const moves = [];
  let i = 0;
  let j = 0;
  while (i < debt.length && j < cred.length) {
    const amt = Math.min(debt[i][1], cred[j][1]);
    moves.push(debt[i][0] + " " + T.pays + " " + cred[j][0] + " " + money(amt));
    debt[i][1] -= amt;
    cred[j][1] -= amt;
    if (debt[i][1] < 0.005) i += 1;
    if (cred[j][1] < 0.005) j += 1;
  }
  return moves;
}

function render() {
  paintPayers();
  const total = LOG.items.reduce((s, e) => s + num(e.amount), 0);
  $("today-total").textContent = T.total + ": " + money(total);
  $("status").textContent = T.perPerson + ": " + money(people.length ? total / people.length : 0);
  const bal = balances();
  const box = $("groups");
  clear(box);
  people.forEach((p) => box.appendChild(el("div", bal[p] < 0 ? "bar-row warn" : "bar-row", p + ": " + money(bal[p]))));
  const out = $("settle");
  clear(out);
  const moves = settle(bal);
  (moves.length ? moves : [T.allSettled]).forEach((m) => out.appendChild(el("li", "item", m)));
  renderList($("list"), LOG.items, (e) => withExtra(shortDay(e.day) + " · " + (e.what || "?") + " · " + money(e.amount) + " · " + e.payer, e), (e) => {
    LOG.remove(e.id);
    render();
  });
}

function init() {
  onSubmit((v) => {
    if (!(v.amount > 0) || !v.payer) return false;
    LOG.add(Object.assign(v, { among: people.slice() }));
    render();
    return true;
  });
  onSubmit(() => {
    const input = $("person-name");
    const name = String(input.value || "").trim();
    if (name && people.indexOf(name) < 0) {
      people.push(name);
      save(people, ".people");
    }
    input.value = "";
    render();
    return false;
  }, "person-form");
  render();
}
"""

ENGINES["checklist"] = r"""
// Sectioned checklist with due dates counted from a target day (move, due date, trip).
const CUSTOM = makeLog(".custom");
let done = load(".done", {});

function targetDate() {
  return load(".target", "") || "";
}

function allItems() {
  const out = [];
  CONFIG.sections.forEach((sec, si) => {
    sec.items.forEach((it, ii) => out.push({ id: "s" + si + "i" + ii, section: si, text: it[0], offset: it[1], custom: false }));
  });
  CUSTOM.items.forEach((c) => out.push({ id: c.id, section: num(c.section), text: c.text, offset: num(c.offset), custom: true }));
  return out;
}

function dueInfo(item) {
  const target = targetDate();
  if (!target) return { text: "", late: false };
  const due = addDays(target, item.offset);
  const diff = daysBetween(dayKey(), due);
  if (done[item.id]) return { text: due, late: false };
  if (diff < 0) return { text: due + " · " + T.overdue, late: true };
  if (diff === 0) return { text: T.dueToday, late: false };
  return { text: due + " · " + T.inDays + " " + diff + " " + T.days, late: false };
}

function render() {
  const items = allItems();
  const finished = items.filter((i) => done[i.id]).length;
  $("today-total").textContent = T.progressLabel + ": " + finished + " / " + items.length;
  progress("progress-fill", finished, items.length || 1, false);
  const target = targetDate();
  $("status").textContent = CONFIG.targetLabel + ": " + (target ? target + " (" + T.inDays + " " + daysBetween(dayKey(), target) + " " + T.days + ")" : "?");
  const box = $("sections");
  clear(box);
  CONFIG.sections.forEach((sec, si) => {
    const mine = items.filter((i) => i.section === si);
    box.appendChild(el("h3", "", sec.title + " (" + mine.filter((i) => done[i.id]).length + "/" + mine.length + ")"));
    const list = el("ul", "list");
    mine.forEach((item) => {
      const info = dueInfo(item);
      const li = el("li", done[item.id] ? "item done" : info.late ? "item overdue" : "item");
      const check = el("input");
      check.type = "checkbox";
      check.checked = Boolean(done[item.id]);
      check.addEventListener("change", () => {
        done[item.id] = check.checked;
        save(done, ".done");
        render();
      });
      li.appendChild(check);
      li.appendChild(el("span", "item-text", item.text));
      if (info.text) li.appendChild(el("span", "muted", info.text));
      if (item.custom) {
        li.appendChild(deleteButton(() => {
          CUSTOM.remove(item.id);
          render();
        }));
      }
      list.appendChild(li);
    });
    box.appendChild(list);
  });
}

function init() {
  const picker = $("target-date");
  picker.value = targetDate();
  picker.addEventListener("change", () => {
    save(picker.value, ".target");
    render();
  });
  const sel = $("f-section");
  CONFIG.sections.forEach((sec, si) => {
    const o = el("option", "", sec.title);
    o.value = String(si);
    sel.appendChild(o);
  });
  onSubmit((v) => {
    if (!v.text) return false;
    CUSTOM.add({ text: v.text, section: num(v.section), offset: num(v.offset) });
    render();
    return true;
  });
  render();
}
"""

ENGINES["mealplan"] = r"""
// Weekly meal grid from a recipe box; avoided ingredients are flagged and can't be
// picked; the shopping list is scaled to the household size.
const OWN = makeLog(".recipes");
let plan = load(".plan", {});

function recipes() {
  return CONFIG.recipes.concat(OWN.items.map((r) => ({ name: r.name, tags: ["own"], ingredients: r.ingredients || [] })));
}

function flagged(recipe) {
  const text = (recipe.name + " " + recipe.tags.join(" ") + " " + recipe.ingredients.map((i) => i[0]).join(" ")).toLowerCase();
  return CONFIG.avoid.filter((word) => text.indexOf(word.toLowerCase()) >= 0);
}

function shopping() {
  const need = {};
  const factor = CONFIG.servings / CONFIG.baseServings;
  Object.keys(plan).forEach((slot) => {
    const r = recipes().find((x) => x.name === plan[slot]);
    if (!r) return;
    r.ingredients.forEach((ing) => {
      const key = ing[0] + "|" + (ing[2] || "");
      need[key] = (need[key] || 0) + num(ing[1]) * factor;
    });
  });
  return Object.keys(need).sort().map((k) => {
    const parts = k.split("|");
    return parts[0] + ": " + fmt(need[k]) + (parts[1] ? " " + parts[1] : "");
  });
}

function slotSelect(day, slot) {
  // Busy nights (practice, late shifts) only offer recipes tagged "quick".
  const busy = CONFIG.busyDays.indexOf(day) >= 0;
  const select = el("select");
  const blank = el("option", "", "—");
  blank.value = "";
  select.appendChild(blank);
  recipes().forEach((r) => {
    const warn = flagged(r);
    const o = el("option", "", r.name + (warn.length ? " ⚠ " + T.avoidWarning + " " + warn.join(", ") : ""));
    o.value = r.name;
    o.disabled = warn.length > 0 || (busy && r.tags.indexOf("quick") < 0);
    select.appendChild(o);
  });
  select.value = plan[slot] || "";
  select.addEventListener("change", () => {
    if (select.value) plan[slot] = select.value;
    else delete plan[slot];
    save(plan, ".plan");
    render();
  });
  return select;
}

function render() {
  const grid = $("grid");
  clear(grid);
  const head = el("tr");
  head.appendChild(el("th", "", ""));
  CONFIG.meals.forEach((m) => head.appendChild(el("th", "", m[1])));
  grid.appendChild(head);
  CONFIG.days.forEach((d) => {
    const row = el("tr");
    row.appendChild(el("th", "", d[1] + (CONFIG.busyDays.indexOf(d[0]) >= 0 ? " ⚡" : "")));
    CONFIG.meals.forEach((m) => {
      const cell = el("td");
      cell.appendChild(slotSelect(d[0], d[0] + "|" + m[0]));
      row.appendChild(cell);
    });
    grid.appendChild(row);
  });
  const filled = Object.keys(plan).length;
  const slots = CONFIG.days.length * CONFIG.meals.length;
  $("today-total").textContent = T.plan + ": " + filled + " / " + slots;
  $("status").textContent = CONFIG.servings + " " + T.servings + (CONFIG.avoid.length ? " · " + CONFIG.avoidLabel : "");
  progress("progress-fill", filled, slots, false);
  const list = $("list");
  clear(list);
  const lines = shopping();
  lines.forEach((line) => list.appendChild(el("li", "item", line)));
  if (!lines.length) list.appendChild(el("li", "empty", T.empty));
  renderList($("own"), OWN.items, (r) => r.name + " (" + (r.ingredients || []).length + ")", (r) => {
    OWN.remove(r.id);
    render();
  });
}

function surprise() {
  CONFIG.days.forEach((d) => CONFIG.meals.forEach((m) => {
    const busy = CONFIG.busyDays.indexOf(d[0]) >= 0;
    const pool = recipes().filter((r) => !flagged(r).length && (!busy || r.tags.indexOf("quick") >= 0));
    const slot = d[0] + "|" + m[0];
    if (!plan[slot] && pool.length) plan[slot] = pool[Math.floor(Math.random() * pool.length)].name;
  }));
  save(plan, ".plan");
  render();
}

function parseIngredients(text) {
  return String(text || "")
    .split(/\n|;/)
    .map((line) => line.split(",").map((p) => p.trim()))
    .filter((p) => p[0])
    .map((p) => [p[0], num(p[1]) || 1, p[2] || ""]);
}

function init() {
  $("surprise").addEventListener("click", surprise);
  $("clear-plan").addEventListener("click", () => {
    plan = {};
    save(plan, ".plan");
    render();
  });
  onSubmit((v) => {
    if (!v.name) return false;
    OWN.add({ name: v.name, ingredients: parseIngredients(v.ingredients) });
    render();
    return true;
  });
  render();
}
"""

ENGINES["journal"] = r"""
// Tasting/reading journal: star ratings, search, sort, top picks, average price.
const LOG = makeLog();
let sortBy = "date";
let query = "";

function stars(n) {
  const k = Math.max(0, Math.min(5, Math.round(num(n))));
  return "★★★★★".slice(0, k) + "☆☆☆☆☆".slice(0, 5 - k);
}

function describe(i) {
  const bits = CONFIG.detailFields.map((name) => {
    const f = field(name);
    const v = i[name];
    if (v === undefined || v === "" || v === 0) return "";
    if (f.type === "select") return optionLabel(name, v);
    if (f.money) return money(v);
    return String(v) + (f.unit ? " " + f.unit : "");
  }).filter(Boolean);
  return withExtra(stars(i.rating) + " " + (i.name || "?") + (bits.length ? " · " + bits.join(" · ") : "") + (i.notes ? " — " + i.notes : ""), i);
}

function render() {
  let items = LOG.items.slice();
  if (query) items = items.filter((i) => JSON.stringify(i).toLowerCase().indexOf(query) >= 0);
  // renderList shows newest last-in first, so sort ascending to show the best on top.
  if (sortBy === "rating") items.sort((a, b) => num(a.rating) - num(b.rating));
  const rated = LOG.items.filter((i) => num(i.rating) > 0);
  const avg = rated.length ? rated.reduce((s, i) => s + num(i.rating), 0) / rated.length : 0;
  $("today-total").textContent = LOG.items.length + " · " + T.average + " " + (avg ? fmt(avg) + " ★" : "–");
  const priced = CONFIG.priceField ? LOG.items.filter((i) => num(i[CONFIG.priceField]) > 0) : [];
  $("status").textContent = priced.length
    ? T.average + " " + field(CONFIG.priceField).label + ": " + money(priced.reduce((s, i) => s + num(i[CONFIG.priceField]), 0) / priced.length)
    : "";
  $("sort").textContent = sortBy === "rating" ? T.sortDate : T.sortRating;
  renderList($("list"), items, describe, (i) => {
    LOG.remove(i.id);
    render();
  });
  const box = $("top");
  clear(box);
  LOG.items.slice().sort((a, b) => num(b.rating) - num(a.rating)).slice(0, 3).forEach((i) => {
    box.appendChild(el("li", "item", stars(i.rating) + " " + i.name));
  });
}

function init() {
  $("sort").addEventListener("click", () => {
    sortBy = sortBy === "rating" ? "date" : "rating";
    render();
  });
  const search = $("search");
  search.addEventListener("input", () => {
    query = String(search.value || "").toLowerCase().trim();
    render();
  });
  onSubmit((v) => {
    if (!v.name) return false;
    LOG.add(v);
    render();
    return true;
  });
  render();
}
"""

ENGINES["habit"] = r"""
// Habit grid: tap a day to tick it, streaks per habit, daily completion chart.
const OWN = makeLog(".habits");
let marks = load(".marks", {});

function habits() {
  const base = CONFIG.habits.map((h) => ({ id: h[0], label: h[1], own: false }));
  return base.concat(OWN.items.map((h) => ({ id: h.id, label: h.label, own: true })));
}

function isDone(id, day) {
  return (marks[id] || []).indexOf(day) >= 0;
}

function toggleMark(id, day) {
  const list = marks[id] || [];
  marks[id] = isDone(id, day) ? list.filter((d) => d !== day) : list.concat([day]);
  save(marks, ".marks");
  render();
}

function streakOf(id) {
  let d = dayKey();
  if (!isDone(id, d)) d = addDays(d, -1);
  let n = 0;
  while (isDone(id, d)) {
    n += 1;
    d = addDays(d, -1);
  }
  return n;
}

function render() {
  const days = lastDays(CONFIG.chartDays);
  const today = dayKey();
  const list = habits();
  const doneToday = list.filter((h) => isDone(h.id, today)).length;
  $("today-total").textContent = T.today + ": " + doneToday + " / " + list.length;
  progress("progress-fill", doneToday, list.length || 1, false);
  $("status").textContent = T.streak + ": " + list.reduce((m, h) => Math.max(m, streakOf(h.id)), 0) + " " + T.days;
  const grid = $("grid");
  clear(grid);
  const head = el("tr");
  head.appendChild(el("th", "", ""));
  days.forEach((d) => head.appendChild(el("th", "day", d.slice(8))));
  head.appendChild(el("th", "", "🔥"));
  grid.appendChild(head);
  list.forEach((h) => {
    const row = el("tr");
    const name = el("th", "habit", h.label);
    if (h.own) {
      name.appendChild(deleteButton(() => {
        OWN.remove(h.id);
        delete marks[h.id];
        save(marks, ".marks");
        render();
      }));
    }
    row.appendChild(name);
    days.forEach((d) => {
      const cell = el("td");
      const on = isDone(h.id, d);
      cell.appendChild(button(on ? "✓" : "·", on ? "cell on" : "cell", () => toggleMark(h.id, d)));
      row.appendChild(cell);
    });
    row.appendChild(el("td", "streak", String(streakOf(h.id))));
    grid.appendChild(row);
  });
  barChart($("chart"), days.map(shortDay), days.map((d) => list.filter((h) => isDone(h.id, d)).length), list.length);
}

function init() {
  onSubmit((v) => {
    if (!v.label) return false;
    OWN.add({ label: v.label });
    render();
    return true;
  });
  render();
}
"""

ENGINES["chores"] = r"""
// Family chore chart: points per person this week, reward threshold, pocket money.
const LOG = makeLog();

function pointsOf(i) {
  const c = CONFIG.chores.find((x) => x[0] === i.chore);
  return c ? c[2] : 0;
}

function render() {
  const week = LOG.since(7);
  const totals = {};
  CONFIG.people.forEach((p) => {
    totals[p] = 0;
  });
  week.forEach((i) => {
    totals[i.who] = (totals[i.who] || 0) + pointsOf(i);
  });
  const leader = Object.keys(totals).sort((a, b) => totals[b] - totals[a])[0];
  $("today-total").textContent = T.thisWeek + ": " + week.reduce((s, i) => s + pointsOf(i), 0) + " " + T.points;
  $("status").textContent = leader && totals[leader] >= CONFIG.rewardAt
    ? leader + " — " + T.reward + " " + CONFIG.rewardLabel
    : T.goal + ": " + CONFIG.rewardAt + " " + T.points + " → " + CONFIG.rewardLabel;
  const box = $("groups");
  clear(box);
  CONFIG.people.forEach((p) => {
    const cash = CONFIG.pointValue ? " · " + money(totals[p] * CONFIG.pointValue) : "";
    progressRow(box, p, totals[p], CONFIG.rewardAt, totals[p] + " " + T.points + cash, "goal");
  });
  renderList($("list"), week, (i) => withExtra(shortDay(i.day) + " · " + i.who + " · " + optionLabel("chore", i.chore) + " (+" + pointsOf(i) + ")", i), (i) => {
    LOG.remove(i.id);
    render();
  });
}

function init() {
  onSubmit((v) => {
    if (!v.who || !v.chore) return false;
    LOG.add(v);
    render();
    return true;
  });
  render();
}
"""

ENGINES["doses"] = r"""
// Today's medicine/vitamin schedule: tick doses, late ones turn red, 7-day adherence.
const TAKEN = makeLog();
const OWN = makeLog(".meds");

function meds() {
  return CONFIG.meds.concat(OWN.items.map((m) => ({ id: m.id, name: m.name, who: m.who, times: m.times })));
}

function minutesOf(hhmm) {
  const p = String(hhmm).split(":").map(Number);
  return p[0] * 60 + (p[1] || 0);
}

function render() {
  const today = dayKey();
  const now = new Date();
  const nowMin = now.getHours() * 60 + now.getMinutes();
  const slots = [];
  meds().forEach((m) => m.times.forEach((t) => slots.push({ med: m, time: t })));
  slots.sort((a, b) => minutesOf(a.time) - minutesOf(b.time));
  const box = $("schedule");
  clear(box);
  let takenToday = 0;
  slots.forEach((s) => {
    const hit = TAKEN.items.find((t) => t.med === s.med.id && t.time === s.time && t.day === today);
    const late = !hit && nowMin > minutesOf(s.time) + CONFIG.graceMinutes;
    const li = el("li", hit ? "item done" : late ? "item overdue" : "item");
    li.appendChild(el("span", "item-text", s.time + " · " + s.med.name + (s.med.who ? " (" + s.med.who + ")" : "")));
    if (hit) {
      takenToday += 1;
      li.appendChild(el("span", "muted", T.taken + " " + clock(hit.at)));
      li.appendChild(button("↺", "del", () => {
        TAKEN.remove(hit.id);
        render();
      }));
    } else {
      li.appendChild(button(T.take, "", () => {
        TAKEN.add({ med: s.med.id, time: s.time });
        render();
      }));
    }
    box.appendChild(li);
  });
  $("today-total").textContent = T.today + ": " + takenToday + " / " + slots.length;
  progress("progress-fill", takenToday, slots.length || 1, false);
  const days = lastDays(7);
  const expected = slots.length * days.length;
  const got = TAKEN.items.filter((t) => t.day >= days[0]).length;
  $("status").textContent = T.adherence + ": " + (expected ? Math.round((100 * Math.min(got, expected)) / expected) : 0) + "%";
  renderList($("list"), OWN.items, (m) => m.name + (m.who ? " (" + m.who + ")" : "") + " · " + m.times.join(", "), (m) => {
    OWN.remove(m.id);
    render();
  });
  barChart($("chart"), days.map(shortDay), TAKEN.sumByDay(days, () => 1), slots.length);
}

function init() {
  onSubmit((v) => {
    const times = String(v.times || "").split(/[ ,;]+/).filter((t) => /^\d{1,2}:\d{2}$/.test(t));
    if (!v.name || !times.length) return false;
    OWN.add({ name: v.name, who: v.who, times: times });
    render();
    return true;
  });
  render();
}
"""

ENGINES["interval"] = r"""
// Recurring tasks ("every N days"): next due date, overdue first, optional cost per month.
const OWN = makeLog(".tasks");
let last = load(".last", {});

function tasks() {
  const base = CONFIG.tasks.map((t) => ({ id: t[0], label: t[1], every: t[2], cost: t[3] || 0, own: false }));
  return base.concat(OWN.items.map((t) => ({ id: t.id, label: t.label, every: num(t.every) || 7, cost: num(t.cost), own: true })));
}

function render() {
  const today = dayKey();
  const list = tasks().map((t) => Object.assign(t, { due: last[t.id] ? addDays(last[t.id], t.every) : today }));
  list.sort((a, b) => (a.due < b.due ? -1 : a.due > b.due ? 1 : 0));
  const dueNow = list.filter((t) => t.due <= today).length;
  const overdue = list.filter((t) => t.due < today).length;
  $("today-total").textContent = dueNow + " " + T.dueToday + (overdue ? " · " + overdue + " " + T.overdue : "");
  const monthly = list.reduce((s, t) => s + (t.cost ? (t.cost * 30) / t.every : 0), 0);
  $("status").textContent = monthly
    ? T.total + ": " + money(monthly) + " " + T.perMonth
    : list.length - dueNow + " / " + list.length + " " + T.upToDate;
  progress("progress-fill", list.length - dueNow, list.length || 1, false);
  const box = $("schedule");
  clear(box);
  list.forEach((t) => {
    const diff = daysBetween(today, t.due);
    const li = el("li", diff < 0 ? "item overdue" : diff === 0 ? "item due" : "item");
    const when = diff < 0 ? -diff + " " + T.days + " " + T.overdue : diff === 0 ? T.dueToday : T.inDays + " " + diff + " " + T.days;
    li.appendChild(el("span", "item-text", t.label + " · " + T.every + " " + t.every + " " + T.days + (t.cost ? " · " + money(t.cost) : "")));
    li.appendChild(el("span", "muted", when));
    li.appendChild(button(T.markDone, "", () => {
      last[t.id] = dayKey();
      save(last, ".last");
      render();
    }));
    if (t.own) {
      li.appendChild(deleteButton(() => {
        OWN.remove(t.id);
        delete last[t.id];
        save(last, ".last");
        render();
      }));
    }
    box.appendChild(li);
  });
}

function init() {
  onSubmit((v) => {
    if (!v.label || !(v.every > 0)) return false;
    OWN.add({ label: v.label, every: v.every, cost: v.cost || 0 });
    render();
    return true;
  });
  render();
}
"""

ENGINES["feeding"] = r"""
// One-tap baby log: feeds, bottles and diapers; time since the last feed.
const LOG = makeLog();

function kind(id) {
  return CONFIG.kinds.find((k) => k[0] === id) || [id, id, "", false, false];
}

function since(iso) {
  const mins = Math.max(0, Math.round((Date.now() - new Date(iso).getTime()) / 60000));
  return Math.floor(mins / 60) + " " + T.hours + " " + pad(mins % 60) + " " + T.minutes;
}

function render() {
  const feeds = LOG.items.filter((i) => kind(i.kind)[3]);
  const lastFeed = feeds[feeds.length - 1];
  $("today-total").textContent = T.sinceLast + ": " + (lastFeed ? since(lastFeed.at) : "–");
  const today = LOG.onDay(dayKey());
  const amount = today.reduce((s, i) => s + num(i.amount), 0);
  $("status").textContent = T.today + ": " + today.filter((i) => kind(i.kind)[3]).length + " × 🍼 · " + fmt(amount, 0) + " " + CONFIG.unit;
  const many = CONFIG.babies.length > 1;
  const counts = {};
  today.forEach((i) => {
    const key = kind(i.kind)[1] + (many ? " · " + i.baby : "");
    counts[key] = (counts[key] || 0) + 1;
  });
  cssBars($("groups"), Object.keys(counts).map((k) => ({ label: k, value: counts[k] })), "");
  const describe = (i) => shortDay(i.day) + " " + clock(i.at) + " · " + kind(i.kind)[2] + " " + kind(i.kind)[1] +
    (num(i.amount) ? " · " + fmt(i.amount, 0) + " " + CONFIG.unit : "") + (many ? " · " + i.baby : "");
  renderList($("list"), LOG.items.slice(-20), (i) => withExtra(describe(i), i), (i) => {
    LOG.remove(i.id);
    render();
  });
}

function init() {
  const box = $("kinds");
  CONFIG.kinds.forEach((k) => {
    box.appendChild(button(k[2] + " " + k[1], "quick", () => {
      const v = readFields();
      if (!k[4]) v.amount = 0;
      LOG.add(Object.assign(v, { kind: k[0] }));
      resetFields();
      render();
    }));
  });
  setInterval(render, 60000);
  render();
}
"""

ENGINES["flashcards"] = r"""
// Leitner-box flashcards: right answers move a card to a longer interval.
const OWN = makeLog(".cards");
let state = load(".state", {});
let current = null;
let revealed = false;

function cards() {
  const base = CONFIG.cards.map((c) => ({ id: c[0], front: c[0], back: c[1] }));
  const all = base.concat(OWN.items.map((c) => ({ id: c.id, front: c.front, back: c.back })));
  return CONFIG.reverse ? all.map((c) => ({ id: c.id, front: c.back, back: c.front })) : all;
}

function boxOf(card) {
  return Math.min(CONFIG.intervals.length - 1, (state[card.id] || { box: 0 }).box);
}

function dueCards() {
  const today = dayKey();
  return cards().filter((c) => !state[c.id] || state[c.id].due <= today);
}

function next() {
  const due = dueCards();
  current = due.length ? due[Math.floor(Math.random() * due.length)] : null;
  revealed = false;
  render();
}

function answer(ok) {
  if (!current) return;
  const box = ok ? Math.min(CONFIG.intervals.length - 1, boxOf(current) + 1) : 0;
  state[current.id] = { box: box, due: addDays(dayKey(), CONFIG.intervals[box]) };
  save(state, ".state");
  next();
}

function render() {
  $("today-total").textContent = T.dueCards + ": " + dueCards().length + " / " + cards().length;
  $("card-front").textContent = current ? current.front : T.allDone;
  $("card-back").textContent = current && revealed ? current.back : "";
  $("reveal").hidden = !current || revealed;
  $("got").hidden = !current || !revealed;
  $("missed").hidden = !current || !revealed;
  const counts = CONFIG.intervals.map(() => 0);
  cards().forEach((c) => {
    counts[boxOf(c)] += 1;
  });
  cssBars($("groups"), counts.map((n, i) => ({ label: T.boxes + " " + (i + 1) + " · " + CONFIG.intervals[i] + " " + T.days, value: n })), "");
  renderList($("list"), OWN.items, (c) => c.front + " → " + c.back, (c) => {
    OWN.remove(c.id);
    delete state[c.id];
    save(state, ".state");
    next();
  });
}

function init() {
  $("reveal").addEventListener("click", () => {
    revealed = true;
    render();
  });
  $("got").addEventListener("click", () => answer(true));
  $("missed").addEventListener("click", () => answer(false));
  onSubmit((v) => {
    if (!v.front || !v.back) return false;
    OWN.add({ front: v.front, back: v.back });
    next();
    return true;
  });
  next();
}
"""

ENGINES["studyplan"] = r"""
// Exams with hours still needed -> a daily plan capped at what fits in a day.
const EXAMS = makeLog(".exams");
const LOG = makeLog();

function studied(subject) {
  return LOG.items.filter((i) => i.subject === subject).reduce((s, i) => s + num(i.hours), 0);
}

function planFor(today) {
  const rows = EXAMS.items
    .filter((e) => e.date >= today)
    .map((e) => {
      const daysLeft = Math.max(1, daysBetween(today, e.date));
      const left = Math.max(0, num(e.hours) - studied(e.subject));
      return { exam: e, daysLeft: daysLeft, perDay: left / daysLeft };
    });
  const want = rows.reduce((s, r) => s + r.perDay, 0);
  const scale = want > CONFIG.maxHoursPerDay ? CONFIG.maxHoursPerDay / want : 1;
  rows.forEach((r) => {
    r.today = Math.round(r.perDay * scale * 4) / 4;
  });
  rows.sort((a, b) => a.daysLeft - b.daysLeft);
  return { rows: rows, overloaded: scale < 1 };
}

function render() {
  const plan = planFor(dayKey());
  const total = plan.rows.reduce((s, r) => s + r.today, 0);
  $("today-total").textContent = T.plan + ": " + fmt(total, 2) + " " + T.hours;
  $("status").textContent = plan.overloaded ? T.overloaded : T.streak + ": " + LOG.streak() + " " + T.days;
  const box = $("groups");
  clear(box);
  plan.rows.forEach((r) => {
    const label = r.exam.subject + " · " + r.daysLeft + " " + T.daysLeft;
    progressRow(box, label, studied(r.exam.subject), num(r.exam.hours), fmt(r.today, 2) + " " + T.perDay, "goal");
  });
  const select = $("session-subject");
  clear(select);
  EXAMS.items.forEach((e) => {
    const o = el("option", "", e.subject);
    o.value = e.subject;
    select.appendChild(o);
  });
  renderList($("list"), EXAMS.items, (e) => e.subject + " · " + e.date + " · " + fmt(studied(e.subject)) + " / " + fmt(e.hours) + " " + T.hours, (e) => {
    EXAMS.remove(e.id);
    render();
  });
  const days = lastDays(CONFIG.chartDays);
  barChart($("chart"), days.map(shortDay), LOG.sumByDay(days, (i) => num(i.hours)), 0);
}

function init() {
  onSubmit((v) => {
    if (!v.subject || !v.date || !(v.hours > 0)) return false;
    EXAMS.add({ subject: v.subject, date: v.date, hours: v.hours, day: dayKey() });
    render();
    return true;
  });
  onSubmit(() => {
    const subject = $("session-subject").value;
    const input = $("session-hours");
    const hours = num(input.value);
    if (subject && hours > 0) LOG.add({ subject: subject, hours: hours });
    input.value = "";
    render();
    return false;
  }, "session-form");
  render();
}
"""

ENGINES["events"] = r"""
// Birthdays, anniversaries and appointments: next occurrence, days to go, age.
const LOG = makeLog(".events");

function nextDate(e) {
  const today = dayKey();
  if (!e.yearly) return e.date;
  const md = String(e.date).slice(5);
  const year = Number(today.slice(0, 4));
  const candidate = year + "-" + md;
  return candidate < today ? year + 1 + "-" + md : candidate;
}

function render() {
  const today = dayKey();
  const rows = LOG.items
    .map((e) => ({ e: e, when: nextDate(e), diff: daysBetween(today, nextDate(e)) }))
    .filter((r) => r.diff >= 0)
    .sort((a, b) => a.diff - b.diff);
  const soon = rows.filter((r) => r.diff <= CONFIG.soonDays);
  $("today-total").textContent = rows.length
    ? rows[0].e.title + " · " + (rows[0].diff === 0 ? T.today : T.inDays + " " + rows[0].diff + " " + T.days)
    : T.empty;
  $("status").textContent = soon.length + " " + T.soon + " (" + CONFIG.soonDays + " " + T.days + ")";
  const describe = (r) => {
    const years = r.e.yearly ? Number(r.when.slice(0, 4)) - Number(String(r.e.date).slice(0, 4)) : 0;
    const weeks = CONFIG.showWeeks && r.diff >= 14 ? " (" + Math.floor(r.diff / 7) + " " + T.weeks + ")" : "";
    const when = r.diff === 0 ? T.today : T.inDays + " " + r.diff + " " + T.days;
    return withExtra(r.when + " · " + optionLabel("kind", r.e.kind) + " · " + r.e.title + (years > 0 ? " · " + years + " " + T.turns : "") + " · " + when + weeks, r.e);
  };
  renderList($("list"), rows.slice().reverse(), describe, (r) => {
    LOG.remove(r.e.id);
    render();
  });
}

function init() {
  onSubmit((v) => {
    if (!v.title || !v.date) return false;
    LOG.add(Object.assign({}, v, { date: v.date, day: dayKey() }));
    render();
    return true;
  });
  render();
}
"""

ENGINES["measure"] = r"""
// Measurements over time with a moving average line (weight, blood pressure, growth).
const LOG = makeLog();

function latestPer(days, key) {
  return days.map((d) => {
    const hit = LOG.onDay(d);
    return hit.length ? num(hit[hit.length - 1][key]) : null;
  });
}

function second(i) {
  return CONFIG.second ? " / " + fmt(i.value2) + " " + field("value2").unit : "";
}

function render() {
  const items = LOG.items.slice().sort((a, b) => (a.day < b.day ? -1 : a.day > b.day ? 1 : 0));
  const latest = items[items.length - 1];
  $("today-total").textContent = T.latest + ": " + (latest ? fmt(latest.value) + " " + CONFIG.unit + second(latest) : "–");
  const recent = items.filter((i) => i.day >= addDays(dayKey(), -30));
  const delta = recent.length > 1 ? num(recent[recent.length - 1].value) - num(recent[0].value) : 0;
  $("status").textContent = T.change30 + ": " + (delta > 0 ? "+" : "") + fmt(delta) + " " + CONFIG.unit +
    (CONFIG.goal ? " · " + T.goal + ": " + fmt(CONFIG.goal) + " " + CONFIG.unit : "");
  renderList($("list"), items.slice(-30), (i) => withExtra(i.day + " · " + fmt(i.value) + " " + CONFIG.unit + second(i), i), (i) => {
    LOG.remove(i.id);
    render();
  });
  const days = lastDays(CONFIG.chartDays);
  const raw = latestPer(days, "value");
  const smooth = raw.map((v, idx) => {
    const win = raw.slice(Math.max(0, idx - CONFIG.smoothing + 1), idx + 1).filter((x) => x !== null);
    return win.length ? win.reduce((a, b) => a + b, 0) / win.length : null;
  });
  const series = [{ values: raw, color: CONFIG.theme.muted }, { values: smooth, color: CONFIG.theme.accent }];
  if (CONFIG.second && CONFIG.chartSecond) series.push({ values: latestPer(days, "value2"), color: CONFIG.theme.good });
  lineChart($("chart"), days.map(shortDay), series, CONFIG.goal || 0);
}

function init() {
  onSubmit((v) => {
    if (!(v.value > 0)) return false;
    LOG.add(v);
    render();
    return true;
  });
  render();
}
"""

ENGINES["drills"] = r"""
// Sport drills: made/attempted per drill vs a target %, weekly practice minutes.
const LOG = makeLog();

function pct(made, attempts) {
  return attempts ? Math.round((100 * made) / attempts) : 0;
}

function render() {
  const recent = LOG.since(30);
  const box = $("groups");
  clear(box);
  CONFIG.drills.forEach((d) => {
    const mine = recent.filter((i) => i.drill === d[0]);
    const att = mine.reduce((s, i) => s + num(i.attempts), 0);
    const made = mine.reduce((s, i) => s + num(i.made), 0);
    progressRow(box, d[1], pct(made, att), d[2], pct(made, att) + "% / " + d[2] + "%", "goal");
  });
  const week = LOG.since(7).reduce((s, i) => s + num(i.minutes), 0);
  $("today-total").textContent = T.thisWeek + ": " + fmt(week, 0) + " / " + fmt(CONFIG.weeklyMinutes, 0) + " " + T.minutes;
  progress("progress-fill", week, CONFIG.weeklyMinutes, false);
  $("status").textContent = T.streak + ": " + LOG.streak() + " " + T.days;
  const describe = (i) => shortDay(i.day) + " · " + optionLabel("drill", i.drill) + " · " + fmt(i.made, 0) + "/" + fmt(i.attempts, 0) +
    " (" + pct(num(i.made), num(i.attempts)) + "%) · " + fmt(i.minutes, 0) + " " + T.minutes;
  renderList($("list"), LOG.since(14), (i) => withExtra(describe(i), i), (i) => {
    LOG.remove(i.id);
    render();
  });
  const days = lastDays(CONFIG.chartDays);
  barChart($("chart"), days.map(shortDay), LOG.sumByDay(days, (i) => num(i.minutes)), 0);
}

function init() {
  onSubmit((v) => {
    if (!(v.attempts > 0)) return false;
    v.made = Math.min(v.made, v.attempts);
    LOG.add(v);
    render();
    return true;
  });
  render();
}
"""

ENGINES["pantry"] = r"""
// Pantry/freezer stock sorted by expiry; +/- to use things up.
const LOG = makeLog();

function render() {
  const today = dayKey();
  const items = LOG.items.slice().sort((a, b) => String(a.expires || "9999").localeCompare(String(b.expires || "9999")));
  const soon = items.filter((i) => i.expires && daysBetween(today, i.expires) <= CONFIG.warnDays);
  $("today-total").textContent = items.length + " · " + T.expiring + ": " + soon.length;
  $("status").textContent = soon.slice(0, 3).map((i) => i.name).join(", ");
  const box = $("list");
  clear(box);
  if (!items.length) box.appendChild(el("li", "empty", T.empty));
  items.forEach((i) => {
    const left = i.expires ? daysBetween(today, i.expires) : null;
    let cls = "item";
    if (left !== null && left < 0) cls = "item overdue";
    else if (left !== null && left <= CONFIG.warnDays) cls = "item due";
    const li = el("li", cls);
    const when = left === null ? "" : left < 0 ? " · " + T.expired : " · " + T.inDays + " " + left + " " + T.days;
    li.appendChild(el("span", "item-text", withExtra(i.name + " × " + fmt(i.qty) + " · " + optionLabel("where", i.where) + when, i)));
    li.appendChild(button("−", "small", () => {
      i.qty = num(i.qty) - 1;
      if (i.qty <= 0) LOG.remove(i.id);
      else save(LOG.items);
      render();
    }));
    li.appendChild(button("+", "small", () => {
      i.qty = num(i.qty) + 1;
      save(LOG.items);
      render();
    }));
    li.appendChild(deleteButton(() => {
      LOG.remove(i.id);
      render();
    }));
    box.appendChild(li);
  });
  showWarnings(items);
  const counts = {};
  items.forEach((i) => {
    const k = optionLabel("where", i.where);
    counts[k] = (counts[k] || 0) + 1;
  });
  cssBars($("groups"), Object.keys(counts).map((k) => ({ label: k, value: counts[k] })), "");
}

function init() {
  onSubmit((v) => {
    if (!v.name) return false;
    LOG.add(Object.assign(v, { qty: v.qty > 0 ? v.qty : 1 }));
    render();
    return true;
  });
  render();
}
"""

# --------------------------------------------------------------------------- features
# Optional blocks appended when CONFIG.features enables them. Network features name
# their host literally so the manifest's ``hosts`` and the code visibly agree.

FEATURE_JS: dict[str, str] = {}

FEATURE_JS["reminder"] = r"""
FEATURES.push(function reminder() {
  // In-page nudge every N hours inside waking hours; a system notification too
  // when the person has allowed them. Toggle state is remembered per device.
  const cfg = CONFIG.features.reminder;
  const banner = $("reminder-banner");
  const toggle = $("reminder-toggle");
  let enabled = load(".reminder", true);
  function paint() {
    toggle.textContent = enabled ? T.reminderOn : T.reminderOff;
  }
  function nudge() {
    const hour = new Date().getHours();
    if (!enabled || hour < cfg.fromHour || hour >= cfg.toHour) return;
    banner.textContent = cfg.message;
    banner.hidden = false;
    if (typeof Notification !== "undefined" && Notification.permission === "granted") {
      new Notification(CONFIG.title, { body: cfg.message });
    }
  }
  toggle.addEventListener("click", () => {
    enabled = !enabled;
    save(enabled, ".reminder");
    paint();
    if (enabled && typeof Notification !== "undefined" && Notification.permission === "default") {
      Notification.requestPermission();
    }
  });
  banner.addEventListener("click", () => {
    banner.hidden = true;
  });
  paint();
  setInterval(nudge, cfg.everyHours * 3600000);
});
"""

FEATURE_JS["csv"] = r"""
FEATURES.push(function csvExport() {
  // Exports the main log as CSV via a data: URL (no upload, nothing leaves the device).
  $("export-csv").addEventListener("click", () => {
    const cols = ["day"].concat(CONFIG.fields.map((f) => f.name));
    const cell = (v) => '"' + String(v === undefined ? "" : v).replace(/"/g, '""') + '"';
    const rows = LOG.items.map((i) => cols.map((c) => cell(i[c])).join(","));
    const a = document.createElement("a");
    a.href = "data:text/csv;charset=utf-8," + encodeURIComponent([cols.join(",")].concat(rows).join("\n"));
    a.download = CONFIG.storeKey.replace(/[^a-z0-9]+/gi, "-") + ".csv";
    document.body.appendChild(a);
    a.click();
    a.remove();
  });
});
"""

FEATURE_JS["weather"] = r"""
FEATURES.push(function weather() {
  // Current conditions for the saved city; the only network call this app makes.
  const cfg = CONFIG.features.weather;
  const box = $("weather");
  const url = "https://api.open-meteo.com/v1/forecast?latitude=" + cfg.lat + "&longitude=" + cfg.lon +
    "&current=temperature_2m,precipitation&temperature_unit=" + cfg.tempUnit + "&timezone=auto";
  fetch(url)
    .then((r) => r.json())
    .then((data) => {
      const c = data.current || {};
      box.textContent = T.weather + " · " + cfg.city + ": " + fmt(c.temperature_2m) + "°" + (cfg.tempUnit === "fahrenheit" ? "F" : "C") + " · " + fmt(c.precipitation) + " mm";
    })
    .catch(() => {
      box.textContent = T.offline;
    });
});
"""

FEATURE_JS["rates"] = r"""
FEATURES.push(function rates() {
  // Today's exchange rate for a trip abroad; amounts stay in CONFIG.currency.
  const cfg = CONFIG.features.rates;
  const box = $("rates");
  fetch("https://api.frankfurter.app/latest?from=" + cfg.from + "&to=" + cfg.to)
    .then((r) => r.json())
    .then((data) => {
      box.textContent = T.rates + ": 1 " + cfg.from + " = " + fmt((data.rates || {})[cfg.to], 4) + " " + cfg.to;
    })
    .catch(() => {
      box.textContent = T.offline;
    });
});
"""

FEATURE_JS["foodfacts"] = r"""
FEATURES.push(function foodfacts() {
  // Barcode -> product name, so adding groceries is one scan/type away.
  const input = $("barcode");
  const target = $("f-name");
  $("lookup").addEventListener("click", () => {
    const code = String(input.value || "").replace(/[^0-9]/g, "");
    if (!code) return;
    fetch("https://world.openfoodfacts.org/api/v2/product/" + code + ".json?fields=product_name")
      .then((r) => r.json())
      .then((data) => {
        if (data.product && data.product.product_name) target.value = data.product.product_name;
      })
      .catch(() => {
        input.value = "";
        input.placeholder = T.offline;
      });
  });
});
"""

FEATURE_JS["holidays"] = r"""
FEATURES.push(function holidays() {
  // Upcoming public holidays (school's out, plan around them).
  const cfg = CONFIG.features.holidays;
  const list = $("holidays");
  const year = new Date().getFullYear();
  fetch("https://date.nager.at/api/v3/PublicHolidays/" + year + "/" + cfg.country)
    .then((r) => r.json())
    .then((days) => {
      clear(list);
      days.filter((d) => d.date >= dayKey()).slice(0, cfg.show).forEach((d) => {
        list.appendChild(el("li", "item", d.date + " · " + d.localName));
      });
    })
    .catch(() => {
      list.appendChild(el("li", "empty", T.offline));
    });
});
"""

BOOTSTRAP_JS = r"""
resetFields();
init();
FEATURES.forEach((start) => start());
"""

# The host each network feature talks to (manifest ``hosts`` must list it).
FEATURE_HOSTS: dict[str, str] = {
    "weather": "api.open-meteo.com",
    "rates": "api.frankfurter.app",
    "foodfacts": "world.openfoodfacts.org",
    "holidays": "date.nager.at",
}

# --------------------------------------------------------------------------- layouts
# index.html blocks per engine, top to bottom (see content._render_block).

LAYOUTS: dict[str, tuple[str, ...]] = {
    "tally": ("warnings", "summary", "progress", "quick", "form", "groups", "list:today", "chart"),
    "nutrition": ("warnings", "summary", "progress", "macros", "form", "list:today", "chart"),
    "workout": ("warnings", "summary", "form", "records", "list:history", "chart"),
    "distance": ("warnings", "summary", "progress", "form", "list:history", "chart"),
    "timer": (
        "warnings",
        "summary",
        "progress",
        "timer",
        "form",
        "groups:thisWeek",
        "list:history",
        "chart",
    ),
    "pomodoro": ("summary", "progress", "pomodoro", "form", "tasks", "chart"),
    "mood": (
        "warnings",
        "prompt",
        "summary",
        "scale",
        "form",
        "groups:tagsTitle",
        "list:history",
        "chart",
    ),
    "span": ("warnings", "summary", "progress", "form", "list:history", "chart"),
    "budget": ("warnings", "summary", "form", "groups:byCategory", "list:thisMonth", "chart"),
    "savings": ("summary", "progress", "allowance", "goals", "form"),
    "split": ("summary", "form", "people", "groups:balance", "settle", "list:history"),
    "checklist": ("summary", "progress", "target", "sections", "form"),
    "mealplan": ("summary", "progress", "planbuttons", "grid", "list:shopping", "form", "own"),
    "journal": ("warnings", "summary", "form", "search", "top", "list:history"),
    "habit": ("summary", "progress", "grid", "chart", "form"),
    "chores": ("warnings", "summary", "form", "groups:thisWeek", "list:history"),
    "doses": ("summary", "progress", "schedule", "chart", "form", "list:myList"),
    "interval": ("summary", "progress", "schedule", "form"),
    "feeding": ("warnings", "summary", "fields", "kinds", "groups:today", "list:history"),
    "flashcards": ("summary", "review", "groups:boxes", "form", "list:myList"),
    "studyplan": ("summary", "groups:plan", "session", "form", "list:upcoming", "chart"),
    "events": ("warnings", "summary", "form", "list:upcoming"),
    "measure": ("warnings", "summary", "form", "chart", "list:history"),
    "drills": (
        "warnings",
        "summary",
        "progress",
        "form",
        "groups:accuracy",
        "list:history",
        "chart",
    ),
    "pantry": ("warnings", "summary", "form", "groups:byPlace", "list:stock"),
}

# Engines whose main record lives in ``LOG`` (so CSV export makes sense).
LOG_ENGINES = frozenset(
    {
        "tally",
        "nutrition",
        "workout",
        "distance",
        "timer",
        "mood",
        "span",
        "budget",
        "chores",
        "feeding",
        "measure",
        "drills",
        "pantry",
        "journal",
        "split",
    }
)

# --------------------------------------------------------------------------- UI strings

UI_EN: dict[str, str] = {
    "add": "Add",
    "save": "Save",
    "delete": "Delete",
    "confirmDelete": "Delete this entry?",
    "empty": "Nothing logged yet.",
    "today": "Today",
    "history": "History",
    "thisWeek": "This week",
    "thisMonth": "This month",
    "average": "Average",
    "total": "Total",
    "goal": "Goal",
    "left": "left",
    "toGo": "to go",
    "goalReached": "Goal reached — nice!",
    "overLimit": "Over today's limit",
    "streak": "Streak",
    "days": "days",
    "weeks": "weeks",
    "export": "Export CSV",
    "reminderOn": "🔔 Reminders on",
    "reminderOff": "🔕 Reminders off",
    "start": "Start",
    "pause": "Pause",
    "reset": "Reset",
    "skip": "Skip",
    "work": "Focus",
    "break": "Short break",
    "long": "Long break",
    "minutes": "min",
    "hours": "h",
    "records": "Personal bests",
    "volume": "Volume",
    "longest": "Longest",
    "co2": "CO₂ saved",
    "income": "Income",
    "expense": "Spent",
    "balance": "Balance",
    "byCategory": "By category",
    "projected": "On track for",
    "contribute": "Add money",
    "payAllowance": "Pay allowance",
    "pays": "pays",
    "allSettled": "All settled!",
    "addPerson": "Add person",
    "perPerson": "Per person",
    "settle": "Settle up",
    "progressLabel": "Done",
    "overdue": "overdue",
    "dueToday": "due today",
    "inDays": "in",
    "upToDate": "up to date",
    "shopping": "Shopping list",
    "surprise": "Fill empty slots",
    "clearPlan": "Clear week",
    "servings": "servings",
    "avoidWarning": "contains",
    "ownRecipes": "My recipes",
    "sortRating": "Sort by rating",
    "sortDate": "Sort by date",
    "search": "Search",
    "top": "Top rated",
    "markDone": "Done",
    "points": "points",
    "reward": "reward unlocked:",
    "taken": "Taken",
    "take": "Mark taken",
    "adherence": "Last 7 days",
    "schedule": "Today's schedule",
    "every": "every",
    "perMonth": "per month",
    "sinceLast": "Since last feed",
    "reveal": "Show answer",
    "gotIt": "Got it",
    "missed": "Missed it",
    "dueCards": "Cards due today",
    "boxes": "Box",
    "allDone": "All done for today!",
    "daysLeft": "days left",
    "perDay": "h today",
    "plan": "Plan",
    "overloaded": "More than fits in a day — capped at your daily max",
    "logSession": "Log study time",
    "upcoming": "Upcoming",
    "soon": "coming up",
    "turns": "years",
    "latest": "Latest",
    "change30": "30-day change",
    "accuracy": "Accuracy",
    "expiring": "Expiring soon",
    "expired": "expired",
    "byPlace": "Where",
    "stock": "In stock",
    "weather": "Weather",
    "rates": "Exchange rate",
    "lookup": "Look up barcode",
    "holidays": "Public holidays",
    "offline": "Offline — try again later",
    "moodQuestion": "How are you feeling?",
    "tagsTitle": "What's going on",
    "pickMood": "Pick how you feel first",
    "myList": "Added by me",
    "tasks": "Tasks",
    "targetDate": "Date",
    "chart": "Chart",
    "stats": "Stats",
    "balanceTitle": "Balances",
}

UI_ZH: dict[str, str] = {
    "add": "添加",
    "save": "保存",
    "delete": "删除",
    "confirmDelete": "确定删除这条记录吗？",
    "empty": "还没有记录。",
    "today": "今天",
    "history": "历史记录",
    "thisWeek": "本周",
    "thisMonth": "本月",
    "average": "平均",
    "total": "合计",
    "goal": "目标",
    "left": "剩余",
    "toGo": "还差",
    "goalReached": "目标达成，真棒！",
    "overLimit": "已超过今日上限",
    "streak": "连续",
    "days": "天",
    "weeks": "周",
    "export": "导出 CSV",
    "reminderOn": "🔔 提醒已开启",
    "reminderOff": "🔕 提醒已关闭",
    "start": "开始",
    "pause": "暂停",
    "reset": "重置",
    "skip": "跳过",
    "work": "专注",
    "break": "短休息",
    "long": "长休息",
    "minutes": "分钟",
    "hours": "小时",
    "records": "个人最佳",
    "volume": "训练量",
    "longest": "最长",
    "co2": "减少碳排放",
    "income": "收入",
    "expense": "支出",
    "balance": "结余",
    "byCategory": "按类别",
    "projected": "预计达成",
    "contribute": "存入",
    "payAllowance": "发零花钱",
    "pays": "付给",
    "allSettled": "已结清！",
    "addPerson": "添加成员",
    "perPerson": "人均",
    "settle": "结算",
    "progressLabel": "已完成",
    "overdue": "已逾期",
    "dueToday": "今天到期",
    "inDays": "还有",
    "upToDate": "已完成",
    "shopping": "购物清单",
    "surprise": "自动填满空位",
    "clearPlan": "清空本周",
    "servings": "人份",
    "avoidWarning": "含有",
    "ownRecipes": "我的菜谱",
    "sortRating": "按评分排序",
    "sortDate": "按日期排序",
    "search": "搜索",
    "top": "评分最高",
    "markDone": "完成",
    "points": "分",
    "reward": "获得奖励：",
    "taken": "已服用",
    "take": "标记已服",
    "adherence": "近 7 天",
    "schedule": "今日安排",
    "every": "每",
    "perMonth": "每月",
    "sinceLast": "距上次喂奶",
    "reveal": "显示答案",
    "gotIt": "记住了",
    "missed": "没记住",
    "dueCards": "今日待复习",
    "boxes": "盒",
    "allDone": "今天全部完成！",
    "daysLeft": "天后",
    "perDay": "小时（今天）",
    "plan": "计划",
    "overloaded": "一天排不下——已按每日上限安排",
    "logSession": "记录学习时间",
    "upcoming": "即将到来",
    "soon": "项临近",
    "turns": "周年",
    "latest": "最新",
    "change30": "30 天变化",
    "accuracy": "命中率",
    "expiring": "即将过期",
    "expired": "已过期",
    "byPlace": "存放位置",
    "stock": "库存",
    "weather": "天气",
    "rates": "汇率",
    "lookup": "查询条形码",
    "holidays": "公众假期",
    "offline": "网络不可用，请稍后再试",
    "moodQuestion": "你现在感觉怎么样？",
    "tagsTitle": "发生了什么",
    "pickMood": "请先选择心情",
    "myList": "我添加的",
    "tasks": "任务",
    "targetDate": "日期",
    "chart": "图表",
    "stats": "统计",
    "balanceTitle": "各人结余",
}

UI_JA: dict[str, str] = {
    "add": "追加",
    "save": "保存",
    "delete": "削除",
    "confirmDelete": "この記録を削除しますか？",
    "empty": "まだ記録がありません。",
    "today": "今日",
    "history": "履歴",
    "thisWeek": "今週",
    "thisMonth": "今月",
    "average": "平均",
    "total": "合計",
    "goal": "目標",
    "left": "残り",
    "toGo": "あと",
    "goalReached": "目標達成！",
    "overLimit": "今日の上限を超えました",
    "streak": "連続",
    "days": "日",
    "weeks": "週",
    "export": "CSV 書き出し",
    "reminderOn": "🔔 リマインダー オン",
    "reminderOff": "🔕 リマインダー オフ",
    "start": "スタート",
    "pause": "一時停止",
    "reset": "リセット",
    "skip": "スキップ",
    "work": "集中",
    "break": "小休憩",
    "long": "長い休憩",
    "minutes": "分",
    "hours": "時間",
    "records": "自己ベスト",
    "volume": "ボリューム",
    "longest": "最長",
    "co2": "CO₂ 削減",
    "income": "収入",
    "expense": "支出",
    "balance": "残高",
    "byCategory": "カテゴリ別",
    "projected": "達成予定",
    "contribute": "入金",
    "payAllowance": "おこづかいを渡す",
    "pays": "→",
    "allSettled": "精算済み！",
    "addPerson": "メンバー追加",
    "perPerson": "一人あたり",
    "settle": "精算",
    "progressLabel": "完了",
    "overdue": "期限切れ",
    "dueToday": "今日まで",
    "inDays": "あと",
    "upToDate": "対応済み",
    "shopping": "買い物リスト",
    "surprise": "空き枠をおまかせ",
    "clearPlan": "今週をクリア",
    "servings": "人分",
    "avoidWarning": "含む:",
    "ownRecipes": "マイレシピ",
    "sortRating": "評価順",
    "sortDate": "日付順",
    "search": "検索",
    "top": "高評価",
    "markDone": "完了",
    "points": "ポイント",
    "reward": "ごほうび：",
    "taken": "服用済み",
    "take": "飲んだ",
    "adherence": "直近 7 日",
    "schedule": "今日の予定",
    "every": "間隔",
    "perMonth": "毎月",
    "sinceLast": "前回の授乳から",
    "reveal": "答えを見る",
    "gotIt": "覚えた",
    "missed": "まだ",
    "dueCards": "今日の復習",
    "boxes": "箱",
    "allDone": "今日の分は終わり！",
    "daysLeft": "日後",
    "perDay": "時間（今日）",
    "plan": "計画",
    "overloaded": "1日に収まりません — 上限で調整しました",
    "logSession": "勉強時間を記録",
    "upcoming": "これから",
    "soon": "件が近づいています",
    "turns": "周年",
    "latest": "最新",
    "change30": "30日の変化",
    "accuracy": "成功率",
    "expiring": "期限が近い",
    "expired": "期限切れ",
    "byPlace": "保管場所",
    "stock": "在庫",
    "weather": "天気",
    "rates": "為替レート",
    "lookup": "バーコード検索",
    "holidays": "祝日",
    "offline": "オフラインです。後でもう一度お試しください",
    "moodQuestion": "今の気分は？",
    "tagsTitle": "どんな一日？",
    "pickMood": "まず気分を選んでください",
    "myList": "自分で追加",
    "tasks": "タスク",
    "targetDate": "日付",
    "chart": "グラフ",
    "stats": "統計",
    "balanceTitle": "各自の残高",
}

UI_ES: dict[str, str] = {
    "add": "Agregar",
    "save": "Guardar",
    "delete": "Borrar",
    "confirmDelete": "¿Borrar este registro?",
    "empty": "Todavía no hay registros.",
    "today": "Hoy",
    "history": "Historial",
    "thisWeek": "Esta semana",
    "thisMonth": "Este mes",
    "average": "Promedio",
    "total": "Total",
    "goal": "Meta",
    "left": "restantes",
    "toGo": "por completar",
    "goalReached": "¡Meta cumplida!",
    "overLimit": "Pasaste el límite de hoy",
    "streak": "Racha",
    "days": "días",
    "weeks": "semanas",
    "export": "Exportar CSV",
    "reminderOn": "🔔 Recordatorios activos",
    "reminderOff": "🔕 Recordatorios apagados",
    "start": "Iniciar",
    "pause": "Pausa",
    "reset": "Reiniciar",
    "skip": "Saltar",
    "work": "Enfoque",
    "break": "Descanso corto",
    "long": "Descanso largo",
    "minutes": "min",
    "hours": "h",
    "records": "Mejores marcas",
    "volume": "Volumen",
    "longest": "Más largo",
    "co2": "CO₂ ahorrado",
    "income": "Ingresos",
    "expense": "Gastos",
    "balance": "Saldo",
    "byCategory": "Por categoría",
    "projected": "Vas para",
    "contribute": "Abonar",
    "payAllowance": "Dar domingo",
    "pays": "le paga a",
    "allSettled": "¡Todo saldado!",
    "addPerson": "Agregar persona",
    "perPerson": "Por persona",
    "settle": "Cuentas claras",
    "progressLabel": "Listo",
    "overdue": "atrasado",
    "dueToday": "vence hoy",
    "inDays": "en",
    "upToDate": "al día",
    "shopping": "Lista del súper",
    "surprise": "Llenar huecos",
    "clearPlan": "Vaciar semana",
    "servings": "porciones",
    "avoidWarning": "contiene",
    "ownRecipes": "Mis recetas",
    "sortRating": "Ordenar por calificación",
    "sortDate": "Ordenar por fecha",
    "search": "Buscar",
    "top": "Mejor calificados",
    "markDone": "Hecho",
    "points": "puntos",
    "reward": "premio:",
    "taken": "Tomado",
    "take": "Marcar tomado",
    "adherence": "Últimos 7 días",
    "schedule": "Horario de hoy",
    "every": "cada",
    "perMonth": "al mes",
    "sinceLast": "Desde la última toma",
    "reveal": "Ver respuesta",
    "gotIt": "La sé",
    "missed": "No la sé",
    "dueCards": "Tarjetas para hoy",
    "boxes": "Caja",
    "allDone": "¡Listo por hoy!",
    "daysLeft": "días",
    "perDay": "h hoy",
    "plan": "Plan",
    "overloaded": "No cabe en un día — ajustado a tu máximo diario",
    "logSession": "Registrar estudio",
    "upcoming": "Próximos",
    "soon": "próximos",
    "turns": "años",
    "latest": "Último",
    "change30": "Cambio en 30 días",
    "accuracy": "Precisión",
    "expiring": "Por caducar",
    "expired": "caducado",
    "byPlace": "Dónde",
    "stock": "En existencia",
    "weather": "Clima",
    "rates": "Tipo de cambio",
    "lookup": "Buscar código",
    "holidays": "Días festivos",
    "offline": "Sin conexión — intenta más tarde",
    "moodQuestion": "¿Cómo te sientes?",
    "tagsTitle": "¿Qué está pasando?",
    "pickMood": "Primero elige cómo te sientes",
    "myList": "Agregados por mí",
    "tasks": "Tareas",
    "targetDate": "Fecha",
    "chart": "Gráfica",
    "stats": "Resumen",
    "balanceTitle": "Saldos",
}

UI: dict[str, dict[str, str]] = {"en": UI_EN, "zh": UI_ZH, "ja": UI_JA, "es": UI_ES}

# Translations of labels that appear in app configs (field labels, option labels,
# list items). A translation fork is only offered when every visible string of the
# app is covered, so a "中文版" never ships half in English.
LABELS: dict[str, dict[str, str]] = {
    "Amount": {"zh": "数量", "ja": "量", "es": "Cantidad"},
    "Note": {"zh": "备注", "ja": "メモ", "es": "Nota"},
    "Notes": {"zh": "笔记", "ja": "メモ", "es": "Notas"},
    "Date": {"zh": "日期", "ja": "日付", "es": "Fecha"},
    "Drink": {"zh": "饮品", "ja": "飲み物", "es": "Bebida"},
    "Water": {"zh": "白开水", "ja": "水", "es": "Agua"},
    "Tea": {"zh": "茶", "ja": "お茶", "es": "Té"},
    "Sparkling": {"zh": "气泡水", "ja": "炭酸水", "es": "Agua mineral"},
    "Coffee": {"zh": "咖啡", "ja": "コーヒー", "es": "Café"},
    "Soup": {"zh": "汤", "ja": "スープ", "es": "Sopa"},
    "Bedtime": {"zh": "上床时间", "ja": "就寝", "es": "Hora de dormir"},
    "Woke up": {"zh": "起床时间", "ja": "起床", "es": "Me desperté"},
    "Night of": {"zh": "日期", "ja": "日付", "es": "Noche del"},
    "Quality": {"zh": "睡眠质量", "ja": "睡眠の質", "es": "Calidad"},
    "Rough": {"zh": "很差", "ja": "最悪", "es": "Pésima"},
    "Meh": {"zh": "一般", "ja": "いまいち", "es": "Regular"},
    "OK": {"zh": "还行", "ja": "ふつう", "es": "Bien"},
    "Good": {"zh": "不错", "ja": "よい", "es": "Buena"},
    "Great": {"zh": "很好", "ja": "最高", "es": "Excelente"},
    "Wake-ups": {"zh": "夜醒次数", "ja": "夜中に起きた回数", "es": "Despertares"},
    "Awful": {"zh": "糟透了", "ja": "最悪", "es": "Fatal"},
    "Low": {"zh": "低落", "ja": "落ち込み", "es": "Bajoneado"},
    "Okay": {"zh": "还行", "ja": "まあまあ", "es": "Normal"},
    "Happy": {"zh": "开心", "ja": "うれしい", "es": "Contento"},
    "Wonderful": {"zh": "超棒", "ja": "最高", "es": "De maravilla"},
    "Work": {"zh": "工作", "ja": "仕事", "es": "Trabajo"},
    "Kids": {"zh": "孩子", "ja": "子ども", "es": "Niños"},
    "Partner": {"zh": "伴侣", "ja": "パートナー", "es": "Pareja"},
    "Slept badly": {"zh": "没睡好", "ja": "寝不足", "es": "Dormí mal"},
    "Exercise": {"zh": "运动", "ja": "運動", "es": "Ejercicio"},
    "Friends": {"zh": "朋友", "ja": "友だち", "es": "Amigos"},
    "Outside": {"zh": "户外", "ja": "外出", "es": "Al aire libre"},
    "Anxious": {"zh": "焦虑", "ja": "不安", "es": "Ansiedad"},
    "What happened?": {"zh": "发生了什么？", "ja": "何があった？", "es": "¿Qué pasó?"},
    "Focus": {"zh": "练习内容", "ja": "練習内容", "es": "Enfoque"},
    "Scales": {"zh": "音阶", "ja": "スケール", "es": "Escalas"},
    "Sight-reading": {"zh": "视奏", "ja": "初見", "es": "Lectura a primera vista"},
    "Current piece": {"zh": "正在练的曲子", "ja": "練習中の曲", "es": "Pieza actual"},
    "Technique": {"zh": "技巧", "ja": "テクニック", "es": "Técnica"},
    "Just playing": {"zh": "随便弹弹", "ja": "自由に弾く", "es": "Tocar por gusto"},
    "Minutes (0 = use timer)": {
        "zh": "分钟（0 = 用计时器）",
        "ja": "分（0 = タイマーを使う）",
        "es": "Minutos (0 = usar cronómetro)",
    },
    "Type": {"zh": "类型", "ja": "種類", "es": "Tipo"},
    "Expense": {"zh": "支出", "ja": "支出", "es": "Gasto"},
    "Income": {"zh": "收入", "ja": "収入", "es": "Ingreso"},
    "Category": {"zh": "类别", "ja": "カテゴリ", "es": "Categoría"},
    "Groceries": {"zh": "买菜", "ja": "食費", "es": "Súper"},
    "Kids & school": {"zh": "孩子和学校", "ja": "子ども・学校", "es": "Niños y escuela"},
    "Housing": {"zh": "住房", "ja": "住居", "es": "Vivienda"},
    "Transport": {"zh": "交通", "ja": "交通", "es": "Transporte"},
    "Eating out": {"zh": "外出就餐", "ja": "外食", "es": "Comer fuera"},
    "Health": {"zh": "医疗", "ja": "医療", "es": "Salud"},
    "Fun": {"zh": "娱乐", "ja": "娯楽", "es": "Diversión"},
    "Savings": {"zh": "储蓄", "ja": "貯金", "es": "Ahorro"},
    "Other": {"zh": "其他", "ja": "その他", "es": "Otros"},
    "Salary": {"zh": "工资", "ja": "給料", "es": "Sueldo"},
    "Exercise name": {"zh": "动作", "ja": "種目", "es": "Ejercicio"},
    "Squat": {"zh": "深蹲", "ja": "スクワット", "es": "Sentadilla"},
    "Deadlift": {"zh": "硬拉", "ja": "デッドリフト", "es": "Peso muerto"},
    "Bench press": {"zh": "卧推", "ja": "ベンチプレス", "es": "Press de banca"},
    "Overhead press": {"zh": "推举", "ja": "オーバーヘッドプレス", "es": "Press militar"},
    "Row": {"zh": "划船", "ja": "ロウ", "es": "Remo"},
    "Hip thrust": {"zh": "臀推", "ja": "ヒップスラスト", "es": "Hip thrust"},
    "Sets": {"zh": "组数", "ja": "セット", "es": "Series"},
    "Reps": {"zh": "次数", "ja": "回数", "es": "Repeticiones"},
    "Weight": {"zh": "重量", "ja": "重量", "es": "Peso"},
    "Book": {"zh": "书名", "ja": "本", "es": "Libro"},
    "Reader": {"zh": "读者", "ja": "読んだ子", "es": "Lector"},
    "Minutes": {"zh": "分钟", "ja": "分", "es": "Minutos"},
    "Oldest": {"zh": "老大", "ja": "上の子", "es": "El mayor"},
    "Youngest": {"zh": "老二", "ja": "下の子", "es": "El menor"},
    "Bath": {"zh": "洗澡", "ja": "お風呂", "es": "Baño"},
    "Brush teeth": {"zh": "刷牙", "ja": "歯みがき", "es": "Lavarse los dientes"},
    "Story time": {"zh": "讲故事", "ja": "読み聞かせ", "es": "Cuento"},
    "Lights out by 8": {"zh": "八点前关灯", "ja": "8時までに消灯", "es": "Luces fuera a las 8"},
    "No screens after dinner": {
        "zh": "晚饭后不看屏幕",
        "ja": "夕食後は画面なし",
        "es": "Sin pantallas después de cenar",
    },
    "New habit": {"zh": "新习惯", "ja": "新しい習慣", "es": "Nuevo hábito"},
    "Who": {"zh": "谁", "ja": "だれ", "es": "Quién"},
    "Me": {"zh": "我", "ja": "自分", "es": "Yo"},
    "Big kid": {"zh": "大宝", "ja": "上の子", "es": "El grande"},
    "Little one": {"zh": "小宝", "ja": "下の子", "es": "La peque"},
    "Electrolytes": {"zh": "电解质", "ja": "電解質", "es": "Electrolitos"},
    "With lemon": {"zh": "加柠檬", "ja": "レモン入り", "es": "Con limón"},
    "Energy": {"zh": "精力", "ja": "元気度", "es": "Energía"},
    "Period day": {"zh": "经期", "ja": "生理日", "es": "Día de regla"},
    "RPE": {"zh": "主观用力程度 RPE", "ja": "RPE（主観的運動強度）", "es": "RPE"},
    "Night feeds": {"zh": "夜奶次数", "ja": "夜間授乳", "es": "Tomas nocturnas"},
    "Knee pain (0–10)": {
        "zh": "膝盖疼痛 (0–10)",
        "ja": "ひざの痛み (0–10)",
        "es": "Dolor de rodilla (0–10)",
    },
}
