package docgen

import (
	"errors"
	"fmt"
	"strings"

	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/parser"
)

// celMessage reads a messageExpression as the message it makes: its
// string literals as they are, variables whose expression is itself such
// a message inlined, and every other value as ⟨its name⟩. A conditional
// shows one branch, the one that reads as the general case. ok is false when expr does not parse.
func celMessage(expr string, vars map[string]string) (string, bool) {
	tree, err := parse(expr)
	if err != nil {
		return "", false
	}
	return renderCEL(tree.Expr(), vars), true
}

// celIsText says whether expr makes text: a string literal, or text
// joined with +.
func celIsText(expr string) bool {
	tree, errs := parse(expr)
	if errs != nil {
		return false
	}
	return joinsText(tree.Expr())
}

// joinsText: a string literal, or a + with one somewhere in its operands
// (a + of lists is no text).
func joinsText(e ast.Expr) bool {
	switch e.Kind() {
	case ast.LiteralKind:
		_, ok := e.AsLiteral().(types.String)
		return ok
	case ast.CallKind:
		call := e.AsCall()
		return call.FunctionName() == operators.Add && (joinsText(call.Args()[0]) || joinsText(call.Args()[1]))
	}
	return false
}

func parse(expr string) (*ast.AST, error) {
	p, err := parser.NewParser(parser.Macros(parser.AllMacros...), parser.EnableOptionalSyntax(true))
	if err != nil {
		return nil, err
	}
	tree, errs := p.Parse(common.NewTextSource(expr))
	if errs != nil && len(errs.GetErrors()) > 0 {
		return nil, errors.New(errs.ToDisplayString())
	}
	return tree, nil
}

func renderCEL(e ast.Expr, vars map[string]string) string {
	switch e.Kind() {
	case ast.LiteralKind:
		if s, ok := e.AsLiteral().(types.String); ok {
			return string(s)
		}
		return fmt.Sprint(e.AsLiteral().Value())
	case ast.IdentKind:
		return "⟨" + e.AsIdent() + "⟩"
	case ast.SelectKind:
		sel := e.AsSelect()
		if op := sel.Operand(); op.Kind() == ast.IdentKind && op.AsIdent() == "variables" {
			if v, ok := vars[sel.FieldName()]; ok {
				return v
			}
		}
		return "⟨" + sel.FieldName() + "⟩"
	case ast.CallKind:
		call := e.AsCall()
		args := call.Args()
		switch call.FunctionName() {
		case operators.Add:
			return renderCEL(args[0], vars) + renderCEL(args[1], vars)
		case operators.Conditional:
			// The branch that reads as the message's general form: the
			// one that says something, and of two, the one with a value.
			then, els := renderCEL(args[1], vars), renderCEL(args[2], vars)
			if then == "" || els != "" && strings.Contains(els, "⟨") && !strings.Contains(then, "⟨") {
				return els
			}
			return then
		case "string":
			if len(args) == 1 && !call.IsMemberFunction() {
				return renderCEL(args[0], vars)
			}
		}
		if call.IsMemberFunction() {
			return renderCEL(call.Target(), vars)
		}
		if len(args) > 0 {
			return renderCEL(args[0], vars)
		}
	}
	return "⟨…⟩"
}
