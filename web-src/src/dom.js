// Building markup from script without innerHTML: every value goes in as text.
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export const NUMERIC = /^(tinyint|smallint|int|integer|bigint|long|short|byte|float|double|real|decimal(\(.*\))?)$/i;
export const TEMPORAL = /^(date|timestamp|timestamp_ntz|timestamp_ltz)$/i;

export function firstLine(text, width = 80) {
  const line = (text.split("\n").find((part) => part.trim()) || "").trim();
  return line.length <= width ? line : line.slice(0, width - 1) + "…";
}
