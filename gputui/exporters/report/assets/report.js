/* gputui report: the charts. Reads the JSON in #gputui-data, draws one GPU's charts on
   one shared time axis (drag to zoom, double-click to zoom out, the cursor follows on
   every chart), findings shaded behind, the causes and processes as a lane. No network:
   everything it needs is in this file. Outside text is set with textContent only. */
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("gputui-data").textContent);
  var SEVERITY = {
    info: "rgba(52, 152, 219, 0.12)",
    warning: "rgba(243, 156, 18, 0.20)",
    critical: "rgba(231, 76, 60, 0.22)"
  };
  var CAUSE = {
    "busy": "#2ecc71", "thermal": "#e74c3c", "power": "#e67e22", "starved": "#f1c40f",
    "straggler": "#9b59b6", "idle-held": "#7f8c8d", "not-running": "#d5dbe0",
    "hung": "#2c3e50"
  };
  var offset = data.tzOffset;
  var plots = [];
  var syncing = false;
  var sync = uPlot.sync("gputui");
  var root = document.getElementById("charts");
  var picker = document.getElementById("gpu-picker");
  var current = -1;

  function tzDate(ts) {
    var d = new Date((ts + offset) * 1000);
    return new Date(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), d.getUTCHours(),
      d.getUTCMinutes(), d.getUTCSeconds(), d.getUTCMilliseconds());
  }

  function pad(n) { return (n < 10 ? "0" : "") + n; }

  function stamp(ts, withDate, withSeconds) {
    var d = new Date((ts + offset) * 1000);
    var out = pad(d.getUTCHours()) + ":" + pad(d.getUTCMinutes());
    if (withSeconds) { out += ":" + pad(d.getUTCSeconds()); }
    if (withDate) {
      out = d.getUTCFullYear() + "-" + pad(d.getUTCMonth() + 1) + "-" + pad(d.getUTCDate()) +
        " " + out;
    }
    return out;
  }

  function ticks(u, splits) {
    var range = u.scales.x.max - u.scales.x.min;
    return splits.map(function (t) { return stamp(t, range > 2 * 86400, range < 900); });
  }

  function zoomAll(source, min, max) {
    if (syncing) { return; }
    syncing = true;
    plots.forEach(function (p) {
      if (p !== source) { p.setScale("x", {min: min, max: max}); }
    });
    syncing = false;
  }

  function span(u, from, to) {
    var x0 = Math.max(u.bbox.left, u.valToPos(from, "x", true));
    var x1 = Math.min(u.bbox.left + u.bbox.width, u.valToPos(to, "x", true));
    return x1 < x0 ? null : [x0, Math.max(1, x1 - x0)];
  }

  function shadeFindings(gpu) {
    return function (u) {
      var ctx = u.ctx;
      ctx.save();
      gpu.findings.forEach(function (f) {
        var s = span(u, f[0], f[1]);
        if (s) {
          ctx.fillStyle = SEVERITY[f[2]] || SEVERITY.info;
          ctx.fillRect(s[0], u.bbox.top, s[1], u.bbox.height);
        }
      });
      ctx.restore();
    };
  }

  function drawLimits(chart) {
    return function (u) {
      var ctx = u.ctx;
      ctx.save();
      ctx.setLineDash([5, 4]);
      ctx.strokeStyle = "#555";
      ctx.fillStyle = "#333";
      ctx.lineWidth = 1;
      ctx.font = (11 * devicePixelRatio) + "px sans-serif";
      ctx.textAlign = "right";
      ctx.textBaseline = "bottom";
      var lastY = null;
      chart.limits.forEach(function (limit) {
        var y = Math.round(u.valToPos(limit.value, "y", true));
        ctx.beginPath();
        ctx.moveTo(u.bbox.left, y);
        ctx.lineTo(u.bbox.left + u.bbox.width, y);
        ctx.stroke();
        var ty = y - 2 * devicePixelRatio;
        if (lastY !== null && Math.abs(lastY - ty) < 12 * devicePixelRatio) {
          ty = lastY - 12 * devicePixelRatio;
        }
        lastY = ty;
        ctx.fillText(limit.label + " " + limit.value + " " + chart.unit,
          u.bbox.left + u.bbox.width - 4, ty);
      });
      ctx.restore();
    };
  }

  function common(width, height, title) {
    return {
      title: title,
      width: width,
      height: height,
      tzDate: tzDate,
      axes: [{values: ticks}, {size: 64}],
      cursor: {sync: {key: sync.key}, drag: {x: true, y: false}},
      hooks: {
        setScale: [function (u, key) {
          if (key === "x") { zoomAll(u, u.scales.x.min, u.scales.x.max); }
        }]
      }
    };
  }

  function lineChart(gpu, chart, width) {
    var top = 0;
    chart.limits.forEach(function (l) { top = Math.max(top, l.value); });
    var opts = common(width, 150, chart.title + " (" + chart.unit + ")");
    opts.series = [{value: function (u, v) { return v == null ? "-" : stamp(v, true, true); }}]
      .concat(chart.series.map(function (s) {
      return {
        label: s.label, stroke: s.colour, width: 1,
        value: function (u, v) { return v == null ? "-" : v + " " + chart.unit; }
      };
    }));
    opts.scales = {x: {time: true}, y: {range: function (u, min, max) {
      var hi = Math.max(max === null ? 0 : max, top) * 1.06;
      return [Math.min(0, min === null ? 0 : min), hi > 0 ? hi : 1];
    }}};
    opts.hooks.drawClear = [shadeFindings(gpu)];
    opts.hooks.draw = [drawLimits(chart)];
    var columns = [data.x].concat(chart.series.map(function (s) { return s.values; }));
    return [opts, columns];
  }

  function drawLane(gpu) {
    return function (u) {
      var ctx = u.ctx;
      var top = u.bbox.top;
      var h = u.bbox.height;
      ctx.save();
      gpu.causes.forEach(function (c) {
        var s = span(u, c[0], c[1]);
        if (s) {
          ctx.fillStyle = CAUSE[data.causes[c[2]].key] || "#ccc";
          ctx.fillRect(s[0], top, s[1], h * 0.4);
        }
      });
      ctx.font = (11 * devicePixelRatio) + "px sans-serif";
      ctx.textAlign = "left";
      ctx.textBaseline = "alphabetic";
      gpu.processes.forEach(function (p, i) {
        var s = span(u, p[0], p[1]);
        if (!s) { return; }
        var y = top + h * 0.48 + (i % 2) * h * 0.26;
        ctx.fillStyle = i % 2 ? "#5d6d7e" : "#34495e";
        ctx.fillRect(s[0], y, s[1], h * 0.22);
        ctx.fillStyle = "#fff";
        ctx.save();
        ctx.beginPath();
        ctx.rect(s[0], y, s[1], h * 0.22);
        ctx.clip();
        ctx.fillText(p[2], s[0] + 3, y + h * 0.17);
        ctx.restore();
      });
      ctx.restore();
    };
  }

  function laneChart(gpu, width) {
    var opts = common(width, 110, "Where the time went, and which process ran");
    opts.series = [{}, {label: "lane", show: false}];
    opts.legend = {show: false};
    opts.scales = {x: {time: true}, y: {range: [0, 1]}};
    opts.axes = [{values: ticks}, {size: 64, values: function () { return []; }}];
    opts.hooks.draw = [drawLane(gpu)];
    return [opts, [data.x, data.x.map(function () { return null; })]];
  }

  function show(index, range) {
    var gpu = data.gpus[index];
    if (!gpu) { return; }
    plots.forEach(function (p) { sync.unsub(p); p.destroy(); });
    plots = [];
    while (root.firstChild) { root.removeChild(root.firstChild); }
    current = index;
    Array.prototype.forEach.call(picker.children, function (b, i) {
      b.setAttribute("aria-pressed", i === index ? "true" : "false");
    });
    var width = Math.max(480, root.clientWidth - 8);
    var made = [laneChart(gpu, width)].concat(gpu.charts.filter(function (c) {
      return c.series.length > 0;
    }).map(function (c) { return lineChart(gpu, c, width); }));
    made.forEach(function (m) {
      var box = document.createElement("div");
      box.className = "chart";
      root.appendChild(box);
      plots.push(new uPlot(m[0], m[1], box));
    });
    if (range) { zoomAll(null, range[0], range[1]); }
  }

  function zoomTo(gpuIndex, from, to) {
    var pos = -1;
    data.gpus.forEach(function (g, i) { if (g.index === gpuIndex) { pos = i; } });
    var pad = Math.max(60, (to - from) * 0.15);
    var range = [Math.max(data.start, from - pad), Math.min(data.end, to + pad)];
    if (pos >= 0 && pos !== current) { show(pos, range); } else { zoomAll(null, range[0], range[1]); }
    root.scrollIntoView({behavior: "smooth", block: "start"});
  }

  data.gpus.forEach(function (gpu, i) {
    var b = document.createElement("button");
    b.type = "button";
    b.textContent = gpu.name;
    b.addEventListener("click", function () {
      var x = plots.length ? plots[0].scales.x : null;
      show(i, x && x.min !== null ? [x.min, x.max] : null);
    });
    picker.appendChild(b);
  });
  Array.prototype.forEach.call(document.querySelectorAll("[data-zoom-gpu]"), function (el) {
    el.addEventListener("click", function (event) {
      event.preventDefault();
      zoomTo(Number(el.getAttribute("data-zoom-gpu")), Number(el.getAttribute("data-from")),
        Number(el.getAttribute("data-to")));
    });
  });
  var resizing = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizing);
    resizing = setTimeout(function () {
      var width = Math.max(480, root.clientWidth - 8);
      plots.forEach(function (p) { p.setSize({width: width, height: p.height}); });
    }, 150);
  });
  if (data.gpus.length) { show(0, null); }
  document.body.setAttribute("data-charts", String(plots.length));
}());
