package httpapi_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakebedrock"
	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/httpapi"
	"github.com/lambent/lambent/pkg/provider"
)

// POST /v1/responses/input_tokens (OpenAI's input token count) of a model
// the OpenAI-compatible provider serves is a 501 input_tokens_unsupported
// in the OpenAI error shape, with x-should-retry: false, never reaching
// the model: that provider has no count API. It was a 405 (the path read
// as the id of a response, which has no POST). openai-go's
// Responses.InputTokens.Count and the npm SDK's responses.inputTokens.count
// (with its default retries) surface it once.
func TestInputTokensUnsupported(t *testing.T) {
	t.Parallel()
	g := newGateway(t, fakellm.New(), nil)
	status, h, body := g.do(http.MethodPost, "/v1/responses/input_tokens", "application/json", `{"model":"m","input":"hi"}`)
	wantError(t, status, body, http.StatusNotImplemented, "-", "input_tokens_unsupported")
	require.Equal(t, "false", h.Get("X-Should-Retry"))

	_, err := g.client.Responses.InputTokens.Count(context.Background(), responses.InputTokenCountParams{
		Model: openai.String("m"), Input: responses.InputTokenCountParamsInputUnion{OfString: openai.String("hi")}})
	var ae *openai.Error
	require.True(t, errors.As(err, &ae), "%v", err)
	require.Equal(t, http.StatusNotImplemented, ae.StatusCode)
	require.Equal(t, "input_tokens_unsupported", ae.Code)

	var got struct {
		Status int
		Class  string
		Error  struct{ Code, Type, Message string }
	}
	runJS(t, jsClients(t), "openai_input_tokens.mjs", g.srv.URL+"/v1", &got)
	require.Equal(t, http.StatusNotImplemented, got.Status)
	require.Equal(t, "input_tokens_unsupported", got.Error.Code)
	require.Contains(t, got.Error.Message, "not supported")
	require.Equal(t, 0, g.fake.Calls(), "nothing reaches the model")
}

// A feature this gateway does not offer (a 501: compaction on Lambda
// without keys, conversations on a store without them) is an error no
// retry cures: x-should-retry: false, so the official SDKs, which retry
// every 5xx, ask once.
func TestNotImplementedNotRetried(t *testing.T) {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/v1/responses/compact", nil)
	httpapi.WriteError(rec, req, slog.New(slog.DiscardHandler), &api.Error{Status: http.StatusNotImplemented,
		Type: api.ErrTypeInvalidRequest, Code: "compaction_unavailable", Message: "Compaction is not configured."})
	require.Equal(t, http.StatusNotImplemented, rec.Code)
	require.Equal(t, "false", rec.Header().Get("X-Should-Retry"))
}

// A 501 answers a request for a feature the deployment does not offer:
// the client's to change, as a 4xx, so it is no error line in the
// operator's logs (alarms count those); a failure of the model provider
// (a 502) is one, with its cause.
func TestNotImplementedIsNoErrorLog(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError}))
	req := httptest.NewRequest(http.MethodPost, "/v1/responses/input_tokens", nil)
	httpapi.WriteError(httptest.NewRecorder(), req, log, provider.CountUnsupported("test-model", "its model provider has no token count API"))
	require.Empty(t, logs.String())
	httpapi.WriteError(httptest.NewRecorder(), req, log, provider.UpstreamError(http.StatusBadGateway, provider.CodeUpstreamError, errors.New("upstream HTTP 500"), "model provider error"))
	require.Contains(t, logs.String(), "upstream HTTP 500")
}

