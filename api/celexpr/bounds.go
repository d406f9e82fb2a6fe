package celexpr

import (
	"fmt"
	"math"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/overloads"
	"github.com/google/cel-go/common/types"
)

// What a when may cost, and what it may build. Three layers hold it:
//
//  1. Compile estimates the expression's cost with everything it reads at
//     its largest (outputs of MaxForEachOutputBytes or MaxOutputBytes,
//     params of MaxParamBytes, MaxOutputs outputs a step, ...) and refuses
//     one past EstimatedCostLimit, as Kubernetes does a CRD's rules.
//  2. Evaluation stops past CostLimit. Each call is charged what it reads
//     and builds (cost.go), so what an evaluation allocates follows what
//     it is charged.
//  3. A call is charged once it has returned; so the calls that build
//     more than they read (+, replace, join, split) count what they would
//     build first and fail past MaxResultBytes (MaxParts for split),
//     before allocating (guard, in cost.go).
//
// Left out because no estimate can bound them: format (a list prints as
// all its items) and strings.quote (of no use in a when); dyn, and lists
// or maps of lists or maps, which let a small expression compare a great
// deal more than it built (validator, below). The pattern of matches must
// be written out, so it is compiled once, with the expression: one read
// from an output could take megabytes to compile.

// The bounds of what a when reads, as its CRD fields bound them. The
// estimate reads these.
const (
	// MaxOutputBytes is the longest output of a step that runs one task,
	// the StepStatus rule's bound. (File outputs will raise it.)
	MaxOutputBytes = 4096
	// MaxForEachOutputBytes is the longest output of a forEach step, its
	// items' values gathered into a JSON array (the StepStatus rule's
	// bound).
	MaxForEachOutputBytes = 32 << 10
	// MaxOutputs is the most outputs a step has (StepStatus.outputs'
	// maxProperties).
	MaxOutputs = 64
	// MaxParamBytes is the longest param value (WorkflowParam.value).
	MaxParamBytes = 4096
	// MaxParams is the most params a workflow has (spec.params).
	MaxParams = 32
	// MaxSteps is the most steps a workflow has: 32 in spec.steps and 8 in
	// spec.finally.
	MaxSteps = 32 + 8
	// maxKeyBytes is the longest output key or param name.
	maxKeyBytes = 63
	// maxPhaseBytes is more than the longest phase (WaitingForApproval).
	maxPhaseBytes = 32
)

// EstimatedCostLimit is the most an expression's estimated cost may be,
// with everything it reads at its largest: Kubernetes' limit for one rule
// of a CRD (StaticEstimatedCostLimit). It is ten times CostLimit because
// the estimate is of the worst case, which real values seldom reach (an
// output of 4096 characters split into 4096 parts of 4096 characters
// each, say).
const EstimatedCostLimit = 10 * CostLimit

// MaxResultBytes is the longest string +, replace and join may build; a
// call that would build a longer one fails before allocating it. Every
// other function builds at most what it reads, so no string in an
// evaluation is longer.
const MaxResultBytes = 1 << 20

// MaxParts is the most parts split may return: a list of MaxParts strings
// takes MaxResultBytes.
const MaxParts = MaxResultBytes / 16

// MaxEvalBytes is the most one evaluation allocates, whatever the
// expression and whatever it reads: measured over the hostile
// expressions of TestHostileExpressions and FuzzEval, with room to spare.
const MaxEvalBytes = 32 << 20

// sizes are the bounds an estimate takes for what an expression reads.
type sizes struct {
	// output is the longest output of the steps it reads, param the
	// longest param.
	output, param uint64
}

// largest holds what any expression may read: every step a forEach step.
var largest = sizes{output: MaxForEachOutputBytes, param: MaxParamBytes}

// estimator gives cel-go's cost estimate the sizes of the variables, by
// their path (steps.NAME.outputs.KEY, params.NAME, ...), and of any
// string, list or map it cannot size otherwise (an item of a split, say).
type estimator struct{ sizes }

