"""hx.lang: types, the program AST, parser, printer and type inference."""
