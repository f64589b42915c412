// The per-second series viewer of teiten's HTML report. At the point (workload and client
// count) chosen in the page, it draws one trial, every repetition of one server, or every
// server and repetition, from the JSON embedded in the page, as uPlot charts whose cursors
// and zoom follow each other: TPS and latency per second, and where the system monitor ran,
// this machine's CPU busy % and the devices' %util in the same seconds. uPlot is inlined just
// before this script: nothing is fetched. Without JavaScript the page still shows the table
// of every trial.
(function () {
  "use strict";
  const byId = (id) => document.getElementById(id);
  const source = byId("series-data");
  const viewer = byId("series-viewer");
  const pointSelect = byId("series-point");
  const serverSelect = byId("series-server");
  const trialSelect = byId("series-select");
  const serverChoice = byId("series-server-choice");
  const trialChoice = byId("series-trial-choice");
  const figure = byId("series-chart");
  const info = byId("series-info");
  const drawn = byId("series-drawn");
  const list = byId("series-trials");
  if (!source || !viewer || !pointSelect || !serverSelect || !trialSelect || !serverChoice ||
      !trialChoice || !figure || !info || !drawn || !list || typeof uPlot !== "function") return;
  const data = JSON.parse(source.textContent);
  const L = data.labels;
  const modes = Array.prototype.slice.call(viewer.querySelectorAll('input[name="series-mode"]'));
  // The repetitions of one server share its colour when every server is drawn; a dash
  // pattern tells them apart (the legend names each line too).
  const DASHES = [[], [8, 4], [2, 3], [10, 3, 2, 3], [4, 4], [1, 4]];
  const HEIGHT = 260;
  const state = {point: 0, mode: "trial", server: "", repetition: 0, trial: -1};
  let charts = [];
  // The charts on show, for tests in a headless browser (and for a curious reader's console).
  const exposed = {charts: charts};
  window.teitenSeries = exposed;

  function option(value, text) {
    const node = document.createElement("option");
    node.value = String(value);
    node.textContent = text;
    return node;
  }

  function point() { return data.points[state.point]; }

  function server() {
    const servers = point().servers;
    return servers.find((s) => s.name === state.server) || servers[0];
  }

  // The server and the trial keep their name and repetition from one point to the next
  // when they can, so that stepping through the points compares like with like.
  function fill() {
    const servers = point().servers;
    state.server = server().name;
    serverSelect.replaceChildren(...servers.map((s) => option(s.name, s.name)));
    serverSelect.value = state.server;
    const trials = server().trials;
    if (!trials.includes(state.trial)) {
      const same = trials.find((i) => data.trials[i].repetition === state.repetition);
      state.trial = same === undefined ? trials[0] : same;
    }
    state.repetition = data.trials[state.trial].repetition;
    trialSelect.replaceChildren(...trials.map((i) => option(i, data.trials[i].choice)));
    trialSelect.value = String(state.trial);
    pointSelect.value = String(state.point);
    modes.forEach((input) => { input.checked = input.value === state.mode; });
    serverChoice.hidden = state.mode === "all";
    trialChoice.hidden = state.mode !== "trial";
  }

  // The lines to draw: [trial index, colour, dash].
  function lines() {
    if (state.mode === "trial") return [[state.trial, server().colour, []]];
    if (state.mode === "server") {
      return server().trials.map((i, k) => [i, data.palette[k % data.palette.length], []]);
    }
    const out = [];
    point().servers.forEach((s) => s.trials.forEach((i, k) => {
      out.push([i, s.colour, DASHES[k % DASHES.length]]);
    }));
    return out;
  }

  function width() { return Math.max(320, Math.floor(figure.clientWidth - 12)); }

  // Shades the ramp-up seconds (before the steady state) under the lines, and names them.
  function shade(u, rampUp) {
    if (rampUp <= 0) return;
    const box = u.bbox;
    const right = Math.min(box.left + box.width, u.valToPos(rampUp + 0.5, "x", true));
    if (right <= box.left) return;
    const ratio = window.devicePixelRatio || 1;
    const ctx = u.ctx;
    ctx.save();
    ctx.fillStyle = "rgba(230, 159, 0, 0.14)";
    ctx.fillRect(box.left, box.top, right - box.left, box.height);
    ctx.fillStyle = "#8a5a00";
    ctx.font = Math.round(11 * ratio) + "px system-ui, sans-serif";
    ctx.textBaseline = "top";
    ctx.fillText(L.rampup, box.left + 4 * ratio, box.top + 4 * ratio);
    ctx.restore();
  }

  // Zooming one chart zooms the other (the cursor follows through uPlot's sync key).
  function follow(u, key) {
    if (key !== "x") return;
    const min = u.scales.x.min, max = u.scales.x.max;
    charts.forEach((other) => {
      if (other !== u && (other.scales.x.min !== min || other.scales.x.max !== max)) {
        other.setScale("x", {min: min, max: max});
      }
    });
  }

  // The lines of a chart drawn from every shown trial's series: [label, colour, dash].
  function styled(shown) { return shown.map((line) => [data.trials[line[0]].legend, line[1], line[2]]); }

  function chart(target, label, decimals, drawnLines, rampUp, columns, ceiling) {
    const value = (u, v) => (v === null || v === undefined ? "—" : v.toFixed(decimals));
    const top = (max) => (ceiling ? ceiling : max > 0 ? max * 1.08 : 1);
    const opts = {
      width: width(),
      height: HEIGHT,
      // Dragging across a chart zooms in on x, a double-click zooms out: uPlot's defaults.
      cursor: {sync: {key: "teiten-series", setSeries: true}, drag: {x: true, y: false}},
      scales: {x: {time: false}, y: {range: (u, min, max) => [0, top(max)]}},
      axes: [{label: L.seconds, incrs: [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600]},  // whole seconds
             {label: label, size: 64}],
      series: [{label: L.seconds, value: (u, v) => (v === null || v === undefined ? "—" : String(v))}]
        .concat(drawnLines.map((line) => ({label: line[0], stroke: line[1], dash: line[2],
                                           width: 1.6, spanGaps: false, value: value}))),
      hooks: {drawClear: [(u) => shade(u, rampUp)], setScale: [follow]},
    };
    return new uPlot(opts, columns, target);
  }

  function listTrials(all) {
    list.replaceChildren(...all.map((line) => {
      const t = data.trials[line[0]];
      const item = document.createElement("li");
      if (!t.ok) item.className = "failed";
      item.textContent = t.label + " — " + (t.tps.length ? t.info : L.empty);
      return item;
    }));
    drawn.hidden = state.mode === "trial";
  }

  function draw() {
    charts.forEach((u) => u.destroy());
    charts = [];
    exposed.charts = charts;
    figure.replaceChildren();
    const all = lines();
    const single = data.trials[all[0][0]];
    info.textContent = state.mode === "trial" ? single.label + " — " + single.info : point().label;
    listTrials(all);
    const shown = all.filter((line) => data.trials[line[0]].tps.length > 0);
    if (!shown.length) {
      const empty = document.createElement("p");
      empty.className = "note";
      empty.textContent = L.empty;
      figure.appendChild(empty);
      return;
    }
    const trials = shown.map((line) => data.trials[line[0]]);
    const seconds = Math.max(...trials.map((t) => t.tps.length));
    const xs = Array.from({length: seconds}, (_, s) => s + 1);
    const pad = (values) => xs.map((_, s) => (s < values.length ? values[s] : null));
    // The longest ramp-up among the lines drawn.
    const rampUp = Math.max(...trials.map((t) => Math.min(t.steadyFrom, t.tps.length)));
    const add = (label, decimals, drawnLines, columns, ceiling) => {
      const target = document.createElement("div");
      figure.append(target);
      charts.push(chart(target, label, decimals, drawnLines, rampUp, [xs].concat(columns), ceiling));
    };
    add(L.tps, 1, styled(shown), trials.map((t) => pad(t.tps)));
    add(L.latency, 3, styled(shown), trials.map((t) => pad(t.latency)));
    // The system monitor's seconds, for the trials it ran in: this machine's CPU, then the
    // data device's %util and the WAL device's where it is another device (a dotted line).
    const monitored = (key) => shown.map((line, k) => [line, trials[k]])
      .filter((pair) => pair[1].system && pair[1].system[key]);
    const cpu = monitored("cpu");
    if (cpu.length) {
      add(L.cpu, 1, styled(cpu.map((p) => p[0])), cpu.map((p) => pad(p[1].system.cpu)), 100);
    }
    const util = monitored("data");
    if (util.length) {
      const lines = [], columns = [];
      util.forEach(([line, t]) => {
        lines.push([t.legend + " · " + L.data, line[1], line[2]]);
        columns.push(pad(t.system.data));
        if (t.system.wal && t.system.walApart) {
          lines.push([t.legend + " · " + L.wal, line[1], [2, 3]]);
          columns.push(pad(t.system.wal));
        }
      });
      add(L.util, 1, lines, columns, 100);
    }
  }

  function show() {
    fill();
    draw();
  }

  function select(index) {
    const t = data.trials[index];
    if (!t) return;
    state.point = t.point;
    state.server = data.points[t.point].servers[t.server].name;
    state.trial = index;
    state.mode = "trial";
    show();
  }

  viewer.hidden = false;
  pointSelect.addEventListener("change", () => { state.point = Number(pointSelect.value); show(); });
  serverSelect.addEventListener("change", () => { state.server = serverSelect.value; show(); });
  trialSelect.addEventListener("change", () => { state.trial = Number(trialSelect.value); show(); });
  modes.forEach((input) => input.addEventListener("change", () => {
    if (input.checked) { state.mode = input.value; show(); }
  }));
  window.addEventListener("resize", () => {
    charts.forEach((u) => u.setSize({width: width(), height: HEIGHT}));
  });
  // A trial's id in the table of every trial shows it alone.
  Array.prototype.forEach.call(document.querySelectorAll("a[data-series]"), (a) => {
    a.addEventListener("click", () => select(Number(a.getAttribute("data-series"))));
  });
  select(0);
})();
