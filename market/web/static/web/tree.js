// The fork tree view: one row per sub-agent, children indented under their parent and joined
// by elbow links. Dot size = average daily active users, colour = how loved it is; the path
// to the lineage's best branch is highlighted. Forks beyond the first few load on demand.
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";
  // Labels are fitted to the frame's width (cut with "…", the whole title on hover and in
  // the link's label), so a deep fork stays readable without scrolling sideways; a phone gets
  // a narrower indent so deep levels keep room for their words.
  var ROW = 30, LEFT = 18, TOP = 18, NARROW = 520, ELLIPSIS = "\u2026";
  var INDENT = 22, PHONE_INDENT = 14, SHORTEST_LABEL = 48, MARGIN = 10;

  var frame, status, nodes, topId, childrenUrl, nodeUrl;
  // The page's words in the reader's language (tree.html's #tree-messages), with %(name)s
  // marks for the values.
  var messages = {};

  function t(key, values) {
    var text = messages[key];
    return text.replace(/%\((\w+)\)s/g, function (_match, name) { return String(values[name]); });
  }

  function word(node) {
    return (messages.words && messages.words[node.word]) || node.word;
  }

  function el(name, attrs, text) {
    var node = document.createElementNS(SVG, name);
    for (var key in attrs) node.setAttribute(key, attrs[key]);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function qualityClass(q) {
    if (q === null || q === undefined) return "q-none";
    if (q >= 0.75) return "q-loved";
    if (q >= 0.6) return "q-liked";
    if (q >= 0.4) return "q-mixed";
    return "q-disliked";
  }

  function radius(active) {
    return Math.min(14, 4 + 2 * Math.log2(1 + (active || 0)));
  }

  function byRank(a, b) {
    var x = nodes.get(a), y = nodes.get(b);
    return (y.installs - x.installs) || (x.id - y.id);
  }

  function add(data) {
    var existing = nodes.get(data.id);
    if (existing) {
      // Keep what the first answer knew (path flags, loaded children) and take the new figures.
      ["active", "quality", "word", "installs", "forks"].forEach(function (k) { existing[k] = data[k]; });
      return existing;
    }
    var node = Object.assign({ children: [], expanded: true, loading: false }, data);
    nodes.set(node.id, node);
    var parent = nodes.get(node.parent);
    if (parent && parent.children.indexOf(node.id) < 0) {
      parent.children.push(node.id);
      parent.children.sort(byRank);
    }
    return node;
  }

  function build(list) {
    nodes = new Map();
    // Parents first, so every child finds its parent.
    list.slice().sort(function (a, b) { return a.depth - b.depth; }).forEach(add);
  }

  function rows() {
    var out = [];
    (function visit(id, level) {
      var node = nodes.get(id);
      out.push({ kind: "node", node: node, level: level });
      if (node.expanded) {
        node.children.forEach(function (child) { visit(child, level + 1); });
        if (node.more !== null && node.more !== undefined) {
          var left = Math.max(0, node.forks - node.children.length);
          if (left > 0) out.push({ kind: "more", node: node, level: level + 1, left: left });
        }
      }
    })(topId, 0);
    return out;
  }

  // The longest prefix of ``text``'s title (an SVG <text> in the document) that fits ``room``
  // pixels with an ellipsis after it; measured on the rendered glyphs, so CJK and Latin titles
  // both fill the room. Reads only: no layout is invalidated.
  function prefixFitting(text, room) {
    var ellipsis = text.getSubStringLength(0, 1);
    var low = 1, high = text.textContent.length - 1;
    while (low < high) {
      var middle = Math.ceil((low + high) / 2);
      if (text.getSubStringLength(0, middle) + ellipsis <= room) low = middle; else high = middle - 1;
    }
    return low;
  }

  function cut(label) {
    // Never split a surrogate pair (an emoji) in half.
    var code = label.title.charCodeAt(label.keep - 1);
    if (label.keep > 1 && code >= 0xd800 && code <= 0xdbff) label.keep -= 1;
    label.text.textContent = label.title.slice(0, label.keep).replace(/\s+$/, "") + ELLIPSIS;
  }

  // Fit every label to its room, ending a cut one in "…", and note each label's width. All
  // measuring is done before any label changes and again once after, so a tree of thousands
  // of nodes is laid out a few times, not once per label.
  function fitLabels(labels) {
    var over = labels.filter(function (label) {
      label.width = label.text.getComputedTextLength();
      if (label.width <= label.room) return false;
      label.title = label.text.textContent;
      label.keep = prefixFitting(label.text, label.room);
      return true;
    });
    over.forEach(cut);
    // The ellipsis was estimated; trim further where it made a label too wide.
    for (var round = 0; round < 3 && over.length; round++) {
      over = over.filter(function (label) {
        label.width = label.text.getComputedTextLength();
        return label.width > label.room && label.keep > 1;
      });
      over.forEach(function (label) { label.keep -= 1; cut(label); });
    }
  }

  function render() {
    var list = rows();
    var position = new Map();
    var room = frame.clientWidth;
    var indent = room < NARROW ? PHONE_INDENT : INDENT;
    list.forEach(function (row, i) {
      var x = LEFT + row.level * indent, y = TOP + i * ROW;
      if (row.kind === "node") position.set(row.node.id, [x, y]);
      row.x = x; row.y = y;
    });
    var height = TOP + list.length * ROW;
    var svg = el("svg", {
      width: room, height: height, viewBox: "0 0 " + room + " " + height,
      role: "group", "aria-label": t("tree", { count: nodes.size }), class: "tree"
    });
    var links = "", bestLinks = "", moreLinks = "";
    list.forEach(function (row) {
      var parentId = row.kind === "node" ? row.node.parent : row.node.id;
      if (row.kind === "node" && row.node.id === topId) return;
      var from = position.get(parentId);
      if (!from) return;
      var d = "M" + from[0] + " " + from[1] + "V" + row.y + "H" + (row.x - 2);
      if (row.kind === "more") moreLinks += d;
      else if (row.node.best) bestLinks += d;
      else links += d;
    });
    svg.appendChild(el("path", { d: links, class: "links" }));
    svg.appendChild(el("path", { d: moreLinks, class: "links links-more" }));
    svg.appendChild(el("path", { d: bestLinks, class: "links links-best" }));

    var layer = document.createDocumentFragment();
    list.forEach(function (row) {
      var node = row.node;
      if (row.kind === "more") {
        var more = el("g", {
          class: "more", transform: "translate(" + row.x + "," + row.y + ")",
          role: "button", tabindex: "0", "data-more-for": node.id,
          "aria-label": t("show_more_label", { shown: Math.min(row.left, 12), left: row.left, title: node.title })
        });
        more.appendChild(el("rect", { x: -4, y: -11, width: 136, height: 22, rx: 11 }));
        more.appendChild(el("text", { x: 8, y: 4 }, node.loading ? t("loading", {}) : t("show_more", { left: row.left })));
        layer.appendChild(more);
        row.right = row.x + 132;
        return;
      }
      var classes = "node " + qualityClass(node.quality) + (node.best ? " best" : "") + (node.focus ? " focus" : "") +
        (node.status !== "active" ? " status-" + node.status : "");
      var g = el("g", { class: classes, transform: "translate(" + row.x + "," + row.y + ")", "data-id": node.id });
      var r = radius(node.active);
      var link = el("a", {
        href: nodeUrl.replace("/s/0", "/s/" + node.id),
        "aria-label": (function (label) {
          return node.best ? t("on_best_path", { label: label }) : label;
        })(t("node", {
          title: node.title, word: word(node), active: node.active, installs: node.installs, forks: node.forks
        }))
      });
      if (node.focus) link.appendChild(el("circle", { r: r + 5, class: "halo" }));
      link.appendChild(el("circle", { r: r, class: "dot" }));
      link.appendChild(el("title", {}, node.title));
      row.text = el("text", { x: r + 7, y: 4 }, node.title);
      row.labelX = row.x + r + 7;
      link.appendChild(row.text);
      g.appendChild(link);
      if (node.children.length) {
        var toggle = el("g", {
          class: "toggle", role: "button", tabindex: "0", "data-toggle": node.id,
          "aria-expanded": String(node.expanded), "aria-label": t(node.expanded ? "hide_forks" : "show_forks", { title: node.title }),
          transform: "translate(" + (-INDENT + 4) + ",0)"
        });
        toggle.appendChild(el("rect", { x: -7, y: -7, width: 14, height: 14, rx: 3 }));
        toggle.appendChild(el("text", { x: 0, y: 4, "text-anchor": "middle" }, node.expanded ? "−" : "+"));
        if (node.id !== topId) g.appendChild(toggle);
      }
      layer.appendChild(g);
    });
    svg.appendChild(layer);
    var old = frame.querySelector("svg.tree");
    if (old) frame.replaceChild(svg, old); else frame.appendChild(svg);
    // Measuring needs the labels in the document; only a row too deep to keep even a short
    // label makes the tree wider than its frame (and the frame scroll).
    var labels = [];
    list.forEach(function (row) {
      if (row.text) {
        row.label = { text: row.text, room: Math.max(SHORTEST_LABEL, room - row.labelX - MARGIN) };
        labels.push(row.label);
      }
    });
    fitLabels(labels);
    var width = room;
    list.forEach(function (row) {
      if (row.label) row.right = row.labelX + row.label.width;
      width = Math.max(width, Math.ceil(row.right + MARGIN));
    });
    if (width > room) {
      svg.setAttribute("width", width);
      svg.setAttribute("viewBox", "0 0 " + width + " " + height);
    }
  }

  function say(text) { if (status) status.textContent = text; }

  function loadMore(id) {
    var node = nodes.get(id);
    if (!node || node.loading) return;
    node.loading = true;
    render();
    var url = childrenUrl.replace("/s/0/", "/s/" + id + "/");
    if (node.more) url += "?cursor=" + encodeURIComponent(node.more);
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.json();
      })
      .then(function (page) {
        node.loading = false;
        page.nodes.forEach(add);
        node.more = page.more;
        node.expanded = true;
        if (page.more === null) node.forks = node.children.length;
        render();
        say(t("more_shown", { count: page.nodes.length, title: node.title }));
        var next = frame.querySelector('[data-more-for="' + id + '"]');
        if (next) next.focus();
      })
      .catch(function () {
        node.loading = false;
        render();
        say(t("more_failed", {}));
      });
  }

  function loadAll(button) {
    button.disabled = true;
    say(t("loading_tree", {}));
    fetch(button.dataset.url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.json();
      })
      .then(function (tree) {
        if (tree.too_large) { say(t("too_large", {})); return; }
        tree.nodes.forEach(add);
        nodes.forEach(function (node) { node.more = null; node.expanded = true; node.forks = node.children.length; });
        render();
        button.remove();
        say(t("all_shown", { count: nodes.size }));
        frame.dataset.whole = "1";
      })
      .catch(function () { button.disabled = false; say(t("tree_failed", {})); });
  }

  function activate(target) {
    var more = target.closest("[data-more-for]");
    if (more) { loadMore(Number(more.dataset.moreFor)); return true; }
    var toggle = target.closest("[data-toggle]");
    if (toggle) {
      var node = nodes.get(Number(toggle.dataset.toggle));
      node.expanded = !node.expanded;
      render();
      var again = frame.querySelector('[data-toggle="' + node.id + '"]');
      if (again) again.focus();
      return true;
    }
    return false;
  }

  document.addEventListener("DOMContentLoaded", function () {
    frame = document.getElementById("tree");
    var dataNode = document.getElementById("tree-data");
    if (!frame || !dataNode) return;
    status = document.getElementById("tree-status");
    childrenUrl = frame.dataset.childrenUrl;
    nodeUrl = frame.dataset.nodeUrl;
    var data = JSON.parse(dataNode.textContent);
    var messagesNode = document.getElementById("tree-messages");
    if (messagesNode) messages = JSON.parse(messagesNode.textContent);
    topId = data.top;
    build(data.nodes);
    render();
    frame.addEventListener("click", function (event) {
      if (activate(event.target)) event.preventDefault();
    });
    frame.addEventListener("keydown", function (event) {
      if ((event.key === "Enter" || event.key === " ") && activate(event.target)) event.preventDefault();
    });
    var shown = frame.clientWidth;
    window.addEventListener("resize", function () {
      if (frame.clientWidth !== shown) { shown = frame.clientWidth; render(); }
    });
    var all = document.getElementById("tree-all");
    if (all) all.addEventListener("click", function () { loadAll(all); });
    var focus = frame.querySelector("g.node.focus");
    if (focus && focus.getBoundingClientRect().top > window.innerHeight) {
      focus.scrollIntoView({ block: "center" });
    }
    frame.dataset.ready = "1";
    window.__treeReadyAt = performance.now();
  });
})();
