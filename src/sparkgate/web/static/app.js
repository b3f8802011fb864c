// sparkgate dashboard: the little the server-rendered pages need beyond htmx.
(function () {
  "use strict";

  // A banner when polls fail (server restarting, network down); it goes when one succeeds.
  function banner(text) {
    let el = document.getElementById("conn-banner");
    if (!text) {
      if (el) el.remove();
      return;
    }
    if (!el) {
      el = document.createElement("div");
      el.id = "conn-banner";
      el.setAttribute("role", "status");
      document.body.prepend(el);
    }
    el.textContent = text;
  }

  document.addEventListener("htmx:sendError", function () {
    banner("The server does not answer; retrying…");
  });
  document.addEventListener("htmx:responseError", function (event) {
    const xhr = event.detail.xhr;
    // Action errors (a refused kill, a finished query) are shown where the action was made.
    const target = event.detail.target;
    if (event.detail.requestConfig && event.detail.requestConfig.verb !== "get" && target) {
      target.innerHTML = xhr.responseText;
      return;
    }
    banner("The server answered " + xhr.status + "; retrying…");
  });
  document.addEventListener("htmx:afterRequest", function (event) {
    if (event.detail.successful) banner(null);
  });

  // Polls (hx-trigger="every 2s") skip their turn while the tab is hidden: a tab left open in
  // the background costs the server nothing. Done here rather than with an hx-trigger filter,
  // which htmx would evaluate as code (the Content-Security-Policy allows no eval).
  document.addEventListener("htmx:beforeRequest", function (event) {
    if (document.visibilityState === "visible") return;
    const trigger = event.detail.elt.getAttribute("hx-trigger") || "";
    if (/^\s*every\s/.test(trigger)) event.preventDefault();
  });

  // "/" jumps to the page's first filter field, as in many list UIs.
  document.addEventListener("keydown", function (event) {
    if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
    const active = document.activeElement;
    if (active && /^(INPUT|SELECT|TEXTAREA)$/.test(active.tagName)) return;
    const field = document.querySelector("form.filters select, form.filters input");
    if (field) {
      event.preventDefault();
      field.focus();
    }
  });
})();
