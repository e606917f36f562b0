// Savings goals (or kids' jars) with deposits, progress and a projected finish date.
const GOALS = makeLog(".goals");

function savedIn(goal) {
  return (goal.deposits || []).reduce((s, d) => s + num(d.amount), 0);
}

function projection(goal) {
  const deps = goal.deposits || [];
  const left = num(goal.target) - savedIn(goal);
  if (left <= 0) return T.goalReached;
  if (deps.length < 2) return "";
  const perDay = savedIn(goal) / Math.max(1, daysBetween(deps[0].day, dayKey()));
  return perDay > 0 ? T.projected + " " + addDays(dayKey(), Math.ceil(left / perDay)) : "";
}

function deposit(goal, amount) {
  if (!(amount > 0)) return;
  goal.deposits = (goal.deposits || []).concat([{ day: dayKey(), amount: amount }]);
  save(GOALS.items, ".goals");
}

function render() {
  const total = GOALS.items.reduce((s, g) => s + savedIn(g), 0);
  const target = GOALS.items.reduce((s, g) => s + num(g.target), 0);
  $("today-total").textContent = money(total) + " / " + money(target);
  progress("progress-fill", total, target, false);
  $("status").textContent = GOALS.items.filter((g) => savedIn(g) >= num(g.target)).length + " / " + GOALS.items.length + " " + T.goalReached;
  const box = $("goals");
  clear(box);
  GOALS.items.forEach((g) => {
    const card = el("div", "card");
    card.appendChild(el("h3", "", g.name));
    progressRow(card, money(savedIn(g)), savedIn(g), num(g.target), money(g.target), "goal");
    card.appendChild(el("p", "muted", projection(g)));
    const input = el("input", "amount");
    input.type = "number";
    input.min = "0";
    input.step = String(CONFIG.step);
    card.appendChild(input);
    card.appendChild(button(T.contribute, "", () => {
      deposit(g, num(input.value));
      render();
    }));
    card.appendChild(deleteButton(() => {
      GOALS.remove(g.id);
      render();
    }));
    box.appendChild(card);
  });
  if (!GOALS.items.length) box.appendChild(el("p", "empty", T.empty));
}

function payAllowance() {
  const rule = CONFIG.allowance;
  rule.split.forEach((part) => {
    const goal = GOALS.items.find((g) => g.name === part[0]);
    if (goal) deposit(goal, Math.round(rule.amount * part[1]) / 100);
  });
  render();
}

function init() {
  if (!GOALS.items.length && !load(".seeded", false)) {
    CONFIG.starter.forEach((g) => GOALS.add({ name: g[0], target: g[1], deposits: [] }));
    save(true, ".seeded");
  }
  const pay = $("allowance");
  if (pay && CONFIG.allowance) pay.addEventListener("click", payAllowance);
  onSubmit((v) => {
    if (!v.name || !(v.target > 0)) return false;
    GOALS.add({ name: v.name, target: v.target, deposits: [] });
    render();
    return true;
  });
  render();
}
