// The side panels: the user's history (GET /v1/queries?q=, their own) and saved queries
// (/v1/saved-queries): a click (or Enter) puts a query's text in the editor.
import { del, get, query } from "./api.js";
import { el, firstLine } from "./dom.js";

const LIMIT = 25;

export class HistoryPanel {
  constructor(list, search, { user, admin, open }) {
    Object.assign(this, { list, search, user, admin, open });
    let timer = null;
    search.addEventListener("input", () => {
      window.clearTimeout(timer);
      timer = window.setTimeout(() => this.refresh(), 250);
    });
  }

  async refresh() {
    // Admins see everyone's in /v1/queries: the worksheet's history is their own.
    const params = { q: this.search.value.trim(), limit: LIMIT, total: false, owner: this.admin ? this.user : undefined };
    const page = await get("/v1/queries" + query(params));
    const items = page.queries
      .filter((q) => q.kind === "sql")
      .map((q) =>
        el(
          "li",
          { "data-query-id": q.id },
          el("a", { href: "/ui/sql?query=" + q.id, title: q.query, text: firstLine(q.query, 60), onclick: (event) => this.pick(event, q.id) }),
          el("small", { class: "state-" + q.state, text: q.state })
        )
      );
    if (!items.length) items.push(el("li", { class: "meta", text: this.search.value ? "No query of yours holds that." : "No queries yet." }));
    this.list.replaceChildren(...items);
  }

  pick(event, id) {
    event.preventDefault();
    history.replaceState(null, "", "/ui/sql?query=" + id);
    this.open({ query: id });
  }
}

export class SavedPanel {
  constructor(list, search, { user, open, status }) {
    Object.assign(this, { list, search, user, open, status });
    let timer = null;
    search.addEventListener("input", () => {
      window.clearTimeout(timer);
      timer = window.setTimeout(() => this.refresh(), 250);
    });
  }

  async refresh() {
    const page = await get("/v1/saved-queries" + query({ q: this.search.value.trim(), limit: LIMIT }));
    const items = page.saved_queries.map((saved) =>
      el(
        "li",
        { "data-saved-id": saved.id },
        el("a", {
          href: "/ui/sql?saved=" + saved.id,
          title: saved.sql,
          text: saved.name,
          onclick: (event) => {
            event.preventDefault();
            history.replaceState(null, "", "/ui/sql?saved=" + saved.id);
            this.open({ saved: saved.id });
          },
        }),
        el("small", { text: saved.group ? `${saved.group}` : "private" }),
        saved.owner === this.user
          ? el("button", { type: "button", class: "small danger", "aria-label": `Delete saved query ${saved.name}`, text: "×", onclick: () => this.remove(saved) })
          : null
      )
    );
    if (!items.length) items.push(el("li", { class: "meta", text: "No saved queries." }));
    this.list.replaceChildren(...items);
  }

  async remove(saved) {
    if (!window.confirm(`Delete the saved query "${saved.name}"?`)) return;
    await del(`/v1/saved-queries/${saved.id}`);
    this.status.textContent = `Deleted the saved query "${saved.name}".`;
    await this.refresh();
  }
}
