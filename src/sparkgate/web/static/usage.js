// sparkgate dashboard: the usage page's chart, drawn with uPlot.
//
// Markup (no inline script): a figure with data-usage='{"t": [day starts], "unit": "s",
// "series": [{"name", "values": [one per day]}]}' holding a .plot element. After drawing, the
// figure's data-points attribute holds how many (day, key) points are drawn: what a reader
// (or a test) can check.
(function () {
  "use strict";

  const HEIGHT = 240;
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
            return ts == null ? "—" : new Date(ts * 1e3).toISOString().slice(0, 10);
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
          values: function (u, ticks) {
            return ticks.map(function (ts) {
              return new Date(ts * 1e3).toISOString().slice(5, 10);
            });
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
