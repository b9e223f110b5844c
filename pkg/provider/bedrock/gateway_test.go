package bedrock_test

// Gateway tests: the official openai-go client → a loopback HTTP server →
// the handler app.Build wires from the environment (LAMBENT_PROVIDER=bedrock,
// the engine, the memory store, the in-process hosted tools) → the real
// bedrockruntime client → fakebedrock's Converse and ConverseStream.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakebedrock"
	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/internal/testing/schema"
	"github.com/lambent/lambent/internal/testing/ssecheck"
	"github.com/lambent/lambent/pkg/app"
)

func validator(t *testing.T) *schema.Validator {
	t.Helper()
	v, err := schema.Shared()
	require.NoError(t, err)
	return v
}

// gateway builds the gateway as the mains do (app.FromEnv, app.Build) with
// the AWS SDK's default configuration pointed at fake through
// AWS_ENDPOINT_URL_BEDROCK_RUNTIME; env entries override the defaults.
func gateway(t *testing.T, fake *fakebedrock.Server, env map[string]string) openai.Client {
	t.Helper()
	t.Cleanup(fake.Close)
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL_BEDROCK_RUNTIME": fake.URL,
		"AWS_REGION":                       fakebedrock.Region,
		"AWS_ACCESS_KEY_ID":                "AKIDFAKEBEDROCK",
		"AWS_SECRET_ACCESS_KEY":            "fake-secret",
		"AWS_SESSION_TOKEN":                "",
		"AWS_PROFILE":                      "",
		"AWS_CONFIG_FILE":                  none,
		"AWS_SHARED_CREDENTIALS_FILE":      none,
		"AWS_EC2_METADATA_DISABLED":        "true",
		"AWS_ENDPOINT_URL":                 "",
	} {
		t.Setenv(k, v)
	}
	vars := map[string]string{
		"LAMBENT_PROVIDER":      "bedrock",
		"LAMBENT_DEFAULT_MODEL": claude,
		// Strict OpenResponses items, so every body and event validates
		// against openapi.json (mcp_call items are covered provider-free in
		// pkg/engine and pkg/httpapi).
		"LAMBENT_HOSTED_TOOL_ITEMS": "function_call",
		"LAMBENT_STORE":             "memory",
		"LAMBENT_LOG_LEVEL":         "error",
		// The tests check the messages' shape; cache_test.go the cache
		// points (with auto).
		"LAMBENT_BEDROCK_CACHE_POINTS": "off",
	}
	for k, v := range env {
		vars[k] = v
	}
	cfg, err := app.FromEnv(func(k string) string { return vars[k] })
	require.NoError(t, err)
	a, err := app.Build(context.Background(), cfg, app.Logger(cfg, io.Discard), nil)
	require.NoError(t, err)
	t.Cleanup(a.Close)
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(srv.Close)
	return openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("test"), option.WithMaxRetries(0), option.WithHTTPClient(srv.Client()))
}

// stream reads a whole SDK stream, checks it against the OpenResponses
// schemas and the SSE rules, and returns its events.
func stream(t *testing.T, s interface {
	Next() bool
	Current() responses.ResponseStreamEventUnion
	Err() error
	Close() error
}) []responses.ResponseStreamEventUnion {
	t.Helper()
	defer s.Close()
	var evs []responses.ResponseStreamEventUnion
	var checked []ssecheck.Event
	for s.Next() {
		ev := s.Current()
		evs = append(evs, ev)
		dec, err := ssecheck.Decode([]byte(ev.RawJSON()))
		require.NoError(t, err)
		checked = append(checked, dec)
	}
	require.NoError(t, s.Err())
	require.NoError(t, ssecheck.Check(validator(t), checked))
	require.NotEmpty(t, evs)
	return evs
}

func weatherParam() responses.ToolUnionParam {
	return responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{
		Name: "get_weather", Description: openai.String("Current weather in a city"),
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}},
	}}
}

func functionOutput(callID, output string) responses.ResponseInputItemUnionParam {
	item := responses.ResponseInputItemParamOfFunctionCallOutput(output)
	item.OfFunctionCallOutput.CallID = openai.String(callID)
	return item
}

