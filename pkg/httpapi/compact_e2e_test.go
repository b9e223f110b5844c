package httpapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakellm"
)

const summary = "SUMMARY: the user is Ada, likes tea, asked for a haiku and got one."

// compactionKeys is a LAMBENT_COMPACTION_KEYS value with one key per id.
func compactionKeys(ids ...string) string {
	var entries []string
	for _, id := range ids {
		entries = append(entries, id+"="+base64.StdEncoding.EncodeToString(bytes.Repeat([]byte(id[:1]), 32)))
	}
	return strings.Join(entries, ",")
}

// asInput turns a compacted window, as openai-go decodes it, into input
// items the way a client sends it back.
func asInput(t *testing.T, out []responses.ResponseOutputItemUnion) []responses.ResponseInputItemUnionParam {
	t.Helper()
	var in []responses.ResponseInputItemUnionParam
	for _, it := range out {
		switch it.Type {
		case "message":
			m := it.AsMessage()
			require.Equal(t, "user", string(m.Role))
			require.Len(t, m.Content, 1)
			in = append(in, responses.ResponseInputItemParamOfMessage(m.Content[0].Text, responses.EasyInputMessageRoleUser))
		case "compaction":
			c := it.AsCompaction()
			in = append(in, responses.ResponseInputItemUnionParam{OfCompaction: &responses.ResponseCompactionItemParam{ID: openai.String(c.ID), EncryptedContent: c.EncryptedContent}})
		default:
			t.Fatalf("unexpected item %s in a compacted window", it.RawJSON())
		}
	}
	return in
}

type chatMsg struct{ Role, Text string }

func messages(r fakellm.Request) []chatMsg {
	var out []chatMsg
	for _, m := range r.Messages {
		out = append(out, chatMsg{m.Role, m.Content.String()})
	}
	return out
}

// The compact round trip through openai-go: a conversation, Compact with
// previous_response_id and more input (and every hint openai-go's
// ResponseCompactParams has) (a valid CompactResource: the user
// messages, then a compaction item; usage), then a new response whose
// input is the window: the model saw the summary, not the compacted turns.
func TestE2ECompactRoundTrip(t *testing.T) {
	t.Parallel()
	g := newGateway(t, fakellm.New(
		fakellm.Turn{Text: "Tea leaves drifting / ..."},
		fakellm.Turn{Text: summary, Usage: fakellm.Usage{PromptTokens: 40, CompletionTokens: 15, CachedTokens: 8}},
		fakellm.Turn{Text: "You are Ada."},
	), map[string]string{"LAMBENT_COMPACTION_KEYS": compactionKeys("k1")})
	ctx := context.Background()

	r1, err := g.client.Responses.New(ctx, textParams("I am Ada. Write a haiku about tea."))
	require.NoError(t, err)

	c, err := g.client.Responses.Compact(ctx, responses.ResponseCompactParams{
		Model:              "test-model",
		PreviousResponseID: openai.String(r1.ID),
		Input:              responses.ResponseCompactParamsInputUnion{OfString: openai.String("Thanks, I like tea.")},
		// openai-go's caching and image hints: checked, then ignored.
		PromptCacheRetention: responses.ResponseCompactParamsPromptCacheRetention24h,
		PromptCacheOptions:   responses.ResponseCompactParamsPromptCacheOptions{Mode: "explicit"},
		Image:                responses.ResponseCompactParamsImage{ContextCompression: "auto"},
	})
	require.NoError(t, err)
	raw := []byte(c.RawJSON())
	require.NoError(t, validator(t).Validate("CompactResource", raw), "%s", raw)
	require.Equal(t, "response.compaction", string(c.Object))
	require.True(t, strings.HasPrefix(c.ID, "resp_"), c.ID)
	require.NotZero(t, c.CreatedAt)
	require.Equal(t, int64(55), c.Usage.TotalTokens)
	require.Equal(t, int64(8), c.Usage.InputTokensDetails.CachedTokens)
	require.Len(t, c.Output, 3, "%s", raw)
	require.Equal(t, []string{"message", "message", "compaction"}, []string{c.Output[0].Type, c.Output[1].Type, c.Output[2].Type})
	cmp := c.Output[2].AsCompaction()
	require.True(t, strings.HasPrefix(cmp.ID, "cmp_"), cmp.ID)
	require.True(t, strings.HasPrefix(cmp.EncryptedContent, "k1."), "the blob names its key")
	require.NotContains(t, string(raw), "Ada, likes", "the summary is sealed")

	reqs := g.fake.Requests()
	require.Len(t, reqs, 2)
	got := messages(reqs[1])
	require.Len(t, got, 4)
	require.Equal(t, []chatMsg{{"user", "I am Ada. Write a haiku about tea."}, {"assistant", "Tea leaves drifting / ..."}, {"user", "Thanks, I like tea."}}, got[:3])
	require.Equal(t, "user", got[3].Role)
	require.Contains(t, got[3].Text, "summary", "the last message asks for the summary")

	in := append(asInput(t, c.Output), responses.ResponseInputItemParamOfMessage("Who am I?", responses.EasyInputMessageRoleUser))
	r2, err := g.client.Responses.New(ctx, responses.ResponseNewParams{Input: responses.ResponseNewParamsInputUnion{OfInputItemList: in}})
	require.NoError(t, err)
	require.Equal(t, "You are Ada.", r2.OutputText())
	reqs = g.fake.Requests()
	require.Len(t, reqs, 3)
	require.Equal(t, []chatMsg{
		{"user", "I am Ada. Write a haiku about tea."},
		{"user", "Thanks, I like tea."},
		{"system", "Summary of the earlier conversation:\n\n" + summary},
		{"user", "Who am I?"},
	}, messages(reqs[2]))

	// input_items lists the compaction item as it was sent.
	items, err := g.client.Responses.InputItems.List(ctx, r2.ID, responses.InputItemListParams{Order: responses.InputItemListParamsOrderAsc})
	require.NoError(t, err)
	require.Len(t, items.Data, 4)
	require.Equal(t, "compaction", items.Data[2].Type)
	require.Equal(t, cmp.EncryptedContent, items.Data[2].EncryptedContent)
	require.NoError(t, validator(t).Validate("CompactionBody", []byte(items.Data[2].RawJSON())))
}