// On Bedrock, POST /v1/responses/input_tokens counts with Bedrock's
// CountTokens what the create request would give Claude: the conversation
// of previous_response_id, the new instructions, input and tools, mapped
// as a Converse call, for the inference profile's foundation model. The
// count is the input_tokens of the response the same create then makes.
// openai-go and the npm SDK get {"object":"response.input_tokens",
// "input_tokens":N}; a previous response of another tenant is a 404; a
// field a count does not take is a 400; a model Bedrock does not count
// for is a 501 input_tokens_unsupported naming it.
func TestInputTokensOnBedrock(t *testing.T) {
	const keyA, keyB = "sk-lambent-tenant-a-0123456789", "sk-lambent-tenant-b-0123456789"
	fake := fakebedrock.New(fakebedrock.Turn{Text: "Hello."}, fakebedrock.Turn{Text: "Sunny."})
	base := newBedrockGatewayWith(t, fake, map[string]string{"LAMBENT_API_KEYS": "acme=" + keyA + ",globex=" + keyB})
	client := func(key string) *openai.Client {
		c := openai.NewClient(option.WithBaseURL(base+"/"), option.WithAPIKey(key), option.WithMaxRetries(0))
		return &c
	}
	ctx := context.Background()
	first, err := client(keyA).Responses.New(ctx, responses.ResponseNewParams{Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Hi!")},
		Instructions: openai.String("Be brief.")})
	require.NoError(t, err)
	tools := []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{Name: "get_weather", Description: openai.String("Weather of a city"),
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}}}
	count, err := client(keyA).Responses.InputTokens.Count(ctx, responses.InputTokenCountParams{
		PreviousResponseID: openai.String(first.ID), Instructions: openai.String("Be terse."), Tools: tools,
		Input: responses.InputTokenCountParamsInputUnion{OfString: openai.String("Weather in Paris?")}})
	require.NoError(t, err)
	require.Equal(t, "response.input_tokens", string(count.Object))
	require.Positive(t, count.InputTokens)
	counts := fake.Counts()
	require.Len(t, counts, 1)
	c := counts[0]
	require.Equal(t, "anthropic.claude-sonnet-4-20250514-v1:0", c.ModelID, "the foundation model of "+bedrockClaude)
	require.Equal(t, "Be terse.", *c.System[0].Text)
	require.Len(t, c.Messages, 3, "Hi!, Hello., Weather in Paris?")
	require.Equal(t, "get_weather", c.ToolConfig.Tools[0].ToolSpec.Name)
	require.Equal(t, 1, fake.Calls(), "no model call")

	second, err := client(keyA).Responses.New(ctx, responses.ResponseNewParams{PreviousResponseID: openai.String(first.ID),
		Instructions: openai.String("Be terse."), Tools: tools, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Weather in Paris?")}})
	require.NoError(t, err)
	require.Equal(t, count.InputTokens, second.Usage.InputTokens, "the count is what the response read")

	var got struct {
		Result struct {
			Object      string `json:"object"`
			InputTokens int64  `json:"input_tokens"`
		}
		Status int
		Error  struct{ Code, Message string }
	}
	runJS(t, jsClients(t), "openai_input_tokens.mjs", base, &got,
		`{"previous_response_id":"`+first.ID+`","instructions":"Be terse.","input":"Weather in Paris?","tools":[{"type":"function","name":"get_weather","description":"Weather of a city",`+
			`"parameters":{"type":"object","properties":{"city":{"type":"string"}}},"strict":true}]}`, keyA)
	require.Zero(t, got.Status, "%+v", got.Error)
	require.Equal(t, "response.input_tokens", got.Result.Object)
	require.Equal(t, count.InputTokens, got.Result.InputTokens, "the same request, the same count")

	_, err = client(keyB).Responses.InputTokens.Count(ctx, responses.InputTokenCountParams{PreviousResponseID: openai.String(first.ID),
		Input: responses.InputTokenCountParamsInputUnion{OfString: openai.String("Weather in Paris?")}})
	var ae *openai.Error
	require.True(t, errors.As(err, &ae), "%v", err)
	require.Equal(t, http.StatusNotFound, ae.StatusCode, "another tenant's response")
	require.Equal(t, "previous_response_not_found", ae.Code)

	status, _, body := doBedrock(t, base, keyA, `{"input":"hi","stream":true}`)
	wantError(t, status, body, http.StatusBadRequest, "stream", "unknown_parameter")
	status, h, body := doBedrock(t, base, keyA, `{"model":"us.amazon.nova-pro-v1:0","input":"hi"}`)
	wantError(t, status, body, http.StatusNotImplemented, "-", "input_tokens_unsupported")
	require.Contains(t, string(body), "us.amazon.nova-pro-v1:0")
	require.Equal(t, "false", h.Get("X-Should-Retry"))
	require.Len(t, fake.Counts(), 2, "the npm client's")
}

// doBedrock posts body to the input_tokens route of the gateway at base
// with key.
func doBedrock(t *testing.T, base, key, body string) (int, http.Header, []byte) {
	t.Helper()
	return doWithKey(t, http.MethodPost, base+"/responses/input_tokens", key, body)
}

// doWithKey sends a JSON body to url with API key key and returns the
// answer's status, headers and body.
func doWithKey(t *testing.T, method, url, key, body string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, res.Header, b
}

// The npm SDK's responses.inputTokens.count with previous_response_id
// and truncation "auto", on Bedrock, after a response that cut its
// conversation for the model's context window: it counts from the cut,
// what the create with the same params then sends (its input_tokens),
// within the window; with "disabled" it counts every item, over it.
func TestInputTokensTruncationAutoOnBedrock(t *testing.T) {
	fake := fakebedrock.NewHandler(func(fakebedrock.Request) fakebedrock.Turn { return fakebedrock.Turn{Text: bigText("a")} })
	base := newBedrockGateway(t, fake)
	client := openai.NewClient(option.WithBaseURL(base+"/"), option.WithAPIKey("test"), option.WithMaxRetries(0))
	ctx := context.Background()
	create := func(prev, input string, trunc responses.ResponseNewParamsTruncation) *responses.Response {
		p := textParams(input)
		if prev != "" {
			p.PreviousResponseID = openai.String(prev)
		}
		p.Truncation = trunc
		r, err := client.Responses.New(ctx, p)
		require.NoError(t, err)
		require.Equal(t, responses.ResponseStatusCompleted, r.Status)
		return r
	}
	prev := ""
	for i := range 3 {
		if i == 2 {
			fake.SetContextWindow(1200)
		}
		prev = create(prev, bigText(fmt.Sprint("q", i)), responses.ResponseNewParamsTruncationAuto).ID
	}
	count := func(trunc string) int64 {
		var got struct {
			Result struct {
				Object      string
				InputTokens int64 `json:"input_tokens"`
			}
			Status int
			Error  struct{ Code, Message string }
		}
		runJS(t, jsClients(t), "openai_input_tokens.mjs", base, &got,
			`{"previous_response_id":"`+prev+`","input":"q3","truncation":"`+trunc+`"}`)
		require.Zero(t, got.Status, "%+v", got.Error)
		require.Equal(t, "response.input_tokens", got.Result.Object)
		return got.Result.InputTokens
	}
	auto, whole := count("auto"), count("disabled")
	require.LessOrEqual(t, auto, int64(1200))
	require.Greater(t, whole, int64(1200))
	r := create(prev, "q3", responses.ResponseNewParamsTruncationAuto)
	require.Equal(t, r.Usage.InputTokens, auto, "the same request, the same count")
}

// The npm SDK's responses.inputTokens.count with a text.format
// json_schema, on Bedrock: the schema the create would send Claude (its
// Converse outputConfig) is counted, so the count exceeds the same count
// without it by about the schema's size (the fake counts 4 bytes a token).
func TestInputTokensJSONSchemaOnBedrock(t *testing.T) {
	fake := fakebedrock.New()
	base := newBedrockGateway(t, fake)
	schema := `{"type":"object","properties":{"answer":{"type":"string","description":"` + strings.Repeat("The answer to the question, in one short sentence. ", 20) +
		`"}},"required":["answer"],"additionalProperties":false}`
	count := func(text string) int64 {
		var got struct {
			Result struct {
				InputTokens int64 `json:"input_tokens"`
			}
			Status int
			Error  struct{ Code, Message string }
		}
		runJS(t, jsClients(t), "openai_input_tokens.mjs", base, &got, `{"input":"What is 2+2?"`+text+`}`)
		require.Zero(t, got.Status, "%+v", got.Error)
		return got.Result.InputTokens
	}
	without := count("")
	with := count(`,"text":{"format":{"type":"json_schema","name":"answer","strict":true,"schema":` + schema + `}}`)
	grew, size := with-without, int64(len(schema)/4)
	require.Greater(t, grew, size*9/10, "%d → %d, schema %d tokens", without, with, size)
	require.Less(t, grew, size*12/10, "%d → %d, schema %d tokens", without, with, size)
}
