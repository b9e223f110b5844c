package bedrock

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	smithydocument "github.com/aws/smithy-go/document"
)

// jsonDocument parses one JSON value into a document for the SDK, keeping
// numbers exactly as written (the SDK writes a document.Number verbatim).
func jsonDocument(b []byte) (document.Interface, error) {
	v, err := decodeValue(b)
	if err != nil {
		return nil, err
	}
	return document.NewLazyDocument(exactNumbers(v)), nil
}

// decodeValue parses one JSON value, its numbers as json.Number.
func decodeValue(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

// exactNumbers replaces the json.Number values of v with document.Number.
func exactNumbers(v any) any {
	switch t := v.(type) {
	case json.Number:
		return smithydocument.Number(t)
	case map[string]any:
		for k, x := range t {
			t[k] = exactNumbers(x)
		}
	case []any:
		for i, x := range t {
			t[i] = exactNumbers(x)
		}
	}
	return v
}

// documentJSON is the JSON text of a document the SDK decoded (a toolUse
// input), or "{}" for none.
func documentJSON(d document.Interface) (string, error) {
	if d == nil {
		return "{}", nil
	}
	b, err := d.MarshalSmithyDocument()
	if err != nil {
		return "", err
	}
	if len(b) == 0 || string(b) == "null" {
		return "{}", nil
	}
	return string(b), nil
}
