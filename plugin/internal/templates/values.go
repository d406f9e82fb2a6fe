package templates

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
)

// ValueFlags are the flags that give a template its values: --set,
// -f/--values, --secret and --secret-file. Every command that renders a
// template embeds them, so they parse the same way everywhere.
type ValueFlags struct {
	Set         []string
	ValuesFiles []string
	Secret      []string
	SecretFile  []string
}

// AddFlags registers the flags. valuesShort is the shorthand of --values,
// "f" where -f is free.
func (f *ValueFlags) AddFlags(fs *pflag.FlagSet, valuesShort string) {
	fs.StringArrayVar(&f.Set, "set", nil, "Set a template parameter: --set NAME=VALUE (repeatable; wins over --values).")
	fs.StringArrayVarP(&f.ValuesFiles, "values", valuesShort, nil, "YAML file mapping parameter names to values (repeatable; later files win).")
	fs.StringArrayVar(&f.Secret, "secret", nil, "Set a secret parameter: --secret NAME=VALUE. It goes into a Secret and is never printed.")
	fs.StringArrayVar(&f.SecretFile, "secret-file", nil, "Set a secret parameter from a file's content: --secret-file NAME=PATH.")
}

// Values parses the flags: parameter values, and secret values.
func (f *ValueFlags) Values() (map[string]string, map[string][]byte, error) {
	params := map[string]string{}
	for _, file := range f.ValuesFiles {
		vals, err := ReadValuesFile(file)
		if err != nil {
			return nil, nil, err
		}
		for k, v := range vals {
			params[k] = v
		}
	}
	set, err := ParseSet("--set", f.Set)
	if err != nil {
		return nil, nil, err
	}
	for k, v := range set {
		params[k] = v
	}

	secrets := map[string][]byte{}
	sec, err := ParseSet("--secret", f.Secret)
	if err != nil {
		return nil, nil, err
	}
	for k, v := range sec {
		secrets[k] = []byte(v)
	}
	files, err := ParseSet("--secret-file", f.SecretFile)
	if err != nil {
		return nil, nil, err
	}
	for _, k := range sortedKeys(files) {
		if _, dup := secrets[k]; dup {
			return nil, nil, cmdutil.Usage("Give each secret once.", "secret %q is given with both --secret and --secret-file", k)
		}
		data, err := os.ReadFile(files[k])
		if err != nil {
			return nil, nil, cmdutil.Usage("--secret-file takes NAME=PATH to a readable file.", "--secret-file %s: %v", k, err)
		}
		secrets[k] = data
	}
	return params, secrets, nil
}

// ParseSet parses NAME=VALUE items of the flag called flag. The value is
// everything after the first '='; it may be empty. A later item wins over
// an earlier one with the same name. Errors about --secret never quote the
// item: a user who forgot "NAME=" typed the secret itself.
func ParseSet(flag string, items []string) (map[string]string, error) {
	out := map[string]string{}
	secret := flag == "--secret"
	for i, item := range items {
		name, value, ok := strings.Cut(item, "=")
		hint := fmt.Sprintf("Write %s NAME=VALUE, for example %s image=nginx:1.27.", flag, flag)
		if secret {
			hint = "Write --secret NAME=VALUE, for example --secret DB_PASSWORD=...; the item is not shown as it may hold a secret."
		}
		switch {
		case secret && (!ok || name == "" || !paramNameRE.MatchString(name) || len(name) > 63):
			return nil, cmdutil.Usage(hint, "bad --secret item #%d: want NAME=VALUE with NAME a parameter name", i+1)
		case !ok:
			return nil, cmdutil.Usage(hint, "bad %s %q: want NAME=VALUE", flag, item)
		case name == "":
			return nil, cmdutil.Usage(hint, "bad %s item: the name before '=' is empty", flag)
		case !paramNameRE.MatchString(name) || len(name) > 63:
			return nil, cmdutil.Usage(hint, "bad %s item: %q is not a parameter name (letters, digits, '_' and '-', starting with a letter or '_')", flag, name)
		}
		out[name] = value
	}
	return out, nil
}

// ReadValuesFile reads a YAML map of parameter names to values. Values may
// be strings, numbers or booleans; a map of strings is a labels value
// ("k=v,k2=v2").
func ReadValuesFile(file string) (map[string]string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, cmdutil.Usage("-f/--values takes a YAML file mapping parameter names to values.", "cannot read values file: %v", err)
	}
	var raw map[string]any
	if err := yaml.Unmarshal(data, &raw, useNumber); err != nil {
		return nil, cmdutil.Usage("A values file is a YAML map, for example 'image: nginx:1.27'.", "values file %s: %s", file, cleanYAMLError(err))
	}
	out := map[string]string{}
	for _, k := range sortedKeys(raw) {
		if !paramNameRE.MatchString(k) {
			return nil, cmdutil.Usage("Keys are parameter names.", "values file %s: %q is not a parameter name", file, k)
		}
		s, err := valueText(raw[k])
		if err != nil {
			return nil, cmdutil.Usage("Values are strings, numbers, booleans, or maps of strings for labels parameters.", "values file %s: %s: %v", file, k, err)
		}
		out[k] = s
	}
	return out, nil
}

func valueText(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case json.Number:
		return v.String(), nil
	case bool:
		return strconv.FormatBool(v), nil
	case nil:
		return "", nil
	case map[string]any:
		var pairs []string
		for _, k := range sortedKeys(v) {
			s, err := valueText(v[k])
			if _, nested := v[k].(map[string]any); err != nil || nested {
				return "", fmt.Errorf("a map's values must be strings")
			}
			pairs = append(pairs, k+"="+s)
		}
		slices.Sort(pairs)
		return strings.Join(pairs, ","), nil
	}
	return "", fmt.Errorf("want a string, number, boolean or map, got a %T", v)
}