// A tampered blob is a 400 naming input[i].encrypted_content (create and
// compact); another tenant's blob too; the model is never called.
func TestE2ECompactionTampered(t *testing.T) {
	t.Parallel()
	g := newGateway(t, fakellm.New(fakellm.Turn{Text: summary}), map[string]string{
		"LAMBENT_COMPACTION_KEYS": compactionKeys("k1"),
		"LAMBENT_API_KEYS":        "acme=sk-acme-0123456789abcdef,globex=sk-globex-0123456789abcdef",
	})
	ctx := context.Background()
	client := func(key string) openai.Client {
		return openai.NewClient(option.WithBaseURL(g.srv.URL+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0), option.WithHTTPClient(g.http))
	}
	acme, globex := client("sk-acme-0123456789abcdef"), client("sk-globex-0123456789abcdef")
	c, err := acme.Responses.Compact(ctx, responses.ResponseCompactParams{Model: "test-model",
		Input: responses.ResponseCompactParamsInputUnion{OfString: openai.String("I am Ada.")}})
	require.NoError(t, err)
	blob := c.Output[1].AsCompaction().EncryptedContent

	// Flip one bit of a character from the middle on whose flip is still
	// a letter or digit (a random blob may hold '+', '/' or '_' there).
	b := []byte(blob)
	for i := len(b) / 2; i < len(b); i++ {
		if c := b[i] ^ 0x04; c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			b[i] = c
			break
		}
	}
	tampered := string(b)
	if tampered == blob || !json.Valid([]byte(`"`+tampered+`"`)) {
		t.Fatalf("bad tampering: %q", tampered)
	}
	item := func(blob string) string {
		return `{"input":[{"role":"user","content":"hi"},{"type":"compaction","encrypted_content":"` + blob + `"}]}`
	}
	post := func(key, path, body string) (int, []byte) {
		req, err := http.NewRequest(http.MethodPost, g.srv.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := g.http.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		var buf bytes.Buffer
		_, err = buf.ReadFrom(res.Body)
		require.NoError(t, err)
		return res.StatusCode, buf.Bytes()
	}
	for _, path := range []string{"/v1/responses", "/v1/responses/compact"} {
		status, body := post("sk-acme-0123456789abcdef", path, item(tampered))
		wantError(t, status, body, http.StatusBadRequest, "input[1].encrypted_content", "invalid_encrypted_content")
		status, body = post("sk-globex-0123456789abcdef", path, item(blob))
		wantError(t, status, body, http.StatusBadRequest, "input[1].encrypted_content", "invalid_encrypted_content")
	}
	// Through the SDK: the same 400.
	_, err = globex.Responses.New(ctx, responses.ResponseNewParams{Input: responses.ResponseNewParamsInputUnion{
		OfInputItemList: []responses.ResponseInputItemUnionParam{responses.ResponseInputItemParamOfCompaction(blob)}}})
	apiErr := wantAPIError(t, err, http.StatusBadRequest)
	require.Equal(t, "input[0].encrypted_content", apiErr.Param)
	require.Equal(t, 1, g.fake.Calls(), "only the compaction called the model")
}

