(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("trace-data").textContent);
  var steps = data.steps;
  var N = steps.length;
  var entityFields = Object.create(null);
  data.entities.forEach(function (g) { g.fields.forEach(function (f) { entityFields[f] = g; }); });
  var BARE = /^[A-Za-z_][A-Za-z0-9_.-]*$/;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) setText(e, String(text));
    return e;
  }
  // Text that wraps only at spaces: a browser would also break after the hyphen of an invariant
  // (no-stale-request-applied) or a slash, so words holding one are kept whole in a nowrap span.
  var BREAKS = /[-\/\u2010-\u2014]/;
  function setText(e, text) {
    if (!BREAKS.test(text) || e.tagName === "OPTION" || e.tagName === "TITLE") { e.textContent = text; return; }
    e.textContent = "";
    text.split(/(\s+)/).forEach(function (part) {
      if (!part) return;
      if (BREAKS.test(part) && !/\s/.test(part)) {
        var span = document.createElement("span");
        span.className = "nobr";
        span.textContent = part;
        e.appendChild(span);
      }
      else e.appendChild(document.createTextNode(part));
    });
  }
  // Which lists of step n were sets (JSON Pointers recorded in the trace file).
  var setCache = [];
  function setsOf(n) {
    if (n < 0 || n >= N) return Object.create(null);
    if (setCache[n]) return setCache[n];
    var m = Object.create(null);
    (steps[n].sets || []).forEach(function (p) { m[p] = true; });
    return (setCache[n] = m);
  }
  function isSetAt(n, ptr) { return ptr !== null && ptr !== undefined && setsOf(n)[ptr] === true; }
  function esc(k) { return String(k).replace(/~/g, "~0").replace(/\//g, "~1"); }
  var wholeState = !(isBox(steps[0].state) && !Array.isArray(steps[0].state));
  // The JSON Pointer of a viewer path (log[0], producers[1].log, state for a whole-value state).
  function pointerOf(path) {
    if (wholeState && path.lastIndexOf("state", 0) === 0) path = path.slice(5);
    var re = /\[(\d+)\]|\.?([^.\[\]]+)/g, m, out = "";
    while ((m = re.exec(path)) !== null) out += "/" + (m[1] !== undefined ? m[1] : esc(m[2]));
    return out;
  }
  // One value, written as 'kafkamc trace show' writes it: tuples (a, b), sets {a, b} or set(),
  // records {field: value}; n and ptr say which step and where, so sets are told from tuples.
  function show(v, n, ptr) {
    if (v === null || v === undefined) return "null";
    if (typeof v === "boolean") return v ? "true" : "false";
    if (typeof v === "string") return BARE.test(v) ? v : JSON.stringify(v);
    if (isBig(v)) return v["#bigint"];
    var at = function (k) { return ptr === null || ptr === undefined ? null : ptr + "/" + esc(k); };
    if (Array.isArray(v)) {
      var items = v.map(function (x, i) { return show(x, n, at(i)); });
      if (isSetAt(n, ptr)) return items.length ? "{" + items.join(", ") + "}" : "set()";
      return items.length === 1 ? "(" + items[0] + ",)" : "(" + items.join(", ") + ")";
    }
    if (typeof v === "object") {
      // A no-break space keeps a field's name with its value when a long record wraps.
      return "{" + Object.keys(v).map(function (k) { return k + ":\u00a0" + show(v[k], n, at(k)); }).join(", ") + "}";
    }
    return String(v);
  }
  // Integers beyond 2^53 arrive as {"#bigint": "digits"} (as in ITF) and are shown and compared as scalars.
  function isBig(v) { return v !== null && typeof v === "object" && !Array.isArray(v) && typeof v["#bigint"] === "string" && Object.keys(v).length === 1; }
  function isBox(v) { return v !== null && typeof v === "object" && !isBig(v); }
  function has(o, k) { return Object.prototype.hasOwnProperty.call(o, k); }
  // Leaves: objects opened, lists of lists or objects by index; a set is one leaf.
  function flatten(v, prefix, out, n) {
    if (isBox(v) && !Array.isArray(v) && Object.keys(v).length) {
      Object.keys(v).forEach(function (k) { flatten(v[k], prefix ? prefix + "." + k : k, out, n); });
    } else if (Array.isArray(v) && v.length && v.every(isBox) && !isSetAt(n, pointerOf(prefix || "state"))) {
      v.forEach(function (x, i) { flatten(x, prefix + "[" + i + "]", out, n); });
    } else {
      out.push([prefix || "state", v]);
    }
    return out;
  }
  function opened(path, keys) {
    for (var i = 0; i < keys.length; i++) {
      var k = keys[i];
      if (k.length > path.length && k.lastIndexOf(path, 0) === 0 && (k[path.length] === "[" || k[path.length] === ".")) return true;
    }
    return false;
  }

  // Per step: the state's variables in order, and for each non-entity variable its leaves.
  var cache = [];
  function info(n) {
    if (cache[n]) return cache[n];
    var s = steps[n].state;
    var vars = [];
    var isObj = isBox(s) && !Array.isArray(s);
    var keys = isObj ? Object.keys(s) : ["state"];
    keys.forEach(function (k) {
      var v = isObj ? s[k] : s;
      var leaves = flatten(v, isObj ? k : "", [], n);
      var map = Object.create(null);
      leaves.forEach(function (l) { map[l[0]] = JSON.stringify(l[1]); });
      vars.push({ name: k, value: v, leaves: leaves, map: map, json: JSON.stringify(v) });
    });
    var byName = Object.create(null);
    vars.forEach(function (v) { byName[v.name] = v; });
    return (cache[n] = { vars: vars, byName: byName });
  }

  function markOf(n, oldJson, newJson) {
    if (n === 0) return "initial";
    if (oldJson === undefined) return "added";
    if (newJson === undefined) return "removed";
    return oldJson === newJson ? "unchanged" : "modified";
  }
  var SIGN = { added: "+ added", modified: "~ modified", removed: "\u2212 removed", unchanged: "=", initial: "" };

  function changeCount(n) {
    if (n === 0) return 0;
    var a = info(n - 1), b = info(n), c = 0;
    b.vars.forEach(function (v) {
      var p = a.byName[v.name];
      if (!p) { c += 1; return; }
      if (p.json === v.json) return;
      var g = entityFields[v.name];
      if (g && Array.isArray(v.value) && Array.isArray(p.value)) {
        for (var i = 0; i < g.count; i++) if (JSON.stringify(v.value[i]) !== JSON.stringify(p.value[i])) c += 1;
      } else {
        Object.keys(v.map).forEach(function (k) { if (p.map[k] !== v.map[k] && !(p.map[k] === undefined && (v.map[k] === "[]" || v.map[k] === "{}") && opened(k, Object.keys(p.map)))) c += 1; });
        Object.keys(p.map).forEach(function (k) { if (v.map[k] === undefined && !((p.map[k] === "[]" || p.map[k] === "{}") && opened(k, Object.keys(v.map)))) c += 1; });
      }
    });
    a.vars.forEach(function (p) { if (!b.byName[p.name]) c += 1; });
    return c;
  }

  // -- header ----------------------------------------------------------------------------
  setText(document.getElementById("title"), (data.spec || "trace") + (data.violated ? ": " + data.violated + " violated" : ""));
  var params = Object.keys(data.params).map(function (k) { return k + "=" + show(data.params[k], -1, null); }).join("  ");
  setText(document.getElementById("params"), params ? "parameters: " + params : "");
  var verdict = document.getElementById("verdict");
  var lasso = data.loop_start !== null && data.loop_start !== undefined;
  if (lasso) {
    verdict.appendChild(document.createTextNode("Liveness property "));
    verdict.appendChild(el("strong", "", data.violated));
    verdict.appendChild(document.createTextNode(" fails: steps " + (data.loop_start + 1) + " to " + N + " repeat forever" + (data.loop_action === null ? " (the last state stutters)" : " (" + data.loop_action + " leads back to step " + (data.loop_start + 1) + ")")));
  } else if (data.violated) {
    if (data.violated === "deadlock") {
      verdict.appendChild(el("strong", "", "Deadlock"));
      verdict.appendChild(document.createTextNode(" at step " + data.failing + " of " + N + ": the state has no successors"));
    } else {
      verdict.appendChild(document.createTextNode("Invariant "));
      verdict.appendChild(el("strong", "", data.violated));
      verdict.appendChild(el("span", "", " fails at step " + data.failing + " of " + N + (data.description ? ": " + data.description : "")));
    }
    var jump = el("button", "", "go to failing step");
    jump.type = "button"; jump.id = "goto-failing";
    jump.addEventListener("click", function () { select(data.failing - 1, true); });
    verdict.appendChild(jump);
  } else {
    verdict.className = "none";
    verdict.textContent = "A trace of " + N + " states (no violated invariant recorded).";
  }
  var st = [];
  if (data.engine) st.push("engine " + data.engine);
  if (data.stats.distinct_states !== undefined) st.push(Number(data.stats.distinct_states).toLocaleString("en") + " distinct states");
  if (data.stats.depth !== undefined) st.push("depth " + data.stats.depth);
  if (data.invariants.length) st.push("checked: " + data.invariants.join(", "));
  st.push(data.format === "itf" ? "read from ITF" : "kafkamc trace");
  // Every checked property the run described (recorded in the trace file, a user's spec too).
  (function describeChecked() {
    var names = Object.keys(data.descriptions || {});
    if (!names.length) return;
    var box = el("details");
    box.id = "invariants";
    box.appendChild(el("summary", "", "checked properties (" + names.length + ")"));
    var dl = el("dl");
    names.forEach(function (name) {
      dl.appendChild(el("dt", name === data.violated ? "violated" : "", name));
      dl.appendChild(el("dd", "", data.descriptions[name]));
    });
    box.appendChild(dl);
    document.querySelector("header").appendChild(box);
  })();
  setText(document.getElementById("stats"), st.join(" \u00b7 "));

  // -- step list ---------------------------------------------------------------------------
  var list = document.getElementById("step-list");
  var items = [];
  steps.forEach(function (s, n) {
    var li = el("li");
    li.id = "item-" + (n + 1);
    var a = el("a");
    a.href = "#step-" + (n + 1);
    a.appendChild(el("span", "num", (n + 1) + "."));
    a.appendChild(el("span", "step-label", s.action === null ? "initial state" : s.action));
    if (n > 0) { var c = changeCount(n); a.appendChild(el("span", "nchg", c + (c === 1 ? " change" : " changes"))); }
    if (data.failing === n + 1) { li.className = "failing"; a.appendChild(el("span", "failmark", "\u2716 " + data.violated)); }
    if (lasso && n >= data.loop_start) li.classList.add("cycle");
    if (lasso && n === data.loop_start) a.appendChild(el("span", "loopmark", "\u21bb the cycle starts here, and repeats"));
    li.appendChild(a);
    list.appendChild(li);
    items.push(li);
  });

  // -- lanes -------------------------------------------------------------------------------
  var lanes = document.getElementById("lanes");
  var columns = [];
  for (var c0 = 0; c0 < N; c0++) columns.push([]);
  // Each action's short name in the lanes (ControllerElectLeader: CEL), unique over the trace.
  function actionName(label) {
    var m = /^\s*([A-Za-z_][A-Za-z0-9_]*)/.exec(label || "");
    return m ? m[1] : (label || "");
  }
  var ABBREV = Object.create(null), abbrevUsed = Object.create(null), abbrevOrder = [];
  steps.forEach(function (s) {
    if (s.action === null) return;
    var name = actionName(s.action);
    if (has(ABBREV, name)) return;
    var caps = name.replace(/[^A-Z]/g, "");
    var base = (caps.length >= 2 ? caps : name.slice(0, 3)).slice(0, 4) || "?";
    var a = base, i = 2;
    while (abbrevUsed[a]) a = base + (i++);
    ABBREV[name] = a;
    abbrevUsed[a] = true;
    abbrevOrder.push(name);
  });
  function abbrev(label) { return label ? ABBREV[actionName(label)] : "init"; }
  (function buildLegend() {
    var box = document.getElementById("lane-legend");
    if (!data.lanes.rows.length || !abbrevOrder.length) { box.hidden = true; return; }
    box.appendChild(el("strong", "", "Lanes: "));
    var one = function (cls, text, what) {
      var item = el("span", "item");
      item.appendChild(el("span", cls, text));
      item.appendChild(document.createTextNode(what));
      box.appendChild(item);
    };
    var sample = ABBREV[abbrevOrder[0]];
    one("chg actor", sample, "the entity the action names first acted and changed");
    one("chg", sample, "its state changed");
    one("named", "\u00b7", "named in the label, unchanged");
    box.appendChild(el("br"));
    box.appendChild(el("strong", "", "Actions: "));
    abbrevOrder.forEach(function (name) {
      var item = el("span", "item abbrev");
      item.setAttribute("data-abbrev", ABBREV[name]);
      item.appendChild(el("abbr", "", ABBREV[name]));
      item.lastChild.title = name;
      item.appendChild(document.createTextNode(" " + name));
      box.appendChild(item);
    });
  })();
  (function buildLanes() {
    var thead = el("thead"), hr = el("tr");
    hr.appendChild(el("th", "lane-name", "step"));
    for (var n = 0; n < N; n++) {
      var th = el("th", "", n + 1);
      th.setAttribute("data-step", n + 1);
      th.title = "step " + (n + 1) + ": " + (steps[n].action === null ? "initial state" : steps[n].action);
      if (data.failing === n + 1) th.className = "col-fail";
      hr.appendChild(th);
      columns[n].push(th);
    }
    thead.appendChild(hr);
    lanes.appendChild(thead);
    var tbody = el("tbody");
    data.lanes.rows.forEach(function (row, r) {
      var tr = el("tr");
      tr.setAttribute("data-lane", row.name);
      tr.appendChild(el("th", "lane-name", row.kind === "shared" ? "shared state" : row.name));
      for (var n = 0; n < N; n++) {
        var cell = data.lanes.cells[n][r];
        var td = el("td");
        td.setAttribute("data-step", n + 1);
        if (data.failing === n + 1) td.className = "col-fail";
        var label = steps[n].action === null ? "initial state" : steps[n].action;
        if (cell) {
          var changed = cell[0], actor = cell[1];
          if (changed.length) {
            var b = el("span", "chg" + (actor ? " actor" : ""), abbrev(steps[n].action));
            td.appendChild(b);
            td.title = "step " + (n + 1) + ": " + label + "\n" + row.name + " changed: " + changed.join(", ");
          } else {
            td.appendChild(el("span", "named", "\u00b7"));
            td.title = "step " + (n + 1) + ": " + label + "\nnames " + row.name + " (no change to it)";
          }
        } else {
          td.title = "step " + (n + 1) + ": " + label;
        }
        tr.appendChild(td);
        columns[n].push(td);
      }
      tbody.appendChild(tr);
    });
    lanes.appendChild(tbody);
    lanes.addEventListener("click", function (ev) {
      var t = ev.target;
      while (t && t !== lanes && !t.getAttribute("data-step")) t = t.parentNode;
      if (t && t !== lanes) select(Number(t.getAttribute("data-step")) - 1, true);
    });
  })();

  // -- controls ----------------------------------------------------------------------------
  var hide = document.getElementById("hide-unchanged");
  var filter = document.getElementById("filter");
  var entitySel = document.getElementById("entity-filter");
  data.entities.forEach(function (g) {
    g.names.forEach(function (name, i) {
      var o = el("option", "", g.kind + " " + name);
      o.value = g.kind + "\u0000" + i;
      entitySel.appendChild(o);
    });
  });
  if (!data.entities.length) entitySel.style.display = "none";
  hide.addEventListener("change", function () { document.body.classList.toggle("hide-unchanged", hide.checked); });
  filter.addEventListener("input", function () { render(); });
  entitySel.addEventListener("change", function () { render(); focusLane(); });
  document.getElementById("prev").addEventListener("click", function () { select(current - 1, true); });
  document.getElementById("next").addEventListener("click", function () { select(current + 1, true); });

  function chosenEntity() {
    if (!entitySel.value) return null;
    var parts = entitySel.value.split("\u0000");
    var g = data.entities.filter(function (x) { return x.kind === parts[0]; })[0];
    return g ? { group: g, index: Number(parts[1]) } : null;
  }
  function focusLane() {
    var ch = chosenEntity();
    var name = ch ? ch.group.names[ch.index] : null;
    Array.prototype.forEach.call(lanes.querySelectorAll("tbody tr"), function (tr) {
      tr.classList.toggle("lane-focus", tr.getAttribute("data-lane") === name);
    });
    var r = -1;
    data.lanes.rows.forEach(function (row, i) { if (row.name === name) r = i; });
    items.forEach(function (li, n) {
      li.classList.toggle("dim", r >= 0 && !data.lanes.cells[n][r]);
    });
  }

  // -- the selected state --------------------------------------------------------------------
  var view = document.getElementById("state-view");
  // What changed inside a modified list, in the words of 'kafkamc trace show': the members a set
  // gained and lost, what a tuple appended, dropped, removed or inserted.
  function delta(a, b, n, ptr) {
    if (!Array.isArray(a) || !Array.isArray(b)) return "";
    var sa = a.map(function (x) { return JSON.stringify(x); }), sb = b.map(function (x) { return JSON.stringify(x); });
    var shown = function (xs, m, base) { return xs.map(function (x) { return show(x[0], m, ptr + "/" + (base + x[1])); }).join(", "); };
    var idx = function (xs) { return xs.map(function (x, i) { return [x, i]; }); };
    if (isSetAt(n - 1, ptr) && isSetAt(n, ptr)) {
      if (!a.length || !b.length) return "";
      var plus = idx(b).filter(function (x) { return sa.indexOf(sb[x[1]]) < 0; });
      var minus = idx(a).filter(function (x) { return sb.indexOf(sa[x[1]]) < 0; });
      var parts = [];
      if (plus.length) parts.push("+{" + shown(plus, n, 0) + "}");
      if (minus.length) parts.push("-{" + shown(minus, n - 1, 0) + "}");
      return parts.join(" ");
    }
    var same = function (p, q, from, to, len) { for (var i = 0; i < len; i++) if (p[from + i] !== q[to + i]) return false; return true; };
    if (sb.length > sa.length && same(sa, sb, 0, 0, sa.length)) return "appended " + shown(idx(b).slice(a.length), n, 0);
    if (sb.length < sa.length && same(sa, sb, 0, 0, sb.length)) return "truncated to " + b.length + " (dropped " + shown(idx(a).slice(b.length), n - 1, 0) + ")";
    var k;
    if (sb.length === sa.length - 1) {
      for (k = 0; k < sb.length && sa[k] === sb[k]; k++);
      if (same(sa, sb, k + 1, k, sb.length - k)) return "removed [" + k + "] " + show(a[k], n - 1, ptr + "/" + k);
    }
    if (sb.length === sa.length + 1) {
      for (k = 0; k < sa.length && sa[k] === sb[k]; k++);
      if (same(sa, sb, k, k + 1, sa.length - k)) return "inserted [" + k + "] " + show(b[k], n, ptr + "/" + k);
    }
    return "";
  }
  function fill(td, mark, oldValue, newValue, hasNew, path) {
    var n = current, ptr = pointerOf(path);
    if (mark === "modified") td.appendChild(el("span", "old", show(oldValue, n - 1, ptr)));
    td.appendChild(el("span", "now", hasNew ? show(newValue, n, ptr) : show(oldValue, n - 1, ptr)));
    var d = mark === "modified" ? delta(oldValue, newValue, n, ptr) : "";
    if (d) td.appendChild(el("span", "delta", d));
  }
  function markCell(mark) { return el("td", "mark", SIGN[mark]); }
  function matches(path, text) { return !text || path.toLowerCase().indexOf(text) >= 0; }

  function render() {
    var n = current;
    var cur = info(n), prev = n > 0 ? info(n - 1) : null;
    var text = filter.value.trim().toLowerCase();
    var ch = chosenEntity();
    view.textContent = "";
    var shown = 0;

    data.entities.forEach(function (g) {
      if (ch && ch.group !== g) return;
      // Columns: a per-entity field, or one column per key of its records.
      var cols = [];
      g.fields.forEach(function (f) {
        if (!cur.byName[f]) return;
        var keys = g.columns && has(g.columns, f) ? g.columns[f] : null;
        if (keys) keys.forEach(function (k) { cols.push({ field: f, key: k, head: g.fields.length > 1 ? f + "." + k : k }); });
        else cols.push({ field: f, key: null, head: f });
      });
      cols = cols.filter(function (c) { return matches(c.key === null ? c.field : c.field + "." + c.key, text); });
      if (!cols.length) return;
      var h3 = el("h3", "", g.kind + "s");
      view.appendChild(h3);
      var rowsIdx = [];
      for (var i = 0; i < g.count; i++) if (!ch || ch.index === i) rowsIdx.push(i);
      // cells[r][c]: entity rowsIdx[r], column cols[c].
      var cells = rowsIdx.map(function (i) {
        return cols.map(function (c) {
          var nv = cur.byName[c.field].value, pv = prev && prev.byName[c.field] ? prev.byName[c.field].value : undefined;
          var newItem = Array.isArray(nv) ? nv[i] : undefined;
          var oldItem = Array.isArray(pv) ? pv[i] : undefined;
          if (c.key !== null) {
            newItem = isBox(newItem) && has(newItem, c.key) ? newItem[c.key] : undefined;
            oldItem = isBox(oldItem) && has(oldItem, c.key) ? oldItem[c.key] : undefined;
          }
          var path = c.field + "[" + i + "]" + (c.key === null ? "" : "." + c.key);
          var nj = newItem === undefined ? undefined : JSON.stringify(newItem);
          var oj = oldItem === undefined ? undefined : JSON.stringify(oldItem);
          var mark = markOf(n, oj, nj);
          var td = el("td", "val " + mark);
          td.setAttribute("data-path", path);
          td.setAttribute("data-mark", mark);
          td.title = path + ": " + (SIGN[mark] || "initial state");
          fill(td, mark, oldItem, newItem, nj !== undefined, path);
          shown++;
          return td;
        });
      });
      // Many fields and few entities: a row per field and a column per entity, so the columns
      // stay wide enough to read in a narrow window.
      var transposed = cols.length > 4 && cols.length > rowsIdx.length;
      var table = el("table", "vals entity-table" + (transposed ? " transposed" : ""));
      table.setAttribute("data-kind", g.kind);
      var hr = el("tr");
      hr.appendChild(el("th", "", transposed ? "" : g.kind));
      if (transposed) rowsIdx.forEach(function (i) { hr.appendChild(el("th", "", g.names[i])); });
      else cols.forEach(function (c) { hr.appendChild(el("th", "", c.head)); });
      table.appendChild(hr);
      var anyRow = false;
      var outer = transposed ? cols.length : rowsIdx.length, inner = transposed ? rowsIdx.length : cols.length;
      for (var r = 0; r < outer; r++) {
        var tr = el("tr");
        tr.appendChild(el("th", "", transposed ? cols[r].head : g.names[rowsIdx[r]]));
        var any = false;
        for (var c = 0; c < inner; c++) {
          var td = transposed ? cells[c][r] : cells[r][c];
          if (td.getAttribute("data-mark") !== "unchanged") any = true;
          tr.appendChild(td);
        }
        if (!any) tr.classList.add("unchanged");
        else anyRow = true;
        table.appendChild(tr);
      }
      var wrap = el("div", "table-wrap");
      wrap.appendChild(table);
      view.appendChild(wrap);
      if (!anyRow) { h3.classList.add("unchanged-block"); wrap.classList.add("unchanged-block"); table.classList.add("unchanged-block"); }
    });

    var others = cur.vars.filter(function (v) { return !entityFields[v.name]; });
    var gone = prev ? prev.vars.filter(function (v) { return !cur.byName[v.name] && !entityFields[v.name]; }) : [];
    var rows = [];
    others.concat(gone).forEach(function (v) {
      var isGone = !cur.byName[v.name];
      var p = prev ? prev.byName[v.name] : undefined;
      var leaves = [];
      var curKeys = isGone ? [] : Object.keys(v.map);
      var prevKeys = p ? Object.keys(p.map) : [];
      if (!isGone) v.leaves.forEach(function (l) {
        var oj = p ? p.map[l[0]] : undefined, nj = v.map[l[0]];
        if (oj === undefined && (nj === "[]" || nj === "{}") && opened(l[0], prevKeys)) return;
        leaves.push({ path: l[0], value: l[1], old: oj === undefined ? undefined : JSON.parse(oj), mark: markOf(n, oj, nj), has: true });
      });
      if (p) p.leaves.forEach(function (l) {
        if (!isGone && v.map[l[0]] !== undefined) return;
        if ((p.map[l[0]] === "[]" || p.map[l[0]] === "{}") && opened(l[0], curKeys)) return;
        leaves.push({ path: l[0], value: undefined, old: l[1], mark: "removed", has: false });
      });
      if (!leaves.some(function (l) { return matches(l.path, text); }) && !matches(v.name, text)) return;
      var simple = leaves.length === 1 && leaves[0].path === v.name;
      if (!simple) {
        var changed = leaves.some(function (l) { return l.mark !== "unchanged"; });
        var gr = el("tr", "group" + (changed ? "" : " unchanged"));
        var th = el("th", "", v.name);
        th.colSpan = 3;
        gr.appendChild(th);
        rows.push(gr);
      }
      leaves.forEach(function (l) {
        if (!simple && !matches(l.path, text) && !matches(v.name, text)) return;
        var tr = el("tr", l.mark);
        var rel = simple ? l.path : l.path.slice(v.name.length);
        var depth = simple ? 0 : Math.min(3, 1 + (rel.match(/[\[.]/g) || []).length - 1);
        var name = el("td", "mono indent" + depth, rel || v.name);
        tr.appendChild(name);
        var td = el("td", "val");
        td.setAttribute("data-path", l.path);
        td.setAttribute("data-mark", l.mark);
        fill(td, l.mark, l.old, l.value, l.has, l.path);
        tr.appendChild(td);
        tr.appendChild(markCell(l.mark));
        rows.push(tr);
        shown++;
      });
    });
    if (rows.length) {
      var quiet = rows.every(function (r) { return r.classList.contains("unchanged"); });
      if (data.entities.length) view.appendChild(el("h3", quiet ? "unchanged-block" : "", "shared state"));
      var table = el("table", "vals tree-table" + (quiet ? " unchanged-block" : ""));
      var hr = el("tr");
      ["variable", "value", ""].forEach(function (h) { hr.appendChild(el("th", "", h)); });
      table.appendChild(hr);
      rows.forEach(function (r) { table.appendChild(r); });
      var wrap = el("div", "table-wrap" + (quiet ? " unchanged-block" : ""));
      wrap.appendChild(table);
      view.appendChild(wrap);
    }
    if (!shown) view.appendChild(el("p", "empty-note", "No variable matches the filter."));
    renderHistory();
  }

  // -- one value over the whole trace (click a value) ----------------------------------------
  var historyPath = null;
  var historyBox = document.getElementById("history");
  var ABSENT = {};
  function resolve(root, path) {
    var v = isBox(root) && !Array.isArray(root) ? root : { state: root };
    var re = /\[(\d+)\]|\.?([^.\[\]]+)/g, m;
    while ((m = re.exec(path)) !== null) {
      if (m[1] !== undefined) {
        var i = Number(m[1]);
        if (!Array.isArray(v) || i >= v.length) return ABSENT;
        v = v[i];
      } else {
        if (!isBox(v) || Array.isArray(v) || !has(v, m[2])) return ABSENT;
        v = v[m[2]];
      }
    }
    return v;
  }
  function renderHistory() {
    historyBox.textContent = "";
    historyBox.hidden = historyPath === null;
    if (historyPath === null) return;
    var head = el("h3", "", "history of " + historyPath);
    var close = el("button", "", "close");
    close.type = "button";
    close.id = "history-close";
    close.addEventListener("click", function () { historyPath = null; renderHistory(); });
    head.appendChild(close);
    historyBox.appendChild(head);
    var table = el("table", "vals history-table");
    var hr = el("tr");
    ["step", "action", "value"].forEach(function (h) { hr.appendChild(el("th", "", h)); });
    table.appendChild(hr);
    var last;
    steps.forEach(function (st, n) {
      var v = resolve(st.state, historyPath);
      var j = v === ABSENT ? "\u0000" : JSON.stringify(v);
      if (n > 0 && j === last) return;
      last = j;
      var tr = el("tr", n === current ? "selected-step" : "");
      tr.setAttribute("data-step", n + 1);
      var a = el("a", "", n + 1);
      a.href = "#step-" + (n + 1);
      var td = el("td");
      td.appendChild(a);
      tr.appendChild(td);
      tr.appendChild(el("td", "mono", st.action === null ? "initial state" : st.action));
      tr.appendChild(el("td", "val", v === ABSENT ? "(absent)" : show(v, n, pointerOf(historyPath))));
      table.appendChild(tr);
    });
    historyBox.appendChild(table);
  }
  view.addEventListener("click", function (ev) {
    var t = ev.target;
    while (t && t !== view && !(t.getAttribute && t.getAttribute("data-path"))) t = t.parentNode;
    if (!t || t === view) return;
    historyPath = t.getAttribute("data-path");
    renderHistory();
  });

  // -- selection, fragments, keys ------------------------------------------------------------
  var current = -1;
  function select(n, updateHash) {
    if (isNaN(n)) return;
    n = Math.max(0, Math.min(N - 1, n));
    if (current >= 0) {
      items[current].classList.remove("selected");
      items[current].removeAttribute("aria-current");
      columns[current].forEach(function (c) { c.classList.remove("col-sel"); });
    }
    current = n;
    items[n].classList.add("selected");
    items[n].setAttribute("aria-current", "step");
    columns[n].forEach(function (c) { c.classList.add("col-sel"); });
    var title = document.getElementById("step-title");
    setText(title, "Step " + (n + 1) + " of " + N + ": " + (steps[n].action === null ? "initial state" : steps[n].action));
    if (data.failing === n + 1) title.appendChild(el("span", "failmark", "  \u2716 " + (data.violated === "deadlock" ? "deadlock: no successors" : data.violated + " fails here")));
    document.body.setAttribute("data-step", n + 1);
    render();
    items[n].scrollIntoView({ block: "nearest" });
    columns[n][0].scrollIntoView({ block: "nearest", inline: "nearest" });
    if (updateHash && location.hash !== "#step-" + (n + 1)) {
      try { history.replaceState(null, "", "#step-" + (n + 1)); } catch (e) { location.hash = "step-" + (n + 1); }
    }
  }
  function fromHash() {
    var m = /^#step-(\d+)$/.exec(location.hash);
    return m ? Number(m[1]) - 1 : null;
  }
  window.addEventListener("hashchange", function () { var n = fromHash(); if (n !== null && n !== current) select(n, false); });
  // A step link selects at once (hashchange fires later); the URL still gets the step's fragment.
  document.addEventListener("click", function (ev) {
    var t = ev.target;
    while (t && t.nodeName !== "A") t = t.parentNode;
    if (!t || ev.button !== 0 || ev.ctrlKey || ev.metaKey || ev.shiftKey) return;
    var m = /^#step-(\d+)$/.exec(t.getAttribute("href") || "");
    if (!m) return;
    var n = Number(m[1]) - 1;
    if (n < 0 || n >= N) return;
    ev.preventDefault();
    select(n, true);
  });
  document.addEventListener("keydown", function (ev) {
    var t = ev.target, tag = t && t.tagName;
    // Keys go to controls that use them (text boxes, the entity menu); a checkbox or a button
    // (focused after "hide unchanged" or "next") does not use arrows, so they still move.
    var typing = tag === "INPUT" && !/^(checkbox|radio|button|submit|reset)$/i.test(t.type || "");
    if (typing || tag === "SELECT" || tag === "TEXTAREA" || (t && t.isContentEditable) || ev.altKey || ev.ctrlKey || ev.metaKey) return;
    var to = null;
    if (ev.key === "ArrowDown" || ev.key === "ArrowRight" || ev.key === "j") to = current + 1;
    else if (ev.key === "ArrowUp" || ev.key === "ArrowLeft" || ev.key === "k") to = current - 1;
    else if (ev.key === "Home") to = 0;
    else if (ev.key === "End") to = N - 1;
    if (to === null) return;
    ev.preventDefault();
    select(to, true);
  });
  // The page opens at the failing step (a #step-N link opens that step instead).
  var start = fromHash();
  select(start !== null ? start : (data.failing ? data.failing - 1 : 0), false);
  document.body.setAttribute("data-ready", "1");
})();
