// Package celexpr is the CEL of a Workflow step's when: one environment,
// compiled and type-checked the same way by `kubectl sched workflow run`
// before it submits a workflow and by the operator before it runs one,
// and evaluated by the operator when the step would start.
//
// # Variables
//
//	steps.NAME.outputs.KEY  an output of step NAME (a string)
//	steps.NAME.phase        the phase of step NAME (Succeeded, Skipped, ...)
//	params.NAME             the value of workflow param NAME (a string)
//	workflow.phase          finally steps only: the phase the workflow has
//	                        without them (Succeeded, Failed, Timeout, Cancelled)
//
// A step name with '-' is written steps['unit-test'], and a key with '.'
// or '-' outputs['image.tag']. A main step's when may only name the steps
// it depends on, directly or through others (in a sequence, the steps
// before it), since only they are certain to have finished; a finally
// step's, any main step and the finally steps it depends on. Names are
// written out (steps['x'], not steps[params.p]), so this can be checked
// before anything runs. Params must be declared in spec.params.
//
// The language is CEL as Kubernetes uses it, with the strings extension
// (lowerAscii, split, trim, ...) and optional values
// (steps.build.outputs.?tag.orValue('latest')). The expression must be a
// bool and at most MaxLength characters. An output a step did not write is
// an error when read (use has() or .? to test for it), and so is going
// past CostLimit: the step fails with CEL's message. What an expression
// may cost and build is bounded before it runs and while it runs
// (bounds.go): an expression whose estimated cost is past
// EstimatedCostLimit does not compile, and no string it builds is longer
// than MaxResultBytes.
package celexpr

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/ext"
)

// MaxLength is the longest expression, the CRD's bound on when.
const MaxLength = 1024

// CostLimit bounds what one evaluation may cost, in CEL's cost units
// (about one per operation, and per character a function builds or a few
// it reads): Kubernetes' runtime limit for one CEL rule. An evaluation
// that gets there stops with an error and the step fails, so no workflow
// can spend more of the operator's CPU or memory.
const CostLimit = 1_000_000

// Scope is where an expression is: a main step's when or a finally step's.
type Scope int

// The scopes.
const (
	// Main is spec.steps: steps and params.
	Main Scope = iota
	// Finally is spec.finally: workflow.phase as well.
	Finally
)

// Step is what an expression sees of a step.
type Step struct {
	Phase   string
	Outputs map[string]string
}

// Workflow is what a finally step's expression sees of the workflow.
type Workflow struct {
	Phase string
}

// Input is what an expression is evaluated with.
type Input struct {
	// Steps by name.
	Steps map[string]Step
	// Params by name.
	Params map[string]string
	// Phase is workflow.phase, for a finally step.
	Phase string
}

// The variables' names.
const (
	varSteps    = "steps"
	varParams   = "params"
	varWorkflow = "workflow"
)

var (
	envOnce sync.Once
	envs    [2]*cel.Env
	envErr  error
)

// env is the environment of a scope, built once.
func env(scope Scope) (*cel.Env, error) {
	envOnce.Do(func() {
		base := []cel.EnvOption{
			// Kubernetes' version; what its functions cost is cost.go's.
			ext.Strings(ext.StringsVersion(2)),
			// Their results cannot be bounded before they run.
			cel.Function("format", cel.DisableDeclaration(true),
				cel.MemberOverload("string_format", []*cel.Type{cel.StringType, cel.ListType(cel.DynType)}, cel.StringType)),
			cel.Function("strings.quote", cel.DisableDeclaration(true),
				cel.Overload("strings_quote", []*cel.Type{cel.StringType}, cel.StringType)),
			cel.OptionalTypes(),
			// After the libraries: they register types, which our
			// provider in front of the environment's cannot.
			withObjects,
			cel.Variable(varSteps, cel.MapType(cel.StringType, stepType)),
			cel.Variable(varParams, cel.MapType(cel.StringType, cel.StringType)),
			cel.ASTValidators(validator{}),
		}
		base = append(base, costOptions)
		envs[Main], envErr = cel.NewEnv(base...)
		if envErr != nil {
			return
		}
		// Built anew: an environment with a custom provider cannot be
		// extended.
		envs[Finally], envErr = cel.NewEnv(append(base, cel.Variable(varWorkflow, workflowType))...)
	})
	return envs[scope], envErr
}

// Expression is a compiled, type-checked expression.
type Expression struct {
	scope Scope
	ast   *cel.Ast
	prg   cel.Program
	// Steps and Params are the names it reads, written out, in order.
	Steps, Params []string
	// Cost is its estimated cost with what it reads at its largest.
	Cost uint64

	// mu makes evaluations take turns with the meter.
	mu    sync.Mutex
	meter *meter
}

// Compile parses and type-checks expr for scope and estimates its cost
// with every step it reads taken for a forEach step (the longest
// outputs). The error is CEL's, one problem a line, or says which rule of
// this package expr breaks; it does not check which steps and params expr
// names (Check does).
func Compile(expr string, scope Scope) (*Expression, error) {
	return compile(expr, scope, func([]string) sizes { return largest }, EstimatedCostLimit)
}

