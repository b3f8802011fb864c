// sparkgate dashboard: the usage page's chart, drawn with uPlot.
//
// Markup (no inline script): a figure with data-usage='{"t": [day starts], "unit": "s",
// "series": [{"name", "values": [one per day]}]}' holding a .plot element. After drawing, the
// figure's data-points attribute holds how many (day, key) points are drawn and data-x-labels
// the x-axis labels as drawn: what a reader (or a test) can check.
(function () {
  "use strict";

  const HEIGHT = 240;
  const LABEL_SPACE = 56; // CSS pixels a tick's label needs
  const PALETTE = ["#0969da", "#1a7f37", "#bf3989", "#9a6700", "#8250df", "#cf222e"];

  function cssVar(name, fallback) {
    const value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    return value || fallback;
  }

  function seconds(value) {
    if (value == null) return "";
    if (value >= 3600) return (value / 3600).toFixed(1) + " h";
    if (value >= 60) return (value / 60).toFixed(1) + " min";
    return (Math.round(value * 100) / 100).toString() + " s";
  }

  function draw(figure) {
    const data = JSON.parse(figure.dataset.usage || "{}");
    const hourly = data.step === "hour";
    // A day as MM-DD, an hour as HH:00 (UTC).
    const label = function (ts) {
      const iso = new Date(ts * 1e3).toISOString();
      return hourly ? iso.slice(11, 13) + ":00" : iso.slice(5, 10);
    };
    const series = data.series || [];
    const target = figure.querySelector(".plot");
    if (!series.length || !target) return;
    const muted = cssVar("--muted", "#5d6778");
    const line = cssVar("--line", "#dde1e8");
    const axis = { stroke: muted, grid: { stroke: line, width: 1 }, ticks: { stroke: line, width: 1 } };
    const options = {
      width: Math.max(240, target.clientWidth),
      height: HEIGHT,
      tzDate: function (ts) {
        return uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC");
      },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: true }, y: { range: function (u, min, max) { return [0, max > 0 ? max * 1.1 : 1]; } } },
      series: [
        {
          value: function (u, ts) {
            if (ts == null) return "—";
            const iso = new Date(ts * 1e3).toISOString();
            return hourly ? iso.slice(0, 10) + " " + iso.slice(11, 16) : iso.slice(0, 10);
          },
        },
      ].concat(
        series.map(function (s, i) {
          return {
            label: s.name,
            stroke: PALETTE[i % PALETTE.length],
            width: 2,
            points: { size: 5 },
            value: function (u, v) {
              return v == null ? "—" : seconds(v);
            },
          };
        })
      ),
      axes: [
        Object.assign({}, axis, {
          // A tick on the charted days (or hours) only, never between them (uPlot's own
          // splits of a time scale fall every few hours, and each repeated its day's label),
          // every n-th one where all would not fit.
          space: LABEL_SPACE,
          splits: function (u) {
            const every = Math.max(1, Math.ceil(data.t.length / Math.max(1, Math.floor(u.bbox.width / devicePixelRatio / LABEL_SPACE))));
            return data.t.filter(function (ts, i) {
              return i % every === 0;
            });
          },
          values: function (u, ticks) {
            const labels = ticks.map(label);
            figure.dataset.xLabels = labels.join(" "); // what the axis shows, for a reader
            return labels;
          },
        }),
        Object.assign({}, axis, {
          size: 56,
          values: function (u, values) {
            return values.map(seconds);
          },
        }),
      ],
    };
    const rows = [data.t].concat(
      series.map(function (s) {
        return s.values;
      })
    );
    const plot = new uPlot(options, rows, target);
    figure.dataset.points = String(data.t.length * series.length);
    if ("ResizeObserver" in window) {
      new ResizeObserver(function () {
        const width = Math.max(240, target.clientWidth);
        if (width !== plot.width) plot.setSize({ width: width, height: HEIGHT });
      }).observe(figure);
    }
  }

  function start() {
    if (typeof uPlot === "undefined") return;
    for (const figure of document.querySelectorAll("[data-usage]")) draw(figure);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
