"""The command-line reference page, from the ``sparkgate`` command tree itself.

Walks the Click commands Typer builds from ``sparkgate.cli.main.app``: every command and
subcommand gets a heading (an anchor: ``#sparkgate-queries-list``), its help, its usage, its
arguments and its options, as ``--help`` shows them. A command without help text makes
``page()`` raise, so a new command cannot go undocumented.

Written here rather than with Typer's own ``typer ... utils docs``: that repeats the connection
options and the shell-completion options under every command, shows arguments as ``{name}``,
and gives options' environment variables and defaults only inside their help text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Any

import typer
from typer.core import TyperGroup

from sparkgate.cli.connection import LOCAL_COMMANDS
from sparkgate.cli.main import app

PROGRAM = "sparkgate"
# Options every command has, said once at the top rather than under each command.
_EVERYWHERE = frozenset({"help", "install_completion", "show_completion"})
# The connection options: the root group adds them to commands that talk to a server
# (sparkgate.cli.connection), where they only record the value (expose_value is False).
_CONNECTION = frozenset({"server", "user", "token"})

# A code span (``x`` or `x`), kept as it is (a table cell may hold "|" inside one); outside
# them "<" starts HTML, "*" and a word-edge "_" emphasis, and "|" the next table cell.
_CODE = re.compile(r"(``.+?``|`[^`\n]+`)", re.DOTALL)
_EDGE_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
_EXAMPLE = re.compile(r"^Examples?:\s*", re.IGNORECASE)


class MissingHelp(ValueError):
    """A command has no help text: the reference cannot say what it does."""


@dataclass(frozen=True)
class Argument:
    name: str  # as in the usage line: QUERY_ID
    type: str
    required: bool
    many: bool
    help: str


@dataclass(frozen=True)
class Option:
    names: str  # as --help shows them: "-o, --output <file>", "--reuse / --no-reuse"
    envvar: str
    default: str
    help: str


@dataclass(frozen=True)
class Command:
    path: tuple[str, ...]  # ("sparkgate", "queries", "list")
    help: str
    arguments: tuple[Argument, ...]
    options: tuple[Option, ...]
    connection: bool  # takes the connection options
    subcommands: tuple[str, ...]  # a group's, in --help's order

    @property
    def title(self) -> str:
        return " ".join(self.path)

    @property
    def anchor(self) -> str:
        return "-".join(self.path)

    @property
    def summary(self) -> str:
        return help_paragraphs(self.help)[0]

    @property
    def usage(self) -> str:
        pieces = [self.title, "[OPTIONS]"]
        for argument in self.arguments:
            piece = argument.name + ("..." if argument.many else "")
            pieces.append(piece if argument.required else f"[{piece}]")
        if self.subcommands:
            pieces.append("COMMAND [ARGS]...")
        return " ".join(pieces)


def help_paragraphs(text: str) -> list[str]:
    """A help text's paragraphs, each on one line."""
    return [" ".join(part.split()) for part in re.split(r"\n\s*\n", text.strip()) if part.strip()]


def inline(text: str) -> str:
    """Help text as Markdown: ``x`` code spans as `x`, nothing taken for HTML or emphasis."""
    out = []
    for i, part in enumerate(_CODE.split(" ".join(text.split()))):
        if i % 2:
            out.append("`" + part.strip("`") + "`")
        else:
            plain = part.replace("\\", "\\\\").replace("<", "&lt;").replace("*", "\\*")
            out.append(_EDGE_UNDERSCORE.sub(r"\\_", plain).replace("|", "\\|"))
    return "".join(out)


def _default(param: Any) -> str:
    if param.required:
        return "required"
    if param.show_default is False:
        return ""
    if isinstance(param.show_default, str):
        return inline(param.show_default)
    value = param.default
    if callable(value):
        return ""
    if isinstance(value, bool):
        if param.secondary_opts:
            return f"`{(param.opts if value else param.secondary_opts)[0]}`"
        return ""
    if isinstance(value, Enum):
        value = value.value
    if value is None or value in ((), []):
        return ""
    return f"`{value}`"