// outputItem is the subset of an output item the tests read.
type outputItem struct {
	Type             string `json:"type"`
	CallID           string `json:"call_id"`
	Name             string `json:"name"`
	Output           string `json:"output"`
	EncryptedContent string `json:"encrypted_content"`
}

func outputItems(t *testing.T, raw string) []outputItem {
	t.Helper()
	var r struct {
		Output []outputItem `json:"output"`
	}
	require.NoError(t, json.Unmarshal([]byte(raw), &r))
	return r.Output
}

// The agentic loop through Bedrock, streamed across tool turns with
// openai-go: Claude thinks and calls the hosted calculator twice in
// parallel, then calls a client function, which pauses the response
// (requires_action); the client's output continues it with
// previous_response_id, and the signed thinking goes back to Bedrock with
// the history (the fake refuses it altered or missing its toolConfig).
func TestGatewayStreamingToolLoop(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		name := map[bool]string{true: "streaming", false: "non-streaming"}[streaming]
		t.Run(name, func(t *testing.T) {
			fake := fakebedrock.New(
				fakebedrock.Turn{Reasoning: "Two products first.", ToolUses: []fakebedrock.ToolUse{
					{ID: "tooluse_mul", Name: "calculator", Input: `{"expression":"6*7"}`},
					{ID: "tooluse_pow", Name: "calculator", Input: `{"expression":"2^10"}`},
				}, Usage: fakebedrock.Usage{InputTokens: 10, OutputTokens: 5}},
				fakebedrock.Turn{Reasoning: "Now the weather.", Text: "42 and 1024. Checking Paris.", ToolUses: []fakebedrock.ToolUse{
					{ID: "tooluse_wx", Name: "get_weather", Input: `{"city":"Paris"}`},
				}, Usage: fakebedrock.Usage{InputTokens: 20, OutputTokens: 6, CacheReadInputTokens: 8}},
				fakebedrock.Turn{Text: "42, 1024, and Paris is sunny.", Usage: fakebedrock.Usage{InputTokens: 30, OutputTokens: 7}},
			)
			client := gateway(t, fake, nil)
			ctx := context.Background()
			p1 := responses.ResponseNewParams{
				Input:     responses.ResponseNewParamsInputUnion{OfString: openai.String("Compute 6*7 and 2^10, then the weather in Paris.")},
				Tools:     []responses.ToolUnionParam{weatherParam()},
				Reasoning: responses.ReasoningParam{Effort: responses.ReasoningEffortMedium},
			}
			var paused responses.Response
			if streaming {
				evs := stream(t, client.Responses.NewStreaming(ctx, p1, option.WithJSONSet("tools", []any{map[string]any{"type": "lambent:calculator"}, weatherParam().OfFunction})))
				last := evs[len(evs)-1]
				require.Equal(t, "response.completed", last.Type)
				paused = last.AsResponseCompleted().Response
				deltas := 0
				for _, ev := range evs {
					if ev.Type == "response.reasoning_text.delta" || ev.Type == "response.function_call_arguments.delta" {
						deltas++
					}
				}
				require.Greater(t, deltas, 4, "reasoning and arguments stream as deltas")
			} else {
				r, err := client.Responses.New(ctx, p1, option.WithJSONSet("tools", []any{map[string]any{"type": "lambent:calculator"}, weatherParam().OfFunction}))
				require.NoError(t, err)
				paused = *r
			}
			require.Equal(t, responses.ResponseStatus("requires_action"), paused.Status)
			items := outputItems(t, paused.RawJSON())
			var results []string
			reasoning, clientCalls := 0, 0
			for _, it := range items {
				switch {
				case it.Type == "reasoning":
					reasoning++
					require.Empty(t, it.EncryptedContent, "include does not ask for it: the signature is kept hidden, and still goes back (below)")
				case it.Type == "function_call_output" || it.Type == "mcp_call":
					results = append(results, it.Output)
				case it.Type == "function_call" && it.Name == "get_weather":
					clientCalls++
					require.Equal(t, "tooluse_wx", it.CallID)
				}
			}
			require.Equal(t, 2, reasoning)
			require.Contains(t, results, "42")
			require.Contains(t, results, "1024")
			require.Equal(t, 1, clientCalls)
			require.Equal(t, int64(10+20+8), paused.Usage.InputTokens, "cache reads count as input")
			require.Equal(t, int64(8), paused.Usage.InputTokensDetails.CachedTokens)

			// The hosted results went back in one user message, in call order.
			reqs := fake.Requests()
			require.Len(t, reqs, 2)
			second := reqs[1]
			require.NotNil(t, second.ToolConfig)
			require.Len(t, second.Messages, 3)
			asst := second.Messages[1]
			require.NotNil(t, asst.Content[0].ReasoningContent, "thinking first, as Claude requires")
			require.Equal(t, "tooluse_mul", asst.Content[1].ToolUse.ToolUseID)
			require.Equal(t, "tooluse_pow", asst.Content[2].ToolUse.ToolUseID)
			res := second.Messages[2].Content
			require.Len(t, res, 2)
			require.Equal(t, "tooluse_mul", res[0].ToolResult.ToolUseID)
			require.Equal(t, "42", *res[0].ToolResult.Content[0].Text)
			require.Equal(t, "tooluse_pow", res[1].ToolResult.ToolUseID)

			// The client answers its call; the response continues.
			cont := responses.ResponseNewParams{
				PreviousResponseID: openai.String(paused.ID),
				Input:              responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{functionOutput("tooluse_wx", `{"sky":"sunny"}`)}},
				Tools:              []responses.ToolUnionParam{weatherParam()},
			}
			var done responses.Response
			if streaming {
				evs := stream(t, client.Responses.NewStreaming(ctx, cont))
				done = evs[len(evs)-1].AsResponseCompleted().Response
			} else {
				r, err := client.Responses.New(ctx, cont)
				require.NoError(t, err)
				done = *r
			}
			require.Equal(t, responses.ResponseStatusCompleted, done.Status)
			require.Equal(t, "42, 1024, and Paris is sunny.", done.OutputText())

			third := fake.Requests()[2]
			require.NotNil(t, third.ToolConfig)
			last := third.Messages[len(third.Messages)-1]
			require.Equal(t, "user", last.Role)
			require.Equal(t, "tooluse_wx", last.Content[0].ToolResult.ToolUseID)
			require.Equal(t, `{"sky":"sunny"}`, *last.Content[0].ToolResult.Content[0].Text)
			signed := 0
			for _, m := range third.Messages {
				for _, b := range m.Content {
					if b.ReasoningContent != nil && b.ReasoningContent.ReasoningText != nil && b.ReasoningContent.ReasoningText.Signature != "" {
						signed++
					}
				}
			}
			require.Equal(t, 2, signed, "both thinking blocks went back signed")
		})
	}
}

