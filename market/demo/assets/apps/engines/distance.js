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
