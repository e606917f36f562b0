// Check-ins on a 1..n scale with tags; daily average chart and tag counts.
const LOG = makeLog();
const chosenTags = {};
let picked = null;

function scaleLabel(v) {
  const hit = CONFIG.scale.find((s) => s[0] === v);
  return hit ? hit[2] + " " + hit[1] : "?";
}

function tagLabel(id) {
  const hit = CONFIG.tags.find((t) => t[0] === id);
  return hit ? hit[1] : id;
}

function paintScale() {
  const box = $("scale");
  clear(box);
  CONFIG.scale.forEach((s) => {
    box.appendChild(button(s[2] + " " + s[1], s[0] === picked ? "chip on" : "chip", () => {
      picked = s[0];
      paintScale();
    }));
  });
}

function paintTags() {
  const box = $("tags");
  clear(box);
  CONFIG.tags.forEach((t) => {
    box.appendChild(button(t[1], chosenTags[t[0]] ? "chip on" : "chip", () => {
      chosenTags[t[0]] = !chosenTags[t[0]];
      paintTags();
    }));
  });
}

function render() {
  if (CONFIG.prompts.length) {
    const n = Math.floor(Date.now() / 86400000) % CONFIG.prompts.length;
    $("prompt").textContent = CONFIG.prompts[n];
  }
  const days = lastDays(CONFIG.chartDays);
  const avg = days.map((d) => {
    const items = LOG.onDay(d);
    return items.length ? items.reduce((s, i) => s + num(i.mood), 0) / items.length : 0;
  });
  const logged = avg.filter((v) => v > 0);
  const mean = logged.length ? logged.reduce((a, b) => a + b, 0) / logged.length : 0;
  $("today-total").textContent = T.average + ": " + (mean ? fmt(mean) : "–") + " / " + CONFIG.scale.length;
  $("status").textContent = T.streak + ": " + LOG.streak() + " " + T.days;
  const counts = {};
  LOG.since(30).forEach((i) => (i.tags || []).forEach((t) => {
    counts[t] = (counts[t] || 0) + 1;
  }));
  cssBars($("groups"), CONFIG.tags.filter((t) => counts[t[0]]).map((t) => ({ label: t[1], value: counts[t[0]] })), "");
  const describe = (i) => shortDay(i.day) + " " + clock(i.at) + " · " + scaleLabel(i.mood) +
    (i.tags && i.tags.length ? " · " + i.tags.map(tagLabel).join(", ") : "") + (i.note ? " — " + i.note : "");
  renderList($("list"), LOG.since(14), (i) => withExtra(describe(i), i), (i) => {
    LOG.remove(i.id);
    render();
  });
  barChart($("chart"), days.map(shortDay), avg, 0);
}

function init() {
  paintScale();
  paintTags();
  onSubmit((v) => {
    if (picked === null) {
      $("status").textContent = T.pickMood;
      return false;
    }
    const tags = CONFIG.tags.filter((t) => chosenTags[t[0]]).map((t) => t[0]);
    LOG.add(Object.assign(v, { mood: picked, tags: tags }));
    picked = null;
    Object.keys(chosenTags).forEach((k) => {
      chosenTags[k] = false;
    });
    paintScale();
    paintTags();
    render();
    return true;
  });
  render();
}
