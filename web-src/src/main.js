// The SQL worksheet (/ui/sql): wires the editor, the runs, the result tabs, the side panels and
// the save dialog of the page's markup (templates/worksheet.html).
import { ApiError, get, post } from "./api.js";
import { Catalog } from "./completion.js";
import { createEditor, runnable, replaceText, markError, clearErrors } from "./editor.js";
import { el, firstLine } from "./dom.js";
import { ResultView } from "./grid.js";
import { HistoryPanel, SavedPanel } from "./panels.js";
import { Runner } from "./run.js";
import { parseTags } from "./tags.js";
import { WorksheetSession } from "./session.js";

const $ = (id) => document.getElementById(id);

function start(root) {
  const user = root.dataset.user;
  const admin = root.dataset.admin === "true";
  const status = $("ws-status");
  const errorBox = $("ws-error");
  const catalog = new Catalog();
  const session = new WorksheetSession(user);
  const tabs = $("ws-tabs");
  const panels = $("ws-panels");
  const results = $("ws-results");

  const showError = (message) => {
    errorBox.hidden = !message;
    errorBox.textContent = message || "";
  };

  const runner = new Runner({
    session,
    list: $("ws-runs"),
    status,
    onResult: (query, page, number, text) => addResult(query, page, number, text),
    onError: (message, from, to) => {
      showError(message);
      if (from !== undefined) markError(view, from, to ?? from + 1, message);
    },
    onBusy: (busy) => {
      $("ws-run").disabled = busy;
      $("ws-cancel").disabled = !busy;
      root.dataset.busy = busy ? "true" : "false";
      if (!busy) historyPanel.refresh().catch(() => {});
    },
  });

  const run = () => {
    let tags;
    try {
      tags = parseTags($("ws-tags").value);
    } catch (error) {
      showError(error.message);
      return;
    }
    const { text, offset } = runnable(view);
    showError("");
    clearErrors(view);
    tabs.replaceChildren();
    panels.replaceChildren();
    results.hidden = true;
    runner.run(text, offset, tags);
  };

  const view = createEditor($("ws-editor"), { catalog, onRun: run });
  catalog.load();

  function addResult(query, page, number, text) {
    const result = new ResultView(query, page);
    const id = `ws-result-${number}`;
    const tab = el("button", {
      type: "button",
      role: "tab",
      id: id + "-tab",
      "aria-controls": id,
      "aria-selected": "false",
      tabindex: "-1",
      title: text,
      text: `${number}: ${firstLine(text, 30)}`,
      onclick: () => select(tab),
    });
    const panel = el("div", { role: "tabpanel", id, "aria-labelledby": tab.id, hidden: true }, result.element);
    tabs.append(tab);
    panels.append(panel);
    results.hidden = false;
    select(tab);
  }

  function select(tab) {
    for (const other of tabs.querySelectorAll('[role="tab"]')) {
      const chosen = other === tab;
      other.setAttribute("aria-selected", chosen ? "true" : "false");
      other.tabIndex = chosen ? 0 : -1;
      $(other.getAttribute("aria-controls")).hidden = !chosen;
    }
  }

  // The tabs' keys (WAI-ARIA's tabs pattern): arrows move between them.
  tabs.addEventListener("keydown", (event) => {
    const all = [...tabs.querySelectorAll('[role="tab"]')];
    const at = all.indexOf(document.activeElement);
    if (at < 0) return;
    const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
    if (!step) return;
    event.preventDefault();
    const next = all[(at + step + all.length) % all.length];
    select(next);
    next.focus();
  });

  $("ws-run").addEventListener("click", run);
  $("ws-cancel").addEventListener("click", () =>
    runner.cancel().catch((error) => showError(error instanceof ApiError ? error.describe() : String(error)))
  );

  // Open a query's text (history) or a saved query's; another's answers 404, told as such.
  const open = async ({ query, saved }) => {
    try {
      const text = query ? (await get(`/v1/queries/${query}`)).query : (await get(`/v1/saved-queries/${saved}`)).sql;
      replaceText(view, text);
      showError("");
      status.textContent = query ? `Opened query ${query}.` : `Opened saved query ${saved}.`;
      view.focus();
    } catch (error) {
      showError((query ? `Query ${query}: ` : `Saved query ${saved}: `) + (error instanceof ApiError ? error.describe() : String(error)));
    }
  };
  const historyPanel = new HistoryPanel($("ws-history"), $("ws-history-q"), { user, admin, open });
  const saved = new SavedPanel($("ws-saved"), $("ws-saved-q"), { user, open, status });
  historyPanel.refresh().catch(() => {});
  saved.refresh().catch(() => {});

  // Save: a dialog (Escape closes it, as any <dialog>).
  const dialog = $("ws-save-dialog");
  const saveError = $("ws-save-error");
  $("ws-save-open").addEventListener("click", () => {
    saveError.hidden = true;
    dialog.showModal();
    $("ws-save-name").focus();
  });
  $("ws-save-cancel").addEventListener("click", () => dialog.close());
  $("ws-save-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = {
      name: $("ws-save-name").value.trim(),
      sql: view.state.doc.toString(),
      description: $("ws-save-description").value.trim() || null,
      group: $("ws-save-group").value.trim() || null,
    };
    try {
      const made = await post("/v1/saved-queries", body);
      dialog.close();
      status.textContent = `Saved as "${made.name}" (${made.group ? "shared with " + made.group : "private"}).`;
      await saved.refresh();
    } catch (error) {
      saveError.hidden = false;
      saveError.textContent = error instanceof ApiError ? error.describe() : String(error);
    }
  });

  const params = new URLSearchParams(location.search);
  const wanted = { query: Number(params.get("query")) || null, saved: Number(params.get("saved")) || null };
  if (wanted.query || wanted.saved) open(wanted);
  else view.focus();
  root.dataset.ready = "true";
}

const root = document.getElementById("worksheet");
if (root) start(root);
