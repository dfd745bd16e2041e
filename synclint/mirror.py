"""Build a libcst-shaped tree from CPython's ``ast``, without running libcst's parser.

Why: libcst's parser costs about 70 µs per line, and for every file synclint already holds CPython's
``ast`` (built in C for the prefilter and the slicer). The model is written against libcst node
types, so this module rebuilds, from the ``ast``, the tree libcst would have produced, made of real
libcst node classes:

* nodes are created with ``object.__new__`` and their slots filled directly: libcst's dataclass
  ``__init__`` and validation are skipped. Each class gets a small generated constructor
  (:func:`_maker`) that sets the fields the ``ast`` gives and every other field to its dataclass
  default. A default *factory* is called once per field and its value shared: factories only build
  whitespace and punctuation nodes, which are immutable and never looked up by identity;
* the structure is libcst's, not the ``ast``'s: simple statements grouped into lines by semicolons,
  one-line suites, ``elif`` chains, left-nested boolean operations, call arguments in source order,
  subscript elements, implicit string concatenations, ``True``/``None`` as names, numbers and
  strings with their exact source text (read from ``text``: ``ast`` columns are UTF-8 offsets);
* pure syntax trivia (whitespace, comments, commas, parentheses) is left at its default, so
  positions are not those of the source, and ``module.code_for_node`` works but prints default
  spacing and no parentheses: ``(a + b) * c`` comes out as ``a + b * c`` (given a
  :class:`SourceText`, the mirror records where each expression came from, and
  :mod:`synclint.mirror_code` cuts its exact code from the source instead);
* identifiers are spelt as in the source (``ast`` normalises them with NFKC, libcst does not);
* constructs it does not build (``match``, star annotations, an identifier spelt in two ways that
  NFKC merges, anything unexpected) raise :class:`Unsupported`: the caller parses with libcst.

``tests/test_mirror.py`` compares the result with ``libcst.parse_module`` node by node (types and
every non-trivia field) on fixtures, hand-written snippets, generated programs and real projects.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import unicodedata
from collections.abc import Callable, Collection

import libcst as cst

__all__ = ["SourceText", "Unsupported", "mirror_module"]


class Unsupported(Exception):
    """A construct the mirror does not build (the caller falls back to libcst)."""


# --- constructors ---------------------------------------------------------------------------------


def _slot(cls: type, name: str):
    for klass in cls.__mro__:
        descriptor = klass.__dict__.get(name)
        if descriptor is not None and hasattr(descriptor, "__set__"):
            return descriptor.__set__
    raise TypeError(f"{cls.__name__}.{name} is not a slot")  # pragma: no cover - libcst changed


def _default(field: dataclasses.Field):
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()  # once: shared immutable trivia (see the module docstring)
    return None  # required: always passed by the converters


def _maker(cls: type, given: str = "") -> Callable[..., cst.CSTNode]:
    """A constructor ``make(*given)`` for ``cls`` that fills every dataclass field without running
    libcst's ``__init__``: the ``given`` fields (space-separated names) from its arguments, in that
    order, the others with their defaults."""
    names = given.split()
    fields = dataclasses.fields(cls)
    unknown = set(names) - {f.name for f in fields}
    if unknown:
        raise TypeError(f"{cls.__name__} has no field {unknown}")  # pragma: no cover
    namespace: dict = {"new": object.__new__, "cls": cls}
    lines = [f"def make({', '.join(names)}):", "    n = new(cls)"]
    for field in fields:
        namespace[f"set_{field.name}"] = _slot(cls, field.name)
        if field.name in names:
            lines.append(f"    set_{field.name}(n, {field.name})")
        else:
            namespace[f"default_{field.name}"] = _default(field)
            lines.append(f"    set_{field.name}(n, default_{field.name})")
    lines.append("    return n")
    exec("\n".join(lines), namespace)  # noqa: S102 - code built from libcst's field names only
    make = namespace["make"]
    make.__name__ = make.__qualname__ = f"make_{cls.__name__}"
    return make


_DEFAULT = cst.MaybeSentinel.DEFAULT

_Module = _maker(cst.Module, "body default_newline has_trailing_newline")
_Line = _maker(cst.SimpleStatementLine, "body")
_Suite = _maker(cst.SimpleStatementSuite, "body")
_Block = _maker(cst.IndentedBlock, "body")

_Expr = _maker(cst.Expr, "value")
_Assign = _maker(cst.Assign, "targets value")
_AssignTarget = _maker(cst.AssignTarget, "target")
_AnnAssign = _maker(cst.AnnAssign, "target annotation value")
_Annotation = _maker(cst.Annotation, "annotation")
_AugAssign = _maker(cst.AugAssign, "target operator value")
_Return = _maker(cst.Return, "value")
_Raise = _maker(cst.Raise, "exc cause")
_From = _maker(cst.From, "item")
_Assert = _maker(cst.Assert, "test msg")
_Del = _maker(cst.Del, "target")
_Global = _maker(cst.Global, "names")
_Nonlocal = _maker(cst.Nonlocal, "names")
_NameItem = _maker(cst.NameItem, "name")
_Pass = _maker(cst.Pass)
_Break = _maker(cst.Break)
_Continue = _maker(cst.Continue)
_Import = _maker(cst.Import, "names")
_ImportFrom = _maker(cst.ImportFrom, "module names relative")
_ImportAlias = _maker(cst.ImportAlias, "name asname")
_AsName = _maker(cst.AsName, "name")

_FunctionDef = _maker(cst.FunctionDef, "name params body decorators returns asynchronous")
_Decorator = _maker(cst.Decorator, "decorator")
_Parameters = _maker(
    cst.Parameters, "params star_arg kwonly_params star_kwarg posonly_params posonly_ind"
)
_Param = _maker(cst.Param, "name annotation default star")
_ParamStar = _maker(cst.ParamStar)
_ParamSlash = _maker(cst.ParamSlash)
_ClassDef = _maker(cst.ClassDef, "name body bases keywords decorators")
_If = _maker(cst.If, "test body orelse")
_Else = _maker(cst.Else, "body")
_For = _maker(cst.For, "target iter body orelse asynchronous")
_While = _maker(cst.While, "test body orelse")
_Try = _maker(cst.Try, "body handlers orelse finalbody")
_TryStar = _maker(cst.TryStar, "body handlers orelse finalbody")
_ExceptHandler = _maker(cst.ExceptHandler, "body type name")
_ExceptStarHandler = _maker(cst.ExceptStarHandler, "body type name")
_Finally = _maker(cst.Finally, "body")
_With = _maker(cst.With, "items body asynchronous")
_WithItem = _maker(cst.WithItem, "item asname")

_Name = _maker(cst.Name, "value")
_Attribute = _maker(cst.Attribute, "value attr")
_Call = _maker(cst.Call, "func args")
_Arg = _maker(cst.Arg, "value keyword star")
_Subscript = _maker(cst.Subscript, "value slice")
_SubscriptElement = _maker(cst.SubscriptElement, "slice")
_Index = _maker(cst.Index, "value star")
_Slice = _maker(cst.Slice, "lower upper step")
_BinaryOperation = _maker(cst.BinaryOperation, "left operator right")
_BooleanOperation = _maker(cst.BooleanOperation, "left operator right")
_UnaryOperation = _maker(cst.UnaryOperation, "operator expression")
_Comparison = _maker(cst.Comparison, "left comparisons")
_ComparisonTarget = _maker(cst.ComparisonTarget, "operator comparator")
_IfExp = _maker(cst.IfExp, "test body orelse")
_Lambda = _maker(cst.Lambda, "params body")
_NamedExpr = _maker(cst.NamedExpr, "target value")
_Await = _maker(cst.Await, "expression")
_Yield = _maker(cst.Yield, "value")
_Tuple = _maker(cst.Tuple, "elements")
_List = _maker(cst.List, "elements")
_Set = _maker(cst.Set, "elements")
_Dict = _maker(cst.Dict, "elements")
_Element = _maker(cst.Element, "value")
_StarredElement = _maker(cst.StarredElement, "value")
_DictElement = _maker(cst.DictElement, "key value")
_StarredDictElement = _maker(cst.StarredDictElement, "value")
_ListComp = _maker(cst.ListComp, "elt for_in")
_SetComp = _maker(cst.SetComp, "elt for_in")
_GeneratorExp = _maker(cst.GeneratorExp, "elt for_in")
_DictComp = _maker(cst.DictComp, "key value for_in")
_CompFor = _maker(cst.CompFor, "target iter ifs inner_for_in asynchronous")
_CompIf = _maker(cst.CompIf, "test")
_Integer = _maker(cst.Integer, "value")
_Float = _maker(cst.Float, "value")
_Imaginary = _maker(cst.Imaginary, "value")
_Ellipsis = _maker(cst.Ellipsis)
_SimpleString = _maker(cst.SimpleString, "value")
_ConcatenatedString = _maker(cst.ConcatenatedString, "left right")
_FormattedString = _maker(cst.FormattedString, "parts start end")
_FormattedStringText = _maker(cst.FormattedStringText, "value")
_FormattedStringExpression = _maker(
    cst.FormattedStringExpression, "expression conversion format_spec equal"
)
_AssignEqual = _maker(cst.AssignEqual)

# Operators, ``async`` and dots are trivia to the model (see ``cstwalk.TRIVIA``): one of each.
_ASYNC = _maker(cst.Asynchronous)()
_DOT = _maker(cst.Dot)()
_IMPORT_STAR = _maker(cst.ImportStar)()


def _operators(pairs: dict[type, type]) -> dict[type, cst.CSTNode]:
    return {ast_type: _maker(cst_type)() for ast_type, cst_type in pairs.items()}


_BINARY = _operators(
    {
        ast.Add: cst.Add,
        ast.Sub: cst.Subtract,
        ast.Mult: cst.Multiply,
        ast.MatMult: cst.MatrixMultiply,
        ast.Div: cst.Divide,
        ast.FloorDiv: cst.FloorDivide,
        ast.Mod: cst.Modulo,
        ast.Pow: cst.Power,
        ast.LShift: cst.LeftShift,
        ast.RShift: cst.RightShift,
        ast.BitOr: cst.BitOr,
        ast.BitAnd: cst.BitAnd,
        ast.BitXor: cst.BitXor,
    }
)
_AUGMENTED = _operators(
    {
        ast.Add: cst.AddAssign,
        ast.Sub: cst.SubtractAssign,
        ast.Mult: cst.MultiplyAssign,
        ast.MatMult: cst.MatrixMultiplyAssign,
        ast.Div: cst.DivideAssign,
        ast.FloorDiv: cst.FloorDivideAssign,
        ast.Mod: cst.ModuloAssign,
        ast.Pow: cst.PowerAssign,
        ast.LShift: cst.LeftShiftAssign,
        ast.RShift: cst.RightShiftAssign,
        ast.BitOr: cst.BitOrAssign,
        ast.BitAnd: cst.BitAndAssign,
        ast.BitXor: cst.BitXorAssign,
    }
)
_UNARY = _operators(
    {ast.UAdd: cst.Plus, ast.USub: cst.Minus, ast.Invert: cst.BitInvert, ast.Not: cst.Not}
)
_BOOLEAN = _operators({ast.And: cst.And, ast.Or: cst.Or})
_COMPARE = _operators(
    {
        ast.Eq: cst.Equal,
        ast.NotEq: cst.NotEqual,
        ast.Lt: cst.LessThan,
        ast.LtE: cst.LessThanEqual,
        ast.Gt: cst.GreaterThan,
        ast.GtE: cst.GreaterThanEqual,
        ast.In: cst.In,
        ast.NotIn: cst.NotIn,
        ast.Is: cst.Is,
        ast.IsNot: cst.IsNot,
    }
)


class _Table(dict):
    """Converters by ``ast`` type; a type without one is :class:`Unsupported`."""

    def __missing__(self, key: type):
        raise Unsupported(key.__name__)


# --- the source text ------------------------------------------------------------------------------

_OTHER_LINE_BREAKS = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")  # lines as CPython counts them
_NEWLINE = re.compile(r"\r\n|\r|\n")
_NEWLINE_TOKEN = re.compile(r"[\r\n]")
_CONTINUATION = re.compile(r"\\(?:\r\n|\r|\n)")
_COMMENT = re.compile(r"#[^\r\n]*")
_GAP = re.compile(r"(?:[ \t\f\r\n]+|\\(?:\r\n|\r|\n)|#[^\r\n]*)*")  # between two string pieces
_OPEN_QUOTE = re.compile(r"([A-Za-z]*)('''|\"\"\"|'|\")")
# Runs of characters other than ASCII punctuation, spaces and controls, with a non-ASCII one.
_NON_ASCII_RUN = re.compile(r"[^\x00-/:-@[-^`{-\x7f]*[^\x00-\x7f][^\x00-/:-@[-^`{-\x7f]*")
_FIELD_BRACE = re.compile(r"[{}]")
_F_SPECIAL = {q: re.compile(r"[\\{}]|" + re.escape(q)) for q in ("'", '"', "'''", '"""')}
_PREFIX_LETTERS = frozenset("rRbBuUfF")
_NUMBER_START = frozenset("0123456789.")


