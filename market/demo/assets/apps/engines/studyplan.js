// Exams with hours still needed -> a daily plan capped at what fits in a day.
const EXAMS = makeLog(".exams");
const LOG = makeLog();

function studied(subject) {
  return LOG.items.filter((i) => i.subject === subject).reduce((s, i) => s + num(i.hours), 0);
}

function planFor(today) {
  const rows = EXAMS.items
    .filter((e) => e.date >= today)
    .map((e) => {
      const daysLeft = Math.max(1, daysBetween(today, e.date));
      const left = Math.max(0, num(e.hours) - studied(e.subject));
      return { exam: e, daysLeft: daysLeft, perDay: left / daysLeft };
    });
  const want = rows.reduce((s, r) => s + r.perDay, 0);
  const scale = want > CONFIG.maxHoursPerDay ? CONFIG.maxHoursPerDay / want : 1;
  rows.forEach((r) => {
    r.today = Math.round(r.perDay * scale * 4) / 4;
  });
  rows.sort((a, b) => a.daysLeft - b.daysLeft);
  return { rows: rows, overloaded: scale < 1 };
}

function render() {
  const plan = planFor(dayKey());
  const total = plan.rows.reduce((s, r) => s + r.today, 0);
  $("today-total").textContent = T.plan + ": " + fmt(total, 2) + " " + T.hours;
  $("status").textContent = plan.overloaded ? T.overloaded : T.streak + ": " + LOG.streak() + " " + T.days;
  const box = $("groups");
  clear(box);
  plan.rows.forEach((r) => {
    const label = r.exam.subject + " · " + r.daysLeft + " " + T.daysLeft;
    progressRow(box, label, studied(r.exam.subject), num(r.exam.hours), fmt(r.today, 2) + " " + T.perDay, "goal");
  });
  const select = $("session-subject");
  clear(select);
  EXAMS.items.forEach((e) => {
    const o = el("option", "", e.subject);
    o.value = e.subject;
    select.appendChild(o);
  });
  renderList($("list"), EXAMS.items, (e) => e.subject + " · " + e.date + " · " + fmt(studied(e.subject)) + " / " + fmt(e.hours) + " " + T.hours, (e) => {
    EXAMS.remove(e.id);
    render();
  });
  const days = lastDays(CONFIG.chartDays);
  barChart($("chart"), days.map(shortDay), LOG.sumByDay(days, (i) => num(i.hours)), 0);
}

function init() {
  onSubmit((v) => {
    if (!v.subject || !v.date || !(v.hours > 0)) return false;
    EXAMS.add({ subject: v.subject, date: v.date, hours: v.hours, day: dayKey() });
    render();
    return true;
  });
  onSubmit(() => {
    const subject = $("session-subject").value;
    const input = $("session-hours");
    const hours = num(input.value);
    if (subject && hours > 0) LOG.add({ subject: subject, hours: hours });
    input.value = "";
    render();
    return false;
  }, "session-form");
  render();
}
