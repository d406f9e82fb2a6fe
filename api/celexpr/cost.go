package celexpr

import (
	"math"
	"strings"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/overloads"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
)

// The cost model, one table for the estimate and for evaluation (the
// estimate takes no account of MaxResultBytes: an expression that would
// build more with what it reads at its largest is refused before it
// runs, not failed when it does): every
// step of an evaluation costs a unit (a variable read, each field or
// index of it, a call), a list built 10 more and a map 30 (cel-go's
// figures), and a call on strings, bytes or lists what it reads and
// builds:
//
//   - a tenth of a unit per byte it reads (comparing, converting, trim,
//     startsWith, ...) and the product of two such tenths for contains
//     (cel-go's figures); for matches a unit per byte of the string times
//     the pattern's length, what Go's regexp may do (cel-go charges a
//     fortieth of that, and a loop of matches ran for a second within the
//     limit);
//   - a unit per byte or item it builds: +, replace, join, split's list,
//     bytes() and string(); charAt, indexOf, lastIndexOf, substring,
//     lowerAscii and upperAscii turn the whole string into characters
//     first, and are charged for it.
//
// Kubernetes' library (k8s.io/apiserver/pkg/cel/library) and cel-go
// charge replace and split by what they read, so a call that builds a
// megabyte from a few bytes costs next to nothing; that is what let a
// 320-character expression ask for tens of GiB. Here what a call builds
// is what it costs.
//
// The evaluation is metered here, not by cel-go's cost tracker: the
// tracker of cel-go v0.29 searches a stack that grows by two entries per
// loop iteration on every variable read, so a loop over n items took
// time in n² (a plain exists over the 32,768 characters of an output
// took seconds).

// Cost factors, cel-go's.
const (
	readFactor    = common.StringTraversalCostFactor   // 0.1 a byte read
	patternFactor = common.RegexStringLengthCostFactor // 0.25 a character of a pattern
	listCost      = common.ListCreateBaseCost          // 10
	mapCost       = common.MapCreateBaseCost           // 30
	structCost    = common.StructCreateBaseCost        // 40
)

// The overloads of the strings extension (cel-go's ext, version 2).
const (
	charAt          = "string_char_at_int"
	indexOf         = "string_index_of_string"
	indexOfFrom     = "string_index_of_string_int"
	lastIndexOf     = "string_last_index_of_string"
	lastIndexOfFrom = "string_last_index_of_string_int"
	lowerASCII      = "string_lower_ascii"
	upperASCII      = "string_upper_ascii"
	replaceAll      = "string_replace_string_string"
	replaceN        = "string_replace_string_string_int"
	splitAll        = "string_split_string"
	splitN          = "string_split_string_int"
	substring       = "string_substring_int"
	substringRange  = "string_substring_int_int"
	trim            = "string_trim"
	join            = "list_join"
	joinWith        = "list_join_string"
)

// costOptions are the estimate's side of the table, for the calls whose
// cost cel-go's checker does not size by what they build.
var costOptions = cel.CostEstimatorOptions(
	checker.OverloadCostEstimate(overloads.AddString, estimateConcat),
	checker.OverloadCostEstimate(overloads.AddBytes, estimateConcat),
	checker.OverloadCostEstimate(overloads.StringToBytes, estimateCopy),
	checker.OverloadCostEstimate(overloads.Matches, estimateMatches),
	checker.OverloadCostEstimate(overloads.MatchesString, estimateMatches),
	checker.OverloadCostEstimate(overloads.BytesToString, estimateCopy),
	checker.OverloadCostEstimate(charAt, estimateCharAt),
	checker.OverloadCostEstimate(indexOf, estimateSearch),
	checker.OverloadCostEstimate(indexOfFrom, estimateSearch),
	checker.OverloadCostEstimate(lastIndexOf, estimateSearch),
	checker.OverloadCostEstimate(lastIndexOfFrom, estimateSearch),
	checker.OverloadCostEstimate(lowerASCII, estimateCase),
	checker.OverloadCostEstimate(upperASCII, estimateCase),
	checker.OverloadCostEstimate(replaceAll, estimateReplace),
	checker.OverloadCostEstimate(replaceN, estimateReplace),
	checker.OverloadCostEstimate(splitAll, estimateSplit),
	checker.OverloadCostEstimate(splitN, estimateSplit),
	checker.OverloadCostEstimate(substring, estimateSubstring),
	checker.OverloadCostEstimate(substringRange, estimateSubstring),
	checker.OverloadCostEstimate(trim, estimateTrim),
	checker.OverloadCostEstimate(join, estimateJoin),
	checker.OverloadCostEstimate(joinWith, estimateJoin),
)

