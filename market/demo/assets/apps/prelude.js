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

function offlineText() {
  // Sprig's preview has no network by design (it sets window.sprigPreview): there a failed
  // call is not the person's connection, so the app says it works once imported.
  return window.sprigPreview ? T.previewOffline : T.offline;
}