class _Source:
    """``text`` by lines, with ``ast``'s UTF-8 columns turned into string indices."""

    __slots__ = ("_encoded", "_starts", "ascii", "continued", "lines", "origins", "spellings", "text")

    def __init__(self, text: str, record_origins: bool = False) -> None:
        self.text = text
        if _OTHER_LINE_BREAKS.search(text) is None:
            self.lines = text.splitlines(True)
        else:  # str.splitlines also breaks at form feeds and such, CPython does not
            self.lines = _LINE.findall(text)
        self.lines.append("")  # so that the line after the last one can be asked for
        self.ascii = text.isascii()
        self.spellings: dict[str, str] = {}
        if not self.ascii and not unicodedata.is_normalized("NFKC", text):
            self.spellings = _spellings(text)
        # Line numbers (1-based) of lines ending in a backslash continuation.
        self.continued: frozenset[int] = frozenset()
        if "\\" in text:
            self.continued = frozenset(
                number
                for number, line in enumerate(self.lines, 1)
                if line.endswith(("\\\n", "\\\r", "\\\r\n"))
            )
        self._starts: list[int] | None = None
        self._encoded: dict[int, bytes] = {}
        # When asked for (see mirror_module): the ast node each mirrored expression came from.
        self.origins: dict | None = {} if record_origins else None

    def column(self, lineno: int, col: int) -> int:
        """The string index, in line ``lineno``, of the UTF-8 column ``col``."""
        if self.ascii:
            return col
        line = self.lines[lineno - 1]
        if line.isascii():
            return col
        encoded = self._encoded.get(lineno)
        if encoded is None:
            encoded = self._encoded[lineno] = line.encode("utf-8")
        return len(encoded[:col].decode("utf-8"))

    def offset(self, lineno: int, col: int) -> int:
        """The index in ``text`` of line ``lineno``'s UTF-8 column ``col``."""
        starts = self._starts
        if starts is None:
            starts, total = [], 0
            for line in self.lines:
                starts.append(total)
                total += len(line)
            self._starts = starts
        return starts[lineno - 1] + self.column(lineno, col)

    def span(self, node: ast.AST) -> str:
        """The source text of ``node``."""
        lineno, end = node.lineno, node.end_lineno
        if lineno == end:
            line = self.lines[lineno - 1]
            if self.ascii or line.isascii():
                return line[node.col_offset : node.end_col_offset]
            start, stop = (
                self.column(lineno, node.col_offset),
                self.column(end, node.end_col_offset),
            )
            return line[start:stop]
        start, stop = self.offset(lineno, node.col_offset), self.offset(end, node.end_col_offset)
        return self.text[start:stop]

    def after(self, lineno: int, col: int) -> str:
        """The rest of line ``lineno`` from UTF-8 column ``col``."""
        return self.lines[lineno - 1][self.column(lineno, col) :]


