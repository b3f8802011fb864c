// Completion of what the user may see: schemas and tables from GET /v1/tables, columns of a
// table from GET /v1/tables/{name} once the text names it (hidden columns are never in that
// answer), Spark's functions (spark-sql.json, from Spark's own registry), and keywords (the
// SQL language's own completion, beside this one).
import { get } from "./api.js";
import names from "./spark-sql.json";

const WORD = /^[\w$]*$/;
// Words that follow a table in FROM/JOIN and are not its alias.
const NOT_ALIAS = new Set(
  "where join left right inner outer full cross semi anti on using group order limit having union except intersect window lateral natural pivot unpivot tablesample as select sort cluster distribute".split(" ")
);
const FUNCTIONS = names.functions.map((name) => ({ label: name, type: "function", apply: name + "(", boost: -1 }));

export class Catalog {
  constructor() {
    this.schemas = new Map(); // schema -> [{schema, name, kind}]
    this.tables = new Map(); // "schema.table" (lower case) -> {schema, name, kind}
    this.columns = new Map(); // "schema.table" -> Promise<[{name, type}]>
    this.loaded = null;
  }

  load() {
    this.loaded ??= get("/v1/tables").then(
      (listing) => {
        for (const schema of listing.schemas) {
          this.schemas.set(schema.name.toLowerCase(), schema.tables);
          for (const table of schema.tables) this.tables.set(`${table.schema}.${table.name}`.toLowerCase(), table);
        }
      },
      () => {} // no catalog (no engine yet): completion goes on with keywords and functions
    );
    return this.loaded;
  }

  columnsOf(full) {
    const key = full.toLowerCase();
    if (!this.columns.has(key)) {
      const fetched = get("/v1/tables/" + encodeURIComponent(key)).then(
        (table) => table.columns,
        () => {
          this.columns.delete(key); // try again on the next completion
          return [];
        }
      );
      this.columns.set(key, fetched);
    }
    return this.columns.get(key);
  }

  // The tables the text names (schema.table, or a bare name after FROM/JOIN) and their
  // aliases: alias or name (lower case) -> "schema.table".
  named(text) {
    const found = new Map();
    const pattern = /\b(?:from|join)\s+(`?[\w$]+`?(?:\.`?[\w$]+`?)?)(?:\s+(?:as\s+)?([A-Za-z_][\w$]*))?/gi;
    for (const match of text.matchAll(pattern)) {
      const full = this.resolve(match[1].replace(/`/g, ""));
      if (!full) continue;
      found.set(full, full);
      found.set(full.split(".")[1], full);
      if (match[2] && !NOT_ALIAS.has(match[2].toLowerCase())) found.set(match[2].toLowerCase(), full);
    }
    for (const match of text.matchAll(/\b([A-Za-z_][\w$]*)\.([A-Za-z_][\w$]*)\b/g)) {
      const full = `${match[1]}.${match[2]}`.toLowerCase();
      if (this.tables.has(full)) found.set(full, full);
    }
    return found;
  }

  resolve(name) {
    const lower = name.toLowerCase();
    if (this.tables.has(lower)) return lower;
    if (lower.includes(".")) return null;
    const matches = [...this.tables.keys()].filter((key) => key.endsWith("." + lower));
    return matches.length ? (matches.find((key) => key.startsWith("default.")) ?? matches[0]) : null;
  }

  async complete(context) {
    const before = context.matchBefore(/[\w$`.]*$/);
    if (!before || (before.from === before.to && !context.explicit)) return null;
    await this.load();
    const parts = before.text.replace(/`/g, "").split(".");
    const word = parts.pop();
    const from = before.to - word.length;
    const text = context.state.doc.toString();
    const named = this.named(text);
    let options = [];
    if (parts.length === 0) {
      for (const schema of this.schemas.keys()) options.push({ label: schema, type: "namespace", boost: 1 });
      for (const table of this.tables.values()) options.push({ label: table.name, type: "class", detail: table.schema, apply: `${table.schema}.${table.name}` });
      const tables = [...new Set(named.values())];
      for (const columns of await Promise.all(tables.map((full) => this.columnsOf(full)))) {
        for (const column of columns) options.push({ label: column.name, type: "property", detail: column.type, boost: 2 });
      }
      options.push(...FUNCTIONS);
    } else if (parts.length === 1) {
      const head = parts[0].toLowerCase();
      if (this.schemas.has(head)) {
        options = this.schemas.get(head).map((table) => ({ label: table.name, type: "class", detail: table.kind }));
      }
      const full = named.get(head) ?? this.resolve(head);
      if (full) options.push(...(await this.columnsOf(full)).map(columnOption));
    } else if (parts.length === 2) {
      const full = this.resolve(parts.join("."));
      if (full) options = (await this.columnsOf(full)).map(columnOption);
    }
    return options.length ? { from, options: dedupe(options), validFor: WORD } : null;
  }
}

function columnOption(column) {
  return { label: column.name, type: "property", detail: column.type };
}

function dedupe(options) {
  const seen = new Set();
  return options.filter((option) => {
    const key = option.label + "\u0000" + option.type;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
