// One-tap baby log: feeds, bottles and diapers; time since the last feed.
const LOG = makeLog();

function kind(id) {
  return CONFIG.kinds.find((k) => k[0] === id) || [id, id, "", false, false];
}

function since(iso) {
  const mins = Math.max(0, Math.round((Date.now() - new Date(iso).getTime()) / 60000));
  return Math.floor(mins / 60) + " " + T.hours + " " + pad(mins % 60) + " " + T.minutes;
}

function render() {
  const feeds = LOG.items.filter((i) => kind(i.kind)[3]);
  const lastFeed = feeds[feeds.length - 1];
  $("today-total").textContent = T.sinceLast + ": " + (lastFeed ? since(lastFeed.at) : "–");
  const today = LOG.onDay(dayKey());
  const amount = today.reduce((s, i) => s + num(i.amount), 0);
  $("status").textContent = T.today + ": " + today.filter((i) => kind(i.kind)[3]).length + " × 🍼 · " + fmt(amount, 0) + " " + CONFIG.unit;
  const many = CONFIG.babies.length > 1;
  const counts = {};
  today.forEach((i) => {
    const key = kind(i.kind)[1] + (many ? " · " + i.baby : "");
    counts[key] = (counts[key] || 0) + 1;
  });
  cssBars($("groups"), Object.keys(counts).map((k) => ({ label: k, value: counts[k] })), "");
  const describe = (i) => shortDay(i.day) + " " + clock(i.at) + " · " + kind(i.kind)[2] + " " + kind(i.kind)[1] +
    (num(i.amount) ? " · " + fmt(i.amount, 0) + " " + CONFIG.unit : "") + (many ? " · " + i.baby : "");
  renderList($("list"), LOG.items.slice(-20), (i) => withExtra(describe(i), i), (i) => {
    LOG.remove(i.id);
    render();
  });
}

function init() {
  const box = $("kinds");
  CONFIG.kinds.forEach((k) => {
    box.appendChild(button(k[2] + " " + k[1], "quick", () => {
      const v = readFields();
      if (!k[4]) v.amount = 0;
      LOG.add(Object.assign(v, { kind: k[0] }));
      resetFields();
      render();
    }));
  });
  setInterval(render, 60000);
  render();
}