SourceText = _Source


def _spellings(text: str) -> dict[str, str]:
    """Identifiers of ``text`` that NFKC normalisation changes, by their ``ast`` (normalised)
    form: ``ast`` keeps identifiers normalised, libcst as spelt."""
    spellings: dict[str, str] = {}
    for word in (w for run in _NON_ASCII_RUN.findall(text) for w in _words(run)):
        if not word.isidentifier():
            continue
        normal = unicodedata.normalize("NFKC", word)
        if normal == word or spellings.get(normal) == word:
            continue
        if normal in spellings or re.search(rf"(?<!\w){re.escape(normal)}(?!\w)", text):
            raise Unsupported(f"identifier {normal!r} spelt in two ways")
        spellings[normal] = word
    return spellings


def _words(run: str) -> list[str]:
    """The maximal runs of identifier characters in ``run``."""
    words, word = [], ""
    for c in run:
        if ("_" + c).isidentifier():
            word += c
        elif word:
            words.append(word)
            word = ""
    if word:
        words.append(word)
    return words


def _respell(node: cst.CSTNode, spellings: dict[str, str]) -> None:
    """Give the names of a mirror tree their source spelling (they are fresh nodes: mutable)."""
    set_value = _slot(cst.Name, "value")
    stack = [node]
    while stack:
        node = stack.pop()
        if node.__class__ is cst.Name:
            spelling = spellings.get(node.value)
            if spelling is not None:
                set_value(node, spelling)
            continue
        for field in dataclasses.fields(node):
            value = getattr(node, field.name)
            if isinstance(value, cst.CSTNode):
                stack.append(value)
            elif isinstance(value, (list, tuple)):
                stack.extend(v for v in value if isinstance(v, cst.CSTNode))