// callCost is the evaluation's side of the table: what a call cost, from
// its arguments and result.
func callCost(function, overload string, args []ref.Val, result ref.Val) uint64 {
	read := func(v ref.Val) uint64 { return tenths(length(v)) }
	switch overload {
	case overloads.AddString, overloads.AddBytes, overloads.StringToBytes, overloads.BytesToString:
		return 1 + length(result)
	case charAt:
		return 2 + length(args[0])
	case indexOf, indexOfFrom, lastIndexOf, lastIndexOfFrom:
		return 1 + length(args[0]) + tenths(length(args[0])*length(args[1]))
	case lowerASCII, upperASCII, substring, substringRange:
		return 1 + length(args[0]) + length(result)
	case replaceAll, replaceN:
		return 1 + read(args[0]) + length(result)
	case splitAll, splitN:
		return 1 + read(args[0]) + listCost + length(result)
	case join, joinWith:
		return 1 + length(args[0]) + length(result)
	case overloads.ContainsString:
		return 1 + read(args[0])*read(args[1])
	case overloads.Matches, overloads.MatchesString:
		return 1 + (1+length(args[0]))*length(args[1])
	case overloads.InList:
		return 1 + inCost(args[0], args[1])
	}
	switch function {
	case operators.Equals, operators.NotEquals, operators.Less, operators.LessEquals, operators.Greater, operators.GreaterEquals:
		if len(args) == 2 {
			return 1 + tenths(min(traversal(args[0]), traversal(args[1])))
		}
	}
	// Anything else reads its strings and bytes once, at most.
	var cost uint64 = 1
	for _, a := range args {
		switch a.(type) {
		case types.String, types.Bytes:
			cost += read(a)
		}
	}
	return cost
}

// tenths is n bytes read: a tenth of a unit each, rounded up.
func tenths(n uint64) uint64 { return uint64(math.Ceil(float64(n) * readFactor)) }

// length is the size of a string (in bytes, what it takes), bytes, list
// or map; 1 for anything else.
func length(v ref.Val) uint64 {
	switch t := v.(type) {
	case types.String:
		return uint64(len(t))
	case types.Bytes:
		return uint64(len(t))
	case traits.Sizer:
		if n, ok := t.Size().(types.Int); ok {
			return uint64(n)
		}
	}
	return 1
}

// traversal is what comparing v reads: its bytes, or its items' (lists
// and maps hold no lists or maps, the validator sees to it), or a step's
// fields'.
func traversal(v ref.Val) uint64 {
	switch t := v.(type) {
	case types.String, types.Bytes:
		return length(v)
	case *object:
		n := uint64(0)
		for _, f := range t.fields {
			n += traversal(f)
		}
		return n
	case traits.Lister:
		n := uint64(0)
		for it := t.Iterator(); it.HasNext() == types.True; {
			n += 1 + length(it.Next())
		}
		return n
	case traits.Mapper:
		n := uint64(0)
		for it := t.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			n += 1 + length(k) + length(t.Get(k))
		}
		return n
	}
	return 1
}

// inCost is what x in list compares: each item, as far as the shorter
// of it and x.
func inCost(x, list ref.Val) uint64 {
	l, ok := list.(traits.Lister)
	if !ok {
		return 1
	}
	n, xs := uint64(0), length(x)
	for it := l.Iterator(); it.HasNext() == types.True; {
		n += 1 + tenths(min(xs, length(it.Next())))
	}
	return n
}

