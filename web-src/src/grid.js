// One result: its columns (name and Spark type), a page of rows at a time (never the whole
// result: ?offset=&limit= of GET /v1/queries/{id}/result), the row count, the downloads of the
// whole result and its chart.
import { get, query } from "./api.js";
import { el, NUMERIC } from "./dom.js";
import { ChartPanel } from "./chart.js";

export const PAGE = 100;
const DASH = "\u2013";
const FORMATS = [
  ["csv", "CSV"],
  ["jsonl", "JSON lines"],
  ["parquet", "Parquet"],
  ["arrow", "Arrow"],
];

export function cell(value, type) {
  const numeric = NUMERIC.test(type);
  if (value === null || value === undefined) {
    // Apart from the string "NULL": a marker of its own, named for screen readers.
    return el("td", { class: numeric ? "num" : null }, el("span", { class: "ws-null", title: "null (no value)", "aria-label": "null", text: "NULL" }));
  }
  const text = typeof value === "object" ? JSON.stringify(value) : String(value);
  return el("td", { class: numeric ? "num" : null, text });
}

export class ResultView {
  // `statement`: the query as /v1 answers it (with result.schema and row_count); `page`: its first
  // page if the answer carried one.
  constructor(statement, page) {
    this.query = statement;
    this.columns = statement.result.schema;
    this.total = statement.result.row_count;
    this.offset = 0;
    this.count = el("span", { class: "count", "data-testid": "row-count", "aria-live": "polite" });
    this.previous = el("button", { type: "button", class: "small", text: "← Previous rows", onclick: () => this.show(this.offset - PAGE) });
    this.next = el("button", { type: "button", class: "small", text: "Next rows →", onclick: () => this.show(this.offset + PAGE) });
    this.body = el("tbody");
    const head = el("tr", {}, this.columns.map((c) => el("th", { scope: "col", class: NUMERIC.test(c.type) ? "num" : null }, c.name, el("small", { text: c.type }))));
    const url = `/v1/queries/${statement.id}/result`;
    const downloads = el(
      "span",
      { class: "ws-downloads", role: "group", "aria-label": "Download the whole result" },
      "Download",
      FORMATS.map(([format, label]) => el("a", { href: url + query({ format }), download: "", "data-format": format, text: label }))
    );
    this.chart = new ChartPanel(this.columns, () => this.rowsForChart());
    this.element = el(
      "div",
      { class: "ws-result", "data-query-id": statement.id },
      el("div", { class: "ws-bar" }, this.count, el("span", { class: "pager" }, this.previous, this.next), downloads, el("a", { href: `/ui/queries/${statement.id}`, text: `query ${statement.id}` })),
      el("div", { class: "table-wrap ws-grid" }, el("table", { class: "list", "data-testid": "result-grid" }, el("thead", {}, head), this.body)),
      this.chart.element
    );
    if (page) this.render(page);
    else this.show(0);
  }

  async show(offset) {
    offset = Math.max(0, Math.min(offset, Math.max(0, this.total - 1)));
    this.render(await get(`/v1/queries/${this.query.id}/result` + query({ offset, limit: PAGE })));
  }

  render(page) {
    this.offset = page.offset;
    this.total = page.total;
    const rows = page.rows.map((row) => el("tr", {}, row.map((value, i) => cell(value, this.columns[i].type))));
    if (!rows.length) rows.push(el("tr", {}, el("td", { class: "empty", colspan: this.columns.length || 1, text: "No rows." })));
    this.body.replaceChildren(...rows);
    const last = page.offset + page.rows.length;
    const shown = page.rows.length ? `, ${page.offset + 1}${DASH}${last} shown` : "";
    this.count.textContent = `${this.total} row${this.total === 1 ? "" : "s"}${shown}`;
    this.previous.disabled = page.offset <= 0;
    this.next.disabled = last >= this.total;
  }

  // The chart draws the first rows (one page of at most CHART_ROWS): enough for a chart.
  async rowsForChart() {
    const page = await get(`/v1/queries/${this.query.id}/result` + query({ offset: 0, limit: ChartPanel.ROWS }));
    return page.rows;
  }
}