func TestGatewayIncomplete(t *testing.T) {
	fake := fakebedrock.New(
		fakebedrock.Turn{Text: "The answer is cut", StopReason: "max_tokens"},
		fakebedrock.Turn{Text: "I can't help with that.", StopReason: "guardrail_intervened"},
	)
	client := gateway(t, fake, map[string]string{"LAMBENT_BEDROCK_GUARDRAIL_ID": "gr-1", "LAMBENT_BEDROCK_GUARDRAIL_VERSION": "3"})
	ctx := context.Background()
	r, err := client.Responses.New(ctx, responses.ResponseNewParams{
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("long story")}, MaxOutputTokens: openai.Int(16)})
	require.NoError(t, err)
	require.Equal(t, responses.ResponseStatusIncomplete, r.Status)
	require.Equal(t, "max_output_tokens", r.IncompleteDetails.Reason)
	require.Equal(t, 16, *fake.Requests()[0].InferenceConfig.MaxTokens)

	evs := stream(t, client.Responses.NewStreaming(ctx, responses.ResponseNewParams{Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("bad stuff")}}))
	last := evs[len(evs)-1]
	require.Equal(t, "response.incomplete", last.Type)
	require.Equal(t, "content_filter", last.AsResponseIncomplete().Response.IncompleteDetails.Reason)
	g := fake.Requests()[1].GuardrailConfig
	require.Equal(t, "gr-1", g.GuardrailIdentifier)
	require.Equal(t, "3", g.GuardrailVersion)
}

