"""The access file's, resource groups' and SQL reference pages, from the code (no server):
every key is described, the examples are accepted by the real parsers, and every statement
sparkgate parses has its section."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import pytest
from pydantic import BaseModel, Field

import sparkgate
from sparkgate.auth.access import _AccessFile, parse_access
from sparkgate.auth.resource_groups import ResourceGroupsFile
from sparkgate.reference import access_file, resource_groups, sql
from sparkgate.sql import statements
from sparkgate.sql.parser import parse

AUTHZ = Path(sparkgate.__file__).parent / "engine" / "authz" / "Authz.scala"


def test_the_access_files_example_is_one_the_server_loads() -> None:
    rules = parse_access(access_file.EXAMPLE, "example")
    assert rules.admins == {"carol"} and rules.tables is not None
    assert rules.resource_groups is not None and len(rules.quotas) == 2
    assert rules.rights_of("alice", rules.groups_of("alice")) == {"sql", "code", "streams", "jobs"}
    assert "```yaml\n" + access_file.EXAMPLE + "```" in access_file.page()


def test_the_resource_groups_example_is_one_the_server_loads() -> None:
    rules = parse_access(resource_groups.EXAMPLE, "example")
    assert rules.resource_groups is not None
    assert "```yaml\n" + resource_groups.EXAMPLE + "```" in resource_groups.page()


def _keys(model: type[BaseModel], seen: set[type[BaseModel]] | None = None) -> set[str]:
    """Every key the models of a file take, their nested models' included."""
    seen = seen if seen is not None else set()
    seen.add(model)
    keys = set()
    for name, field in model.model_fields.items():
        keys.add(field.alias or name)
        for nested in access_file._models(field.annotation):
            if nested not in seen:
                keys |= _keys(nested, seen)
    return keys


@pytest.mark.parametrize(
    ("model", "page"),
    [(_AccessFile, access_file.page), (ResourceGroupsFile, resource_groups.page)],
)
def test_every_key_has_a_row_with_its_meaning(model: type[BaseModel], page: object) -> None:
    assert callable(page)
    text = page()
    # The access file's page leaves resource_groups' keys to their own page.
    elsewhere = _keys(ResourceGroupsFile) if model is _AccessFile else set()
    for key in _keys(model) - elsewhere:
        assert f"| `{key}` |" in text, key


def test_a_key_without_a_description_stops_the_page() -> None:
    class Bare(BaseModel):
        described: int = Field(default=1, description="Has one.")
        silent: int = 2

    with pytest.raises(RuntimeError, match="silent"):
        access_file.model_sections(Bare, "")


def test_the_defaults_and_types_are_the_models() -> None:
    text = access_file.page()
    assert '| `onQuota` | `reject` or `demote` | `"reject"` |' in text
    assert "| `privileges` | list of string | required |" in text
    assert "- `spark.master`" in text  # conf.deny's default, listed in full
    groups = resource_groups.page()
    assert "| `schedulingWeight` | integer | `1` |" in groups
    assert "## `resource_groups.selectors[]`" in groups


def test_every_statement_class_has_a_section_and_its_examples_parse_to_it() -> None:
    classes = get_args(statements.Statement)
    assert set(sql.SECTIONS) == set(classes)
    for cls, section in sql.SECTIONS.items():
        assert section.examples, cls
        for example in section.examples:
            assert type(parse(example)) is cls, example
    text = sql.page()
    for section in sql.SECTIONS.values():
        assert f"## {section.title}\n" in text


def test_a_statement_class_without_a_section_stops_the_page(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fewer = {k: v for k, v in sql.SECTIONS.items() if k is not statements.StopStream}
    monkeypatch.setattr(sql, "SECTIONS", fewer)
    with pytest.raises(RuntimeError, match="StopStream"):
        sql.page()


def _engine_patterns() -> list[re.Pattern[str]]:
    """GRANT's, REVOKE's and SHOW GRANTS' patterns, as the engine's parser (Authz.scala)
    writes them: Scala triple-quoted strings around its ``Name``."""
    source = AUTHZ.read_text(encoding="utf-8")
    block = source[source.index("object Grants") :]
    name = re.search(r'private val Name = """(.*?)"""', block)
    assert name is not None
    patterns = []
    for which in ("GrantRe", "ShowRe"):
        found = re.search(
            rf'private val {which} = \("""(.*?)""" \+ Name \+ """(.*?)"""\)\.r', block
        )
        assert found is not None, which
        patterns.append(re.compile(found.group(1) + name.group(1) + found.group(2)))
    return patterns


def test_the_grant_examples_are_what_the_engines_parser_takes() -> None:
    grant, show = _engine_patterns()
    for example in sql.GRANT_EXAMPLES:
        assert grant.fullmatch(example) or show.fullmatch(example), example
        assert f"{example};" in sql.page()
    assert not grant.fullmatch("GRANT SELECT ON TABLE t TO ROLE finance")  # none is invented


def test_the_settings_it_honours_are_the_codes() -> None:
    text = sql.page()
    reuse = (AUTHZ.parent / "Reuse.scala").read_text(encoding="utf-8")
    assert f'val OffKey = "{sql.REUSE_OFF}"' in reuse
    assert f"`SET {sql.REUSE_OFF} = false`" in text
    assert "`SET spark.sparkgate.ctas.atomic = false`" in text
    assert "`sparkgate.user`" in text
