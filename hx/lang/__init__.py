"""hx.lang: types, the immutable program AST, its parser and printer, and type inference."""

from hx.lang.errors import HxTypeError, ParseError
from hx.lang.infer import Typing, infer, typable
from hx.lang.parser import parse
from hx.lang.program import (
                             Compose,
                             Conv,
                             Fix,
                             Fold,
                             Fresh,
                             Hole,
                             Lib,
                             Map,
                             Program,
                             Repeat,
                             Zeros,
                             canonical,
                             fresh_names,
                             get,
                             holes,
                             is_complete,
                             library_names,
                             rename_fresh,
                             replace,
                             size,
                             subterms,
)
from hx.lang.types import FunctionType, GraphType, ListType, TensorType, Type, TypeVar, parse_type

__all__ = [
    "HxTypeError", "ParseError", "Typing", "infer", "parse", "parse_type", "typable",
    "Compose", "Conv", "Fix", "Fold", "Fresh", "Hole", "Lib", "Map", "Program", "Repeat", "Zeros",
    "canonical", "fresh_names", "get", "holes", "is_complete", "library_names", "rename_fresh",
    "replace", "size", "subterms",
    "FunctionType", "GraphType", "ListType", "TensorType", "Type", "TypeVar",
]