// sizeOf is what the estimate knows of n's size.
func sizeOf(e checker.CostEstimator, n checker.AstNode) checker.SizeEstimate {
	if s := n.ComputedSize(); s != nil {
		return *s
	}
	if s := e.EstimateSize(n); s != nil {
		return *s
	}
	return checker.UnknownSizeEstimate()
}

func fixed(n uint64) checker.CostEstimate { return checker.FixedCostEstimate(n) }

// operands is the call's target and arguments, the target first.
func operands(target *checker.AstNode, args []checker.AstNode) []checker.AstNode {
	if target == nil {
		return args
	}
	return append([]checker.AstNode{*target}, args...)
}

func estimateConcat(e checker.CostEstimator, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	ops := operands(target, args)
	if len(ops) != 2 {
		return nil
	}
	size := sizeOf(e, ops[0]).Add(sizeOf(e, ops[1]))
	return &checker.CallEstimate{CostEstimate: fixed(1).Add(size.AsCost()), ResultSize: &size}
}

func estimateCopy(e checker.CostEstimator, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	ops := operands(target, args)
	if len(ops) != 1 {
		return nil
	}
	size := sizeOf(e, ops[0])
	return &checker.CallEstimate{CostEstimate: fixed(1).Add(size.AsCost()), ResultSize: &size}
}

func estimateMatches(e checker.CostEstimator, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	ops := operands(target, args)
	if len(ops) != 2 {
		return nil
	}
	s := sizeOf(e, ops[0]).Add(checker.FixedSizeEstimate(1))
	return &checker.CallEstimate{CostEstimate: fixed(1).Add(s.Multiply(sizeOf(e, ops[1])).AsCost())}
}

func estimateCharAt(e checker.CostEstimator, target *checker.AstNode, _ []checker.AstNode) *checker.CallEstimate {
	if target == nil {
		return nil
	}
	one := checker.FixedSizeEstimate(1)
	return &checker.CallEstimate{CostEstimate: fixed(2).Add(sizeOf(e, *target).AsCost()), ResultSize: &one}
}

func estimateSearch(e checker.CostEstimator, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	if target == nil || len(args) == 0 {
		return nil
	}
	s, sub := sizeOf(e, *target), sizeOf(e, args[0])
	return &checker.CallEstimate{CostEstimate: fixed(1).Add(s.AsCost()).Add(s.Multiply(sub).MultiplyByCostFactor(readFactor))}
}

func estimateCase(e checker.CostEstimator, target *checker.AstNode, _ []checker.AstNode) *checker.CallEstimate {
	if target == nil {
		return nil
	}
	s := sizeOf(e, *target)
	return &checker.CallEstimate{CostEstimate: fixed(1).Add(s.AsCost()).Add(s.AsCost()), ResultSize: &s}
}

func estimateSubstring(e checker.CostEstimator, target *checker.AstNode, _ []checker.AstNode) *checker.CallEstimate {
	if target == nil {
		return nil
	}
	s := sizeOf(e, *target)
	size := checker.SizeEstimate{Min: 0, Max: s.Max}
	return &checker.CallEstimate{CostEstimate: fixed(1).Add(s.AsCost()).Add(size.AsCost()), ResultSize: &size}
}

func estimateTrim(e checker.CostEstimator, target *checker.AstNode, _ []checker.AstNode) *checker.CallEstimate {
	if target == nil {
		return nil
	}
	s := sizeOf(e, *target)
	size := checker.SizeEstimate{Min: 0, Max: s.Max}
	return &checker.CallEstimate{CostEstimate: fixed(1).Add(s.MultiplyByCostFactor(readFactor)), ResultSize: &size}
}

