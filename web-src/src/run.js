// Running a script: split where Spark would (POST /ui/sql/statements, the server's own
// splitter), then each statement in order in the worksheet's session, showing its state,
// elapsed time and progress while it runs; a failure stops the rest and is marked in the
// editor at its line and column; Cancel cancels the running one and the rest do not start.
import { ApiError, get, post, query } from "./api.js";
import { el, firstLine } from "./dom.js";
import { PAGE } from "./grid.js";

const FINAL = new Set(["success", "failed", "cancelled"]);
const FIRST_WAIT = 1; // s: a short query answers in its submit; a long one can be cancelled after

export class Runner {
  constructor({ session, list, status, onResult, onError, onBusy }) {
    Object.assign(this, { session, list, status, onResult, onError, onBusy });
    this.current = null; // the running query's id
    this.stopped = false;
    this.running = false;
  }

  async run(script, scriptOffset, tags) {
    if (this.running) return;
    this.running = true;
    this.stopped = false;
    this.onBusy(true);
    this.list.replaceChildren();
    try {
      let statements;
      try {
        statements = (await post("/ui/sql/statements", { text: script })).statements;
      } catch (error) {
        if (error instanceof ApiError && error.status === 422 && error.detail.line) {
          this.onError(error.describe(), scriptOffset + offsetOf(script, error.detail.line, error.detail.position));
          this.status.textContent = "Not run: the script cannot be split into statements.";
          return;
        }
        throw error;
      }
      if (!statements.length) {
        this.status.textContent = "Nothing to run.";
        return;
      }
      for (const [n, statement] of statements.entries()) {
        if (this.stopped) break;
        const ended = await this.runOne(statement, n + 1, statements.length, tags);
        if (ended.state !== "success") {
          if (ended.state === "failed") {
            const where = errorSpan(statement.text, ended.error);
            const from = scriptOffset + statement.offset + (where ? where[0] : 0);
            const to = scriptOffset + statement.offset + (where ? where[1] : statement.text.length);
            this.onError(`Statement ${n + 1}: [${ended.error.code}] ${ended.error.message}`, from, to);
          }
          break;
        }
      }
    } catch (error) {
      this.onError(error instanceof ApiError ? error.describe() : String(error));
      this.status.textContent = "The run stopped.";
    } finally {
      this.running = false;
      this.current = null;
      this.onBusy(false);
    }
  }

  async runOne(statement, number, count, tags) {
    const state = el("span", { class: "state state-waiting", text: "submitting", "data-testid": "statement-state" });
    const elapsed = el("span", { class: "elapsed", "data-testid": "elapsed", text: "0.0 s" });
    const progress = el("progress", { max: 1, value: 0, "aria-label": `Statement ${number} progress` });
    const tasks = el("span", { class: "meta", "data-testid": "progress" });
    const link = el("span");
    this.list.append(el("li", { "data-statement": number }, el("b", { text: `${number}.` }), state, el("code", { text: firstLine(statement.text) }), elapsed, progress, tasks, link));
    const started = performance.now();
    const tick = window.setInterval(() => {
      elapsed.textContent = ((performance.now() - started) / 1000).toFixed(1) + " s";
    }, 100);
    const show = (q) => {
      state.textContent = q.state;
      state.className = "state state-" + q.state;
      if (typeof q.progress === "number") {
        progress.value = q.progress;
        tasks.textContent = q.state !== "running" ? ""
          : q.tasks_total ? `${q.tasks_done} of ${q.tasks_total} tasks done`
          : `${Math.round(q.progress * 100)}% of its tasks done`;
      }
      this.status.textContent = `Statement ${number} of ${count}: ${q.state}`;
    };
    try {
      let q = await this.session.submit(statement.text, { tags, wait: FIRST_WAIT, limit: PAGE });
      this.current = q.id;
      link.replaceChildren(el("a", { href: `/ui/queries/${q.id}`, text: `query ${q.id}` }));
      show(q);
      while (!FINAL.has(q.state)) {
        q = await get(`/v1/queries/${q.id}` + query({ wait: 1 }));
        show(q);
      }
      const seconds = ((performance.now() - started) / 1000).toFixed(2);
      elapsed.textContent = seconds + " s";
      if (q.state === "success") progress.value = 1;
      if (q.state === "success" && q.result && q.result.schema && q.result.schema.length) {
        this.onResult(q, q.page || null, number, statement.text);
      }
      this.status.textContent = `Statement ${number} of ${count}: ${q.state} in ${seconds} s`;
      return q;
    } finally {
      window.clearInterval(tick);
      this.current = null;
    }
  }

  async cancel() {
    this.stopped = true;
    if (this.current !== null) await post(`/v1/queries/${this.current}/cancel`);
  }
}

// The offset in `text` of a 1-based line and position.
export function offsetOf(text, line, position) {
  const lines = text.split("\n");
  let offset = 0;
  for (let i = 0; i < Math.min(line - 1, lines.length); i++) offset += lines[i].length + 1;
  return Math.min(text.length, offset + Math.max(0, (position || 1) - 1));
}

// Where in a statement its error points, as the query page marks it (templating.error_span):
// Spark's start/stop index, else its line and position widened to the word there.
export function errorSpan(text, error) {
  if (!error) return null;
  const { start_index: start, stop_index: stop, line, position } = error;
  if (Number.isInteger(start) && start >= 0 && start < text.length) {
    return [start, Math.min(text.length, Number.isInteger(stop) && stop >= start ? stop + 1 : start + 1)];
  }
  if (!Number.isInteger(line) || !Number.isInteger(position) || line < 1 || position < 1) return null;
  const from = offsetOf(text, line, position);
  if (from >= text.length) return null;
  let to = from;
  while (to < text.length && !/[\s,;()]/.test(text[to])) to++;
  return [from, Math.max(to, from + 1)];
}
