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