func estimateReplace(e checker.CostEstimator, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	if target == nil || len(args) < 2 {
		return nil
	}
	s, old, repl := sizeOf(e, *target), sizeOf(e, args[0]), sizeOf(e, args[1])
	// At most one replacement per character, and one more at the end
	// when old may be empty; each adds at most repl.
	times := s.Max
	if old.Min == 0 && times < math.MaxUint64 {
		times++
	} else if old.Min > 1 {
		times = s.Max / old.Min
	}
	grown := checker.SizeEstimate{Min: 0, Max: times}.Multiply(checker.SizeEstimate{Min: 0, Max: repl.Max})
	size := checker.SizeEstimate{Min: 0, Max: s.Max}.Add(grown)
	return &checker.CallEstimate{CostEstimate: fixed(1).Add(s.MultiplyByCostFactor(readFactor)).Add(size.AsCost()), ResultSize: &size}
}

func estimateSplit(e checker.CostEstimator, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	if target == nil {
		return nil
	}
	s := sizeOf(e, *target)
	parts := checker.SizeEstimate{Min: 0, Max: s.Max}.Add(checker.FixedSizeEstimate(1))
	if len(args) > 1 && args[1].Expr().AsLiteral() != nil {
		if n, ok := args[1].Expr().AsLiteral().(types.Int); ok && n >= 0 {
			parts.Max = min(parts.Max, uint64(n))
		}
	}
	cost := fixed(1 + listCost).Add(s.MultiplyByCostFactor(readFactor)).Add(parts.AsCost())
	return &checker.CallEstimate{CostEstimate: cost, ResultSize: &parts}
}

func estimateJoin(e checker.CostEstimator, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	if target == nil {
		return nil
	}
	items := sizeOf(e, *target)
	// The items' sizes are not known: the longest string an expression
	// may read, each.
	item := sizeOf(e, itemOf{target: *target})
	sep := checker.FixedSizeEstimate(0)
	if len(args) > 0 {
		sep = sizeOf(e, args[0])
	}
	size := checker.SizeEstimate{Min: 0, Max: items.Max}.Multiply(item.Add(sep))
	return &checker.CallEstimate{CostEstimate: fixed(1).Add(items.AsCost()).Add(size.AsCost()), ResultSize: &size}
}

// itemOf is an item of a list, for the estimator to size.
type itemOf struct{ target checker.AstNode }

func (i itemOf) Path() []string {
	if p := i.target.Path(); p != nil {
		return append(p[:len(p):len(p)], "@items")
	}
	return nil
}

func (i itemOf) Type() *types.Type {
	if params := i.target.Type().Parameters(); len(params) == 1 {
		return params[0]
	}
	return types.DynType
}

func (i itemOf) Expr() ast.Expr                      { return nil }
func (i itemOf) ComputedSize() *checker.SizeEstimate { return nil }

// meter is an evaluation's meter: what it has cost, and the values of the
// calls' arguments, by node, for the calls' costs. One evaluation at a
// time uses it (Expression.Eval holds its lock).
type meter struct {
	cost, limit uint64
	vals        map[int64]ref.Val
}

func (m *meter) reset(limit uint64) {
	m.cost, m.limit = 0, limit
	clear(m.vals)
}

// charge adds cost and stops the evaluation past the limit, as cel-go's
// own tracker does.
func (m *meter) charge(id int64, val ref.Val, cost uint64) {
	m.vals[id] = val
	if m.cost += cost; m.cost > m.limit {
		panic(interpreter.EvalCancelledError{Cause: interpreter.CostLimitExceeded, Message: "operation cancelled: actual cost limit exceeded"})
	}
}

// decorate is the program's decorator: each node is metered, the calls
// that build more than they read are guarded (guard), and a pattern
// written out is compiled once.
func (m *meter) decorate(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
	switch n := i.(type) {
	case *meteredAttr, *meteredCall, *metered, interpreter.InterpretableConst:
		// Metered already (an attribute gains its qualifiers in place), or
		// free.
		return i, nil
	case interpreter.InterpretableAttribute:
		return &meteredAttr{InterpretableAttribute: n, m: m}, nil
	case interpreter.InterpretableCall:
		call, err := guard(n)
		if err != nil {
			return nil, err
		}
		return &meteredCall{InterpretableCall: call, m: m}, nil
	case interpreter.InterpretableConstructor:
		cost := uint64(structCost)
		switch n.Type() {
		case types.ListType:
			cost = listCost
		case types.MapType:
			cost = mapCost
		}
		return &metered{InterpretableV2: n, m: m, cost: cost}, nil
	}
	return &metered{InterpretableV2: i, m: m, cost: 1}, nil
}

