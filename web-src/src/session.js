// The worksheet's one REST session, kept for the tab (sessionStorage) so that temporary views
// and SETs carry from one run to the next, as a notebook's would. Made on the first run; made
// again when the node answers that it ended (404: gone; 409: no more statements).
import { ApiError, post, query } from "./api.js";

export class WorksheetSession {
  constructor(user) {
    this.key = "sparkgate.worksheet.session." + (user || "-");
  }

  get id() {
    const stored = window.sessionStorage.getItem(this.key);
    return stored ? Number(stored) : null;
  }

  async open() {
    const session = await post("/v1/sessions", { kind: "interactive", name: "worksheet" });
    window.sessionStorage.setItem(this.key, String(session.id));
    return session.id;
  }

  // Submit one statement in the session, waiting up to `wait` seconds for it to end: a short
  // query answers in this one request, with its first result page (`limit` rows).
  async submit(text, { tags, wait, limit }) {
    const url = "/v1/queries" + query({ wait, limit });
    let id = this.id ?? (await this.open());
    const body = (session_id) => ({ query: text, session_id, tags: tags || undefined });
    try {
      return await post(url, body(id));
    } catch (error) {
      if (!(error instanceof ApiError) || !ended(error)) throw error;
      id = await this.open();
      return await post(url, body(id));
    }
  }
}

function ended(error) {
  return (
    (error.status === 404 && error.code === "SESSION_NOT_FOUND") ||
    (error.status === 409 && error.code === "SESSION_NOT_ACTIVE")
  );
}