# --- statements -----------------------------------------------------------------------------------


def _statements(src: _Source, body: list[ast.stmt], dropped: Collection[int] = ()) -> list:
    """``body`` as libcst statements: simple statements on one logical line share a
    ``SimpleStatementLine``; those listed in ``dropped`` become ``pass``."""
    out: list = []
    line: list | None = None  # the body of the current SimpleStatementLine
    previous = None
    small, compound = _SMALL, _COMPOUND
    for i, statement in enumerate(body):
        if dropped and i in dropped:
            out.append(_Line([_Pass()]))
            line = None
            continue
        convert = small.get(statement.__class__)
        if convert is None:
            out.append(compound[statement.__class__](src, statement))
            line = None
        elif line is not None and _same_line(src, previous, statement):
            line.append(convert(src, statement))
        else:
            line = [convert(src, statement)]
            out.append(_Line(line))
        previous = statement
    return out


def _same_line(src: _Source, previous: ast.stmt, statement: ast.stmt) -> bool:
    """Are two consecutive simple statements on one logical line (separated by a semicolon)?"""
    end = previous.end_lineno
    if statement.lineno == end:
        return True
    if end not in src.continued:
        return False
    start = src.offset(end, previous.end_col_offset)
    gap = src.text[start : src.offset(statement.lineno, statement.col_offset)]
    if "#" in gap:
        return False
    return _NEWLINE_TOKEN.search(_CONTINUATION.sub("", gap)) is None


def _suite(src: _Source, body: list[ast.stmt]):
    """A compound statement's body: a one-line suite (``if x: return``) or an indented block."""
    first = body[0]
    if first.__class__ in _SMALL and _on_header_line(src, first):
        return _Suite([_SMALL[s.__class__](src, s) for s in body])
    return _Block(_statements(src, body))


def _on_header_line(src: _Source, first: ast.stmt) -> bool:
    lineno = first.lineno
    # Columns are UTF-8 offsets: slicing by one takes in at least the characters before it.
    if src.lines[lineno - 1][: first.col_offset].strip():
        return True
    if lineno - 1 not in src.continued:
        return False
    if "#" in src.lines[lineno - 2]:
        raise Unsupported("a backslash continuation next to a comment before a body")
    return True


def _orelse(src: _Source, orelse: list[ast.stmt]):
    return _Else(_suite(src, orelse)) if orelse else None


def _dotted(name: str):
    parts = name.split(".")
    node = _Name(parts[0])
    for part in parts[1:]:
        node = _Attribute(node, _Name(part))
    return node


def _as_name(name: str | None):
    return None if name is None else _AsName(_Name(name))


def _stmt_expr(src, node):
    return _Expr(_expr(src, node.value))


def _stmt_assign(src, node):
    targets = [_AssignTarget(_expr(src, target)) for target in node.targets]
    return _Assign(targets, _expr(src, node.value))


def _stmt_ann_assign(src, node):
    value = None if node.value is None else _expr(src, node.value)
    return _AnnAssign(_expr(src, node.target), _Annotation(_expr(src, node.annotation)), value)


def _stmt_aug_assign(src, node):
    return _AugAssign(
        _expr(src, node.target), _AUGMENTED[node.op.__class__], _expr(src, node.value)
    )


def _stmt_return(src, node):
    return _Return(None if node.value is None else _expr(src, node.value))


def _stmt_raise(src, node):
    exc = None if node.exc is None else _expr(src, node.exc)
    return _Raise(exc, None if node.cause is None else _From(_expr(src, node.cause)))


def _stmt_assert(src, node):
    return _Assert(_expr(src, node.test), None if node.msg is None else _expr(src, node.msg))


def _stmt_delete(src, node):
    targets = node.targets
    if len(targets) == 1:
        return _Del(_expr(src, targets[0]))
    return _Del(_Tuple([_Element(_expr(src, target)) for target in targets]))


def _stmt_global(src, node):
    return _Global([_NameItem(_Name(name)) for name in node.names])


def _stmt_nonlocal(src, node):
    return _Nonlocal([_NameItem(_Name(name)) for name in node.names])


def _stmt_pass(src, node):
    return _Pass()


def _stmt_break(src, node):
    return _Break()


def _stmt_continue(src, node):
    return _Continue()


def _stmt_import(src, node):
    return _Import([_ImportAlias(_dotted(a.name), _as_name(a.asname)) for a in node.names])


def _stmt_import_from(src, node):
    module = None if node.module is None else _dotted(node.module)
    if len(node.names) == 1 and node.names[0].name == "*":
        names = _IMPORT_STAR
    else:
        names = [_ImportAlias(_Name(a.name), _as_name(a.asname)) for a in node.names]
    return _ImportFrom(module, names, [_DOT] * (node.level or 0))


def _stmt_function(src, node):
    if getattr(node, "type_params", None):
        raise Unsupported("type parameters")
    returns = None if node.returns is None else _Annotation(_expr(src, node.returns))
    asynchronous = _ASYNC if node.__class__ is ast.AsyncFunctionDef else None
    return _FunctionDef(
        _Name(node.name),
        _parameters(src, node.args),
        _suite(src, node.body),
        [_Decorator(_expr(src, d)) for d in node.decorator_list],
        returns,
        asynchronous,
    )


