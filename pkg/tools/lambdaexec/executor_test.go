package lambdaexec_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lambent/lambent/internal/testing/localinvoke"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/tools"
	"github.com/lambent/lambent/pkg/tools/calculator"
	"github.com/lambent/lambent/pkg/tools/lambdaexec"
)

func TestExecuteSuccess(t *testing.T) {
	ep := newEndpoint(t, map[string]tools.Hosted{"CalculatorToolFunction": calculator.Tool()})
	for _, fn := range []string{
		"CalculatorToolFunction",
		"arn:aws:lambda:us-east-1:123456789012:function:CalculatorToolFunction",
		"arn:aws:lambda:us-east-1:123456789012:function:CalculatorToolFunction:live",
	} {
		t.Run(fn, func(t *testing.T) {
			ex := ep.executor(t, lambdaexec.Config{}, lambdaexec.ManifestFor(map[string]string{"calculator": fn}))
			res := execute(t, ex, "calculator", `{"expression":"2*(3+4)"}`)
			if res.IsError || res.Output != "14" {
				t.Fatalf("result = %+v, want output 14", res)
			}
		})
	}
	t.Run("qualifier", func(t *testing.T) {
		m := lambdaexec.ManifestFor(map[string]string{"calculator": "CalculatorToolFunction"})
		m.Tools[0].Backing.Qualifier = "7"
		res := execute(t, ep.executor(t, lambdaexec.Config{}, m), "calculator", `{"expression":"1+1"}`)
		if res.IsError || res.Output != "2" {
			t.Fatalf("result = %+v, want output 2", res)
		}
	})
}

func TestExecuteToolError(t *testing.T) {
	// A handler error is the tool's own is_error reply, not a function error.
	ep := newEndpoint(t, map[string]tools.Hosted{"CalculatorToolFunction": calculator.Tool()})
	ex := ep.executor(t, lambdaexec.Config{}, lambdaexec.ManifestFor(map[string]string{"calculator": "CalculatorToolFunction"}))
	res := execute(t, ex, "calculator", `{"expression":"1/0"}`)
	if !res.IsError || !strings.Contains(res.Output, "division by zero") {
		t.Fatalf("result = %+v, want the calculator's division error", res)
	}
	if st := ep.srv.Stats(); st.FunctionErrors != 0 {
		t.Fatalf("function errors = %d, want 0", st.FunctionErrors)
	}
}

func TestExecuteFunctionError(t *testing.T) {
	t.Run("injected", func(t *testing.T) {
		ep := newEndpoint(t, map[string]tools.Hosted{"fn": calculator.Tool()},
			localinvoke.WithFunctionError("Runtime.ExitError", "RequestId: 42 Error: Runtime exited with error: exit status 2"))
		ex := ep.executor(t, lambdaexec.Config{}, lambdaexec.ManifestFor(map[string]string{"calculator": "fn"}))
		res := execute(t, ex, "calculator", `{"expression":"1"}`)
		want := "Error: tool calculator failed (Lambda function error, Unhandled): Runtime.ExitError: RequestId: 42 Error: Runtime exited with error: exit status 2"
		if !res.IsError || res.Output != want {
			t.Fatalf("result = %+v, want is_error %q", res, want)
		}
	})
	t.Run("returned", func(t *testing.T) {
		ep := newEndpoint(t, nil, localinvoke.WithFunction("fn", func(context.Context, []byte) ([]byte, error) {
			return nil, &localinvoke.FunctionError{Type: "Custom.Failure", Message: "disk on fire"}
		}))
		ex := ep.executor(t, lambdaexec.Config{}, manifestOf(map[string]string{"t": "fn"}))
		res := execute(t, ex, "t", `{}`)
		if !res.IsError || !strings.Contains(res.Output, "Custom.Failure: disk on fire") {
			t.Fatalf("result = %+v, want errorType and errorMessage", res)
		}
	})
	t.Run("panic", func(t *testing.T) {
		ep := newEndpoint(t, nil, localinvoke.WithFunction("fn", func(context.Context, []byte) ([]byte, error) {
			panic(errors.New("nil map write"))
		}))
		ex := ep.executor(t, lambdaexec.Config{}, manifestOf(map[string]string{"t": "fn"}))
		res := execute(t, ex, "t", `{}`)
		if !res.IsError || !strings.Contains(res.Output, "errorString: nil map write") {
			t.Fatalf("result = %+v, want the panic as function error", res)
		}
	})
}

