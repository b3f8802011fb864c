// "team=finance, report=q3" -> {"team": "finance", "report": "q3"}; null when empty. A piece
// without a key and "=" is refused with a sentence naming it.
export function parseTags(text) {
  const tags = {};
  for (const piece of text.split(",").map((p) => p.trim()).filter(Boolean)) {
    const at = piece.indexOf("=");
    if (at <= 0) throw new Error(`Tags: "${piece}" is not key=value.`);
    tags[piece.slice(0, at).trim()] = piece.slice(at + 1).trim();
  }
  return Object.keys(tags).length ? tags : null;
}
