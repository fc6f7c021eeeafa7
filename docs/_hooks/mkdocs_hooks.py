"""MkDocs hooks of the documentation site.

- `on_files`: publishes the notebooks of `tutorials/` (outside `docs/`) as pages
  under `tutorials/`, before mkdocs-jupyter turns notebooks into pages.
- `on_page_markdown`: replaces `<!-- cli-help: NAME -->` with the current
  `keras-transformer NAME --help` text, so the command-line page never drifts
  from the parser.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pathlib
import re

import mkdocs.plugins
from mkdocs.structure.files import File

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI_HELP = re.compile(r"<!-- cli-help: ([a-z]+) -->")


@mkdocs.plugins.event_priority(100)  # before mkdocs-jupyter wraps the .ipynb files
def on_files(files, config):
    for notebook in sorted((ROOT / "tutorials").glob("[0-9][0-9]_*.ipynb")):
        files.append(
            File(
                f"tutorials/{notebook.name}",
                src_dir=str(ROOT),
                dest_dir=config["site_dir"],
                use_directory_urls=config["use_directory_urls"],
            )
        )
    return files


def _cli_help() -> dict[str, str]:
    from keras_transformer import cli

    os.environ["COLUMNS"] = "90"  # argparse wraps to the terminal width
    parser = argparse.ArgumentParser(prog="keras-transformer")
    sub = parser.add_subparsers(dest="command")
    for name in cli.COMMANDS:
        importlib.import_module(f"keras_transformer.commands.{name}").register(sub)
    helps = {name: sub.choices[name].format_help() for name in cli.COMMANDS}
    helps["main"] = parser.format_help()
    return helps


_HELP: dict[str, str] = {}


def on_page_markdown(markdown, page, config, files):
    if "<!-- cli-help:" not in markdown:
        return markdown
    if not _HELP:
        _HELP.update(_cli_help())

    def replace(match):
        name = match.group(1)
        if name not in _HELP:
            raise ValueError(f"{page.file.src_uri}: no command {name!r}; known: {sorted(_HELP)}")
        return "```text\n" + _HELP[name].rstrip() + "\n```"

    return CLI_HELP.sub(replace, markdown)
