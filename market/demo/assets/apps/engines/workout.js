// Sets x reps x weight, training volume per day and personal bests per exercise.
const LOG = makeLog();

function volume(i) {
  return num(i.sets) * num(i.reps) * num(i.weight);
}

function render() {
  const todays = LOG.onDay(dayKey());
  $("today-total").textContent = T.volume + ": " + fmt(todays.reduce((s, i) => s + volume(i), 0), 0) + " " + CONFIG.unit;
  $("status").textContent = T.streak + ": " + LOG.streak() + " " + T.days;
  const describe = (i) => shortDay(i.day) + " · " + optionLabel("exercise", i.exercise) + " " + fmt(i.sets, 0) + "×" + fmt(i.reps, 0) + " @ " + fmt(i.weight) + " " + CONFIG.unit;
  renderList($("list"), LOG.since(14), (i) => withExtra(describe(i), i), (i) => {
    LOG.remove(i.id);
    render();
  });
  const best = {};
  LOG.items.forEach((i) => {
    const key = optionLabel("exercise", i.exercise);
    best[key] = Math.max(best[key] || 0, num(i.weight));
  });
  cssBars($("records"), Object.keys(best).map((k) => ({ label: k, value: best[k] })), CONFIG.unit);
  const days = lastDays(CONFIG.chartDays);
  barChart($("chart"), days.map(shortDay), LOG.sumByDay(days, volume), 0);
}

function init() {
  onSubmit((v) => {
    if (!(v.sets > 0 && v.reps > 0)) return false;
    LOG.add(v);
    render();
    return true;
  });
  render();
}
