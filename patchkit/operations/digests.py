"""Canonical forms and digests of code: what "the same code" means to patchkit.

Why a module of its own: ``canon`` is the one notion of equality every verdict rests on
(ALREADY_APPLIED, CONFLICT, DRIFT, a replace-function's ``expect`` digest), and capture and
port compare code with it too.  It depends on the stdlib ``ast`` alone, so it is shared by the
file model (``code.CodeState``), the operations, capture and port without any of them reaching
into the model of a file being evaluated.  Statement helpers that only parse or compare
(``parse_statement``, ``import_index``) live here for the same reason.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Sequence

from patchkit.operations.memo import Memo


def canon(node: ast.AST | Sequence[ast.AST]) -> str:
    """A stable text form of code, blind to formatting and comments.

    Unlike ``ast.dump`` it skips empty and ``None`` fields, so that fields
    added by newer Pythons (``type_params`` in 3.12) leave digests unchanged.
    """
    out: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, ast.AST):
            out.append(type(value).__name__)
            out.append("(")
            for name in value._fields:
                item = getattr(value, name, None)
                if item is None or (isinstance(item, list) and not item):
                    continue
                if name in ("kind", "type_comment"):
                    continue
                out.append(name)
                out.append("=")
                walk(item)
                out.append(",")
            out.append(")")
        elif isinstance(value, list):
            out.append("[")
            for item in value:
                walk(item)
                out.append(",")
            out.append("]")
        else:
            out.append(repr(value))

    walk(node)
    return "".join(out)


def digest(node: ast.AST) -> str:
    """The digest that `expect` in a replace-function patch is compared to."""
    return digest_of_canon(canon(node))


def digest_of_canon(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


PAYLOAD_CANON: Memo[int, tuple[ast.AST, str]] = Memo("payload_canon, by id of the payload node", 4096)
"""``payload_canon``'s values: id(node) -> (node, canon(node))."""


def payload_canon(node: ast.AST) -> str:
    """``canon(node)`` of a payload's node, computed once: payload trees live as long as the
    manifest and are never edited, yet every version of a target compares against them."""
    hit = PAYLOAD_CANON.get(id(node))
    if hit is None or hit[0] is not node:
        # The node is kept while its entry is, so its id is not reused by another node meanwhile.
        hit = (node, canon(node))
        PAYLOAD_CANON[id(node)] = hit
    return hit[1]


def short_digest(value: str) -> str:
    return value[: len("sha256:") + 12]


def import_index(body: Sequence[ast.stmt], wanted: str | None, *, last: bool = True) -> int | None:
    """Index in a module ``body`` of the import statement whose ``canon`` is ``wanted`` (an ``after`` /
    ``before`` anchor): the last one, or with ``last=False`` the first.  ``edit.cst_import_index`` is
    the same lookup on libcst."""
    found = None
    for index, stmt in enumerate(body):
        if isinstance(stmt, (ast.Import, ast.ImportFrom)) and canon(stmt) == wanted:
            found = index
            if not last:
                break
    return found


def parse_statement(code: str) -> ast.stmt:
    """Parse exactly one statement (raises ValueError with a reason otherwise)."""
    try:
        tree = ast.parse(code.strip("\n"))
    except SyntaxError as exc:
        raise ValueError(f"is not valid Python ({exc.msg})") from None
    if len(tree.body) != 1:
        raise ValueError(f"must be exactly one statement, found {len(tree.body)}")
    return tree.body[0]
