// sparkgate dashboard: live charts of a stream job's progress, drawn with uPlot.
//
// Markup (no inline script): a container with data-progress="<url>" (the dashboard route that
// answers {"cursor", "queries": [{"name", "points": [progress views]}]}) and data-refresh
// (seconds), holding one [data-metric] figure per chart with a .plot element inside. The
// first request gets every stored sample; later ones ask only for samples after the cursor
// and append them, so a chart grows in place and the page is never reloaded.
//
// After each update the container's and each figure's data-points attribute holds how many
// samples are drawn: what a reader (or a test) can watch grow.
(function () {
  "use strict";

  const MAX_POINTS = 600; // per query: bounds memory and drawing on a tab left open for days
  const HEIGHT = 200;
  const PALETTE = ["#0969da", "#1a7f37", "#bf3989", "#9a6700", "#8250df", "#cf222e"];

  function cssVar(name, fallback) {
    const value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    return value || fallback;
  }

  // 1234567 -> "1.2M": axis labels stay narrow on a phone.
  function compact(value) {
    if (value == null) return "";
    const abs = Math.abs(value);
    if (abs >= 1e9) return (value / 1e9).toFixed(abs >= 1e10 ? 0 : 1) + "G";
    if (abs >= 1e6) return (value / 1e6).toFixed(abs >= 1e7 ? 0 : 1) + "M";
    if (abs >= 1e3) return (value / 1e3).toFixed(abs >= 1e4 ? 0 : 1) + "k";
    return String(Math.round(value * 10) / 10);
  }

  // Times as the rest of the dashboard shows them: UTC, 24-hour.
  function utc(ts, withDate) {
    const text = new Date(ts * 1e3).toISOString();
    return withDate ? text.slice(0, 10) + " " + text.slice(11, 19) : text.slice(11, 19);
  }

  function Board(root) {
    this.root = root;
    this.url = root.dataset.progress;
    this.refresh = Math.max(1, Number(root.dataset.refresh) || 3) * 1000;
    this.cursor = 0;
    this.queries = new Map(); // query name -> {t: [...], values: {metric: [...]}}
    this.figures = Array.from(root.querySelectorAll("[data-metric]"));
    this.plots = new Map(); // figure -> {plot, names}
    this.observer =
      "ResizeObserver" in window ? new ResizeObserver(this.resize.bind(this)) : null;
  }

  Board.prototype.poll = function () {
    const board = this;
    const next = function () {
      window.setTimeout(board.poll.bind(board), board.refresh);
    };
    if (document.visibilityState !== "visible") return next();
    fetch(this.url + "?after=" + this.cursor, {
      headers: { Accept: "application/json" },
      credentials: "same-origin",
    })
      .then(function (response) {
        // Signed out or the job gone: the page's own htmx poll says so (banner, login page).
        const json = (response.headers.get("content-type") || "").indexOf("json") >= 0;
        return response.ok && json ? response.json() : null;
      })
      .then(function (data) {
        if (data) board.add(data);
      })
      .catch(function () {
        /* the network is down: app.js shows the banner; try again at the next tick */
      })
      .then(next);
  };

  Board.prototype.add = function (data) {
    const metrics = this.figures.map(function (f) {
      return f.dataset.metric;
    });
    const seen = new Set();
    for (const query of data.queries) {
      seen.add(query.name);
      let series = this.queries.get(query.name);
      if (!series) {
        series = { t: [], values: {} };
        for (const m of metrics) series.values[m] = [];
        this.queries.set(query.name, series);
      }
      for (const point of query.points) {
        series.t.push(Date.parse(point.at) / 1000);
        for (const m of metrics) series.values[m].push(point[m] == null ? null : point[m]);
      }
      const extra = series.t.length - MAX_POINTS;
      if (extra > 0) {
        series.t.splice(0, extra);
        for (const m of metrics) series.values[m].splice(0, extra);
      }
    }
    // A redefined job has new queries: the old ones' lines go.
    for (const name of Array.from(this.queries.keys())) {
      if (!seen.has(name)) this.queries.delete(name);
    }
    this.cursor = Math.max(this.cursor, data.cursor || 0);
    this.draw();
  };

  Board.prototype.draw = function () {
    const names = Array.from(this.queries.keys()).sort();
    let total = 0;
    for (const name of names) total += this.queries.get(name).t.length;
    for (const figure of this.figures) this.drawFigure(figure, names);
    this.root.dataset.points = String(total);
  };

  Board.prototype.drawFigure = function (figure, names) {
    const metric = figure.dataset.metric;
    const unit = figure.dataset.unit || "";
    const queries = this.queries;
    const tables = names.map(function (name) {
      const series = queries.get(name);
      return [series.t, series.values[metric]];
    });
    // uPlot draws series over one shared x axis: join the queries' own times (nulls where a
    // query has no sample), as uPlot.join does.
    const data = tables.length === 1 ? tables[0] : tables.length ? uPlot.join(tables) : [[]];
    const samples = data[0].length;
    const drawable = data.slice(1).some(function (values) {
      return values.some(function (v) {
        return v != null;
      });
    });
    figure.dataset.points = String(samples);
    figure.classList.toggle("is-empty", !drawable);
    const empty = figure.querySelector(".chart-empty");
    if (empty) {
      empty.textContent = samples
        ? "Nothing to draw: no query reports this (a stateless query keeps no state)."
        : "No progress recorded yet.";
    }
    const target = figure.querySelector(".plot");
    target.setAttribute("aria-label", this.describe(figure, names, samples));
    if (!drawable) return;

    const current = this.plots.get(figure);
    if (current && current.names.join("\n") === names.join("\n")) {
      current.plot.setData(data);
      return;
    }
    if (current) current.plot.destroy();
    const plot = new uPlot(this.options(target, names, unit), data, target);
    this.plots.set(figure, { plot: plot, names: names });
    if (this.observer) this.observer.observe(figure);
  };

  Board.prototype.describe = function (figure, names, samples) {
    const label = figure.querySelector("h3").textContent.trim();
    if (!samples) return label + " over time: no samples yet";
    const latest = names
      .map(function (name) {
        const values = this.queries.get(name).values[figure.dataset.metric];
        const last = values.length ? values[values.length - 1] : null;
        return last == null ? null : name + " " + compact(last);
      }, this)
      .filter(Boolean);
    return (
      label + " over time: " + samples + " samples" + (latest.length ? "; latest " + latest.join(", ") : "")
    );
  };

  Board.prototype.options = function (target, names, unit) {
    const muted = cssVar("--muted", "#5d6778");
    const line = cssVar("--line", "#dde1e8");
    const axis = {
      stroke: muted,
      grid: { stroke: line, width: 1 },
      ticks: { stroke: line, width: 1 },
    };
    return {
      width: Math.max(200, target.clientWidth),
      height: HEIGHT,
      // The dashboard shows every time in UTC (see the footer): so do the charts.
      tzDate: function (ts) {
        return uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC");
      },
      cursor: { drag: { x: false, y: false } },
      scales: {
        y: {
          range: function (u, min, max) {
            return [0, max > 0 ? max * 1.1 : 1]; // from zero: rates and sizes read truthfully
          },
        },
      },
      series: [
        {
          value: function (u, ts) {
            return ts == null ? "—" : utc(ts, true);
          },
        },
      ].concat(
        names.map(function (name, i) {
          return {
            label: name,
            stroke: PALETTE[i % PALETTE.length],
            width: 2,
            spanGaps: true,
            points: { size: 4 },
            value: function (u, v) {
              return v == null ? "—" : compact(v) + " " + unit;
            },
          };
        })
      ),
      axes: [
        Object.assign({}, axis, {
          values: function (u, ticks) {
            const span = ticks.length ? ticks[ticks.length - 1] - ticks[0] : 0;
            return ticks.map(function (ts) {
              return span > 86400 ? utc(ts, true).slice(5, 16) : utc(ts, false);
            });
          },
        }),
        Object.assign({}, axis, {
          size: 48,
          values: function (u, values) {
            return values.map(compact);
          },
        }),
      ],
    };
  };

  Board.prototype.resize = function (entries) {
    for (const entry of entries) {
      const current = this.plots.get(entry.target);
      if (!current) continue;
      const width = Math.max(200, entry.target.querySelector(".plot").clientWidth);
      if (width !== current.plot.width) current.plot.setSize({ width: width, height: HEIGHT });
    }
  };

  function start() {
    if (typeof uPlot === "undefined") return;
    for (const root of document.querySelectorAll("[data-progress]")) new Board(root).poll();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
