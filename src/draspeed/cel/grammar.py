"""The CEL grammar for lark (LALR, contextual lexer).

Derived from the cel-spec EBNF as adapted by cel-python (``celpy/cel.lark``,
Apache-2.0), restructured after cel-go's ``CEL.g4`` precedence levels and extended with
the optional syntax (``a.?b``, ``a[?b]``, ``[?x]``, ``{?k: v}``) and backquoted field
names (``a.`b-c```) and message construction (``a.b.Msg{f: 1}``, which ANTLR reads as
one qualified name: the syntax-error reader refuses any other member before '{').
Signs are not part of number literals here: the tree builder folds
a unary minus directly in front of a number into the literal, as cel-go's grammar does
(also after "!": ``!-5`` is cel-go's "not" of the literal -5; ``!-x`` never gets here,
since cel-go's syntax-error reader refuses it first).

Kept as a Python string rather than a package data file so that every install has it.
"""

GRAMMAR = r"""
start: expr

?expr: cond_or
     | cond_or QUESTION cond_or COLON expr             -> ternary

?cond_or: cond_and
        | cond_or OR cond_and                          -> logical

?cond_and: relation
         | cond_and AND relation                       -> logical

?relation: calc
         | relation RELOP calc                         -> binary
         | relation IN calc                            -> binary

?calc: mult
     | calc ADDOP mult                                 -> binary

?mult: unary
     | mult MULOP unary                                -> binary

?unary: member
      | BANG+ member                                   -> not_chain
      | BANG+ MINUS member                             -> not_chain
      | MINUS+ member                                  -> neg_chain

?member: primary
       | member DOT field                              -> select
       | member DOT QUESTION field                     -> opt_select
       | member DOT IDENT LPAR [exprlist] RPAR         -> member_call
       | member LSQB expr RSQB                         -> index
       | member LSQB QUESTION expr RSQB                -> opt_index
       | member LBRACE [field_inits] RBRACE            -> create_message
       | member LBRACE COMMA RBRACE                    -> create_message

?field: IDENT | ESC_IDENT

?primary: IDENT                                        -> ident
        | DOT IDENT                                    -> ident
        | IDENT LPAR [exprlist] RPAR                   -> global_call
        | DOT IDENT LPAR [exprlist] RPAR               -> global_call
        | LPAR expr RPAR                               -> paren
        | LSQB [list_inits] RSQB                       -> list_lit
        | LSQB COMMA RSQB                              -> list_lit
        | LBRACE [map_inits] RBRACE                    -> map_lit
        | LBRACE COMMA RBRACE                          -> map_lit
        | literal

exprlist: expr (COMMA expr)*

list_inits: opt_expr (COMMA opt_expr)* [COMMA]

map_inits: opt_expr COLON expr (COMMA opt_expr COLON expr)* [COMMA]

opt_expr: [QUESTION] expr

field_inits: opt_field COLON expr (COMMA opt_field COLON expr)* [COMMA]

opt_field: [QUESTION] field

literal: INT | UINT | FLOAT | STRING | BYTES | TRUE | FALSE | NULL

QUESTION: "?"
COLON: ":"
OR: "||"
AND: "&&"
RELOP: "<=" | ">=" | "==" | "!=" | "<" | ">"
IN: "in"
ADDOP: "+" | "-"
MULOP: "*" | "/" | "%"
BANG: "!"
MINUS: "-"
DOT: "."
LPAR: "("
RPAR: ")"
LSQB: "["
RSQB: "]"
LBRACE: "{"
RBRACE: "}"
COMMA: ","
TRUE: "true"
FALSE: "false"
NULL: "null"

FLOAT.4: /[0-9]+\.[0-9]+([eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+|\.[0-9]+([eE][+-]?[0-9]+)?/
UINT.3: /(0x[0-9a-fA-F]+|[0-9]+)[uU]/
INT.2: /0x[0-9a-fA-F]+|[0-9]+/

// Raw strings take no escapes; the others are unescaped by the tree builder, which
// rejects escapes CEL does not define. "{3} / '{3} are the triple quotes.
STRING.5: /[rR]"{3}(.|\n)*?"{3}/
        | /[rR]'{3}(.|\n)*?'{3}/
        | /"{3}(\\(.|\n)|[^\\])*?"{3}/
        | /'{3}(\\(.|\n)|[^\\])*?'{3}/
        | /[rR]"[^"\n\r]*"/
        | /[rR]'[^'\n\r]*'/
        | /"(\\.|[^\\"\n\r])*"/
        | /'(\\.|[^\\'\n\r])*'/
BYTES.6: /[bB]/ STRING

IDENT: /[_a-zA-Z][_a-zA-Z0-9]*/
ESC_IDENT: /`[_a-zA-Z0-9.\-\/ ]+`/

WHITESPACE: /[\t\n\f\r ]+/
COMMENT: /\/\/[^\n]*/

%ignore WHITESPACE
%ignore COMMENT
"""
