// A chart of a result, drawn with uPlot (vendored in static/vendor, as the Usage page's):
// bar, line or scatter; an x column, one or more y columns, and an optional series column
// whose values split each y into one series per value.
import { el, NUMERIC, TEMPORAL } from "./dom.js";

const PALETTE = ["#0969da", "#1a7f37", "#bf3989", "#9a6700", "#8250df", "#cf222e", "#0a7ea4", "#6e7781"];
const MAX_SERIES = 12;

let chartCount = 0;

export class ChartPanel {
  static ROWS = 2000;

  constructor(columns, loadRows) {
    this.columns = columns;
    this.loadRows = loadRows;
    this.rows = null;
    this.plot = null;
    const id = "ws-chart-" + ++chartCount;
    const numeric = columns.map((c, i) => [c, i]).filter(([c]) => NUMERIC.test(c.type));
    const option = ([c, i]) => el("option", { value: i, text: `${c.name} (${c.type})` });
    const indexed = columns.map((c, i) => [c, i]);
    this.type = el("select", { id: id + "-type", "data-testid": "chart-type" }, ["bar", "line", "scatter"].map((t) => el("option", { value: t, text: t })));
    this.x = el("select", { id: id + "-x", "data-testid": "chart-x" }, indexed.map(option));
    this.series = el("select", { id: id + "-series", "data-testid": "chart-series" }, el("option", { value: "", text: "none" }), indexed.map(option));
    const firstY = numeric.find(([, i]) => i !== 0) || numeric[0];
    this.ys = indexed.map(([c, i]) =>
      el("input", { type: "checkbox", value: i, checked: firstY && firstY[1] === i, "data-column": c.name })
    );
    const yField = el(
      "fieldset",
      { "data-testid": "chart-y" },
      el("legend", { text: "y" }),
      indexed.map(([c], n) => el("label", {}, this.ys[n], c.name))
    );
    this.area = el("div", { class: "ws-plot", "data-testid": "chart", role: "img", "aria-label": "Chart of the result" });
    this.message = el("p", { class: "hint", "aria-live": "polite" });
    const controls = el(
      "div",
      { class: "ws-chart-controls" },
      el("label", { for: this.type.id }, "Chart", this.type),
      el("label", { for: this.x.id }, "x", this.x),
      yField,
      el("label", { for: this.series.id }, "Series", this.series)
    );
    for (const input of [this.type, this.x, this.series, ...this.ys]) input.addEventListener("change", () => this.draw());
    this.element = el("details", { class: "ws-chart" }, el("summary", { text: "Chart" }), controls, this.message, this.area);
    this.element.addEventListener("toggle", () => this.element.open && this.draw());
  }

  async draw() {
    if (!this.element.open) return;
    if (typeof window.uPlot === "undefined") {
      this.message.textContent = "The chart library did not load.";
      return;
    }
    if (this.rows === null) this.rows = await this.loadRows();
    const spec = {
      type: this.type.value,
      x: Number(this.x.value),
      ys: this.ys.filter((box) => box.checked).map((box) => Number(box.value)),
      series: this.series.value === "" ? null : Number(this.series.value),
    };
    if (!spec.ys.length) {
      this.message.textContent = "Choose one or more y columns.";
      return;
    }
    const data = chartData(this.columns, this.rows, spec);
    this.message.textContent = `${this.rows.length} row${this.rows.length === 1 ? "" : "s"} charted` + (data.capped ? ` (the first ${MAX_SERIES} series)` : "");
    this.render(spec, data);
  }

  render(spec, data) {
    if (this.plot) this.plot.destroy();
    const uPlot = window.uPlot;
    const width = Math.max(300, this.area.clientWidth - 16);
    const paths =
      spec.type === "bar" ? uPlot.paths.bars({ size: [0.8 / Math.max(1, data.names.length), 64] }) : spec.type === "scatter" ? () => null : undefined;
    const series = data.names.map((name, n) => {
      const colour = PALETTE[n % PALETTE.length];
      return {
        label: name,
        stroke: colour,
        fill: spec.type === "bar" ? colour + "99" : undefined,
        width: spec.type === "line" ? 2 : 1,
        paths,
        points: { show: spec.type === "scatter", size: 6, fill: colour },
        spanGaps: spec.type === "line",
      };
    });
    const xAxis = { stroke: "#6e7781" };
    if (data.labels) {
      xAxis.values = (u, splits) => splits.map((v) => (Number.isInteger(v) ? data.labels[v] ?? "" : ""));
      xAxis.splits = () => data.xs;
    }
    const options = {
      width,
      height: 300,
      scales: { x: { time: data.time, range: data.labels ? [-0.5, data.xs.length - 0.5] : undefined } },
      axes: [xAxis, { stroke: "#6e7781" }],
      series: [{ label: this.columns[spec.x].name, value: data.labels ? (u, v) => data.labels[v] ?? "" : undefined }, ...series],
      legend: { show: true },
    };
    this.plot = new uPlot(options, [data.xs, ...data.values], this.area);
    this.area.dataset.series = data.names.join("\n");
    this.area.dataset.points = String(data.xs.length);
  }
}

// The arrays uPlot draws: x values (numbers, epoch seconds for times, or positions of
// labels for anything else) and one array per series, aligned with them.
export function chartData(columns, rows, spec) {
  const xType = columns[spec.x].type;
  const time = TEMPORAL.test(xType);
  const numeric = NUMERIC.test(xType);
  const xOf = (row) => {
    const value = row[spec.x];
    if (value === null || value === undefined) return null;
    if (time) return Date.parse(String(value).replace(" ", "T") + (/[zZ]|[+-]\d\d:?\d\d$/.test(String(value)) ? "" : "Z")) / 1000;
    if (numeric) return Number(value);
    return String(value);
  };
  const keys = [];
  const seen = new Set();
  for (const row of rows) {
    const x = xOf(row);
    if (x === null || Number.isNaN(x) || seen.has(x)) continue;
    seen.add(x);
    keys.push(x);
  }
  let labels = null;
  if (time || numeric) keys.sort((a, b) => a - b);
  else labels = keys.slice();
  const position = new Map(keys.map((k, i) => [k, i]));
  const xs = labels ? labels.map((_, i) => i) : keys;

  let groups = [null];
  let capped = false;
  if (spec.series !== null) {
    const values = [];
    for (const row of rows) {
      const g = row[spec.series] === null ? "null" : String(row[spec.series]);
      if (!values.includes(g)) values.push(g);
    }
    capped = values.length > MAX_SERIES;
    groups = values.slice(0, MAX_SERIES);
  }
  const names = [];
  const values = [];
  for (const y of spec.ys) {
    for (const group of groups) {
      const line = new Array(xs.length).fill(null);
      for (const row of rows) {
        if (group !== null && (row[spec.series] === null ? "null" : String(row[spec.series])) !== group) continue;
        const x = xOf(row);
        const at = position.get(x);
        if (at === undefined) continue;
        const v = row[y];
        line[at] = v === null || v === undefined ? null : Number(v);
      }
      names.push(group === null ? columns[y].name : `${columns[y].name} · ${group}`);
      values.push(line);
    }
  }
  return { xs, values, names, labels, time, capped };
}
