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
