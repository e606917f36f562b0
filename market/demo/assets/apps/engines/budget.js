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
