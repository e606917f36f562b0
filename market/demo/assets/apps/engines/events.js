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