def _envvar(param: Any) -> str:
    names = [param.envvar] if isinstance(param.envvar, str) else list(param.envvar or ())
    return ", ".join(f"`{name}`" for name in names)


def _argument(param: Any, ctx: typer.Context) -> Argument:
    record = param.get_help_record(ctx)
    shown = record[0] if record else param.name
    type_ = shown.split(" ", 1)[1].strip("<>") if " " in shown else ""
    name = (param.metavar or param.name).upper()
    return Argument(name, type_, param.required, param.nargs == -1, param.help or "")


def _option(param: Any, ctx: typer.Context) -> Option | None:
    record = param.get_help_record(ctx)
    if record is None:  # hidden
        return None
    return Option(record[0], _envvar(param), _default(param), param.help or "")


def _command(command: Any, path: tuple[str, ...], ctx: typer.Context) -> Command:
    if not (command.help or "").strip():
        raise MissingHelp(
            f"`{' '.join(path)}` has no help text: give it a docstring or help= in "
            "src/sparkgate/cli/ (the reference page, sparkgate/reference/cli.py, needs one)"
        )
    arguments: list[Argument] = []
    options: list[Option] = []
    connection = False
    root = len(path) == 1
    for param in command.get_params(ctx):
        if param.param_type_name == "argument":
            arguments.append(_argument(param, ctx))
            continue
        if param.name in _CONNECTION and not param.expose_value:
            connection = True
            continue
        if param.name in _EVERYWHERE and not root:
            continue
        option = _option(param, ctx)
        if option is not None:
            options.append(option)
    subcommands: tuple[str, ...] = ()
    if isinstance(command, TyperGroup):
        named = ((name, command.get_command(ctx, name)) for name in command.list_commands(ctx))
        subcommands = tuple(name for name, sub in named if sub is not None and not sub.hidden)
    return Command(path, command.help, tuple(arguments), tuple(options), connection, subcommands)


def commands() -> Iterator[Command]:
    """Every command of the tree, depth first, in ``--help``'s order (the root first)."""
    root = typer.main.get_command(app)

    def walk(command: Any, path: tuple[str, ...], ctx: typer.Context) -> Iterator[Command]:
        found = _command(command, path, ctx)
        yield found
        for name in found.subcommands:
            sub = command.get_command(ctx, name)
            yield from walk(sub, (*path, name), typer.Context(sub, info_name=name, parent=ctx))

    yield from walk(root, (PROGRAM,), typer.Context(root, info_name=PROGRAM))


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _text(text: str) -> list[str]:
    """A command's help but its examples, paragraph by paragraph."""
    lines: list[str] = []
    for paragraph in help_paragraphs(text):
        if not _EXAMPLE.match(paragraph):
            lines += [inline(paragraph), ""]
    return lines


def _examples(text: str) -> list[str]:
    """A command's "Example:" paragraphs, as one console block ("Examples: a; b" is two)."""
    examples: list[str] = []
    for paragraph in help_paragraphs(text):
        if _EXAMPLE.match(paragraph):
            for example in _EXAMPLE.sub("", paragraph).split("; "):
                if example.strip(" ;"):
                    examples.append(f"$ {example.strip(' ;')}")
    if not examples:
        return []
    label = "**Examples**" if len(examples) > 1 else "**Example**"
    return [label, "", "```console", *examples, "```", ""]


def _options_table(options: tuple[Option, ...]) -> list[str]:
    # The environment variable column only where an option has one (few do).
    env = any(option.envvar for option in options)
    header = ["Option", *(["Environment variable"] if env else []), "Default", "Meaning"]
    rows = [_row(header), _row(["---"] * len(header))]
    for option in options:
        cells = [f"`{option.names}`"]
        if env:
            cells.append(option.envvar or "—")
        cells += [option.default or "—", inline(option.help) or "—"]
        rows.append(_row(cells))
    return rows