// metered charges a node a fixed cost.
type metered struct {
	interpreter.InterpretableV2
	m    *meter
	cost uint64
}

func (n *metered) Exec(f *interpreter.ExecutionFrame) ref.Val {
	v := n.InterpretableV2.Exec(f)
	n.m.charge(n.ID(), v, n.cost)
	return v
}

func (n *metered) Eval(a interpreter.Activation) ref.Val { return n.Exec(interpreter.AsFrame(a)) }

// meteredAttr charges a variable read a unit, and each field or index of
// it another.
type meteredAttr struct {
	interpreter.InterpretableAttribute
	m     *meter
	quals uint64
}

func (n *meteredAttr) AddQualifier(q interpreter.Qualifier) (interpreter.Attribute, error) {
	n.quals++
	if _, err := n.InterpretableAttribute.AddQualifier(q); err != nil {
		return nil, err
	}
	return n, nil
}

func (n *meteredAttr) Exec(f *interpreter.ExecutionFrame) ref.Val {
	v := n.InterpretableAttribute.Exec(f)
	n.m.charge(n.ID(), v, 1+n.quals)
	return v
}

func (n *meteredAttr) Eval(a interpreter.Activation) ref.Val { return n.Exec(interpreter.AsFrame(a)) }

// meteredCall charges a call callCost, with its arguments' values as
// their nodes last gave them.
type meteredCall struct {
	interpreter.InterpretableCall
	m *meter
}

func (n *meteredCall) Exec(f *interpreter.ExecutionFrame) ref.Val {
	v := n.InterpretableCall.Exec(f)
	in := n.Args()
	args := make([]ref.Val, len(in))
	for k, a := range in {
		if c, ok := a.(interpreter.InterpretableConst); ok {
			args[k] = c.Value()
		} else {
			args[k] = n.m.vals[a.ID()]
		}
	}
	n.m.charge(n.ID(), v, callCost(n.Function(), n.OverloadID(), args, v))
	return v
}

func (n *meteredCall) Eval(a interpreter.Activation) ref.Val { return n.Exec(interpreter.AsFrame(a)) }

// guard makes +, replace, join and split count what they would build and
// fail past MaxResultBytes or MaxParts before building it, and compiles a
// pattern of matches written out. It replaces a call with one of the same
// function and overload whose implementation checks first; the
// implementations are cel-go's own (Adder.Add) or, for the strings
// library's, the Go functions it calls.
func guard(call interpreter.InterpretableCall) (interpreter.InterpretableCall, error) {
	var impl func(args ...ref.Val) ref.Val
	switch call.Function() {
	case operators.Add:
		impl = guardedAdd
	case "replace":
		impl = guardedReplace
	case "join":
		impl = guardedJoin
	case "split":
		impl = guardedSplit
	case overloads.Matches:
		if args := call.Args(); len(args) == 2 {
			if c, ok := args[1].(interpreter.InterpretableConst); ok {
				if pattern, ok := c.Value().(types.String); ok {
					return interpreter.MatchesRegexOptimization.Factory(call, string(pattern))
				}
			}
		}
		return call, nil
	default:
		return call, nil
	}
	return interpreter.NewCall(call.ID(), call.Function(), call.OverloadID(), call.Args(), impl), nil
}

// tooLong is the error of a call that would build more than
// MaxResultBytes.
func tooLong(fn string, n int) ref.Val {
	return types.NewErr("%s would build a string of %d bytes; at most %d are allowed", fn, n, MaxResultBytes)
}