// Keys from LAMBENT_COMPACTION_KEYS survive a restart and a rotation: a
// second gateway holding the old key after a new one opens the first's
// blob; one without it answers 400.
func TestE2ECompactionKeyRotation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g1 := newGateway(t, fakellm.New(fakellm.Turn{Text: summary}), map[string]string{"LAMBENT_COMPACTION_KEYS": compactionKeys("k1")})
	c, err := g1.client.Responses.Compact(ctx, responses.ResponseCompactParams{Model: "test-model",
		Input: responses.ResponseCompactParamsInputUnion{OfString: openai.String("I am Ada.")}})
	require.NoError(t, err)
	in := responses.ResponseNewParams{Input: responses.ResponseNewParamsInputUnion{OfInputItemList: asInput(t, c.Output)}}

	g2 := newGateway(t, fakellm.New(fakellm.Turn{Text: "ok"}), map[string]string{"LAMBENT_COMPACTION_KEYS": compactionKeys("k2", "k1")})
	_, err = g2.client.Responses.New(ctx, in)
	require.NoError(t, err)
	require.Contains(t, g2.fake.Requests()[0].Messages[1].Content.String(), summary)

	g3 := newGateway(t, fakellm.New(), map[string]string{"LAMBENT_COMPACTION_KEYS": compactionKeys("k2")})
	_, err = g3.client.Responses.New(ctx, in)
	apiErr := wantAPIError(t, err, http.StatusBadRequest)
	require.Equal(t, "input[1].encrypted_content", apiErr.Param)
}

// The route: POST only, JSON only, known parameters only, errors in the
// OpenAI shape.
func TestE2ECompactBadRequests(t *testing.T) {
	t.Parallel()
	g := newGateway(t, fakellm.New(), nil)
	status, hdr, body := g.do(http.MethodGet, "/v1/responses/compact", "", "")
	wantError(t, status, body, http.StatusMethodNotAllowed, "-", "method_not_allowed")
	require.Equal(t, "POST", hdr.Get("Allow"))
	status, _, body = g.do(http.MethodPost, "/v1/responses/compact", "text/plain", `{"input":"x"}`)
	wantError(t, status, body, http.StatusUnsupportedMediaType, "-", "unsupported_media_type")
	for _, tc := range []struct{ body, param, code string }{
		{`{"model":"m","input":"x","stream":true}`, "stream", "unknown_parameter"},
		{`{"model":"m"}`, "input", ""},
		{`{"input":[{"type":"compaction"}]}`, "input[0].encrypted_content", ""},
		{`{"input":"x","previous_response_id":"resp_missing"}`, "previous_response_id", "previous_response_not_found"},
		{`nope`, "-", "invalid_json"},
	} {
		status, _, body := g.do(http.MethodPost, "/v1/responses/compact", "application/json", tc.body)
		want := http.StatusBadRequest
		if tc.code == "previous_response_not_found" {
			want = http.StatusNotFound
		}
		wantError(t, status, body, want, tc.param, tc.code)
	}
	require.Zero(t, g.fake.Calls())
}