// A function that fails on an AWS error of its own (a Python or Node tool
// letting an SDK exception through) names its role, its resources and the
// account in the message: the model and the client read what failed,
// without them (the log line has the whole message).
func TestFunctionErrorHidesAWSIdentifiers(t *testing.T) {
	const msg = "User: arn:aws:sts::123456789012:assumed-role/tool-role/fn is not authorized to perform: dynamodb:GetItem " +
		"on resource: arn:aws:dynamodb:us-east-1:123456789012:table/secrets because no identity-based policy allows the dynamodb:GetItem action " +
		"(account 123456789012)"
	ep := newEndpoint(t, nil, localinvoke.WithFunction("fn", func(context.Context, []byte) ([]byte, error) {
		return nil, &localinvoke.FunctionError{Type: "AccessDeniedException", Message: msg}
	}))
	ex := ep.executor(t, lambdaexec.Config{}, manifestOf(map[string]string{"t": "fn"}))
	res := execute(t, ex, "t", `{}`)
	if !res.IsError || !strings.Contains(res.Output, "AccessDeniedException: User: ") ||
		!strings.Contains(res.Output, "is not authorized to perform: dynamodb:GetItem on resource: ") {
		t.Fatalf("result = %+v, want the function error's type and message", res)
	}
	for _, leak := range []string{"123456789012", "arn:aws", "tool-role", "table/secrets"} {
		if strings.Contains(res.Output, leak) {
			t.Errorf("output %q names %q", res.Output, leak)
		}
	}
}

// A function that answers an AWS error's text as its reply, not in the
// {"output", "is_error"} shape (a handler returning the exception's
// message), shows the model the reply's start without ARNs and account ids,
// as a function error's.
func TestMalformedReplyHidesAWSIdentifiers(t *testing.T) {
	const msg = `"User: arn:aws:sts::123456789012:assumed-role/tool-role/fn is not authorized to perform: dynamodb:GetItem"`
	ep := newEndpoint(t, nil, localinvoke.WithFunction("fn", func(context.Context, []byte) ([]byte, error) {
		return []byte(msg), nil
	}))
	ex := ep.executor(t, lambdaexec.Config{}, manifestOf(map[string]string{"t": "fn"}))
	res := execute(t, ex, "t", `{}`)
	if !res.IsError || !strings.Contains(res.Output, "malformed reply") || !strings.Contains(res.Output, "is not authorized to perform") {
		t.Fatalf("result = %+v, want the malformed reply's start", res)
	}
	for _, leak := range []string{"123456789012", "arn:aws", "tool-role"} {
		if strings.Contains(res.Output, leak) {
			t.Errorf("output %q names %q", res.Output, leak)
		}
	}
}

func TestExecuteTimeout(t *testing.T) {
	release := make(chan struct{}) // never released: the invocation is held
	ep := newEndpoint(t, map[string]tools.Hosted{"fn": calculator.Tool()}, localinvoke.WithHold(release))
	ex := ep.executor(t, lambdaexec.Config{}, lambdaexec.ManifestFor(map[string]string{"calculator": "fn"}))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	res, err := ex.Execute(ctx, tools.ToolCall{ID: "call_t", Name: "calculator", Arguments: `{"expression":"1"}`})
	if err != nil {
		t.Fatalf("Execute returned an error: %v", err)
	}
	if !res.IsError || !strings.Contains(res.Output, "timed out") || res.CallID != "call_t" {
		t.Fatalf("result = %+v, want an is_error timeout", res)
	}
	if st := ep.srv.Stats(); st.Invocations != 0 || st.Requests != 1 {
		t.Fatalf("stats = %+v, want one held request and no invocation", st)
	}
}