func TestGatewayErrors(t *testing.T) {
	fake := fakebedrock.New(
		fakebedrock.Turn{Error: "AccessDeniedException", ErrorMessage: "You don't have access to the model with the specified model ID."},
		fakebedrock.Turn{Text: "partial", StreamError: "modelStreamErrorException", ErrorMessage: "The model stream broke."},
	)
	client := gateway(t, fake, nil)
	ctx := context.Background()
	_, err := client.Responses.New(ctx, responses.ResponseNewParams{Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusForbidden, apiErr.StatusCode)
	require.Contains(t, apiErr.Message, claude)
	require.Contains(t, apiErr.Message, "Model access")

	evs := stream(t, client.Responses.NewStreaming(ctx, responses.ResponseNewParams{Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}))
	last := evs[len(evs)-1]
	require.Equal(t, "response.failed", last.Type)
	failed := last.AsResponseFailed().Response
	// Bedrock's message stays in the logs; the failure names the
	// exception and the request id to quote.
	require.NotContains(t, failed.Error.Message, "The model stream broke.")
	require.Contains(t, failed.Error.Message, "ModelStreamErrorException")
	require.Regexp(t, `request ID req_[0-9a-f]{32}\.$`, failed.Error.Message)
}

// The model's own throttling relayed by a ModelErrorException (HTTP 424,
// originalStatusCode 429) reaches the client as a throttling exception's
// does: a 429 rate_limit_exceeded with Retry-After saying when to try
// again, streamed or not.
func TestGatewayModelErrorThrottled(t *testing.T) {
	throttled := fakebedrock.Turn{Error: "ModelErrorException", OriginalStatusCode: http.StatusTooManyRequests,
		ErrorMessage: `Received client error (429) from primary with message "Too many requests". See the logs in account 123456789012 for more information.`,
		ResourceName: "arn:aws:sagemaker:us-east-1:123456789012:endpoint/jumpstart-llama"}
	fake := fakebedrock.New(throttled, throttled)
	client := gateway(t, fake, nil)
	ctx := context.Background()
	params := responses.ResponseNewParams{Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}
	_, err := client.Responses.New(ctx, params)
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusTooManyRequests, apiErr.StatusCode)
	require.Equal(t, "rate_limit_exceeded", apiErr.Code)
	require.Equal(t, "10", apiErr.Response.Header.Get("Retry-After"))
	require.NotContains(t, apiErr.Message, "123456789012")

	// Streamed, the refusal comes before the stream began: the same HTTP
	// error.
	s := client.Responses.NewStreaming(ctx, params)
	for s.Next() {
		t.Errorf("an event: %s", s.Current().Type)
	}
	require.ErrorAs(t, s.Err(), &apiErr)
	require.Equal(t, http.StatusTooManyRequests, apiErr.StatusCode)
	require.Equal(t, "rate_limit_exceeded", apiErr.Code)
	require.Equal(t, "10", apiErr.Response.Header.Get("Retry-After"))
	require.Contains(t, apiErr.Message, "please try again in 10s")
	require.NotContains(t, apiErr.Message, "123456789012")
}

// Bedrock overloaded (a serviceUnavailableException inside the stream)
// fails the response as OpenAI's overload does: response.failed with code
// server_is_overloaded, which Codex reads as the model at capacity.
func TestGatewayOverloaded(t *testing.T) {
	fake := fakebedrock.New(fakebedrock.Turn{Text: "partial", StreamError: "serviceUnavailableException", ErrorMessage: "Bedrock is unable to process your request."})
	client := gateway(t, fake, nil)
	evs := stream(t, client.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}))
	last := evs[len(evs)-1]
	require.Equal(t, "response.failed", last.Type)
	failed := last.AsResponseFailed().Response.Error
	require.Equal(t, "server_is_overloaded", string(failed.Code))
	require.Contains(t, failed.Message, "ServiceUnavailableException")
}