// compile is Compile with the sizes of what the expression reads, given
// the steps it names, and the estimate's limit (tests lift it to try the
// other bounds).
func compile(expr string, scope Scope, sizesOf func(steps []string) sizes, limit uint64) (*Expression, error) {
	if len(expr) > MaxLength {
		return nil, fmt.Errorf("the expression is %d characters; at most %d are allowed", len(expr), MaxLength)
	}
	if strings.TrimSpace(expr) == "" {
		return nil, errors.New("the expression is empty; leave when out for a step that always runs")
	}
	e, err := env(scope)
	if err != nil {
		return nil, fmt.Errorf("the CEL environment: %w", err)
	}
	checked, iss := e.Compile(expr)
	if iss.Err() != nil {
		msg := iss.Err().Error()
		if scope == Main && strings.Contains(msg, "undeclared reference to '"+varWorkflow+"'") {
			msg += "\n(workflow.phase is for finally steps: a main step runs before the workflow has a phase)"
		}
		if strings.Contains(msg, "undeclared reference to 'item'") {
			msg += "\n(a when has no item: a forEach step's when is decided once, before any item runs; ${item} is for the strings of a forEach step's task)"
		}
		if strings.Contains(msg, "'format'") || strings.Contains(msg, "'quote'") {
			msg += "\n(format and strings.quote are not available in a when: how long a string they build cannot be known before they run; compare the parts instead)"
		}
		return nil, errors.New(msg)
	}
	if !checked.OutputType().IsExactType(types.BoolType) {
		return nil, fmt.Errorf("the expression is a %s; it must be true or false (a bool), as in steps.test.outputs.result == 'passed'", checked.OutputType())
	}
	x := &Expression{scope: scope, ast: checked}
	if err := x.collectNames(); err != nil {
		return nil, err
	}
	s := sizesOf(x.Steps)
	cost, err := e.EstimateCost(checked, estimator{s})
	if err != nil {
		return nil, fmt.Errorf("estimating its cost: %w", err)
	}
	if x.Cost = cost.Max; x.Cost > limit {
		return nil, costError{estimateMessage(x.Cost, s)}
	}
	x.meter = &meter{vals: map[int64]ref.Val{}}
	if x.prg, err = e.Program(checked, cel.CustomDecoratorV2(x.meter.decorate)); err != nil {
		return nil, err
	}
	return x, nil
}

// collectNames finds the steps and params the expression reads, and
// refuses a use of steps or params other than by a name written out.
func (x *Expression) collectNames() error {
	root := ast.NavigateAST(x.ast.NativeRep())
	var errs []string
	seenStep, seenParam := map[string]bool{}, map[string]bool{}
	for _, c := range ast.MatchDescendants(root, ast.KindMatcher(ast.ComprehensionKind)) {
		comp := c.AsComprehension()
		for _, v := range []string{comp.IterVar(), comp.IterVar2()} {
			if v == varSteps || v == varParams || v == varWorkflow {
				errs = append(errs, fmt.Sprintf("a loop variable may not be called %s: that is the name of a variable of the workflow", v))
			}
		}
	}
	for _, id := range ast.MatchDescendants(root, ast.KindMatcher(ast.IdentKind)) {
		name := id.AsIdent()
		if name != varSteps && name != varParams {
			continue
		}
		key, ok := selectedKey(id)
		switch {
		case !ok:
			errs = append(errs, fmt.Sprintf("%s may only be used with a name written out, as %s.NAME or %s['NAME'], so that what it reads is known before the workflow runs", name, name, name))
		case name == varSteps && !seenStep[key]:
			seenStep[key] = true
			x.Steps = append(x.Steps, key)
		case name == varParams && !seenParam[key]:
			seenParam[key] = true
			x.Params = append(x.Params, key)
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// selectedKey is the name id (steps or params) is selected or indexed by,
// when it is a constant: steps.x, steps['x'], steps.?x, steps[?'x'].
func selectedKey(id ast.NavigableExpr) (string, bool) {
	p, ok := id.Parent()
	if !ok {
		return "", false
	}
	switch p.Kind() {
	case ast.SelectKind:
		return p.AsSelect().FieldName(), true
	case ast.CallKind:
		call := p.AsCall()
		args := call.Args()
		switch call.FunctionName() {
		case operators.Index, operators.OptIndex, operators.OptSelect:
		default:
			return "", false
		}
		if len(args) != 2 || args[0].ID() != id.ID() || args[1].Kind() != ast.LiteralKind {
			return "", false
		}
		s, ok := args[1].AsLiteral().Value().(string)
		return s, ok
	}
	return "", false
}

// Eval evaluates the expression with in. An error is CEL's (a missing key,
// the cost limit), worded for the step's message.
func (x *Expression) Eval(in Input) (bool, error) {
	vars := in.values(x.scope)
	x.mu.Lock()
	defer x.mu.Unlock()
	x.meter.reset(CostLimit)
	out, _, err := x.prg.Eval(vars)
	if err != nil {
		if strings.Contains(err.Error(), "cost limit exceeded") {
			return false, fmt.Errorf("it cost more than the limit of %d: %w", CostLimit, err)
		}
		return false, err
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("it gave %v, not true or false", out.Value())
	}
	return b, nil
}