def _stmt_class(src, node):
    if getattr(node, "type_params", None):
        raise Unsupported("type parameters")
    bases = [_argument(src, base) for base in node.bases]
    keywords = [_keyword(src, keyword) for keyword in node.keywords]
    decorators = [_Decorator(_expr(src, d)) for d in node.decorator_list]
    return _ClassDef(_Name(node.name), _suite(src, node.body), bases, keywords, decorators)


def _stmt_if(src, node):
    orelse = node.orelse
    if len(orelse) == 1 and orelse[0].__class__ is ast.If and _is_elif(src, orelse[0]):
        tail = _stmt_if(src, orelse[0])
    else:
        tail = _orelse(src, orelse)
    return _If(_expr(src, node.test), _suite(src, node.body), tail)


def _is_elif(src: _Source, node: ast.If) -> bool:
    """Is this ``If``, the only statement of an ``else``, an ``elif``? (It then starts at the
    keyword ``elif``.)"""
    return src.after(node.lineno, node.col_offset).startswith("elif")


def _stmt_for(src, node):
    asynchronous = _ASYNC if node.__class__ is ast.AsyncFor else None
    return _For(
        _expr(src, node.target),
        _expr(src, node.iter),
        _suite(src, node.body),
        _orelse(src, node.orelse),
        asynchronous,
    )


def _stmt_while(src, node):
    return _While(_expr(src, node.test), _suite(src, node.body), _orelse(src, node.orelse))


def _stmt_try(src, node, handler=_ExceptHandler, make=_Try):
    handlers = [
        handler(_suite(src, h.body), _exception_type(src, h.type), _as_name(h.name))
        for h in node.handlers
    ]
    finalbody = _Finally(_suite(src, node.finalbody)) if node.finalbody else None
    return make(_suite(src, node.body), handlers, _orelse(src, node.orelse), finalbody)


def _exception_type(src: _Source, node: ast.expr | None):
    if node is None:
        return None
    if node.__class__ is ast.Tuple and node.elts:
        first = node.elts[0]
        if first.lineno == node.lineno and first.col_offset == node.col_offset:
            # `except A, B:` (Python 3.14, PEP 758): libcst cannot parse it, and the ordinary run
            # must be the one to say so.
            raise Unsupported("exception types without parentheses")
    return _expr(src, node)


def _stmt_try_star(src, node):
    return _stmt_try(src, node, _ExceptStarHandler, _TryStar)


def _stmt_with(src, node):
    items = [
        _WithItem(
            _expr(src, item.context_expr),
            None if item.optional_vars is None else _AsName(_expr(src, item.optional_vars)),
        )
        for item in node.items
    ]
    asynchronous = _ASYNC if node.__class__ is ast.AsyncWith else None
    return _With(items, _suite(src, node.body), asynchronous)


_SMALL = _Table(
    {
        ast.Expr: _stmt_expr,
        ast.Assign: _stmt_assign,
        ast.AnnAssign: _stmt_ann_assign,
        ast.AugAssign: _stmt_aug_assign,
        ast.Return: _stmt_return,
        ast.Raise: _stmt_raise,
        ast.Assert: _stmt_assert,
        ast.Delete: _stmt_delete,
        ast.Global: _stmt_global,
        ast.Nonlocal: _stmt_nonlocal,
        ast.Pass: _stmt_pass,
        ast.Break: _stmt_break,
        ast.Continue: _stmt_continue,
        ast.Import: _stmt_import,
        ast.ImportFrom: _stmt_import_from,
    }
)
_COMPOUND = _Table(
    {
        ast.FunctionDef: _stmt_function,
        ast.AsyncFunctionDef: _stmt_function,
        ast.ClassDef: _stmt_class,
        ast.If: _stmt_if,
        ast.For: _stmt_for,
        ast.AsyncFor: _stmt_for,
        ast.While: _stmt_while,
        ast.Try: _stmt_try,
        ast.With: _stmt_with,
        ast.AsyncWith: _stmt_with,
    }
)
if hasattr(ast, "TryStar"):  # Python 3.11+
    _COMPOUND[ast.TryStar] = _stmt_try_star


# --- parameters and arguments ---------------------------------------------------------------------


def _param(src: _Source, arg: ast.arg, default: ast.expr | None, star: str):
    annotation = None if arg.annotation is None else _Annotation(_expr(src, arg.annotation))
    return _Param(
        _Name(arg.arg), annotation, None if default is None else _expr(src, default), star
    )