func (e estimator) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	size := func(most uint64) *checker.SizeEstimate { return &checker.SizeEstimate{Min: 0, Max: most} }
	path := n.Path()
	if len(path) > 0 {
		switch path[0] {
		case varParams:
			switch len(path) {
			case 1:
				return size(MaxParams)
			case 2:
				if path[1] == "@keys" {
					return size(maxKeyBytes)
				}
				return size(e.param)
			}
		case varSteps:
			switch {
			case len(path) == 1:
				return size(MaxSteps)
			case len(path) == 2 && path[1] == "@keys":
				return size(maxKeyBytes)
			case len(path) == 3 && path[2] == "phase":
				return size(maxPhaseBytes)
			case len(path) == 3 && path[2] == "outputs":
				return size(MaxOutputs)
			case len(path) == 4 && path[3] == "@keys":
				return size(maxKeyBytes)
			case len(path) == 4:
				return size(e.output)
			}
		case varWorkflow:
			return size(maxPhaseBytes)
		}
	}
	// What cel-go lost track of: a string as long as the longest value
	// read, a list or map with as many items as a split could return of
	// it; a step (compared whole) as long as all its outputs.
	longest := max(e.output, e.param, MaxLength)
	switch n.Type().Kind() {
	case types.StringKind, types.BytesKind, types.ListKind, types.MapKind:
		return size(longest)
	case types.StructKind:
		return size(maxPhaseBytes + MaxOutputs*(maxKeyBytes+e.output))
	}
	return nil
}

func (estimator) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// validator refuses what no cost estimate can bound: dyn, lists and maps
// of lists or maps, and a regular expression that is not written out.
type validator struct{}

func (validator) Name() string { return "kubectl-sched.when" }

func (validator) Validate(_ *cel.Env, _ cel.ValidatorConfig, a *ast.AST, iss *cel.Issues) {
	root := ast.NavigateAST(a)
	for _, n := range ast.MatchDescendants(root, func(ast.NavigableExpr) bool { return true }) {
		// A literal's value is fixed (the checker types the field name of
		// an optional select dyn).
		if msg := typeProblem(n.Type()); msg != "" && n.Kind() != ast.LiteralKind {
			iss.ReportErrorAtID(n.ID(), "%s", msg)
			// One report for a value, not one per part of it.
			return
		}
		if n.Kind() != ast.CallKind || n.AsCall().FunctionName() != overloads.Matches {
			continue
		}
		call := n.AsCall()
		pattern := call.Target()
		if len(call.Args()) == 2 {
			pattern = call.Args()[1]
		} else if len(call.Args()) == 1 {
			pattern = call.Args()[0]
		}
		if pattern.Kind() != ast.LiteralKind {
			iss.ReportErrorAtID(pattern.ID(), "the pattern of matches must be written out, as in s.matches('^v[0-9]+$'): a pattern read from an output or param could take the operator's memory to compile")
		}
	}
}

// typeProblem says why a value of type t may not be built, or "".
func typeProblem(t *types.Type) string {
	switch t.Kind() {
	case types.DynKind, types.AnyKind:
		return "a value whose type is only known when it runs (dyn, or a list or map of mixed types) is not allowed: the cost of what it does cannot be bounded beforehand"
	case types.ListKind, types.MapKind:
		params := t.Parameters()
		for _, p := range params {
			switch p.Kind() {
			case types.ListKind, types.MapKind:
				what := "list"
				if t.Kind() == types.MapKind {
					what = "map"
				}
				return fmt.Sprintf("a %s of lists or maps is not allowed: comparing or looping over one can cost far more than building it", what)
			}
			if msg := typeProblem(p); msg != "" {
				return msg
			}
		}
	case types.OpaqueKind:
		for _, p := range t.Parameters() {
			if msg := typeProblem(p); msg != "" {
				return msg
			}
		}
	}
	return ""
}

// costError is an expression refused for its estimated cost.
type costError struct{ msg string }

func (e costError) Error() string { return e.msg }

// estimateMessage explains a refused estimate and what to do.
func estimateMessage(cost uint64, s sizes) string {
	est := fmt.Sprint(cost)
	if cost == math.MaxUint64 {
		est = "more than can be counted"
	}
	return fmt.Sprintf("the expression could cost %s CEL cost units with what it reads at its largest (outputs of %d bytes, params of %d, %d outputs a step); at most %d are allowed: build fewer or shorter strings and lists (replace, split, join and + cost a unit per character they build), and loop over fewer items (a split of an output can return as many parts as the output has characters; split(',', 100) returns at most 100)",
		est, s.output, s.param, MaxOutputs, EstimatedCostLimit)
}
