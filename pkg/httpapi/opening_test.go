package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/conversations"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakebedrock"
	"github.com/lambent/lambent/internal/testing/fakellm"
)

// refusedTemperature is OpenAI's refusal of a parameter a model does not
// take.
var refusedTemperature = fakellm.Turn{Status: http.StatusBadRequest, ErrorCode: "unsupported_parameter",
	ErrorMessage: "Unsupported parameter: 'temperature' is not supported with this model."}

// refusing is a fake whose every call is refused with turn.
func refusing(turn fakellm.Turn) *fakellm.Server {
	return fakellm.NewHandler(func(fakellm.Request) fakellm.Turn { return turn })
}

// A streamed create whose first model call the provider refuses gets the
// HTTP error OpenAI answers a request it refuses with, before any event,
// as the same request without streaming does: openai-go's stream ends
// with an *openai.Error of the status. The failed response is stored.
func TestStreamRefusedByTheProviderIsAnHTTPError(t *testing.T) {
	t.Parallel()
	t.Run("400", func(t *testing.T) {
		t.Parallel()
		g := newGateway(t, refusing(refusedTemperature), nil)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		stream := g.client.Responses.NewStreaming(ctx, textParams("hi"))
		var got []string
		for stream.Next() {
			got = append(got, stream.Current().Type)
		}
		require.Empty(t, got, "no event")
		apiErr := wantAPIError(t, stream.Err(), http.StatusBadRequest)
		require.Contains(t, apiErr.Message, "Unsupported parameter: 'temperature'")

		status, hdr, body := g.postJSON(`{"input":"hi","stream":true}`)
		wantError(t, status, body, http.StatusBadRequest, "", "")
		require.Contains(t, hdr.Get("Content-Type"), "application/json")
		id := regexp.MustCompile(`\(response (resp_\w+) failed\)`).FindSubmatch(body)
		require.Len(t, id, 2, "%s", body)
		status, _, body = g.do(http.MethodGet, "/v1/responses/"+string(id[1]), "", "")
		require.Equal(t, http.StatusOK, status, "%s", body)
		var stored wire
		require.NoError(t, json.Unmarshal(body, &stored))
		require.Equal(t, "failed", stored.Status)
	})
	t.Run("429", func(t *testing.T) {
		t.Parallel()
		g := newGateway(t, refusing(fakellm.Turn{Status: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"7"}}}), nil)
		status, hdr, body := g.postJSON(`{"input":"hi","stream":true}`)
		wantError(t, status, body, http.StatusTooManyRequests, "", "rate_limit_exceeded")
		require.Equal(t, "7", hdr.Get("Retry-After"))
		stream := g.client.Responses.NewStreaming(context.Background(), textParams("hi"))
		for stream.Next() {
			t.Errorf("an event: %s", stream.Current().Type)
		}
		wantAPIError(t, stream.Err(), http.StatusTooManyRequests)
	})
	// OpenAI streams a context too long for the model as response.failed
	// context_length_exceeded, where Codex recognises it: it stays there.
	t.Run("context_length_exceeded", func(t *testing.T) {
		t.Parallel()
		g := newGateway(t, refusing(fakellm.Turn{Status: http.StatusBadRequest, ErrorCode: "context_length_exceeded",
			ErrorMessage: "This model's maximum context length is 4096 tokens. However, your messages resulted in 5000 tokens."}), nil)
		p := textParams("hi")
		p.Truncation = responses.ResponseNewParamsTruncationDisabled
		stream := g.client.Responses.NewStreaming(context.Background(), p)
		var failed *responses.ResponseFailedEvent
		for stream.Next() {
			if ev := stream.Current(); ev.Type == "response.failed" {
				f := ev.AsResponseFailed()
				failed = &f
			}
		}
		require.NoError(t, stream.Err())
		require.NotNil(t, failed)
		require.Equal(t, "context_length_exceeded", string(failed.Response.Error.Code))
	})
}

// The npm SDK's stream of a create the provider refuses throws the
// APIError of the status, as against OpenAI, instead of yielding a
// response.failed.
func TestNPMSDKStreamRefusedByTheProvider(t *testing.T) {
	dir := jsClients(t)
	g := newGateway(t, refusing(refusedTemperature), nil)
	var got struct {
		Events []string
		Error  *struct {
			APIError bool
			Status   int
			Code     string
			Message  string
		}
	}
	runJS(t, dir, "npm_refused.mjs", g.srv.URL+"/v1", &got)
	require.Empty(t, got.Events)
	require.NotNil(t, got.Error, "nothing thrown")
	require.True(t, got.Error.APIError, "%+v", got.Error)
	require.Equal(t, http.StatusBadRequest, got.Error.Status)
	require.Equal(t, "unsupported_parameter", got.Error.Code)
	require.Contains(t, got.Error.Message, "Unsupported parameter: 'temperature'")
}

