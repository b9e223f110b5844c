package lambdatool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/tools"
	"github.com/lambent/lambent/pkg/tools/calculator"
	"github.com/lambent/lambent/pkg/tools/lambdatool"
)

// hosted returns a hosted tool named name with handler h.
func hosted(name string, h tools.Handler) tools.Hosted {
	return tools.Hosted{Definition: api.ToolDefinition{Name: name, Description: "test tool " + name}, Handler: h}
}

func handle(t *testing.T, h tools.Hosted, payload string) tools.ToolResult {
	t.Helper()
	out, err := lambdatool.Handle(context.Background(), h, []byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	var r map[string]json.RawMessage
	if err := json.Unmarshal(out, &r); err != nil || len(r) != 2 || r["output"] == nil || r["is_error"] == nil {
		t.Fatalf("reply %s is not {\"output\",\"is_error\"}", out)
	}
	var reply tools.ToolResult
	_ = json.Unmarshal(out, &reply)
	return reply
}

func TestHandle(t *testing.T) {
	calc := calculator.Tool()
	if r := handle(t, calc, `{"call_id":"c1","name":"calculator","arguments":"{\"expression\":\"2^10\"}","response_id":"resp_1"}`); r.IsError || r.Output != "1024" {
		t.Errorf("calculator: %+v", r)
	}
	// The handler sees the call as the local executor would build it.
	var got tools.ToolCall
	echo := hosted("echo", func(_ context.Context, c tools.ToolCall) (string, error) { got = c; return "ok", nil })
	handle(t, echo, `{"call_id":"c2","name":"alias","arguments":"{}","response_id":"resp_2","tenant":"acme","future_field":true}`)
	if want := (tools.ToolCall{ID: "c2", Name: "alias", Arguments: "{}", ResponseID: "resp_2", Tenant: "acme"}); got != want {
		t.Errorf("call = %+v, want %+v", got, want)
	}
	handle(t, echo, `{"call_id":"c3","arguments":"{}"}`)
	if got.Name != "echo" {
		t.Errorf("a request without name runs as %q, want the tool's name", got.Name)
	}

	for name, payload := range map[string]string{
		"not json":         `hello`,
		"array":            `[]`,
		"arguments object": `{"call_id":"c","name":"calculator","arguments":{"expression":"1"}}`,
		"truncated":        `{"call_id":"c"`,
		"empty":            ``,
	} {
		if r := handle(t, calc, payload); !r.IsError || !strings.HasPrefix(r.Output, "Error: malformed tool request") {
			t.Errorf("%s: %+v, want an is_error reply", name, r)
		}
	}

	failing := hosted("f", func(context.Context, tools.ToolCall) (string, error) { return "", errors.New("no such city") })
	if r := handle(t, failing, `{"call_id":"c","name":"f","arguments":"{}"}`); !r.IsError || r.Output != "no such city" {
		t.Errorf("handler error: %+v", r)
	}
	panicking := hosted("p", func(context.Context, tools.ToolCall) (string, error) { panic("boom") })
	if r := handle(t, panicking, `{"call_id":"c","name":"p","arguments":"{}"}`); !r.IsError || !strings.Contains(r.Output, "panicked: boom") {
		t.Errorf("handler panic: %+v", r)
	}
	if r := handle(t, tools.Hosted{Definition: api.ToolDefinition{Name: "x"}}, `{"call_id":"c","name":"x","arguments":"{}"}`); !r.IsError {
		t.Errorf("no handler: %+v", r)
	}
}

func TestLambdaHandler(t *testing.T) {
	out, err := lambdatool.LambdaHandler(calculator.Tool()).Invoke(context.Background(), []byte(`{"call_id":"c","name":"calculator","arguments":"{\"expression\":\"3*3\"}"}`))
	if err != nil || string(out) != `{"output":"9","is_error":false}` {
		t.Fatalf("Invoke = %s, %v", out, err)
	}
}
