package kinds

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	k8sjson "sigs.k8s.io/json"

	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
)

// Documents splits data, YAML or JSON with one or more documents as
// kubectl apply -f reads it, into JSON documents, leaving out empty ones.
// source names data in the error (a file, stdin).
func Documents(data []byte, source string) ([]json.RawMessage, error) {
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var docs []json.RawMessage
	for {
		var raw json.RawMessage
		err := d.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, cmdutil.Errorf(cmdutil.ExitInvalid, "Check the YAML syntax.", "%s is not valid YAML or JSON: %v", source, err)
		}
		if t := bytes.TrimSpace(raw); len(t) > 0 && !bytes.Equal(t, []byte("null")) {
			docs = append(docs, raw)
		}
	}
}

// DecodeStrict decodes a JSON document into obj as the API server's strict
// field validation reads it: a field obj's kind does not have, or a field
// given twice, is an error naming every such field.
func DecodeStrict(doc []byte, obj any) error {
	strict, err := k8sjson.UnmarshalStrict(doc, obj)
	if err != nil || len(strict) == 0 {
		return err
	}
	msgs := make([]string, len(strict))
	for i, e := range strict {
		msgs[i] = e.Error()
	}
	return errors.New(strings.Join(msgs, "; "))
}