// Codex (with its default retries) shows a provider's 400 to its user at
// once, from one request and one model call: it retried a response.failed
// of the same refusal as a stream error, up to stream_max_retries (5)
// times.
func TestCodexCLIProviderRefusalIsNotRetried(t *testing.T) {
	t.Parallel()
	fake := refusing(refusedTemperature)
	g := newGateway(t, fake, nil)
	var creates atomic.Int32
	gw, err := url.Parse(g.srv.URL)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(gw)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/responses" {
			creates.Add(1)
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	codex := newCodex(t, front.URL+"/v1", nil)
	codex.retry(5)

	failed := codex.execFailing("say hello")
	require.Contains(t, failed, "Unsupported parameter: 'temperature'")
	require.Equal(t, 1, fake.Calls(), "one model call")
	require.Equal(t, int32(1), creates.Load(), "one request")
}

// A streamed create Bedrock refuses (a ValidationException of
// ConverseStream) gets the HTTP 400 of the same request without
// streaming, before any event.
func TestBedrockStreamRefusedIsAnHTTPError(t *testing.T) {
	fake := fakebedrock.New(fakebedrock.Turn{Error: "ValidationException", ErrorMessage: "The model returned the following errors: temperature: range: 0..1"})
	base := newBedrockGateway(t, fake)
	res, err := http.Post(base+"/responses", "application/json", strings.NewReader(`{"input":"hi","stream":true}`))
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	wantError(t, res.StatusCode, body, http.StatusBadRequest, "", "")
	require.Contains(t, string(body), "temperature: range")
	require.Equal(t, 1, fake.Calls())
}

// The Vercel AI SDK (streamText), the Agents SDK (a streamed run) and
// LangChain (ChatOpenAI with the Responses API, stream) surface a streamed
// create the provider refuses as the HTTP error of the refusal, as against
// OpenAI: the AI SDK's APICallError of status 400, not retryable; the
// OpenAI SDK's BadRequestError under the other two.
func TestClientsStreamRefusedByTheProvider(t *testing.T) {
	dir := jsClients(t)
	g := newGateway(t, refusing(refusedTemperature), nil)
	type client struct {
		Text   string
		Errors []struct {
			Name      string
			Status    int
			Retryable *bool
			Message   string
		}
	}
	var got struct{ AISDK, Agents, LangChain client }
	runJS(t, dir, "refused_clients.mjs", g.srv.URL+"/v1", &got)
	for name, c := range map[string]client{"AI SDK": got.AISDK, "Agents SDK": got.Agents, "LangChain": got.LangChain} {
		require.Empty(t, c.Text, name)
		require.Len(t, c.Errors, 1, "%s: one error", name)
		e := c.Errors[0]
		require.Equal(t, http.StatusBadRequest, e.Status, "%s: %+v", name, e)
		require.Contains(t, e.Message, "Unsupported parameter: 'temperature'", name)
	}
	require.Equal(t, "AI_APICallError", got.AISDK.Errors[0].Name)
	require.NotNil(t, got.AISDK.Errors[0].Retryable)
	require.False(t, *got.AISDK.Errors[0].Retryable, "a 400 is not retried")
}

// openai-go with its default retries, streaming in a conversation: the
// provider's 429 of the first try is the stream's HTTP 429, which the SDK
// retries on its own; the conversation holds the input once, with the
// answer of the try that ran.
func TestStreamRetriedInAConversation(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	g := newGateway(t, fakellm.NewHandler(func(fakellm.Request) fakellm.Turn {
		if calls.Add(1) == 1 {
			return fakellm.Turn{Status: http.StatusTooManyRequests, Header: http.Header{"Retry-After-Ms": {"10"}}}
		}
		return fakellm.Turn{Text: "Hello."}
	}), nil)
	ctx := t.Context()
	conv, err := g.client.Conversations.New(ctx, conversations.ConversationNewParams{})
	require.NoError(t, err)
	p := textParams("hi")
	p.Conversation = responses.ResponseNewParamsConversationUnion{OfString: openai.String(conv.ID)}
	stream := g.client.Responses.NewStreaming(ctx, p, option.WithMaxRetries(2))
	var status string
	for stream.Next() {
		if ev := stream.Current(); ev.Type == "response.completed" {
			status = string(ev.Response.Status)
		}
	}
	require.NoError(t, stream.Err())
	require.Equal(t, "completed", status)
	require.Equal(t, int32(2), calls.Load())
	items, err := g.client.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{Order: conversations.ItemListParamsOrderAsc})
	require.NoError(t, err)
	var roles []string
	for _, it := range items.Data {
		roles = append(roles, it.Role)
	}
	require.Equal(t, []string{"user", "assistant"}, roles, "the input once")
}
