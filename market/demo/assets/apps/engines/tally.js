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
