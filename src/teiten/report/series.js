// The per-second series viewer of teiten's HTML report: draws the trial chosen in the
// <select> from the JSON embedded in the page. No libraries, no network; without
// JavaScript the page still shows the table of every trial.
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var source = document.getElementById("series-data");
  var viewer = document.getElementById("series-viewer");
  var select = document.getElementById("series-select");
  var figure = document.getElementById("series-chart");
  var info = document.getElementById("series-info");
  if (!source || !viewer || !select || !figure || !info) return;
  var data = JSON.parse(source.textContent);
  var L = data.labels;

  function el(name, attrs, text) {
    var node = document.createElementNS(NS, name);
    Object.keys(attrs).forEach(function (k) { node.setAttribute(k, String(attrs[k])); });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function niceStep(max) {
    var raw = max / 4;
    var power = Math.pow(10, Math.floor(Math.log10(raw)));
    var steps = [1, 2, 5, 10];
    for (var i = 0; i < steps.length; i++) {
      if (raw <= steps[i] * power * (1 + 1e-9)) return steps[i] * power;
    }
    return 10 * power;
  }

  function panel(svg, values, box, label, colour, decimals, rampUp, seconds) {
    var finite = values.filter(function (v) { return v !== null && isFinite(v); });
    var max = finite.length ? Math.max.apply(null, finite) : 0;
    var step = max > 0 ? niceStep(max) : 0.25;
    var top = Math.max(step, Math.ceil(max / step - 1e-9) * step);
    var left = box.x, right = box.x + box.w, y0 = box.y + box.h, y1 = box.y;
    function xp(s) { return left + (seconds > 1 ? (s - 1) / (seconds - 1) : 0.5) * (right - left); }
    function yp(v) { return y0 - v / top * (y0 - y1); }
    if (rampUp > 0 && seconds > 0) {
      var edge = rampUp >= seconds ? right : (xp(rampUp) + xp(rampUp + 1)) / 2;
      svg.appendChild(el("rect", {x: left, y: y1, width: Math.max(0, edge - left), height: y0 - y1,
                                  fill: "#E69F00", "fill-opacity": 0.14}));
      svg.appendChild(el("text", {x: left + 4, y: y1 + 12, "font-size": 11, fill: "#8a5a00"},
                         L.rampup));
    }
    var decimalsTick = step >= 1 ? 0 : Math.min(3, Math.ceil(-Math.log10(step)));
    for (var t = 0; t <= top + step / 2; t += step) {
      var ty = yp(t);
      svg.appendChild(el("line", {x1: left, y1: ty, x2: right, y2: ty, stroke: "#E3E3E3"}));
      svg.appendChild(el("text", {x: left - 6, y: ty + 4, "text-anchor": "end", "font-size": 11,
                                  fill: "#555555"}, t.toFixed(decimalsTick)));
    }
    svg.appendChild(el("line", {x1: left, y1: y0, x2: right, y2: y0, stroke: "#888888"}));
    svg.appendChild(el("text", {x: 14, y: (y0 + y1) / 2, "text-anchor": "middle", fill: "#555555",
                                transform: "rotate(-90 14 " + (y0 + y1) / 2 + ")"}, label));
    var d = "", pen = false;
    values.forEach(function (v, i) {
      if (v === null || !isFinite(v)) { pen = false; return; }
      d += (pen ? " L" : "M") + xp(i + 1).toFixed(1) + " " + yp(v).toFixed(1);
      pen = true;
    });
    if (d) svg.appendChild(el("path", {d: d, fill: "none", stroke: colour, "stroke-width": 1.8,
                                       "stroke-linejoin": "round"}));
    values.forEach(function (v, i) {
      if (v === null || !isFinite(v)) return;
      var dot = el("circle", {cx: xp(i + 1), cy: yp(v), r: 2.4, fill: colour});
      dot.appendChild(el("title", {}, (i + 1) + " s · " + v.toFixed(decimals) + " " + label));
      svg.appendChild(dot);
    });
    return xp;
  }

  function draw(index) {
    var trial = data.trials[index];
    while (figure.firstChild) figure.removeChild(figure.firstChild);
    if (!trial) return;
    info.textContent = trial.label + " — " + trial.info;
    var seconds = trial.tps.length;
    if (!seconds) {
      var empty = document.createElement("p");
      empty.className = "note";
      empty.textContent = L.empty;
      figure.appendChild(empty);
      return;
    }
    var width = 900, height = 470;
    var svg = el("svg", {xmlns: NS, width: width, height: height, viewBox: "0 0 " + width + " " + height,
                         role: "img", "aria-label": trial.label, "font-size": 12, fill: "#222222",
                         "font-family": "system-ui, sans-serif"});
    svg.appendChild(el("rect", {width: width, height: height, fill: "#FFFFFF"}));
    var box = {x: 64, w: width - 64 - 20, h: 160};
    var xp = panel(svg, trial.tps, {x: box.x, y: 16, w: box.w, h: box.h}, L.tps, "#0072B2", 1,
                   trial.steadyFrom, seconds);
    panel(svg, trial.latency, {x: box.x, y: 240, w: box.w, h: box.h}, L.latency, "#D55E00", 3,
          trial.steadyFrom, seconds);
    var every = Math.max(1, Math.ceil(seconds / 15));
    for (var s = 1; s <= seconds; s += every) {
      svg.appendChild(el("text", {x: xp(s), y: 418, "text-anchor": "middle", "font-size": 11,
                                  fill: "#555555"}, String(s)));
    }
    svg.appendChild(el("text", {x: box.x + box.w / 2, y: 450, "text-anchor": "middle", fill: "#555555"},
                       L.seconds));
    figure.appendChild(svg);
  }

  viewer.hidden = false;
  select.addEventListener("change", function () { draw(Number(select.value)); });
  // A trial's id in the table of every trial shows its chart.
  Array.prototype.forEach.call(document.querySelectorAll("a[data-series]"), function (a) {
    a.addEventListener("click", function () {
      select.value = a.getAttribute("data-series");
      draw(Number(select.value));
    });
  });
  draw(Number(select.value || 0));
})();
