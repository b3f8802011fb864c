// The editor: CodeMirror 6 with Spark SQL's keywords and functions highlighted, completion
// (completion.js), errors marked at their line and column (lint diagnostics), Ctrl/Cmd-Enter.
//
// It lives in a shadow root: CodeMirror adds its styles as a stylesheet, which in a document
// would be a <style> element the Content-Security-Policy refuses (no inline style), while a
// shadow root takes a constructed stylesheet (adoptedStyleSheets), which the policy allows.
import { EditorView, keymap, lineNumbers, highlightActiveLine, highlightActiveLineGutter, drawSelection, placeholder } from "@codemirror/view";
import { EditorState, EditorSelection, Prec } from "@codemirror/state";
import { defaultKeymap, history, historyKeymap } from "@codemirror/commands";
import { sql, SQLDialect, keywordCompletionSource } from "@codemirror/lang-sql";
import { autocompletion, completionKeymap, closeBrackets, closeBracketsKeymap } from "@codemirror/autocomplete";
import { syntaxHighlighting, defaultHighlightStyle, bracketMatching, indentOnInput } from "@codemirror/language";
import { searchKeymap, highlightSelectionMatches } from "@codemirror/search";
import { lintGutter, setDiagnostics } from "@codemirror/lint";
import names from "./spark-sql.json";

const TYPES = "boolean tinyint byte smallint short int integer bigint long float real double decimal dec numeric string char varchar binary date timestamp timestamp_ltz timestamp_ntz interval array map struct variant void";

export const SparkSQL = SQLDialect.define({
  keywords: names.keywords.join(" "),
  types: TYPES,
  builtin: names.functions.join(" "),
  backslashEscapes: true,
  doubleQuotedStrings: true,
  identifierQuotes: "`",
  operatorChars: "*+-%<>!=&|~^/",
  specialVar: "",
  hashComments: false,
});

const theme = EditorView.theme({
  "&": { fontSize: "13px", minHeight: "10em", maxHeight: "28em", backgroundColor: "var(--panel, #fff)" },
  "&.cm-focused": { outline: "2px solid var(--accent, #0969da)" },
  ".cm-scroller": { fontFamily: 'ui-monospace, "SFMono-Regular", Menlo, Consolas, "DejaVu Sans Mono", monospace', minHeight: "10em" },
  ".cm-content": { minHeight: "10em" },
  // The lint marks' own images are data: URLs, which the policy's img-src refuses: drawn
  // with CSS instead.
  ".cm-lintRange-error": { backgroundImage: "none", textDecoration: "underline wavy #d11", textDecorationSkipInk: "none" },
  ".cm-lintRange-warning": { backgroundImage: "none", textDecoration: "underline wavy orange" },
  ".cm-lintRange-info": { backgroundImage: "none", textDecoration: "underline wavy #999" },
  ".cm-lintRange-hint": { backgroundImage: "none", textDecoration: "underline wavy #66d" },
  ".cm-lint-marker": { content: "normal", borderRadius: "50%", width: ".75em", height: ".75em", margin: ".15em" },
  ".cm-lint-marker-error": { content: "normal", backgroundColor: "#f43" },
  ".cm-lint-marker-warning": { content: "normal", backgroundColor: "#fd7" },
  ".cm-lint-marker-info": { content: "normal", backgroundColor: "#77e" },
});

export function createEditor(host, { catalog, onRun, doc }) {
  const shadow = host.attachShadow({ mode: "open" });
  const run = () => {
    onRun();
    return true;
  };
  const language = sql({ dialect: SparkSQL, upperCaseKeywords: true });
  const view = new EditorView({
    root: shadow,
    parent: shadow,
    state: EditorState.create({
      doc: doc || "",
      extensions: [
        Prec.highest(keymap.of([{ key: "Mod-Enter", run }])),
        lineNumbers(),
        highlightActiveLineGutter(),
        history(),
        drawSelection(),
        indentOnInput(),
        bracketMatching(),
        closeBrackets(),
        highlightActiveLine(),
        highlightSelectionMatches(),
        syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
        language,
        language.language.data.of({ autocomplete: (context) => catalog.complete(context) }),
        language.language.data.of({ autocomplete: keywordCompletionSource(SparkSQL, true) }),
        autocompletion({ activateOnTyping: true, defaultKeymap: true }),
        lintGutter(),
        placeholder("SELECT … (Ctrl+Enter runs)"),
        keymap.of([...closeBracketsKeymap, ...defaultKeymap, ...searchKeymap, ...historyKeymap, ...completionKeymap]),
        EditorView.contentAttributes.of({ "aria-label": "SQL editor", "data-testid": "sql-input" }),
        theme,
      ],
    }),
  });
  return view;
}

// What Run runs: the selection if there is one (and where it starts), else the whole text.
export function runnable(view) {
  const range = view.state.selection.main;
  if (!range.empty) return { text: view.state.sliceDoc(range.from, range.to), offset: range.from };
  return { text: view.state.doc.toString(), offset: 0 };
}

export function replaceText(view, text) {
  view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text }, selection: EditorSelection.cursor(text.length) });
  view.dispatch(setDiagnostics(view.state, []));
}

// Mark an error at its place: `from`/`to` are offsets in the document.
export function markError(view, from, to, message) {
  const length = view.state.doc.length;
  from = Math.max(0, Math.min(from, length));
  to = Math.max(from, Math.min(to, length));
  view.dispatch(setDiagnostics(view.state, [{ from, to, severity: "error", message, source: "spark" }]));
}

export function clearErrors(view) {
  view.dispatch(setDiagnostics(view.state, []));
}