func TestExecuteCancelled(t *testing.T) {
	release := make(chan struct{})
	ep := newEndpoint(t, map[string]tools.Hosted{"fn": calculator.Tool()}, localinvoke.WithHold(release))
	ex := ep.executor(t, lambdaexec.Config{}, lambdaexec.ManifestFor(map[string]string{"calculator": "fn"}))
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for ep.srv.Stats().Requests == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	res, err := ex.Execute(ctx, tools.ToolCall{ID: "call_c", Name: "calculator", Arguments: `{"expression":"1"}`})
	if !errors.Is(err, context.Canceled) || res != nil {
		t.Fatalf("Execute = %+v, %v; want nil and context.Canceled", res, err)
	}
}

func TestExecuteThrottleThenSuccess(t *testing.T) {
	const throttles = 3
	ep := newEndpoint(t, map[string]tools.Hosted{"fn": calculator.Tool()}, localinvoke.WithThrottle(throttles))
	ex := ep.executor(t, lambdaexec.Config{BaseDelay: time.Millisecond, MaxDelay: 4 * time.Millisecond},
		lambdaexec.ManifestFor(map[string]string{"calculator": "fn"}))
	res := execute(t, ex, "calculator", `{"expression":"6*7"}`)
	if res.IsError || res.Output != "42" {
		t.Fatalf("result = %+v, want 42 after the throttles", res)
	}
	st := ep.srv.Stats()
	if st.Requests != throttles+1 || st.Throttled != throttles || st.Invocations != 1 {
		t.Fatalf("stats = %+v, want %d throttled requests then one invocation", st, throttles)
	}
}

func TestExecuteThrottleRetriesExhausted(t *testing.T) {
	ep := newEndpoint(t, map[string]tools.Hosted{"fn": calculator.Tool()}, localinvoke.WithThrottle(1000))
	ex := ep.executor(t, lambdaexec.Config{MaxRetries: 2, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond},
		lambdaexec.ManifestFor(map[string]string{"calculator": "fn"}))
	res := execute(t, ex, "calculator", `{"expression":"1"}`)
	if !res.IsError || !strings.Contains(res.Output, "TooManyRequestsException after 3 attempts") {
		t.Fatalf("result = %+v, want an is_error throttle", res)
	}
	if st := ep.srv.Stats(); st.Requests != 3 || st.Invocations != 0 {
		t.Fatalf("stats = %+v, want 3 requests (1 + 2 retries), no invocation", st)
	}
}

