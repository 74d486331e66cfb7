"""Limits on the scripts `npurun check` and `npurun migrate` read, checked before the real work.

libcst (migrate) recurses natively on nested expressions: a 16 KB script `x = 1+1+...` of 8000
terms ran 75 s and then crashed the interpreter (SIGSEGV), beyond any `except`. Python's own
parser refuses such a script with a RecursionError, and its `ast` gives the nesting cheaply, so
both commands measure the script with `ast` first and refuse it past these limits:
- SCRIPT_LIMIT bytes (1 MiB: the largest model-zoo training scripts are ~100 KB);
- NESTING_LIMIT levels of syntax-tree nesting (statements and expressions together; ordinary code
  stays under 30, and libcst migrates 100 levels of nested calls in about half a second).
The text is decoded as Python decodes a source file (a coding cookie, else UTF-8). Every refusal
is a `ScriptRefused` (a ValueError) with one sentence naming the script.
"""
from __future__ import annotations

import ast
import io
import tokenize

from .. import safe_files

SCRIPT_LIMIT = 1 << 20
NESTING_LIMIT = 100


class ScriptRefused(ValueError):
    """The script is not read: too large, too deeply nested, not decodable, or not Python."""


def read_script(path: str) -> tuple[str, str]:
    """(text, encoding) of the script at `path`: at most SCRIPT_LIMIT bytes, decoded as Python would."""
    data = safe_files.read_at_most(path, SCRIPT_LIMIT + 1)  # OSError propagates: the caller reports a bad path
    if len(data) > SCRIPT_LIMIT:
        raise ScriptRefused(f"{path} is larger than {SCRIPT_LIMIT} bytes, the most npurun reads as one script")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding), encoding
    except (SyntaxError, LookupError, UnicodeDecodeError) as error:
        reason = error.reason if isinstance(error, UnicodeDecodeError) else " ".join(str(error).split())
        raise ScriptRefused(f"{path} is not Python source text in its declared encoding (UTF-8 when none "
                            f"is declared): {reason}") from None


def parse_within_limits(source: str, path: str) -> ast.Module:
    """The script's syntax tree, or ScriptRefused when it is too large or nested too deeply to be read
    safely. A SyntaxError (bad Python) propagates as it is, for the caller to report."""
    if len(source) > SCRIPT_LIMIT:
        raise ScriptRefused(f"{path} is larger than {SCRIPT_LIMIT} characters, the most npurun reads as one script")
    try:
        tree = ast.parse(source, filename=path)
    except (RecursionError, MemoryError):
        raise ScriptRefused(f"{path} is nested too deeply for Python's own parser (more than "
                            f"{NESTING_LIMIT} levels are refused)") from None
    except ValueError as error:  # e.g. a NUL byte in the source (Python 3.11)
        raise SyntaxError(" ".join(str(error).split())) from None
    depth = max_depth(tree)
    if depth > NESTING_LIMIT:
        raise ScriptRefused(f"{path} nests its code {depth} levels deep; npurun reads scripts up to "
                            f"{NESTING_LIMIT} levels (split the expression)")
    return tree


def max_depth(tree: ast.AST) -> int:
    """The deepest nesting of the syntax tree (iteratively, so any tree `ast` built is measured)."""
    deepest, stack = 0, [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest
