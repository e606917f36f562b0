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