func TestExecuteThrottleBeyondBudget(t *testing.T) {
	// The backoff (at least 5 s) does not fit in the call's 2 s budget: the
	// executor gives up at once instead of sleeping past the deadline.
	ep := newEndpoint(t, map[string]tools.Hosted{"fn": calculator.Tool()}, localinvoke.WithThrottle(1000))
	ex := ep.executor(t, lambdaexec.Config{BaseDelay: 10 * time.Second, MaxDelay: 10 * time.Second},
		lambdaexec.ManifestFor(map[string]string{"calculator": "fn"}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	res, err := ex.Execute(ctx, tools.ToolCall{ID: "call_1", Name: "calculator", Arguments: `{"expression":"1"}`})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(res.Output, "no time left to retry") {
		t.Fatalf("result = %+v, want an is_error throttle", res)
	}
	if ctx.Err() != nil {
		t.Fatal("the executor waited for the deadline instead of giving up")
	}
	if st := ep.srv.Stats(); st.Requests != 1 {
		t.Fatalf("requests = %d, want 1", st.Requests)
	}
}

func TestExecuteOversizeOutput(t *testing.T) {
	big := strings.Repeat("x", 100_000)
	ep := newEndpoint(t, map[string]tools.Hosted{"fn": hosted("big", func(context.Context, tools.ToolCall) (string, error) { return big, nil })})
	t.Run("default", func(t *testing.T) {
		ex := ep.executor(t, lambdaexec.Config{}, manifestOf(map[string]string{"big": "fn"}))
		res := execute(t, ex, "big", `{}`)
		want := big[:65536] + "\n[output truncated: 100000 bytes, showing the first 65536]"
		if res.IsError || res.Output != want {
			t.Fatalf("output has %d bytes: %.400q, want the first 65536 and the note", len(res.Output), res.Output)
		}
	})
	t.Run("setting", func(t *testing.T) {
		ex := ep.executor(t, lambdaexec.Config{MaxOutput: 10}, manifestOf(map[string]string{"big": "fn"}))
		res := execute(t, ex, "big", `{}`)
		if want := "xxxxxxxxxx\n[output truncated: 100000 bytes, showing the first 10]"; res.Output != want {
			t.Fatalf("output = %q, want %q", res.Output, want)
		}
	})
}

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"hello", 5, "hello"},
		{"hello", 10, "hello"},
		{"hello!", 5, "hello\n[output truncated: 6 bytes, showing the first 5]"},
		{"aé", 2, "a\n[output truncated: 3 bytes, showing the first 1]"}, // no split rune
		{"日本", 4, "日\n[output truncated: 6 bytes, showing the first 3]"},
	} {
		if got := tools.Truncate(tc.in, tc.max); got != tc.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

func TestExecuteOversizeRequest(t *testing.T) {
	ep := newEndpoint(t, map[string]tools.Hosted{"fn": calculator.Tool()})
	ex := ep.executor(t, lambdaexec.Config{}, lambdaexec.ManifestFor(map[string]string{"calculator": "fn"}))
	args := `{"expression":"` + strings.Repeat("1", lambdaexec.MaxPayloadBytes) + `"}`
	res := execute(t, ex, "calculator", args)
	if !res.IsError || !strings.Contains(res.Output, "too large") {
		t.Fatalf("result = %.200s, want an is_error refusal", res.Output)
	}
	if st := ep.srv.Stats(); st.Requests != 0 {
		t.Fatalf("requests = %d, want none: the payload is refused before sending", st.Requests)
	}
}

func TestExecuteMalformedReply(t *testing.T) {
	for name, payload := range map[string]string{
		"not json":        "<html>oops</html>",
		"array":           `[1,2,3]`,
		"no output":       `{"result":"42"}`,
		"output not text": `{"output":42,"is_error":false}`,
		"null":            `null`,
		"empty":           ``,
	} {
		t.Run(name, func(t *testing.T) {
			ep := newEndpoint(t, nil, localinvoke.WithFunction("fn", func(context.Context, []byte) ([]byte, error) { return []byte(payload), nil }))
			ex := ep.executor(t, lambdaexec.Config{}, manifestOf(map[string]string{"t": "fn"}))
			res := execute(t, ex, "t", `{}`)
			if !res.IsError || !strings.Contains(res.Output, "malformed reply") {
				t.Fatalf("result = %+v, want an is_error malformed reply", res)
			}
		})
	}
}

func TestExecuteReplyIsError(t *testing.T) {
	ep := newEndpoint(t, nil, localinvoke.WithFunction("fn", func(context.Context, []byte) ([]byte, error) {
		return []byte(`{"output":"no such city","is_error":true,"extra":1}`), nil
	}))
	ex := ep.executor(t, lambdaexec.Config{}, manifestOf(map[string]string{"t": "fn"}))
	if res := execute(t, ex, "t", `{}`); !res.IsError || res.Output != "no such city" {
		t.Fatalf("result = %+v", res)
	}
}

func TestExecuteSDKErrors(t *testing.T) {
	ep := newEndpoint(t, map[string]tools.Hosted{"fn": calculator.Tool()})
	ex := ep.executor(t, lambdaexec.Config{}, lambdaexec.ManifestFor(map[string]string{"calculator": "Missing"}))
	res := execute(t, ex, "calculator", `{"expression":"1"}`)
	// The code only: AWS messages name ARNs (the log line has them).
	if !res.IsError || !strings.Contains(res.Output, "ResourceNotFoundException") || strings.Contains(res.Output, "arn:aws") {
		t.Fatalf("result = %+v, want ResourceNotFoundException without its message", res)
	}

	// An endpoint nobody listens on any more: a transport error.
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	ex, err := lambdaexec.New(lambdaClient(t, gone.URL), lambdaexec.Config{}, lambdaexec.ManifestFor(map[string]string{"calculator": "fn"}).Tools,
		map[string]api.ToolDefinition{"calculator": calculator.Tool().Definition})
	if err != nil {
		t.Fatal(err)
	}
	res = execute(t, ex, "calculator", `{"expression":"1"}`)
	if !res.IsError || !strings.Contains(res.Output, "could not invoke the Lambda function of tool calculator") || strings.Contains(res.Output, "127.0.0.1") {
		t.Fatalf("result = %+v, want an is_error transport failure that does not name the endpoint", res)
	}
}

func TestExecuteUnknownTool(t *testing.T) {
	ep := newEndpoint(t, nil)
	ex := ep.executor(t, lambdaexec.Config{}, lambdaexec.ManifestFor(map[string]string{"calculator": "fn"}))
	if res := execute(t, ex, "nope", `{}`); !res.IsError {
		t.Fatalf("result = %+v, want is_error", res)
	}
}

func TestRequestPayload(t *testing.T) {
	// The function receives exactly the payload of docs/architecture.md ("Tool Lambda payload").
	got := make(chan map[string]any, 1)
	ep := newEndpoint(t, nil, localinvoke.WithFunction("fn", func(_ context.Context, p []byte) ([]byte, error) {
		var m map[string]any
		if err := json.Unmarshal(p, &m); err != nil {
			return nil, err
		}
		got <- m
		return []byte(`{"output":"ok","is_error":false}`), nil
	}))
	ex := ep.executor(t, lambdaexec.Config{}, manifestOf(map[string]string{"t": "fn"}))
	execute(t, ex, "t", `{"a":1}`)
	want := map[string]any{"call_id": "call_1", "name": "t", "arguments": `{"a":1}`, "response_id": "resp_1"}
	if m := <-got; fmt.Sprint(m) != fmt.Sprint(want) {
		t.Fatalf("payload = %v, want %v", m, want)
	}
}

// TestConcurrentInvocations proves that the calls of a turn are in flight
// at once through the real client path: the tool blocks until all n
// invocations have started, so a sequential (or connection-starved)
// executor never gets there. 16 is a large turn; 64 is what the HTTP
// client's pool is sized for. The context timeout only guards against a
// hang; nothing is timed.
func TestConcurrentInvocations(t *testing.T) {
	for _, n := range []int{16, lambdaexec.MaxConcurrentInvocations} {
		t.Run(fmt.Sprint(n), func(t *testing.T) { testConcurrentInvocations(t, n) })
	}
}

func testConcurrentInvocations(t *testing.T, n int) {
	var started atomic.Int32
	allIn := make(chan struct{})
	barrier := func(ctx context.Context, call tools.ToolCall) (string, error) {
		if started.Add(1) == int32(n) {
			close(allIn)
		}
		select {
		case <-allIn:
			return "through " + call.ID, nil
		case <-ctx.Done():
			return "", fmt.Errorf("barrier: only %d of %d invocations started: %w", started.Load(), n, ctx.Err())
		}
	}
	ep := newEndpoint(t, map[string]tools.Hosted{"BarrierToolFunction": hosted("barrier", barrier)})
	ex := ep.executor(t, lambdaexec.Config{}, manifestOf(map[string]string{"barrier": "BarrierToolFunction"}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	results := make([]*tools.ToolResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = ex.Execute(ctx, tools.ToolCall{ID: fmt.Sprintf("call_%d", i), Name: "barrier", Arguments: `{}`})
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		if want := fmt.Sprintf("through call_%d", i); results[i].IsError || results[i].Output != want || results[i].CallID != fmt.Sprintf("call_%d", i) {
			t.Fatalf("call %d: result %+v, want %q", i, results[i], want)
		}
	}
	if st := ep.srv.Stats(); st.Invocations != int64(n) {
		t.Fatalf("invocations = %d, want %d", st.Invocations, n)
	}
}

func TestNewDefinitions(t *testing.T) {
	ep := newEndpoint(t, nil)
	calc := calculator.Tool()
	m := &tools.Manifest{Tools: []tools.ManifestTool{
		{Name: "calculator", Backing: tools.Backing{Type: tools.BackingLambda, Function: "CalculatorToolFunction"}},
		{Name: "custom", Description: "Custom tool.", Parameters: json.RawMessage(`{"type":"object"}`), Backing: tools.Backing{Type: tools.BackingLambda, Function: "arn:aws:lambda:eu-west-1:1:function:custom", Qualifier: "live"}},
		{Name: "inproc", Backing: tools.Backing{Type: tools.BackingLocal}},
	}}
	ex, err := lambdaexec.New(ep.client, lambdaexec.Config{}, m.Tools, map[string]api.ToolDefinition{"calculator": calc.Definition})
	if err != nil {
		t.Fatal(err)
	}
	def, exec, ok := ex.Lookup("calculator")
	if !ok || def.Description != calc.Definition.Description || string(def.Parameters) != string(calc.Definition.Parameters) {
		t.Errorf("calculator definition = %+v, %v; want the built-in's", def, ok)
	}
	if exec != ex {
		t.Errorf("calculator executor = %v, want the Lambda executor", exec)
	}
	def, exec, ok = ex.Lookup("custom")
	if !ok || def.Description != "Custom tool." || string(def.Parameters) != `{"type":"object"}` || exec != ex {
		t.Errorf("custom definition = %+v, %v, %v; want the manifest's, run by the Lambda executor", def, exec, ok)
	}
	if fn, q, _ := ex.Function("custom"); fn != "arn:aws:lambda:eu-west-1:1:function:custom" || q != "live" {
		t.Errorf("Function(custom) = %q, %q", fn, q)
	}
	if _, exec, ok := ex.Lookup("inproc"); ok || exec != nil {
		t.Error("a local tool is served by the Lambda executor")
	}
	if l := ex.List(); len(l) != 2 || l[0].Name != "calculator" || l[1].Name != "custom" {
		t.Errorf("List = %+v", l)
	}

	for name, bad := range map[string][]tools.ManifestTool{
		"no definition": {{Name: "mystery", Backing: tools.Backing{Type: tools.BackingLambda, Function: "f"}}},
		"no function":   {{Name: "calculator", Backing: tools.Backing{Type: tools.BackingLambda}}},
		"duplicate": {
			{Name: "calculator", Backing: tools.Backing{Type: tools.BackingLambda, Function: "f"}},
			{Name: "calculator", Backing: tools.Backing{Type: tools.BackingLambda, Function: "g"}},
		},
	} {
		if _, err := lambdaexec.New(ep.client, lambdaexec.Config{}, bad, map[string]api.ToolDefinition{"calculator": calc.Definition}); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
	if _, err := lambdaexec.New(nil, lambdaexec.Config{}, nil, nil); err == nil {
		t.Error("New without client succeeded")
	}
}

func TestManifestHelpers(t *testing.T) {
	for tool, want := range map[string]string{"calculator": "CalculatorToolFunction", "fetch_url": "FetchUrlToolFunction", "a-b.c": "ABCToolFunction"} {
		if got := lambdaexec.FunctionLogicalID(tool); got != want {
			t.Errorf("FunctionLogicalID(%q) = %q, want %q", tool, got, want)
		}
	}
	m := lambdaexec.LocalManifest("fetch_url", "calculator")
	b, _ := json.Marshal(m)
	want := `{"tools":[{"name":"calculator","backing":{"type":"lambda","function":"CalculatorToolFunction"}},{"name":"fetch_url","backing":{"type":"lambda","function":"FetchUrlToolFunction"}}]}`
	if string(b) != want {
		t.Fatalf("LocalManifest = %s, want %s", b, want)
	}
	if _, err := tools.ParseManifest(b); err != nil {
		t.Fatalf("LocalManifest does not parse: %v", err)
	}
}

// TestLargeRepliesOnPooledConnections guards the HTTPClient's request-body
// copy: with the SDK's own body, a reply larger than a few KiB fails now and
// then with "use of closed network connection" (aws/aws-sdk-go-v2#2737).
func TestLargeRepliesOnPooledConnections(t *testing.T) {
	reply, _ := json.Marshal(tools.ToolResult{Output: strings.Repeat("y", 50_000)})
	ep := newEndpoint(t, nil, localinvoke.WithFunction("fn", func(context.Context, []byte) ([]byte, error) { return reply, nil }))
	ex := ep.executor(t, lambdaexec.Config{}, manifestOf(map[string]string{"t": "fn"}))
	for i := range 200 {
		if res := execute(t, ex, "t", `{}`); res.IsError || len(res.Output) != 50_000 {
			t.Fatalf("call %d: %.300s", i, res.Output)
		}
	}
}
