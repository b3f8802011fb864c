// Unit tests of the worksheet's pure parts: `npm test` (node --test), also run by
// tests/web/test_worksheet.py.
import { test } from "node:test";
import assert from "node:assert/strict";
import { chartData } from "../src/chart.js";
import { errorSpan, offsetOf } from "../src/run.js";
import { parseTags } from "../src/tags.js";

const columns = [
  { name: "day", type: "date" },
  { name: "g", type: "string" },
  { name: "n", type: "bigint" },
  { name: "label", type: "string" },
];

test("a series column splits y into one series per value, aligned on sorted x", () => {
  const rows = [
    ["2026-01-02", "a", 5, "x"],
    ["2026-01-01", "a", 3, "y"],
    ["2026-01-01", "b", 4, "z"],
  ];
  const data = chartData(columns, rows, { x: 0, ys: [2], series: 1 });
  assert.equal(data.time, true);
  assert.deepEqual(data.xs, [Date.UTC(2026, 0, 1) / 1000, Date.UTC(2026, 0, 2) / 1000]);
  assert.deepEqual(data.names, ["n · a", "n · b"]);
  assert.deepEqual(data.values, [[3, 5], [4, null]]);
});

test("text on x is placed by position and labelled, in the rows' order", () => {
  const rows = [["2026-01-01", "b", 1, "q"], ["2026-01-01", "a", 2, "p"], ["2026-01-01", null, 3, "r"]];
  const data = chartData(columns, rows, { x: 1, ys: [2], series: null });
  assert.deepEqual(data.labels, ["b", "a"]);
  assert.deepEqual(data.xs, [0, 1]);
  assert.deepEqual(data.values, [[1, 2]]);
});

test("an error's span: Spark's indexes, else its line and position widened to the word", () => {
  const text = "SELECT 2,\n  no_such_column FROM t";
  assert.deepEqual(errorSpan(text, { start_index: 12, stop_index: 25 }), [12, 26]);
  assert.deepEqual(errorSpan(text, { line: 2, position: 3 }), [12, 26]);
  assert.equal(errorSpan(text, { line: 9, position: 1 }), null);
  assert.equal(errorSpan(text, null), null);
  assert.equal(offsetOf("ab\ncd", 2, 2), 4);
});

test("tags are key=value pairs; anything else is refused", () => {
  assert.deepEqual(parseTags(" team=fin , report = q3"), { team: "fin", report: "q3" });
  assert.equal(parseTags("  "), null);
  assert.throws(() => parseTags("team"), /"team" is not key=value/);
  assert.throws(() => parseTags("=x"), /not key=value/);
});
