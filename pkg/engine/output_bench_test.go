package engine

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/engine/schemacheck"
	"github.com/lambent/lambent/pkg/limits"
	"github.com/lambent/lambent/pkg/provider"
)

// benchSchema is a realistic output schema: nested objects, an array of
// findings, enums, bounds and a format.
const benchSchema = `{"type":"object","additionalProperties":false,"required":["title","score","verdict","findings","reviewed_at"],
"properties":{"title":{"type":"string","minLength":1,"maxLength":200},"score":{"type":"integer","minimum":0,"maximum":100},
"verdict":{"enum":["pass","fail","needs_review"]},"reviewed_at":{"type":"string","format":"date-time"},
"findings":{"type":"array","maxItems":50,"items":{"type":"object","additionalProperties":false,"required":["id","severity","text"],
"properties":{"id":{"type":"string","pattern":"^F[0-9]+$"},"severity":{"enum":["low","medium","high"]},"text":{"type":"string"},
"lines":{"type":"array","items":{"type":"integer","minimum":1}}}}}}}`

// benchOutput is an output with ten findings; benchInvalid breaks three
// constraints of it.
var benchOutput, benchInvalid = func() (string, string) {
	type finding struct {
		ID       string `json:"id"`
		Severity string `json:"severity"`
		Text     string `json:"text"`
		Lines    []int  `json:"lines"`
	}
	out := map[string]any{"title": "Quarterly review", "score": 87, "verdict": "pass", "reviewed_at": "2025-10-26T12:00:00Z"}
	var fs []finding
	for i := 0; i < 10; i++ {
		fs = append(fs, finding{ID: "F" + string(rune('0'+i)), Severity: "medium", Text: "A finding that explains what was seen and why it matters.", Lines: []int{i + 1, i + 2}})
	}
	out["findings"] = fs
	valid, _ := json.Marshal(out)
	out["score"], out["verdict"], out["reviewed_at"] = 187, "great", "yesterday"
	invalid, _ := json.Marshal(out)
	return string(valid), string(invalid)
}()

// BenchmarkValidateOutput measures validated output's own cost: compiling
// the output schema (once per request) and validating one output (once per
// attempt), valid and invalid; reported in µs.
func BenchmarkValidateOutput(b *testing.B) {
	b.Run("compile_per_request", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := schemacheck.Compile(json.RawMessage(benchSchema), limits.DefaultSchemaPatterns); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "µs/request")
	})
	s, err := schemacheck.Compile(json.RawMessage(benchSchema), limits.DefaultSchemaPatterns)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name, output string
		errs         int
	}{{"attempt_valid", benchOutput, 0}, {"attempt_invalid", benchInvalid, 3}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if errs := schemacheck.Errors(s, c.output); len(errs) != c.errs {
					b.Fatalf("errors = %v, want %d", errs, c.errs)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "µs/attempt")
		})
	}
}

// outputProvider answers every model call with a call of the output tool.
type outputProvider struct{}

func (outputProvider) Complete(context.Context, *provider.Request) (*provider.Result, error) {
	return &provider.Result{ToolCalls: []api.Item{call("call_o", "report", benchOutput)}, FinishReason: provider.FinishToolCalls, Usage: api.Usage{InputTokens: 10, OutputTokens: 2}}, nil
}

func (p outputProvider) Stream(ctx context.Context, req *provider.Request, fn func(provider.Delta) error) (*provider.Result, error) {
	res, _ := p.Complete(ctx, req)
	_ = fn(provider.Delta{Kind: provider.DeltaToolCall, ToolCallID: "call_o", ToolName: "report", Text: benchOutput})
	return res, nil
}

// BenchmarkOutputResponse measures a whole validated-output response with
// an instant model: decode-free engine cost of one attempt (model call,
// output call, schema compile and validation, final message, store).
func BenchmarkOutputResponse(b *testing.B) {
	e, _ := newEngineB(b, outputProvider{}, newMock(echoTool))
	req, err := api.DecodeCreateRequest([]byte(`{"input":"review","tools":[{"type":"lambent:output","name":"report","parameters":` + benchSchema + `}]}`))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := e.CreateResponse(context.Background(), req, discard{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "µs/response")
}