def _parameters(src: _Source, args: ast.arguments):
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + args.defaults
    params = [_param(src, arg, default, "") for arg, default in zip(positional, defaults)]
    split = len(args.posonlyargs)
    if args.vararg is not None:
        star_arg = _param(src, args.vararg, None, "*")
    elif args.kwonlyargs:
        star_arg = _ParamStar()
    else:
        star_arg = _DEFAULT
    kwonly = [_param(src, a, d, "") for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    star_kwarg = None if args.kwarg is None else _param(src, args.kwarg, None, "**")
    return _Parameters(
        params[split:],
        star_arg,
        kwonly,
        star_kwarg,
        params[:split],
        _ParamSlash() if split else _DEFAULT,
    )


def _argument(src: _Source, node: ast.expr):
    """A positional argument (or class base): ``*x`` or a value."""
    if node.__class__ is ast.Starred:
        return _Arg(_expr(src, node.value), None, "*")
    return _Arg(_expr(src, node), None, "")


def _keyword(src: _Source, node: ast.keyword):
    if node.arg is None:
        return _Arg(_expr(src, node.value), None, "**")
    return _Arg(_expr(src, node.value), _Name(node.arg), "")


def _expr_call(src, node):
    args = [_argument(src, a) for a in node.args]
    keywords = node.keywords
    if keywords:
        if any(a.__class__ is ast.Starred for a in node.args):  # f(a, x=1, *b): source order
            pairs = [(a.lineno, a.col_offset, i) for i, a in enumerate(node.args)]
            pairs += [(k.lineno, k.col_offset, len(args) + i) for i, k in enumerate(keywords)]
            args += [_keyword(src, k) for k in keywords]
            args = [args[i] for _, _, i in sorted(pairs)]
        else:
            args += [_keyword(src, k) for k in keywords]
    return _Call(_expr(src, node.func), args)


# --- expressions ----------------------------------------------------------------------------------


def _expr(src: _Source, node: ast.expr):
    made = _EXPRESSIONS[node.__class__](src, node)
    if src.origins is not None:
        src.origins[made] = node
    return made


def _expr_name(src, node):
    return _Name(node.id)


def _expr_attribute(src, node):
    return _Attribute(_expr(src, node.value), _Name(node.attr))


def _expr_bool_op(src, node):
    operator = _BOOLEAN[node.op.__class__]
    values = node.values
    result = _expr(src, values[0])
    for value in values[1:]:
        result = _BooleanOperation(result, operator, _expr(src, value))
    return result


def _expr_bin_op(src, node):
    left = _expr(src, node.left)
    return _BinaryOperation(left, _BINARY[node.op.__class__], _expr(src, node.right))


def _expr_unary_op(src, node):
    return _UnaryOperation(_UNARY[node.op.__class__], _expr(src, node.operand))


def _expr_compare(src, node):
    targets = [
        _ComparisonTarget(_COMPARE[op.__class__], _expr(src, comparator))
        for op, comparator in zip(node.ops, node.comparators)
    ]
    return _Comparison(_expr(src, node.left), targets)


def _expr_if_exp(src, node):
    return _IfExp(_expr(src, node.test), _expr(src, node.body), _expr(src, node.orelse))


def _expr_lambda(src, node):
    return _Lambda(_parameters(src, node.args), _expr(src, node.body))


def _expr_named(src, node):
    return _NamedExpr(_expr(src, node.target), _expr(src, node.value))


def _expr_await(src, node):
    return _Await(_expr(src, node.value))


def _expr_yield(src, node):
    return _Yield(None if node.value is None else _expr(src, node.value))


def _expr_yield_from(src, node):
    return _Yield(_From(_expr(src, node.value)))


def _elements(src: _Source, nodes: list[ast.expr]) -> list:
    return [
        _StarredElement(_expr(src, n.value))
        if n.__class__ is ast.Starred
        else _Element(_expr(src, n))
        for n in nodes
    ]


def _expr_tuple(src, node):
    return _Tuple(_elements(src, node.elts))


def _expr_list(src, node):
    return _List(_elements(src, node.elts))


def _expr_set(src, node):
    return _Set(_elements(src, node.elts))


def _expr_dict(src, node):
    return _Dict(
        [
            _StarredDictElement(_expr(src, value))
            if key is None
            else _DictElement(_expr(src, key), _expr(src, value))
            for key, value in zip(node.keys, node.values)
        ]
    )


def _comp_for(src: _Source, generators: list[ast.comprehension]):
    inner = None
    for g in reversed(generators):
        ifs = [_CompIf(_expr(src, test)) for test in g.ifs]
        asynchronous = _ASYNC if g.is_async else None
        inner = _CompFor(_expr(src, g.target), _expr(src, g.iter), ifs, inner, asynchronous)
    return inner


def _expr_list_comp(src, node):
    return _ListComp(_expr(src, node.elt), _comp_for(src, node.generators))


def _expr_set_comp(src, node):
    return _SetComp(_expr(src, node.elt), _comp_for(src, node.generators))


def _expr_generator(src, node):
    return _GeneratorExp(_expr(src, node.elt), _comp_for(src, node.generators))


def _expr_dict_comp(src, node):
    key, value = _expr(src, node.key), _expr(src, node.value)
    return _DictComp(key, value, _comp_for(src, node.generators))


def _expr_subscript(src, node):
    index = node.slice
    if index.__class__ is ast.Tuple and _bare_tuple(src, index):
        parts = index.elts
    else:
        parts = [index]
    elements = [_SubscriptElement(_subscript_slice(src, e)) for e in parts]
    if src.origins is not None:  # an element: its slice, the next one (or None), the subscript
        for i, element in enumerate(elements):
            src.origins[element] = (parts[i], parts[i + 1] if i + 1 < len(parts) else None, node)
    return _Subscript(_expr(src, node.value), elements)


def _subscript_slice(src: _Source, node: ast.expr):
    cls = node.__class__
    if cls is ast.Slice:
        lower = None if node.lower is None else _expr(src, node.lower)
        upper = None if node.upper is None else _expr(src, node.upper)
        return _Slice(lower, upper, None if node.step is None else _expr(src, node.step))
    if cls is ast.Starred:
        return _Index(_expr(src, node.value), "*")
    return _Index(_expr(src, node), None)


def _bare_tuple(src: _Source, node: ast.Tuple) -> bool:
    """Is this tuple in a subscript written without its own parentheses (``x[a, b]``, which
    libcst reads as two subscript elements, unlike ``x[(a, b)]``)?"""
    elements = node.elts
    if not elements:
        return False  # x[()]
    first = elements[0]
    if first.col_offset == node.col_offset and first.lineno == node.lineno:
        return True
    if any(e.__class__ is ast.Slice for e in elements):
        return True  # slices cannot be in parentheses
    # Parentheses open before the first element; count those that close before the comma after
    # it: when fewer close, one pair holds the whole tuple.
    text = src.text
    start = src.offset(node.lineno, node.col_offset)
    opened = _COMMENT.sub("", text[start : src.offset(first.lineno, first.col_offset)]).count("(")
    closed, i, end = 0, src.offset(first.end_lineno, first.end_col_offset), len(text)
    while i < end:
        c = text[i]
        if c == ",":
            break
        if c == ")":
            closed += 1
        elif c == "#":
            while i < end and text[i] not in "\r\n":
                i += 1
            continue
        i += 1
    return opened == closed


def _expr_starred(src, node):
    raise Unsupported("a starred expression outside a collection, call or subscript")


# --- constants and strings ------------------------------------------------------------------------


def _expr_constant(src, node):
    value = node.value
    if value is None or value is True or value is False:
        return _Name(str(value))
    make = _CONSTANTS.get(value.__class__)
    if make is None:
        if value is ...:
            return _Ellipsis()
        raise Unsupported(f"constant {value!r}")
    return make(src, node)


def _number(make):
    def convert(src, node):
        text = src.span(node)
        if not text or text[0] not in _NUMBER_START:
            raise Unsupported(f"number at {node.lineno}:{node.col_offset} reads {text!r}")
        return make(text)

    return convert


def _string(src, node):
    text = src.span(node)
    pieces = _pieces(text)
    if len(pieces) == 1:
        return _SimpleString(text)
    return _concatenate([_SimpleString(text[start:end]) for start, _, _, end, _ in pieces])


_CONSTANTS: dict[type, Callable] = {
    int: _number(_Integer),
    float: _number(_Float),
    complex: _number(_Imaginary),
    str: _string,
    bytes: _string,
}


def _concatenate(parts: list):
    """Adjacent string literals as libcst nests them: ``a b c`` is ``a (b c)``."""
    result = parts[-1]
    for part in reversed(parts[:-1]):
        result = _ConcatenatedString(part, result)
    return result


def _pieces(text: str) -> list[tuple[int, int, int, int, list | None]]:
    """The string literals making up ``text`` (one, or several implicitly concatenated), as
    (start, body start, closing quote, end, f-string parts or None) tuples."""
    pieces = []
    i, n = 0, len(text)
    while i < n:
        opening = _OPEN_QUOTE.match(text, i)
        if opening is None:
            raise Unsupported(f"not a string literal: {text[i : i + 20]!r}")
        prefix, quote = opening.groups()
        body = opening.end()
        if "f" in prefix or "F" in prefix:
            close, parts = _f_body(text, body, quote, "r" in prefix or "R" in prefix)
        else:
            close, parts = _closing_quote(text, body, quote), None
        end = close + len(quote)
        pieces.append((i, body, close, end, parts))
        i = _GAP.match(text, end).end()
    return pieces


def _closing_quote(text: str, i: int, quote: str) -> int:
    """The index of the quote closing a literal whose body starts at ``text[i]``."""
    start = i
    while True:
        j = text.find(quote, i)
        if j < 0:
            raise Unsupported("unterminated string literal")
        backslashes = 0
        while j - 1 - backslashes >= start and text[j - 1 - backslashes] == "\\":
            backslashes += 1
        if backslashes % 2 == 0:
            return j
        i = j + 1


def _f_body(text: str, i: int, quote: str, raw: bool) -> tuple[int, list]:
    """Read an f-string literal whose body starts at ``text[i]``: (the index of its closing quote,
    its parts: (None, text) and ("field", (conversion, has ``=``)) in order)."""
    special = _F_SPECIAL[quote]
    parts: list[tuple[str | None, object]] = []
    text_start = i
    while True:
        found = special.search(text, i)
        if found is None:
            raise Unsupported("an unterminated f-string")
        j = found.start()
        c = text[j]
        if c == "\\":
            if not raw and text.startswith("N{", j + 1):  # a named escape: \N{EM DASH}
                i = text.find("}", j) + 1
                if i == 0:
                    raise Unsupported("an unterminated named escape")
            else:  # an escaped character; a brace after a backslash still opens a field
                i = j + 1 if text.startswith(("{", "}"), j + 1) else j + 2
            continue
        if c == "{" or c == "}":
            if text.startswith(c, j + 1):  # {{ or }}
                i = j + 2
                continue
            if c == "}":
                raise Unsupported("a lone '}' in an f-string")
            if j > text_start:
                parts.append((None, text[text_start:j]))
            close, conversion, equal = _field(text, j + 1)
            parts.append(("field", (conversion, equal)))
            i = text_start = close + 1
            continue
        if j > text_start:  # the closing quote
            parts.append((None, text[text_start:j]))
        return j, parts


def _field(text: str, i: int) -> tuple[int, str | None, bool]:
    """Read the replacement field whose expression starts at ``text[i]``: (the index of its
    closing brace, its conversion, whether it has a ``=``)."""
    depth, n = 0, len(text)
    conversion, equal = None, False
    while i < n:
        c = text[i]
        if c in "'\"":
            i = _skip_string(text, i)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "}":
            if depth == 0:
                return i, conversion, equal
            depth -= 1
        elif c == "#":  # a comment (Python 3.12+)
            while i < n and text[i] not in "\r\n":
                i += 1
            continue
        elif depth == 0:
            if c == "=" and not text.startswith("=", i + 1) and text[i - 1] not in "=!<>":
                equal = True
            elif c == "!" and not text.startswith("=", i + 1):
                j = i + 1
                while j < n and text[j] not in ":}":
                    j += 1
                conversion, i = text[i + 1 : j].strip() or None, j
                continue
            elif c == ":":
                return _spec_end(text, i + 1), conversion, equal
        i += 1
    raise Unsupported("an unterminated f-string field")


def _spec_end(text: str, i: int) -> int:
    """The index of the brace closing a format spec that starts at ``text[i]``."""
    while True:
        brace = _FIELD_BRACE.search(text, i)
        if brace is None:
            raise Unsupported("an unterminated f-string format spec")
        j = brace.start()
        if text[j] == "}":
            return j
        i = _field(text, j + 1)[0] + 1  # a nested field: {x:>{width}}


def _skip_string(text: str, i: int) -> int:
    """The index after the string literal (inside an f-string field) whose quote is at
    ``text[i]``; its prefix, if any, comes before."""
    quote = text[i : i + 3] if text.startswith(text[i] * 3, i) else text[i]
    k = i
    while k > 0 and text[k - 1] in _PREFIX_LETTERS:
        k -= 1
    prefix = text[k:i]
    is_prefix = len(prefix) <= 2 and (k == 0 or not (text[k - 1].isalnum() or text[k - 1] == "_"))
    if is_prefix and ("f" in prefix or "F" in prefix):  # nested f-strings (Python 3.12+)
        close = _f_body(text, i + len(quote), quote, "r" in prefix or "R" in prefix)[0]
    else:
        close = _closing_quote(text, i + len(quote), quote)
    return close + len(quote)


def _expr_joined_str(src, node):
    text = src.span(node)
    fields = iter([v for v in node.values if v.__class__ is ast.FormattedValue])
    parts = []
    origins, src.origins = src.origins, None  # positions inside f-strings are not reliable
    try:
        for start, body, close, end, f_parts in _pieces(text):
            if f_parts is None:
                parts.append(_SimpleString(text[start:end]))
            else:
                parts.append(_formatted(src, f_parts, fields, text[start:body], text[close:end]))
    finally:
        src.origins = origins
    if next(fields, None) is not None:
        raise Unsupported("f-string fields do not match the source")
    return parts[0] if len(parts) == 1 else _concatenate(parts)


def _formatted(src: _Source, f_parts: list, fields, start: str, end: str):
    """One f-string literal: its text parts from the source, its expressions from ``fields``
    (the ``ast`` values of the whole concatenation, consumed in order)."""
    parts = []
    for kind, value in f_parts:
        if kind is None:
            parts.append(_FormattedStringText(value))
            continue
        field = next(fields, None)
        if field is None:
            raise Unsupported("f-string fields do not match the source")
        conversion, equal = value
        parts.append(
            _FormattedStringExpression(
                _expr(src, field.value),
                conversion,
                _format_spec(src, field.format_spec),
                _AssignEqual() if equal else None,
            )
        )
    return _FormattedString(parts, start, end)


def _format_spec(src: _Source, spec: ast.JoinedStr | None):
    """A field's format spec (``{x:>{width}}``); its text is taken from the ``ast``."""
    if spec is None:
        return None
    parts = []
    for value in spec.values:
        if value.__class__ is ast.FormattedValue:
            conversion = None if value.conversion < 0 else chr(value.conversion)
            parts.append(
                _FormattedStringExpression(
                    _expr(src, value.value), conversion, _format_spec(src, value.format_spec), None
                )
            )
        else:
            parts.append(_FormattedStringText(value.value))
    return parts


def _expr_formatted_value(src, node):
    raise Unsupported("a formatted value outside an f-string")


_EXPRESSIONS = _Table(
    {
        ast.Name: _expr_name,
        ast.Attribute: _expr_attribute,
        ast.Call: _expr_call,
        ast.Constant: _expr_constant,
        ast.Subscript: _expr_subscript,
        ast.BinOp: _expr_bin_op,
        ast.BoolOp: _expr_bool_op,
        ast.UnaryOp: _expr_unary_op,
        ast.Compare: _expr_compare,
        ast.IfExp: _expr_if_exp,
        ast.Lambda: _expr_lambda,
        ast.NamedExpr: _expr_named,
        ast.Await: _expr_await,
        ast.Yield: _expr_yield,
        ast.YieldFrom: _expr_yield_from,
        ast.Tuple: _expr_tuple,
        ast.List: _expr_list,
        ast.Set: _expr_set,
        ast.Dict: _expr_dict,
        ast.ListComp: _expr_list_comp,
        ast.SetComp: _expr_set_comp,
        ast.GeneratorExp: _expr_generator,
        ast.DictComp: _expr_dict_comp,
        ast.JoinedStr: _expr_joined_str,
        ast.FormattedValue: _expr_formatted_value,
        ast.Starred: _expr_starred,
    }
)


# --- the module -----------------------------------------------------------------------------------


def mirror_module(
    tree: ast.Module, text: str, dropped: Collection[int] = (), source: SourceText | None = None
) -> cst.Module:
    """`tree` is `compile(text, path, "exec", ast.PyCF_ONLY_AST)` of `text` (a str, lines ending in
    \\n, \\r\\n or \\r). Statements tree.body[i] for i in `dropped` are replaced by a `pass`
    statement (SimpleStatementLine([Pass()])). Given a ``source`` (a :class:`SourceText` of
    ``text`` made with ``record_origins=True``), the mirror records in it the ``ast`` node of every
    expression it builds (and, for each subscript element, its slice, the next slice or None, and
    the subscript), so that a node's source text can be found again."""
    src = _Source(text) if source is None else source
    if dropped and not isinstance(dropped, (set, frozenset, dict)):
        dropped = frozenset(dropped)
    try:
        body = _statements(src, tree.body, dropped)
    except RecursionError:
        raise Unsupported("nested too deeply") from None
    if src.spellings:
        for statement in body:
            _respell(statement, src.spellings)
    newline = _NEWLINE.search(text)
    return _Module(
        body, "\n" if newline is None else newline.group(), text.endswith(("\n", "\r")) or not text
    )
