"""YAML with lines: a document parsed with where each of its keys is written, and the keys
given twice (which PyYAML would silently let the last one win), so that every manifest problem
names its file and line.

Apart from the manifests because it knows nothing of their fields: a template is read with it
exactly as a manifest is, and the fields' checks only ask it where a key path is written.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from sparkgate.errors.jobs import ManifestError


@dataclass(frozen=True)
class KeyLines:
    """Where each key path is: ``("retry", "max-attempts") -> (file, line)``."""

    places: Mapping[tuple[str, ...], tuple[str, int]]

    @classmethod
    def empty(cls) -> KeyLines:
        return cls({})

    def over(self, other: KeyLines) -> KeyLines:
        """These places, and ``other``'s for keys not here (a manifest over its template)."""
        return KeyLines({**other.places, **self.places})

    def line(self, path: tuple[str, ...]) -> int | None:
        place = self.places.get(path)
        return place[1] if place else None

    def error(self, path: tuple[str, ...], message: str, *, fallback: str) -> ManifestError:
        """An error at ``path``: where it (or its nearest parent) is written, else the
        manifest (``fallback``) without a line (a missing field)."""
        name = ".".join(path) or None
        for end in range(len(path), 0, -1):
            place = self.places.get(path[:end])
            if place is not None:
                return ManifestError(place[0], name, place[1], message)
        return ManifestError(fallback, name, None, message)


def parse_yaml(text: str, source: str) -> tuple[Any, KeyLines, list[ManifestError]]:
    """The document, where its keys are, and its problems (syntax, keys given twice)."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        duplicates = list(_duplicate_keys(root))
        if duplicates:
            errors = [
                ManifestError(source, ".".join(path), line, "this field is given twice")
                for path, line in duplicates
            ]
            return None, KeyLines.empty(), errors
        return yaml.safe_load(text), _key_lines(root, source), []
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or str(exc)
        if exc.context and exc.problem:
            problem = f"{exc.context}, {exc.problem}"
        return (
            None,
            KeyLines.empty(),
            [ManifestError(source, None, line, f"invalid YAML: {problem}")],
        )
    except yaml.YAMLError as exc:
        return None, KeyLines.empty(), [ManifestError(source, None, None, f"invalid YAML: {exc}")]


def _key_lines(root: yaml.Node | None, source: str) -> KeyLines:
    places: dict[tuple[str, ...], tuple[str, int]] = {}

    def walk(node: yaml.Node | None, prefix: tuple[str, ...]) -> None:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                path = (*prefix, str(key.value))
                places[path] = (source, key.start_mark.line + 1)
                walk(value, path)
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                places[(*prefix, str(index))] = (source, item.start_mark.line + 1)
                walk(item, (*prefix, str(index)))

    walk(root, ())
    return KeyLines(places)


def _duplicate_keys(
    node: yaml.Node | None, prefix: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], int]]:
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            name = str(key.value)
            if name in seen:
                yield (*prefix, name), key.start_mark.line + 1
            seen.add(name)
            yield from _duplicate_keys(value, (*prefix, name))
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            yield from _duplicate_keys(item, (*prefix, str(index)))
