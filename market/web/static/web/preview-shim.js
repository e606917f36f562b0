// Loaded first into every Sprig preview, a sandbox with an opaque origin and no network.
// Reading localStorage throws there, and apps keep their logs in it, so the preview gets an
// in-memory stand-in that forgets everything when the frame goes away (a preview keeps
// nothing). And `window.sprigPreview` tells the app it runs in a preview: its network calls
// fail by design here, not because the person is offline, so it can say so.
(function () {
  "use strict";
  function memoryStorage() {
    var items = new Map();
    return {
      get length() { return items.size; },
      key: function (i) { return Array.from(items.keys())[i] ?? null; },
      getItem: function (k) { k = String(k); return items.has(k) ? items.get(k) : null; },
      setItem: function (k, v) { items.set(String(k), String(v)); },
      removeItem: function (k) { items.delete(String(k)); },
      clear: function () { items.clear(); }
    };
  }
  ["localStorage", "sessionStorage"].forEach(function (name) {
    var works = false;
    try { works = !!window[name]; } catch (e) { works = false; }
    if (!works) {
      Object.defineProperty(window, name, { value: memoryStorage(), configurable: true });
    }
  });
  Object.defineProperty(window, "sprigPreview", { value: true });
})();
