// Focus/break cycles; finished focus blocks are counted against the current task.
const LOG = makeLog();
const TASKS = makeLog(".tasks");
let phase = "work";
let remaining = CONFIG.workMinutes * 60;
let endsAt = null;
let ticker = null;
let completed = 0;
let current = load(".current", "");

function phaseLength(p) {
  if (p === "work") return CONFIG.workMinutes * 60;
  return (p === "long" ? CONFIG.longBreakMinutes : CONFIG.breakMinutes) * 60;
}

function tick() {
  if (endsAt) remaining = Math.max(0, Math.round((endsAt - Date.now()) / 1000));
  $("clock").textContent = pad(Math.floor(remaining / 60)) + ":" + pad(remaining % 60);
  $("phase").textContent = T[phase] + (current ? " · " + current : "");
  if (endsAt && remaining === 0) finishPhase(true);
}

function stopTicker() {
  clearInterval(ticker);
  endsAt = null;
  $("start").textContent = T.start;
}

function finishPhase(counted) {
  stopTicker();
  if (phase === "work") {
    if (counted) {
      LOG.add({ task: current, minutes: CONFIG.workMinutes });
      completed += 1;
    }
    phase = completed > 0 && completed % CONFIG.longEvery === 0 ? "long" : "break";
  } else {
    phase = "work";
  }
  remaining = phaseLength(phase);
  tick();
  render();
}

function toggle() {
  if (endsAt) {
    remaining = Math.max(0, Math.round((endsAt - Date.now()) / 1000));
    stopTicker();
  } else {
    endsAt = Date.now() + remaining * 1000;
    ticker = setInterval(tick, 1000);
    $("start").textContent = T.pause;
  }
  tick();
}

function render() {
  const today = LOG.onDay(dayKey());
  $("today-total").textContent = today.length + " / " + CONFIG.dailyGoal + " 🍅";
  progress("progress-fill", today.length, CONFIG.dailyGoal, false);
  const minutes = today.reduce((s, i) => s + num(i.minutes), 0);
  $("status").textContent = fmt(minutes, 0) + " " + T.minutes + " · " + T.streak + ": " + LOG.streak() + " " + T.days;
  const list = $("tasks");
  clear(list);
  TASKS.items.forEach((task) => {
    const count = today.filter((i) => i.task === task.title).length;
    const li = el("li", task.title === current ? "item active" : "item");
    li.appendChild(button(task.title + " (" + count + ")", "link", () => {
      current = task.title;
      save(current, ".current");
      tick();
      render();
    }));
    li.appendChild(deleteButton(() => {
      TASKS.remove(task.id);
      if (current === task.title) current = "";
      render();
    }));
    list.appendChild(li);
  });
  if (!TASKS.items.length) list.appendChild(el("li", "empty", T.empty));
  const days = lastDays(CONFIG.chartDays);
  barChart($("chart"), days.map(shortDay), LOG.sumByDay(days, () => 1), CONFIG.dailyGoal);
}

function init() {
  $("start").addEventListener("click", toggle);
  $("skip").addEventListener("click", () => finishPhase(false));
  onSubmit((v) => {
    if (!v.title) return false;
    TASKS.add({ title: v.title });
    if (!current) current = v.title;
    render();
    tick();
    return true;
  });
  tick();
  render();
}
