package lambdaexec_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/engine"
	"github.com/lambent/lambent/pkg/provider/openai"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/tools"
	"github.com/lambent/lambent/pkg/tools/lambdaexec"
)

// TestOutputValidatorAndReflectionThroughLambda runs validated output with
// its validator and reflection handler as Lambda functions (built with the
// tools.Validator and tools.Reflector helpers, served by the local Invoke
// endpoint, invoked by the real SDK client): attempt 1's output is
// reflected by the Lambda, submitted and rejected by the validator Lambda;
// attempt 2's passes.
func TestOutputValidatorAndReflectionThroughLambda(t *testing.T) {
	validator := tools.Validator("check_report", "Checks a report.", func(_ context.Context, output json.RawMessage) ([]string, error) {
		var r struct {
			Score   int    `json:"score"`
			Summary string `json:"summary"`
		}
		if err := json.Unmarshal(output, &r); err != nil {
			return nil, err
		}
		if r.Score >= 5 && len(r.Summary) < 10 {
			return []string{"a score of 5 or more needs a summary of at least 10 characters"}, nil
		}
		return nil, nil
	})
	reflector := tools.Reflector("review_report", "Shows a report for review.", func(_ context.Context, output json.RawMessage) (string, error) {
		return "REVIEW: you are about to submit " + string(output), nil
	})
	ep := newEndpoint(t, map[string]tools.Hosted{
		lambdaexec.FunctionLogicalID("check_report"):  validator,
		lambdaexec.FunctionLogicalID("review_report"): reflector,
	})
	manifest := lambdaexec.LocalManifest("check_report", "review_report")
	ex, err := lambdaexec.New(ep.client, lambdaexec.Config{}, manifest.Tools, map[string]api.ToolDefinition{
		"check_report": validator.Definition, "review_report": reflector.Definition,
	})
	if err != nil {
		t.Fatal(err)
	}
	const short, long = `{"score":8,"summary":"ok"}`, `{"score":8,"summary":"solid quarter"}`
	fake := fakellm.New(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "report", Arguments: short}}},
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c2", Name: "submit", Arguments: `{}`}}},
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c3", Name: "report", Arguments: long}}},
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c4", Name: "submit", Arguments: `{}`}}},
	)
	defer fake.Close()
	eng, err := engine.New(engine.Config{
		Provider: openai.New(openai.Config{BaseURL: fake.URL, HTTPClient: fake.Client()}),
		Store:    store.NewMemory(store.MemoryConfig{}),
		Hosted:   ex,
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	req, err := api.DecodeCreateRequest([]byte(`{"model":"m","input":"report the quarter","tools":[{"type":"lambent:output","name":"report",
		"parameters":{"type":"object","properties":{"score":{"type":"integer"},"summary":{"type":"string"}},"required":["score","summary"]},
		"reflection":"lambent:review_report","validators":["lambent:check_report"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	rec := &responseRecorder{}
	if err := eng.CreateResponse(context.Background(), req, rec); err != nil {
		t.Fatal(err)
	}
	r := rec.resp
	if r == nil || r.Status != api.StatusCompleted {
		t.Fatalf("response = %+v, want completed", r)
	}
	last := r.Output[len(r.Output)-1]
	if last.Type != api.ItemMessage || last.Text() != long {
		t.Errorf("final message = %+v, want the output %s", last, long)
	}
	if r.Lambent == nil || len(r.Lambent.Attempts) != 2 {
		t.Fatalf("attempts = %+v, want 2", r.Lambent)
	}
	a1 := r.Lambent.Attempts[0]
	if a1.Valid || a1.Code != api.CodeValidationFailed || len(a1.Errors) != 1 || !strings.Contains(a1.Errors[0], "at least 10 characters") {
		t.Errorf("attempt 1 = %+v", a1)
	}
	if !r.Lambent.Attempts[1].Valid {
		t.Errorf("attempt 2 = %+v", r.Lambent.Attempts[1])
	}
	// The model read the Lambda's reflection, then the validator's errors.
	reqs := fake.Requests()
	if len(reqs) != 4 {
		t.Fatalf("model calls = %d, want 4", len(reqs))
	}
	// toolMsg is the result the model was sent of its last call of name.
	toolMsg := func(req fakellm.Request, name string) string {
		id, out := "", ""
		for _, m := range req.Messages {
			for _, c := range m.ToolCalls {
				if c.Function.Name == name {
					id = c.ID
				}
			}
			if m.Role == "tool" && m.ToolCallID == id {
				out = m.Content.String()
			}
		}
		if out == "" {
			t.Fatalf("no result of %s", name)
		}
		return out
	}
	if got := toolMsg(reqs[1], "report"); got != "REVIEW: you are about to submit "+short {
		t.Errorf("reflection = %q", got)
	}
	if got := toolMsg(reqs[2], "submit"); !strings.Contains(got, "check_report: a score of 5 or more needs a summary") {
		t.Errorf("feedback = %q", got)
	}
	// Two reflections and two validations, each one Lambda invocation.
	if st := ep.srv.Stats(); st.Invocations != 4 || st.FunctionErrors != 0 {
		t.Errorf("stats = %+v, want 4 invocations", st)
	}
}
