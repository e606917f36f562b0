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
