// Family chore chart: points per person this week, reward threshold, pocket money.
const LOG = makeLog();

function pointsOf(i) {
  const c = CONFIG.chores.find((x) => x[0] === i.chore);
  return c ? c[2] : 0;
}

function render() {
  const week = LOG.since(7);
  const totals = {};
  CONFIG.people.forEach((p) => {
    totals[p] = 0;
  });
  week.forEach((i) => {
    totals[i.who] = (totals[i.who] || 0) + pointsOf(i);
  });
  const leader = Object.keys(totals).sort((a, b) => totals[b] - totals[a])[0];
  $("today-total").textContent = T.thisWeek + ": " + week.reduce((s, i) => s + pointsOf(i), 0) + " " + T.points;
  $("status").textContent = leader && totals[leader] >= CONFIG.rewardAt
    ? leader + " — " + T.reward + " " + CONFIG.rewardLabel
    : T.goal + ": " + CONFIG.rewardAt + " " + T.points + " → " + CONFIG.rewardLabel;
  const box = $("groups");
  clear(box);
  CONFIG.people.forEach((p) => {
    const cash = CONFIG.pointValue ? " · " + money(totals[p] * CONFIG.pointValue) : "";
    progressRow(box, p, totals[p], CONFIG.rewardAt, totals[p] + " " + T.points + cash, "goal");
  });
  renderList($("list"), week, (i) => withExtra(shortDay(i.day) + " · " + i.who + " · " + optionLabel("chore", i.chore) + " (+" + pointsOf(i) + ")", i), (i) => {
    LOG.remove(i.id);
    render();
  });
}

function init() {
  onSubmit((v) => {
    if (!v.who || !v.chore) return false;
    LOG.add(v);
    render();
    return true;
  });
  render();
}
