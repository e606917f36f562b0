// Sprig previews run in a sandbox with an opaque origin, where reading localStorage throws.
// Apps keep their logs there, so the preview gets an in-memory stand-in that forgets
// everything when the frame goes away (a preview keeps nothing).
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
})();
