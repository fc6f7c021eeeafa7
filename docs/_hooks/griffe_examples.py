"""Griffe extension: adapt the package's docstring layout to the Google parser.

- The docstrings follow keras-hub's layout: an "Example:" line, a blank line,
  then doctests at the left margin. Google-style parsers expect the section's
  content indented under its title, and Markdown would render the unindented
  `>>>` lines as nested quotes. Every example block is indented under an
  "Examples:" title, so mkdocstrings shows the doctests as Python console code.
- Several arguments documented together, with the names wrapped over two lines
  ("num_heads, dff,\n    key_dim: as in ..."), are joined onto one line.

Only the text griffe renders is changed; the source files are not.
"""

from __future__ import annotations

import ast
import re

import griffe

_EXAMPLE = re.compile(r"^Examples?:\s*$")
_SECTION = re.compile(r"^[A-Z][A-Za-z ]*:\s*$")  # e.g. "Reference:" at the left margin
_NAMES_ONLY = re.compile(r"^\s+[A-Za-z_]\w*(, [A-Za-z_]\w*)*,$")  # "    num_heads, dff,"


def join_wrapped_names(text: str) -> str:
    """Joins an argument line made only of names ending in "," with the next line."""
    lines = text.split("\n")
    out: list[str] = []
    for line in lines:
        if out and _NAMES_ONLY.match(out[-1]) and line.strip():
            out[-1] = out[-1] + " " + line.strip()
        else:
            out.append(line)
    return "\n".join(out)


def indent_examples(text: str) -> str:
    """`text` with each left-margin "Example:" block indented under "Examples:"."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        if not _EXAMPLE.match(lines[i]):
            out.append(lines[i])
            i += 1
            continue
        out.append("Examples:")
        i += 1
        block: list[str] = []
        # The block ends at the next section title that follows a blank line.
        while i < len(lines) and not (_SECTION.match(lines[i]) and block and not block[-1].strip()):
            block.append(lines[i])
            i += 1
        while block and not block[0].strip():
            block.pop(0)
        trailing = 0
        while block and not block[-1].strip():
            block.pop()
            trailing += 1
        out.extend("    " + line if line.strip() else "" for line in block)
        out.extend([""] * trailing)
    return "\n".join(out)


class ExampleSections(griffe.Extension):
    """Indents left-margin example blocks before mkdocstrings parses the docstrings."""

    def on_object(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = indent_examples(join_wrapped_names(obj.docstring.value))


class LazyExports(griffe.Extension):
    """Documents the names a package loads on first use (PEP 562) as if it imported them.

    `keras_transformer.models` maps each public name to the submodule that defines it in a
    `_HOMES = {"name": "submodule", ...}` literal and imports it in `__getattr__`, so static
    analysis sees no member; each name becomes an alias of `package.submodule.name`, exported.
    """

    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        for module in [pkg, *_submodules(pkg)]:
            self._add_aliases(module)

    @staticmethod
    def _add_aliases(module: griffe.Module) -> None:
        homes = module.members.get("_HOMES")
        if homes is None or not isinstance(homes, griffe.Attribute) or homes.value is None:
            return
        try:
            mapping = ast.literal_eval(str(homes.value))
        except (ValueError, SyntaxError):
            return
        if not isinstance(mapping, dict):
            return
        for name, home in mapping.items():
            if name not in module.members:
                target = f"{module.path}.{home}.{name}"
                module.set_member(name, griffe.Alias(name, target, parent=module))
        module.exports = sorted(mapping)


def _submodules(module: griffe.Module):
    for member in module.modules.values():
        yield member
        yield from _submodules(member)