def _section(command: Command, summaries: Summaries) -> list[str]:
    level = "#" * min(len(command.path), 4)
    lines = [f"{level} {command.title} {{#{command.anchor}}}", ""]
    lines += _text(command.help)
    lines += ["```console", f"$ {command.usage}", "```", ""]
    if command.arguments:
        lines += [_row(["Argument", "Type", "Meaning"]), _row(["---"] * 3)]
        for argument in command.arguments:
            name = argument.name + ("..." if argument.many else "")
            meaning = inline(argument.help) or "—"
            if not argument.required:
                meaning += " (optional)"
            lines.append(_row([f"`{name}`", f"`{argument.type}`", meaning]))
        lines.append("")
    options = tuple(o for o in command.options if not o.names.startswith("--help"))
    if options:
        lines += _options_table(options)
        lines.append("")
    if command.connection:
        lines += ["Takes the [connection options](#connection-options).", ""]
    lines += _examples(command.help)
    if command.subcommands:
        lines += [_row(["Command", "What it does"]), _row(["---"] * 2)]
        lines += _index_rows(command.path, command.subcommands, summaries)
        lines.append("")
    return lines


Summaries = dict[tuple[str, ...], str]  # a command's path: the first paragraph of its help


def _index_rows(path: tuple[str, ...], names: tuple[str, ...], summaries: Summaries) -> list[str]:
    rows = []
    for name in names:
        sub = (*path, name)
        rows.append(_row([f"[{' '.join(sub)}](#{'-'.join(sub)})", inline(summaries[sub])]))
    return rows


def _intro(root: Command, summaries: Summaries) -> list[str]:
    local = ", ".join(f"[`{PROGRAM} {name}`](#{PROGRAM}-{name})" for name in sorted(LOCAL_COMMANDS))
    lines = [
        "# Command line",
        "",
        *_text(root.help),
        f"The `{PROGRAM}` command runs a server node ([`{PROGRAM} server`](#{PROGRAM}-server)) "
        "and talks to one: queries, sessions, streams, jobs, engines, users, access and usage. "
        "It is installed with the package; every command and group takes `--help`. For a "
        "guided tour, see [the command line](../how-to/cli.md).",
        "",
        "```console",
        f"$ {root.usage}",
        "```",
        "",
        "## Commands",
        "",
        _row(["Command", "What it does"]),
        _row(["---"] * 2),
    ]
    lines += _index_rows(root.path, root.subcommands, summaries)
    lines += [
        "",
        "## Connection options {#connection-options}",
        "",
        "Every command that talks to a server takes these options, typed before the command "
        f"(`{PROGRAM} --server URL sql ...`), after it (`{PROGRAM} sql --server URL ...`), or "
        "set in the environment. A typed option wins over the environment and over the token "
        f"`{PROGRAM} login` stored; typed both before and after the command, the one after "
        f"wins. {local} talk to no server and take none of them. A command with an option of "
        f"the same name keeps its own: `{PROGRAM} audit --user bob` filters events, so log in "
        f"as someone else before the command, `{PROGRAM} --user carol audit --user bob`.",
        "",
    ]
    connection = tuple(o for o in root.options if o.names.split()[0] in _connection_flags())
    lines += _options_table(connection)
    lines += [
        "",
        "Shell completion: `--install-completion` installs it for the current shell, "
        "`--show-completion` prints it, to copy or adapt (both before any command).",
        "",
    ]
    return lines


def _connection_flags() -> frozenset[str]:
    return frozenset(f"--{name}" for name in _CONNECTION)


def page() -> str:
    found = list(commands())
    summaries = {command.path: command.summary for command in found}
    root, rest = found[0], found[1:]
    lines = _intro(root, summaries)
    for command in rest:
        lines += _section(command, summaries)
    return "\n".join(lines).rstrip() + "\n"
