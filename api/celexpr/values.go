package celexpr

import (
	"fmt"
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// The variables an expression reads are CEL values built once an
// evaluation (values), so a read in a loop allocates nothing: through
// ext.NativeTypes each read of steps.NAME.outputs built the step and its
// outputs map again by reflection, hundreds of bytes a read.

// The CEL names of the object types, as the expression's errors show them.
const (
	stepTypeName     = "celexpr.Step"
	workflowTypeName = "celexpr.Workflow"
)

var (
	stepType     = types.NewObjectType(stepTypeName)
	workflowType = types.NewObjectType(workflowTypeName)
	outputsType  = types.NewMapType(types.StringType, types.StringType)
)

// fields are the fields of each object type.
var fields = map[string]map[string]*types.Type{
	stepTypeName:     {"phase": types.StringType, "outputs": outputsType},
	workflowTypeName: {"phase": types.StringType},
}

// object is a Step or a Workflow as CEL reads it: its fields as CEL
// values.
type object struct {
	typ    *types.Type
	fields map[string]ref.Val
	native any
}

func (o *object) ConvertToNative(t reflect.Type) (any, error) {
	if reflect.TypeOf(o.native) == t {
		return o.native, nil
	}
	return nil, fmt.Errorf("type conversion error from %s to %v", o.typ.TypeName(), t)
}

func (o *object) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case types.TypeType:
		return o.typ
	case o.typ:
		return o
	}
	return types.NewErr("type conversion error from %s to %s", o.typ.TypeName(), t.TypeName())
}

func (o *object) Equal(other ref.Val) ref.Val {
	p, ok := other.(*object)
	if !ok || p.typ != o.typ {
		return types.False
	}
	for name, v := range o.fields {
		if v.Equal(p.fields[name]) != types.True {
			return types.False
		}
	}
	return types.True
}

func (o *object) Type() ref.Type { return o.typ }

// Value is o itself, which the provider's field getters read.
func (o *object) Value() any { return o }

func (o *object) Get(field ref.Val) ref.Val {
	name, ok := field.(types.String)
	if !ok {
		return types.NewErr("no such field: %v", field)
	}
	if v, ok := o.fields[string(name)]; ok {
		return v
	}
	return types.NewErr("no such field: %s", name)
}

func (o *object) IsSet(field ref.Val) ref.Val {
	name, ok := field.(types.String)
	if !ok {
		return types.NewErr("no such field: %v", field)
	}
	_, ok = o.fields[string(name)]
	return types.Bool(ok)
}

var _ traits.Indexer = (*object)(nil)

// provider declares Step and Workflow to the checker and reads their
// fields from objects, in front of the environment's own provider.
type provider struct {
	types.Provider
}

// withObjects is the environment option that puts provider in front.
func withObjects(e *cel.Env) (*cel.Env, error) {
	return cel.CustomTypeProvider(&provider{Provider: e.CELTypeProvider()})(e)
}

func (p *provider) FindStructType(name string) (*types.Type, bool) {
	if _, ok := fields[name]; ok {
		return types.NewTypeTypeWithParam(types.NewObjectType(name)), true
	}
	return p.Provider.FindStructType(name)
}

func (p *provider) FindStructFieldNames(name string) ([]string, bool) {
	if f, ok := fields[name]; ok {
		names := make([]string, 0, len(f))
		for n := range f {
			names = append(names, n)
		}
		return names, true
	}
	return p.Provider.FindStructFieldNames(name)
}

func (p *provider) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	f, ok := fields[name]
	if !ok {
		return p.Provider.FindStructFieldType(name, field)
	}
	t, ok := f[field]
	if !ok {
		return nil, false
	}
	return &types.FieldType{
		Type: t,
		IsSet: func(obj any) bool {
			o, ok := obj.(*object)
			return ok && o.fields[field] != nil
		},
		GetFrom: func(obj any) (any, error) {
			o, ok := obj.(*object)
			if !ok {
				return nil, fmt.Errorf("no such field: %s", field)
			}
			return o.fields[field], nil
		},
	}, true
}

// values are in's variables as CEL values.
func (in Input) values(scope Scope) map[string]any {
	adapter := types.DefaultTypeAdapter
	steps := make(map[ref.Val]ref.Val, len(in.Steps))
	for name, s := range in.Steps {
		outs := s.Outputs
		if outs == nil {
			outs = map[string]string{}
		}
		steps[types.String(name)] = &object{typ: stepType, native: s,
			fields: map[string]ref.Val{"phase": types.String(s.Phase), "outputs": types.NewStringStringMap(adapter, outs)}}
	}
	params := in.Params
	if params == nil {
		params = map[string]string{}
	}
	vars := map[string]any{
		varSteps:  types.NewRefValMap(adapter, steps),
		varParams: types.NewStringStringMap(adapter, params),
	}
	if scope == Finally {
		vars[varWorkflow] = &object{typ: workflowType, native: Workflow{Phase: in.Phase},
			fields: map[string]ref.Val{"phase": types.String(in.Phase)}}
	}
	return vars
}