// Both providers at once: LAMBENT_MODEL_ROUTES sends Claude to Bedrock,
// everything else to the default (the OpenAI-compatible provider).
func TestGatewayRouting(t *testing.T) {
	chat := fakellm.New(fakellm.Turn{Text: "from chat completions"})
	defer chat.Close()
	fake := fakebedrock.New(fakebedrock.Turn{Text: "from bedrock"})
	client := gateway(t, fake, map[string]string{
		"LAMBENT_PROVIDER":      "openai",
		"LAMBENT_PROVIDER_URL":  chat.URL,
		"LAMBENT_MODEL_ROUTES":  "us.anthropic.*=bedrock",
		"LAMBENT_DEFAULT_MODEL": "gpt-test",
	})
	ctx := context.Background()
	r, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: claude, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	require.NoError(t, err)
	require.Equal(t, "from bedrock", r.OutputText())
	r, err = client.Responses.New(ctx, responses.ResponseNewParams{Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	require.NoError(t, err)
	require.Equal(t, "from chat completions", r.OutputText())
	require.Equal(t, 1, fake.Calls())
	require.Equal(t, 1, chat.Calls())
	require.Equal(t, claude, fake.Requests()[0].ModelID)
	require.Equal(t, "gpt-test", chat.Requests()[0].Model)
}

// In the default item mode the hosted calls are mcp_call items, whose ids
// (what the model sees as call ids) Bedrock would refuse as toolUseIds:
// the provider maps them, and the fake Bedrock checks the constraint.
func TestGatewayMCPCallItems(t *testing.T) {
	call := fakebedrock.Turn{ToolUses: []fakebedrock.ToolUse{{Name: "calculator", Input: `{"expression":"6*7"}`}}}
	fake := fakebedrock.New(call, fakebedrock.Turn{Text: "42."}, call, fakebedrock.Turn{Text: "42."})
	client := gateway(t, fake, map[string]string{"LAMBENT_HOSTED_TOOL_ITEMS": "mcp_call"})
	for _, streaming := range []bool{false, true} {
		params := responses.ResponseNewParams{Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("6*7?")}}
		tools := option.WithJSONSet("tools", []map[string]any{{"type": "lambent:calculator"}})
		var r responses.Response
		if streaming {
			s := client.Responses.NewStreaming(context.Background(), params, tools)
			for s.Next() {
				if ev := s.Current(); ev.Type == "response.completed" {
					r = ev.AsResponseCompleted().Response
				}
			}
			require.NoError(t, s.Err())
		} else {
			got, err := client.Responses.New(context.Background(), params, tools)
			require.NoError(t, err)
			r = *got
		}
		require.Equal(t, responses.ResponseStatusCompleted, r.Status)
		require.Equal(t, "42.", r.OutputText())
		mcp := r.Output[0].AsMcpCall()
		require.Equal(t, "42", mcp.Output)
		require.Greater(t, len(mcp.ID), 64)
	}
}

// Validated output through Bedrock: a text.format json_schema answer that
// fails validation is set aside (with its signed thinking) and still
// reaches Claude with the feedback, roles alternating (the fake refuses
// otherwise, and altered reasoning); a continuation sends the valid answer
// alone.
func TestGatewayValidatedTextFormatRetried(t *testing.T) {
	fake := fakebedrock.New(
		fakebedrock.Turn{Reasoning: "A first try.", Text: `{"city":7}`, Usage: fakebedrock.Usage{InputTokens: 10, OutputTokens: 5}},
		fakebedrock.Turn{Reasoning: "The city is a name.", Text: `{"city":"Rome"}`, Usage: fakebedrock.Usage{InputTokens: 20, OutputTokens: 5}},
		fakebedrock.Turn{Text: "You are welcome.", Usage: fakebedrock.Usage{InputTokens: 30, OutputTokens: 5}},
	)
	client := gateway(t, fake, nil)
	ctx := context.Background()
	schema := map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}, "additionalProperties": false}
	r, err := client.Responses.New(ctx, responses.ResponseNewParams{
		Input:     responses.ResponseNewParamsInputUnion{OfString: openai.String("Which city?")},
		Reasoning: responses.ReasoningParam{Effort: responses.ReasoningEffortMedium},
		Text: responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{
			OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{Name: "city", Schema: schema, Strict: openai.Bool(true)}}},
	})
	require.NoError(t, err)
	require.Equal(t, responses.ResponseStatusCompleted, r.Status)
	require.JSONEq(t, `{"city":"Rome"}`, r.OutputText())
	require.Equal(t, []string{"reasoning", "message"}, []string{r.Output[0].Type, r.Output[1].Type}, "the failed answer and its feedback are set aside")
	require.Len(t, r.Output, 2)
	roles := func(req fakebedrock.Request) []string {
		var out []string
		for _, m := range req.Messages {
			out = append(out, m.Role)
		}
		return out
	}
	retry := fake.Requests()[1]
	require.Equal(t, []string{"user", "assistant", "user"}, roles(retry))
	require.NotNil(t, retry.Messages[1].Content[0].ReasoningContent, "the failed answer's thinking goes back")
	require.Equal(t, `{"city":7}`, *retry.Messages[1].Content[1].Text)
	require.Contains(t, *retry.Messages[2].Content[0].Text, "failed validation")

	_, err = client.Responses.New(ctx, responses.ResponseNewParams{PreviousResponseID: openai.String(r.ID),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Thanks.")}})
	require.NoError(t, err)
	next := fake.Requests()[2]
	require.Equal(t, []string{"user", "assistant", "user"}, roles(next))
	for _, b := range next.Messages[1].Content {
		if b.Text != nil {
			require.Equal(t, `{"city":"Rome"}`, *b.Text, "the continuation gets the valid answer alone")
		}
	}
}

// A Llama model through the gateway with openai-go: a streamed response
// with a function tool completes (Bedrock takes Llama's tools in Converse
// only; the call's answer streams as its deltas); tool_choice required,
// which Llama cannot honour, is a 400 naming tool_choice; a throttling
// exception in the middle of a stream fails the response with
// rate_limit_exceeded.
func TestGatewayLlama(t *testing.T) {
	fake := fakebedrock.New(
		fakebedrock.Turn{ToolUses: []fakebedrock.ToolUse{{ID: "tooluse_1", Name: "get_weather", Input: `{"city":"Paris"}`}}},
		fakebedrock.Turn{Text: "partial", StreamError: "throttlingException", ErrorMessage: "Too many tokens, please wait before trying again."},
	)
	client := gateway(t, fake, map[string]string{"LAMBENT_DEFAULT_MODEL": llama})
	ctx := context.Background()
	params := responses.ResponseNewParams{Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Weather in Paris?")},
		Tools: []responses.ToolUnionParam{weatherParam()}}

	evs := stream(t, client.Responses.NewStreaming(ctx, params))
	last := evs[len(evs)-1]
	require.NotEqual(t, "response.failed", last.Type, last.RawJSON())
	var args string
	for _, ev := range evs {
		if ev.Type == "response.function_call_arguments.delta" {
			args += ev.Delta
		}
	}
	require.JSONEq(t, `{"city":"Paris"}`, args)
	items := outputItems(t, last.Response.RawJSON())
	require.Equal(t, "function_call", items[len(items)-1].Type)

	required := params
	required.ToolChoice = responses.ResponseNewParamsToolChoiceUnion{OfToolChoiceMode: openai.Opt(responses.ToolChoiceOptionsRequired)}
	_, err := client.Responses.New(ctx, required)
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusBadRequest, apiErr.StatusCode)
	require.Equal(t, "tool_choice", apiErr.Param)
	require.Contains(t, apiErr.Message, llama)

	evs = stream(t, client.Responses.NewStreaming(ctx, responses.ResponseNewParams{Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}))
	last = evs[len(evs)-1]
	require.Equal(t, "response.failed", last.Type)
	require.Equal(t, "rate_limit_exceeded", string(last.AsResponseFailed().Response.Error.Code))
	require.Equal(t, 2, fake.Calls())
}
