"""The settings and command-line reference pages say everything the code holds (no server).

Every setting (and every key of an engine pod entry) is on the settings page with its
environment variable and a meaning; a setting in no section fails the page. Every command of
the ``sparkgate`` tree is a heading of the CLI page, with its help.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from pydantic.fields import FieldInfo
from typer.core import TyperGroup

from sparkgate.cli.main import app
from sparkgate.reference import cli as cli_page
from sparkgate.reference import settings as settings_page
from sparkgate.settings import EnginePod, Settings


@pytest.fixture(scope="module")
def settings_md() -> str:
    return settings_page.page()


@pytest.fixture(scope="module")
def cli_md() -> str:
    return cli_page.page()


def _words(text: str) -> str:
    """Text as the page shows it, compared loosely: no code marks, escapes or line breaks."""
    return " ".join(text.replace("\\", "").replace("`", "").split())


def _meaning(info: FieldInfo) -> str:
    assert info.description and info.description.strip()
    return _words(info.description)


def test_settings_page_has_every_setting_with_env_var_type_default_and_meaning(
    settings_md: str,
) -> None:
    rows = {
        match.group(1): match.group(0)
        for match in re.finditer(r'^\| <a id="(\w+)"></a>`\w+` \|.*$', settings_md, re.M)
    }
    assert set(rows) == set(Settings.model_fields)
    for name, info in Settings.model_fields.items():
        # Cells split at the pipes outside code spans (a default may hold one).
        masked = re.sub(r"`[^`]*`", lambda m: "`" + "x" * (len(m.group(0)) - 2) + "`", rows[name])
        bounds = [m.start() for m in re.finditer(r"(?<!\\)\|", masked)]
        cells = [rows[name][a + 1 : b].strip() for a, b in itertools.pairwise(bounds)]
        assert len(cells) == 5, rows[name]
        assert cells[1] == f"`SPARKGATE_{name.upper()}`"
        assert cells[2] and cells[3], rows[name]
        assert _meaning(info) in _words(cells[4])


def test_settings_page_has_every_engine_pod_key(settings_md: str) -> None:
    section = settings_md.split("## Engine pods", 1)[1].split("\n## ", 1)[0]
    assert "SPARKGATE_KUBERNETES_ENGINE_PODS" in section
    for name, info in EnginePod.model_fields.items():
        row = re.search(rf"^\| `{name}` \|.*$", section, re.M)
        assert row is not None, name
        assert _meaning(info) in _words(row.group(0))


def test_page_sections_are_those_of_sections_in_order(settings_md: str) -> None:
    titles = re.findall(r"^## (.+)$", settings_md, re.M)
    assert titles[: len(settings_page.SECTIONS)] == [s.title for s in settings_page.SECTIONS]


def test_the_chart_values_row_names_exactly_the_settings_the_chart_sets() -> None:
    """What the page says the Helm chart sets is what its templates set (the one the chart
    leaves alone, the kubeconfig, is said to be set by nothing)."""
    templates = Path(__file__).resolve().parents[2] / "deploy" / "helm" / "sparkgate" / "templates"
    set_by_chart = {
        name.lower().removeprefix("sparkgate_")
        for path in templates.rglob("*")
        if path.is_file()
        for name in re.findall(r"SPARKGATE_[A-Z_]+", path.read_text())
    }
    said = {
        name for name, how in settings_page.CHART_VALUES.items() if not how.startswith("nothing")
    }
    assert said == set_by_chart


def test_a_setting_in_no_section_fails_the_page() -> None:
    class WithMore(Settings):
        made_up_knob: int = 3
        """A setting nobody put in a section."""

    with pytest.raises(settings_page.UndocumentedSetting, match="made_up_knob"):
        settings_page.render(WithMore, EnginePod)


def test_page_reads_the_module_settings_so_a_new_one_fails_the_build(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class WithMore(Settings):
        made_up_knob: int = 3
        """A setting nobody put in a section."""

    monkeypatch.setattr(settings_page, "Settings", WithMore)
    with pytest.raises(settings_page.UndocumentedSetting, match="made_up_knob"):
        settings_page.page()


def test_a_section_naming_an_unknown_setting_fails_the_page(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    extra = settings_page.Section("Made up", "Nothing.", ("no_such_setting",))
    monkeypatch.setattr(settings_page, "SECTIONS", (*settings_page.SECTIONS, extra))
    with pytest.raises(settings_page.UndocumentedSetting, match="no_such_setting"):
        settings_page.page()


def test_a_setting_without_a_meaning_fails_the_page() -> None:
    class Bare(Settings):
        home: Any = None  # no docstring: no meaning

    with pytest.raises(settings_page.UndocumentedSetting, match="without a docstring: home"):
        settings_page.render(Bare, EnginePod)


def _tree() -> Iterator[tuple[tuple[str, ...], Any]]:
    root = typer.main.get_command(app)

    def walk(command: Any, path: tuple[str, ...], ctx: typer.Context) -> Iterator[Any]:
        yield path, command
        if isinstance(command, TyperGroup):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                yield from walk(sub, (*path, name), typer.Context(sub, info_name=name, parent=ctx))

    yield from walk(root, ("sparkgate",), typer.Context(root, info_name="sparkgate"))


def test_cli_page_has_every_command_as_a_heading_with_its_help(cli_md: str) -> None:
    tree = list(_tree())
    assert len(tree) > 40  # the walk reached the subcommands
    headings = dict(re.findall(r"^#{2,4} (sparkgate[\w -]*?) \{#([\w-]+)\}$", cli_md, re.M))
    for path, command in tree:
        first = re.split(r"\n\s*\n", command.help.strip())[0]
        assert _words(first) in _words(cli_md), path
        if len(path) > 1:
            title = " ".join(path)
            assert headings.get(title) == "-".join(path), title


def test_cli_page_lists_options_with_env_vars_and_defaults(cli_md: str) -> None:
    assert "| `--server <str>` | `SPARKGATE_SERVER` | `http://127.0.0.1:8998` |" in cli_md
    section = cli_md.split("{#sparkgate-sql}", 1)[1].split("\n## ", 1)[0]
    assert "| `--limit <int>` | `1000` |" in section
    assert "| `--reuse / --no-reuse` | `--reuse` |" in section
    assert "$ sparkgate sql [OPTIONS] QUERY" in section
    assert "[connection options](#connection-options)" in section
    # Said once, at the top, not under every command.
    assert cli_md.count("--install-completion") == 1


def test_a_command_without_help_fails_the_page(monkeypatch: pytest.MonkeyPatch) -> None:
    bare = typer.Typer(help="A tool whose first command says nothing.")

    @bare.command()
    def first() -> None:
        pass

    @bare.command()
    def second() -> None:
        """Has help."""

    monkeypatch.setattr(cli_page, "app", bare)
    with pytest.raises(cli_page.MissingHelp):
        cli_page.page()
