package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/lambent/lambent/pkg/tools"
)

// A validator built with tools.Validator answers the validator contract:
// {"valid","errors"} from its function's problems, an is_error result for
// its function's error or malformed arguments.
func TestValidatorContract(t *testing.T) {
	v := tools.Validator("positive", "Checks that n is positive.", func(_ context.Context, out json.RawMessage) ([]string, error) {
		var o struct{ N *int }
		if err := json.Unmarshal(out, &o); err != nil || o.N == nil {
			return nil, errors.New("no n")
		}
		if *o.N <= 0 {
			return []string{"n must be positive"}, nil
		}
		return nil, nil
	})
	for _, c := range []struct {
		args, want string
		isError    bool
	}{
		{`{"output":{"n":3}}`, `{"valid":true,"errors":[]}`, false},
		{`{"output":{"n":-3}}`, `{"valid":false,"errors":["n must be positive"]}`, false},
		{`{"output":{}}`, "no n", true},
		{`{"n":3}`, `arguments must be {"output": …}: output is missing`, true},
		{`[1]`, "", true},
	} {
		res := tools.RunHandler(context.Background(), v.Handler, tools.ToolCall{ID: "c", Name: "positive", Arguments: c.args})
		if res.IsError != c.isError || c.want != "" && res.Output != c.want {
			t.Errorf("%s: got %+v, want %q (is_error %v)", c.args, res, c.want, c.isError)
		}
	}
	r := tools.Reflector("show", "Shows the output.", func(_ context.Context, out json.RawMessage) (string, error) {
		return "you wrote " + string(out), nil
	})
	if res := tools.RunHandler(context.Background(), r.Handler, tools.ToolCall{Arguments: `{"output":[1,2]}`}); res.Output != "you wrote [1,2]" || res.IsError {
		t.Errorf("reflector = %+v", res)
	}
	if v.Definition.Name != "positive" || len(v.Definition.Parameters) == 0 {
		t.Errorf("definition = %+v", v.Definition)
	}
}
