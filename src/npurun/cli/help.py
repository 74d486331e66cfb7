"""How the `npurun` commands lay out their help: the description wrapped in paragraphs, then an
`examples:` block printed line by line as written (argparse would run it into one paragraph)."""
from __future__ import annotations

import argparse


class ExamplesHelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, except that paragraphs ("\\n\\n") stay apart and a text that starts with
    `examples:` keeps its lines and indentation."""

    def _fill_text(self, text, width, indent):
        if text.startswith("examples:"):
            return "\n".join(indent + line for line in text.splitlines())
        return "\n\n".join(super(ExamplesHelpFormatter, self)._fill_text(paragraph, width, indent)
                           for paragraph in text.split("\n\n"))
