// Bundles the worksheet (src/main.js, CodeMirror 6 and its code) into one file the node serves:
// src/sparkgate/web/static/build/worksheet.js. `npm run build` (scripts/install runs it).
import * as esbuild from "esbuild";
import { fileURLToPath } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const outfile = path.join(here, "..", "src", "sparkgate", "web", "static", "build", "worksheet.js");

await esbuild.build({
  entryPoints: [path.join(here, "src", "main.js")],
  bundle: true,
  format: "iife",
  target: ["es2022"],
  minify: true,
  sourcemap: false,
  legalComments: "eof",
  outfile,
  logLevel: "warning",
});
