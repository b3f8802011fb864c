// Calls to sparkgate's own API as the signed-in user: the browser sends the dashboard's cookie;
// a change (POST, PUT, DELETE) carries HX-Request, which the node asks of the dashboard's own
// scripts (another site cannot add it without a CORS preflight the node never grants).

export class ApiError extends Error {
  constructor(status, body) {
    const detail = (body && (body.error || body)) || {};
    super(detail.message || `HTTP ${status}`);
    this.status = status;
    this.code = detail.code || "HTTP_ERROR";
    this.detail = detail;
  }

  // "[QUERY_NOT_FOUND] Query 7 is not found. (404)": what the page shows.
  describe() {
    return `[${this.code}] ${this.message} (${this.status})`;
  }
}

async function call(method, url, body) {
  const headers = { Accept: "application/json" };
  if (method !== "GET") headers["HX-Request"] = "true";
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(url, {
    method,
    headers,
    credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = { message: text.slice(0, 200) };
  }
  if (response.status === 401) {
    // Signed out (the cookie lapsed): sign in again, and come back here.
    window.location.assign("/ui/login?next=" + encodeURIComponent(location.pathname + location.search));
  }
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

export const get = (url) => call("GET", url);
export const post = (url, body) => call("POST", url, body === undefined ? {} : body);
export const put = (url, body) => call("PUT", url, body);
export const del = (url) => call("DELETE", url);

export function query(params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") search.set(key, String(value));
  }
  const text = search.toString();
  return text ? "?" + text : "";
}