func guardedAdd(args ...ref.Val) ref.Val {
	if len(args) != 2 {
		return types.NewErr("no such overload: _+_")
	}
	switch l := args[0].(type) {
	case types.String:
		if r, ok := args[1].(types.String); ok && len(l)+len(r) > MaxResultBytes {
			return tooLong("+", len(l)+len(r))
		}
	case types.Bytes:
		if r, ok := args[1].(types.Bytes); ok && len(l)+len(r) > MaxResultBytes {
			return tooLong("+", len(l)+len(r))
		}
	}
	if a, ok := args[0].(traits.Adder); ok && args[0].Type().HasTrait(traits.AdderType) {
		return a.Add(args[1])
	}
	return types.NewErr("no such overload: _+_")
}

// stringArgs is args as strs strings and an optional int, -1 without
// it: the arguments of replace and split with their optional count.
func stringArgs(args []ref.Val, strs int) ([]string, int64, bool) {
	if len(args) != strs && len(args) != strs+1 {
		return nil, 0, false
	}
	out := make([]string, strs)
	for k := range strs {
		s, ok := args[k].(types.String)
		if !ok {
			return nil, 0, false
		}
		out[k] = string(s)
	}
	n := int64(-1)
	if len(args) == strs+1 {
		i, ok := args[strs].(types.Int)
		if !ok {
			return nil, 0, false
		}
		n = int64(i)
	}
	return out, n, true
}

func guardedReplace(args ...ref.Val) ref.Val {
	strs, n, ok := stringArgs(args, 3)
	if !ok {
		return types.NewErr("no such overload: replace")
	}
	s, old, repl := strs[0], strs[1], strs[2]
	if size := replacedSize(s, old, repl, n); size > MaxResultBytes {
		return tooLong("replace", size)
	}
	return types.String(strings.Replace(s, old, repl, int(n)))
}

// replacedSize is the length of strings.Replace(s, old, repl, n), counted
// as it counts: an empty old matches before each character and at the
// end.
func replacedSize(s, old, repl string, n int64) int {
	times := strings.Count(s, old)
	if n >= 0 && int64(times) > n {
		times = int(n)
	}
	return len(s) + times*(len(repl)-len(old))
}

// splitParts is the number of parts of strings.SplitN(s, sep, n): one a
// character for an empty sep.
func splitParts(s, sep string, n int64) int {
	parts := strings.Count(s, sep) + 1
	if sep == "" {
		parts = utf8.RuneCountInString(s)
	}
	if n >= 0 && int64(parts) > n {
		parts = int(n)
	}
	return parts
}

func guardedSplit(args ...ref.Val) ref.Val {
	strs, n, ok := stringArgs(args, 2)
	if !ok {
		return types.NewErr("no such overload: split")
	}
	s, sep := strs[0], strs[1]
	if parts := splitParts(s, sep, n); parts > MaxParts {
		return types.NewErr("split would return %d parts; at most %d are allowed", parts, MaxParts)
	}
	return types.DefaultTypeAdapter.NativeToValue(strings.SplitN(s, sep, int(n)))
}

func guardedJoin(args ...ref.Val) ref.Val {
	if len(args) != 1 && len(args) != 2 {
		return types.NewErr("no such overload: join")
	}
	list, ok := args[0].(traits.Lister)
	if !ok {
		return types.NewErr("no such overload: join")
	}
	sep := ""
	if len(args) == 2 {
		s, ok := args[1].(types.String)
		if !ok {
			return types.NewErr("no such overload: join")
		}
		sep = string(s)
	}
	n := int(list.Size().(types.Int))
	parts := make([]string, 0, min(n, MaxParts))
	size := 0
	for k := range n {
		item := list.Get(types.Int(k))
		s, ok := item.(types.String)
		if !ok {
			return types.NewErr("join: invalid input: %v", item)
		}
		if k > 0 {
			size += len(sep)
		}
		if size += len(s); size > MaxResultBytes {
			// Stop counting: the rest could be long.
			return types.NewErr("join would build a string of more than %d bytes; at most %d are allowed", MaxResultBytes, MaxResultBytes)
		}
		parts = append(parts, string(s))
	}
	return types.String(strings.Join(parts, sep))
}
