FEATURES.push(function reminder() {
  // In-page nudge every N hours inside waking hours; a system notification too
  // when the person has allowed them. Toggle state is remembered per device.
  const cfg = CONFIG.features.reminder;
  const banner = $("reminder-banner");
  const toggle = $("reminder-toggle");
  let enabled = load(".reminder", true);
  function paint() {
    toggle.textContent = enabled ? T.reminderOn : T.reminderOff;
  }
  function nudge() {
    const hour = new Date().getHours();
    if (!enabled || hour < cfg.fromHour || hour >= cfg.toHour) return;
    banner.textContent = cfg.message;
    banner.hidden = false;
    if (typeof Notification !== "undefined" && Notification.permission === "granted") {
      new Notification(CONFIG.title, { body: cfg.message });
    }
  }
  toggle.addEventListener("click", () => {
    enabled = !enabled;
    save(enabled, ".reminder");
    paint();
    if (enabled && typeof Notification !== "undefined" && Notification.permission === "default") {
      Notification.requestPermission();
    }
  });
  banner.addEventListener("click", () => {
    banner.hidden = true;
  });
  paint();
  setInterval(nudge, cfg.everyHours * 3600000);
});
