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
