"""The one way spanguard reads YAML: safe, and bounded against hostile documents.

PyYAML's safe loader builds aliases as shared objects, so a "billion laughs" document of a
few hundred bytes (nine aliases of nine aliases …) loads quickly into a structure that any walk
over it — validation, hashing, a JSON dump — expands to 9⁹ nodes and never finishes; and its
composer recurses once per nesting level, so 100,000 nested brackets are a ``RecursionError``.
:func:`compose_bounded` and :func:`load_bounded` refuse both as ``yaml.YAMLError`` (a
:class:`BoundedYAMLError` whose ``problem`` says which bound), which every loader already
reports as "is not valid YAML: …" naming the file.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import yaml

__all__ = [
    "MAX_DEPTH",
    "MAX_NODES",
    "MAX_YAML_BYTES",
    "BoundedYAMLError",
    "compose_bounded",
    "load_bounded",
]

#: The most nodes a document may hold with every alias expanded.
MAX_NODES = 2_000_000
#: The deepest nesting a document may hold.
MAX_DEPTH = 200
#: The largest YAML text read (YAML parses at a few MB/s; a larger suite is written as JSON).
MAX_YAML_BYTES = 16 << 20


class BoundedYAMLError(yaml.MarkedYAMLError):
    """A YAML document beyond :data:`MAX_NODES` or :data:`MAX_DEPTH`."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem=problem)


def _check(root: yaml.Node) -> None:
    """Expanded size and depth of ``root``, each node visited once (aliases share nodes)."""
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, int, bool]] = [(root, 1, False)]
    while stack:
        node, depth, done = stack.pop()
        if depth > MAX_DEPTH:
            raise BoundedYAMLError(f"it is nested more than {MAX_DEPTH} levels deep")
        children = _children(node)
        if done:
            sizes[id(node)] = 1 + sum(sizes[id(child)] for child in children)
            if sizes[id(node)] > MAX_NODES:
                raise BoundedYAMLError(
                    f"with its aliases expanded it holds more than {MAX_NODES:,} values"
                )
            continue
        if id(node) in sizes:
            continue
        stack.append((node, depth, True))
        stack.extend((child, depth + 1, False) for child in children if id(child) not in sizes)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _loader(text: str, loader: type[yaml.SafeLoader]) -> Any:
    if len(text) > MAX_YAML_BYTES:
        raise BoundedYAMLError(
            f"it is larger than {MAX_YAML_BYTES >> 20} MiB, the limit for YAML; write it as JSON"
        )
    if loader is yaml.SafeLoader and getattr(yaml, "__with_libyaml__", False):
        return yaml.CSafeLoader(text)  # the same documents, ~70 times faster
    return loader(text)


@contextmanager
def _depth_bounded() -> Iterator[None]:
    """Turns the parser's RecursionError on a too deeply nested document into the bound's error."""
    try:
        yield
    except RecursionError:
        raise BoundedYAMLError(f"it is nested more than {MAX_DEPTH} levels deep") from None


def compose_bounded(text: str, loader: type[yaml.SafeLoader] = yaml.SafeLoader) -> yaml.Node | None:
    """The node graph of one YAML document, within the bounds."""
    instance = _loader(text, loader)
    try:
        with _depth_bounded():
            root = instance.get_single_node()
        if root is not None:
            _check(root)
        return root
    finally:
        instance.dispose()


def load_bounded(text: str, loader: type[yaml.SafeLoader] = yaml.SafeLoader) -> Any:
    """``yaml.load(text, Loader=loader)`` for a safe loader, within the bounds."""
    instance = _loader(text, loader)
    try:
        with _depth_bounded():
            root = instance.get_single_node()
        if root is None:
            return None
        _check(root)
        with _depth_bounded():
            return instance.construct_document(root)
    finally:
        instance.dispose()
