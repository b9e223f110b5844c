package httpapi_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/dynamotest"
	"github.com/lambent/lambent/internal/testing/fakebedrock"
	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/pkg/app"
)

// The cross-tenant sweep: tenant A owns a stored response, one waiting on
// a function call (requires_action), a background response whose model
// call is in flight, a conversation with items and a compaction blob;
// tenant B tries every route and every request field that takes an id of
// those, once with A's ids and once with fresh ids of the same shape that
// name nothing. B must get the same answer for both (status, headers but
// Date and x-request-id, body with the ids masked), and afterwards A reads
// every object back unchanged, continues each, and the background
// response completes. On the memory store and on DynamoDB.
func TestTenantSweep(t *testing.T) {
	t.Parallel()
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		tenantSweep(t, nil)
	})
	t.Run("dynamodb", func(t *testing.T) {
		t.Parallel()
		tenantSweep(t, &app.Options{Store: dynamotest.NewStore(t, "")})
	})
}

// sweepIDs are the ids of tenant A's objects the sweep refers to.
type sweepIDs struct {
	Plain      string // a stored, completed response
	PlainIn    string // its input message item
	PlainOut   string // its output message item
	Pending    string // a response waiting on a function call
	PendingFC  string // its function_call item
	CallID     string // that call's call_id
	Background string // a background response whose model call is held
	Queued     string // a background response waiting for the worker
	Conv       string // a conversation with items
	ConvItem   string // one of its items
	Blob       string // a compaction item's encrypted_content
}

// fields lists the ids of s by name.
func (s sweepIDs) fields() map[string]string {
	return map[string]string{
		"Plain": s.Plain, "PlainIn": s.PlainIn, "PlainOut": s.PlainOut, "Pending": s.Pending,
		"PendingFC": s.PendingFC, "CallID": s.CallID, "Background": s.Background,
		"Queued": s.Queued,
		"Conv":   s.Conv, "ConvItem": s.ConvItem, "Blob": s.Blob,
	}
}

// fresh returns ids of the same shape as s's that name nothing: each
// letter or digit after the prefix (up to the last '_'; of the blob, its
// key id up to '.', so that it is a blob of a key the gateway holds)
// replaced by a random one of its kind.
func (s sweepIDs) fresh(t *testing.T) sweepIDs {
	t.Helper()
	id := func(id string) string { return freshAfter(t, id, strings.LastIndexByte(id, '_')+1) }
	return sweepIDs{
		Plain: id(s.Plain), PlainIn: id(s.PlainIn), PlainOut: id(s.PlainOut), Pending: id(s.Pending),
		PendingFC: id(s.PendingFC), CallID: id(s.CallID), Background: id(s.Background), Queued: id(s.Queued),
		Conv: id(s.Conv), ConvItem: id(s.ConvItem), Blob: freshAfter(t, s.Blob, strings.IndexByte(s.Blob, '.')+1),
	}
}

// freshAfter returns id with each letter or digit from prefix on replaced
// by a random one of its kind (hex digits by hex digits).
func freshAfter(t *testing.T, id string, prefix int) string {
	t.Helper()
	if id == "" {
		return ""
	}
	b := []byte(id)
	for i := prefix; i < len(b); i++ {
		switch c := b[i]; {
		case c >= '0' && c <= '9':
			b[i] = randomOf(t, "0123456789")
		case c >= 'a' && c <= 'f':
			b[i] = randomOf(t, "abcdef")
		case c >= 'g' && c <= 'z':
			b[i] = randomOf(t, "ghijklmnopqrstuvwxyz")
		case c >= 'A' && c <= 'Z':
			b[i] = randomOf(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
		}
	}
	require.NotEqual(t, id, string(b))
	return string(b)
}

func randomOf(t *testing.T, alphabet string) byte {
	n, err := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
	require.NoError(t, err)
	return alphabet[n.Int64()]
}

// sweepCase is one request of tenant B built from ids: an HTTP request
// (method, path, body) or, with ws set, a WebSocket response.create.
type sweepCase struct {
	name string
	req  func(ids sweepIDs) (method, path, body string)
	ws   bool
}

// sweepModel answers like clientModel; "slow" signals entered and holds
// its answer until release.
func sweepModel(entered chan<- struct{}, release <-chan struct{}) *fakellm.Server {
	return fakellm.NewHandler(func(req fakellm.Request) fakellm.Turn {
		if strings.Contains(req.Messages[len(req.Messages)-1].Content.String(), "slow") {
			entered <- struct{}{}
			return fakellm.Turn{Text: "Slow answer.", Block: release}
		}
		return clientTurn(req)
	})
}

const weatherToolJSON = `{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}`

func tenantSweep(t *testing.T, opts *app.Options) {
	entered, release := make(chan struct{}, 1), make(chan struct{})
	g := newGatewayWith(t, sweepModel(entered, release), map[string]string{
		"LAMBENT_API_KEYS":        "acme=" + wsKeyA + ",globex=" + wsKeyB,
		"LAMBENT_COMPACTION_KEYS": compactionKeys("k1"),
		"LAMBENT_LOCAL_WORKERS":   "1", // A's second background response waits
	}, opts)
	released := false
	t.Cleanup(func() { // before the gateway's, which wait for the held calls
		if !released {
			close(release)
		}
	})
	asA := func(method, path, body string) []byte {
		t.Helper()
		status, _, b := g.doWith(method, path, body, "Content-Type", "application/json", "Authorization", "Bearer "+wsKeyA)
		require.Equalf(t, http.StatusOK, status, "%s %s %s: %s", method, path, body, b)
		return b
	}
	type item struct {
		Type             string `json:"type"`
		ID               string `json:"id"`
		CallID           string `json:"call_id"`
		EncryptedContent string `json:"encrypted_content"`
	}
	var obj struct {
		ID     string
		Status string
		Output []item
		Data   []item
	}
	decode := func(b []byte) {
		t.Helper()
		obj.Output, obj.Data = nil, nil
		require.NoError(t, json.Unmarshal(b, &obj), "%s", b)
	}

	var a sweepIDs
	decode(asA(http.MethodPost, "/v1/responses", `{"input":"My name is Ada"}`))
	a.Plain, a.PlainOut = obj.ID, obj.Output[0].ID
	decode(asA(http.MethodGet, "/v1/responses/"+a.Plain+"/input_items", ""))
	a.PlainIn = obj.Data[0].ID
	decode(asA(http.MethodPost, "/v1/responses", `{"input":"What is the weather in Rome?","tools":[`+weatherToolJSON+`]}`))
	require.Equal(t, "function_call", obj.Output[0].Type)
	a.Pending, a.PendingFC, a.CallID = obj.ID, obj.Output[0].ID, obj.Output[0].CallID
	decode(asA(http.MethodPost, "/v1/conversations", `{"metadata":{"owner":"acme"},"items":[{"type":"message","role":"user","content":"My name is Cy"}]}`))
	a.Conv = obj.ID
	asA(http.MethodPost, "/v1/responses", `{"conversation":"`+a.Conv+`","input":"Hi there"}`)
	decode(asA(http.MethodGet, "/v1/conversations/"+a.Conv+"/items?order=asc", ""))
	require.Len(t, obj.Data, 3)
	a.ConvItem = obj.Data[0].ID
	decode(asA(http.MethodPost, "/v1/responses/compact", `{"model":"test-model","input":"I am Ada."}`))
	for _, it := range obj.Output {
		if it.Type == "compaction" {
			a.Blob = it.EncryptedContent
		}
	}
	require.NotEmpty(t, a.Blob)
	decode(asA(http.MethodPost, "/v1/responses", `{"input":"slow","background":true}`))
	a.Background = obj.ID
	<-entered
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		decode(asA(http.MethodGet, "/v1/responses/"+a.Background, ""))
		if obj.Status == "in_progress" {
			break
		}
		require.Equal(t, "queued", obj.Status)
		require.True(t, time.Now().Before(deadline), "the background response never started")
	}
	decode(asA(http.MethodPost, "/v1/responses", `{"input":"slow, queued","background":true}`))
	a.Queued = obj.ID
	require.Equal(t, "queued", obj.Status)

	// What A reads before the sweep, to read again after it.
	reads := []string{
		"/v1/responses/" + a.Plain, "/v1/responses/" + a.Plain + "/input_items",
		"/v1/responses/" + a.Pending, "/v1/responses/" + a.Pending + "/input_items",
		"/v1/responses/" + a.Background + "/input_items",
		"/v1/responses/" + a.Queued, "/v1/responses/" + a.Queued + "/input_items",
		"/v1/conversations/" + a.Conv, "/v1/conversations/" + a.Conv + "/items",
		"/v1/conversations/" + a.Conv + "/items/" + a.ConvItem,
	}
	before := map[string][]byte{}
	for _, path := range reads {
		before[path] = asA(http.MethodGet, path, "")
	}

	fresh := a.fresh(t)
	// WebSocket mode on the local server and on API Gateway's WebSocket
	// API (the apigw handler on the same engine).
	front := newAPIGWFront(t, g, map[string]string{wsKeyA: "acme", wsKeyB: "globex"})
	wss := []struct {
		name string
		c    *wsConn
	}{{"", dialWS(t, g.srv, wsKeyB)}, {"API Gateway ", dialFront(t, front, wsKeyB)}}
	sweep := func(phase string) {
		t.Helper()
		// B's own conversation and response, to name A's items from.
		status, _, body := g.doWith(http.MethodPost, "/v1/conversations", `{"items":[{"type":"message","role":"user","content":"B"}]}`,
			"Content-Type", "application/json", "Authorization", "Bearer "+wsKeyB)
		require.Equal(t, http.StatusOK, status, "%s", body)
		decode(body)
		bConv := obj.ID
		status, _, body = g.postAs(wsKeyB, `{"input":"B here"}`)
		require.Equal(t, http.StatusOK, status, "%s", body)
		decode(body)
		bResp := obj.ID
		var failures []string
		for _, c := range sweepCases(bConv, bResp) {
			for i, ws := range wss {
				if i > 0 && !c.ws {
					break
				}
				real, other := sweepAnswer(t, g, ws.c, c, a), sweepAnswer(t, g, ws.c, c, fresh)
				real, other = maskIDs(real, a, fresh), maskIDs(other, a, fresh)
				if real != other {
					failures = append(failures, fmt.Sprintf("%s%s:\n  A's id: %s\n  fresh:  %s", ws.name, c.name, real, other))
				}
				if testing.Verbose() {
					t.Logf("%s %s%s: %.120q", phase, ws.name, c.name, real)
				}
			}
		}
		require.Empty(t, failures, "%s: B's answers for A's ids differ from those for ids that name nothing:\n%s", phase, strings.Join(failures, "\n"))
	}
	sweep("idle")

	// A's objects are as they were.
	for _, path := range reads {
		require.Equal(t, string(before[path]), string(asA(http.MethodGet, path, "")), "A reads %s", path)
	}
	decode(asA(http.MethodGet, "/v1/responses/"+a.Background, ""))
	require.Equal(t, "in_progress", obj.Status, "the background response still runs")

	// Again while A runs a response in its conversation (which holds its
	// lock) and a continuation of its pending response: B still learns
	// nothing (no conversation_locked, no conflict).
	busy := make(chan string, 2)
	for _, body := range []string{
		`{"conversation":"` + a.Conv + `","input":"slow"}`,
		`{"previous_response_id":"` + a.Pending + `","tools":[` + weatherToolJSON + `],` +
			`"input":[{"type":"function_call_output","call_id":"` + a.CallID + `","output":"sunny"},{"role":"user","content":"slow"}]}`,
	} {
		go func() {
			status, _, b := g.postAs(wsKeyA, body)
			busy <- fmt.Sprintf("%d %s", status, b)
		}()
		<-entered
	}
	sweep("busy")
	close(release)
	released = true
	for range 2 {
		require.True(t, strings.HasPrefix(<-busy, "200 "), "A's response in its conversation or continuation")
	}

	// A goes on with each of its objects; the background responses
	// complete.
	for _, id := range []string{a.Background, a.Queued} {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			decode(asA(http.MethodGet, "/v1/responses/"+id, ""))
			if obj.Status == "completed" {
				break
			}
			require.Contains(t, []string{"queued", "in_progress"}, obj.Status)
			require.True(t, time.Now().Before(deadline), "the background response never completed")
		}
	}
	decode(asA(http.MethodPost, "/v1/responses", `{"previous_response_id":"`+a.Pending+`","tools":[`+weatherToolJSON+`],`+
		`"input":[{"type":"function_call_output","call_id":"`+a.CallID+`","output":"sunny"}]}`))
	require.Equal(t, "completed", obj.Status)
	asA(http.MethodPost, "/v1/responses", `{"previous_response_id":"`+a.Plain+`","input":"What is my name?"}`)
	asA(http.MethodPost, "/v1/responses", `{"conversation":"`+a.Conv+`","input":"What is my name?"}`)
	asA(http.MethodPost, "/v1/responses", `{"input":[{"type":"item_reference","id":"`+a.PlainOut+`"},{"type":"compaction","encrypted_content":"`+a.Blob+`"},{"role":"user","content":"hi"}]}`)
	decode(asA(http.MethodGet, "/v1/conversations/"+a.Conv+"/items?order=asc", ""))
	require.Len(t, obj.Data, 7, "A's conversation: its 3 items, the busy response's 2 and the last one's 2")
}

// dialFront opens a WebSocket connection to f with key.
func dialFront(t *testing.T, f *apigwFront, key string) *wsConn {
	t.Helper()
	c, _, err := websocket.Dial(t.Context(), "ws"+strings.TrimPrefix(f.URL(), "http"), &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + key}}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.CloseNow() })
	return &wsConn{t: t, c: c}
}

// sweepCases are the requests of tenant B; bConv and bResp are B's own
// conversation and response. Reads come first, then creates, then what
// would change or delete A's objects.
func sweepCases(bConv, bResp string) []sweepCase {
	get := func(name string, path func(ids sweepIDs) string) sweepCase {
		return sweepCase{name: "GET " + name, req: func(ids sweepIDs) (string, string, string) { return http.MethodGet, path(ids), "" }}
	}
	post := func(name, path string, body func(ids sweepIDs) string) sweepCase {
		return sweepCase{name: "POST " + path + " " + name, req: func(ids sweepIDs) (string, string, string) { return http.MethodPost, path, body(ids) }}
	}
	ws := func(name string, body func(ids sweepIDs) string) sweepCase {
		return sweepCase{name: "ws " + name, ws: true, req: func(ids sweepIDs) (string, string, string) {
			return "", "", `{"type":"response.create",` + body(ids)[1:]
		}}
	}
	responseIDs := map[string]func(ids sweepIDs) string{
		"plain":      func(ids sweepIDs) string { return ids.Plain },
		"pending":    func(ids sweepIDs) string { return ids.Pending },
		"background": func(ids sweepIDs) string { return ids.Background },
		"queued":     func(ids sweepIDs) string { return ids.Queued },
	}
	kinds := []string{"plain", "pending", "background", "queued"}
	var cases []sweepCase
	// Reads of A's responses.
	for _, kind := range kinds {
		id := responseIDs[kind]
		for _, query := range []string{"", "?stream=true", "?include[]=reasoning.encrypted_content", "?include=message.output_text.logprobs",
			"?stream=true&starting_after=0", "?stream=true&starting_after=3"} {
			cases = append(cases, get(kind+" response"+query, func(ids sweepIDs) string { return "/v1/responses/" + id(ids) + query }))
		}
		for _, query := range []string{"", "?limit=1", "?order=asc", "?after=PlainIn&order=asc", "?before=PlainIn", "?after=PlainOut&limit=2&order=desc"} {
			cases = append(cases, get(kind+" input_items"+query, func(ids sweepIDs) string {
				q := strings.NewReplacer("PlainIn", ids.PlainIn, "PlainOut", ids.PlainOut).Replace(query)
				return "/v1/responses/" + id(ids) + "/input_items" + q
			}))
		}
	}
	// B's own response and conversation paged from A's items.
	for _, query := range []string{"?after=%s", "?before=%s", "?after=%s&order=asc"} {
		cases = append(cases, get("B's input_items "+query, func(ids sweepIDs) string {
			return "/v1/responses/" + bResp + "/input_items" + fmt.Sprintf(query, ids.PlainIn)
		}))
		cases = append(cases, get("B's conversation items "+query, func(ids sweepIDs) string {
			return "/v1/conversations/" + bConv + "/items" + fmt.Sprintf(query, ids.ConvItem)
		}))
	}
	cases = append(cases,
		get("B's conversation item A's", func(ids sweepIDs) string { return "/v1/conversations/" + bConv + "/items/" + ids.ConvItem }),
		get("B's conversation item A's response item", func(ids sweepIDs) string { return "/v1/conversations/" + bConv + "/items/" + ids.PlainOut }),
	)
	// Reads of A's conversation.
	for _, query := range []string{"", "/items", "/items?order=asc&limit=1", "/items?after=ConvItem", "/items?include[]=reasoning.encrypted_content", "/items/ConvItem", "/items/PlainOut"} {
		cases = append(cases, get("conversation"+query, func(ids sweepIDs) string {
			return "/v1/conversations/" + ids.Conv + strings.NewReplacer("ConvItem", ids.ConvItem, "PlainOut", ids.PlainOut).Replace(query)
		}))
	}

	// Creates, counts and compactions that name A's objects.
	type creator struct {
		path string
		wrap func(fields string) string
	}
	creators := []creator{
		{"/v1/responses", func(f string) string { return "{" + f + "}" }},
		{"/v1/responses", func(f string) string { return `{"stream":true,` + f + "}" }},
		{"/v1/responses", func(f string) string { return `{"background":true,` + f + "}" }},
		{"/v1/responses", func(f string) string { return `{"store":false,` + f + "}" }},
		{"/v1/responses/input_tokens", func(f string) string { return "{" + f + "}" }},
		{"/v1/responses/compact", func(f string) string { return `{"model":"test-model",` + f + "}" }},
	}
	fields := map[string]func(ids sweepIDs) string{}
	for _, kind := range kinds {
		id := responseIDs[kind]
		fields["previous_response_id "+kind] = func(ids sweepIDs) string {
			return `"previous_response_id":"` + id(ids) + `","input":"What is my name?"`
		}
	}
	for name, f := range map[string]func(ids sweepIDs) string{
		"conversation": func(ids sweepIDs) string { return `"conversation":"` + ids.Conv + `","input":"What is my name?"` },
		"conversation object": func(ids sweepIDs) string {
			return `"conversation":{"id":"` + ids.Conv + `"},"input":"What is my name?"`
		},
		"item_reference in":   func(ids sweepIDs) string { return itemRef(ids.PlainIn) },
		"item_reference out":  func(ids sweepIDs) string { return itemRef(ids.PlainOut) },
		"item_reference call": func(ids sweepIDs) string { return itemRef(ids.PendingFC) },
		"item_reference conv": func(ids sweepIDs) string { return itemRef(ids.ConvItem) },
		"item_reference twice": func(ids sweepIDs) string {
			return itemRef(ids.PlainOut)[:len(itemRef(ids.PlainOut))-1] + `,{"type":"item_reference","id":"` + ids.PendingFC + `"}]`
		},
		"compaction": func(ids sweepIDs) string {
			return `"input":[{"type":"compaction","encrypted_content":"` + ids.Blob + `"},{"role":"user","content":"hi"}]`
		},
		"function_call_output of the pending call": func(ids sweepIDs) string {
			return `"previous_response_id":"` + ids.Pending + `","tools":[` + weatherToolJSON + `],"input":[{"type":"function_call_output","call_id":"` + ids.CallID + `","output":"sunny"}]`
		},
		"function_call_output after B's response": func(ids sweepIDs) string {
			return `"previous_response_id":"` + bResp + `","tools":[` + weatherToolJSON + `],"input":[{"type":"function_call_output","call_id":"` + ids.CallID + `","output":"sunny"}]`
		},
		"function_call_output alone": func(ids sweepIDs) string {
			return `"tools":[` + weatherToolJSON + `],"input":[{"type":"function_call_output","call_id":"` + ids.CallID + `","output":"sunny"}]`
		},
	} {
		fields[name] = f
	}
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		f := fields[name]
		for _, c := range creators {
			cases = append(cases, post(c.wrap(name), c.path, func(ids sweepIDs) string { return c.wrap(f(ids)) }))
		}
		cases = append(cases, ws(name, func(ids sweepIDs) string { return "{" + f(ids) + "}" }))
	}

	// What would change A's objects.
	del := func(name string, path func(ids sweepIDs) string) sweepCase {
		return sweepCase{name: "DELETE " + name, req: func(ids sweepIDs) (string, string, string) { return http.MethodDelete, path(ids), "" }}
	}
	cases = append(cases,
		sweepCase{name: "POST conversation metadata", req: func(ids sweepIDs) (string, string, string) {
			return http.MethodPost, "/v1/conversations/" + ids.Conv, `{"metadata":{"owner":"globex"}}`
		}},
		sweepCase{name: "POST conversation items", req: func(ids sweepIDs) (string, string, string) {
			return http.MethodPost, "/v1/conversations/" + ids.Conv + "/items", `{"items":[{"type":"message","role":"user","content":"x"}]}`
		}},
		sweepCase{name: "POST conversation items with A's item id", req: func(ids sweepIDs) (string, string, string) {
			return http.MethodPost, "/v1/conversations/" + ids.Conv + "/items", `{"items":[{"type":"message","id":"` + ids.ConvItem + `","role":"user","content":"x"}]}`
		}},
		del("B's conversation item A's", func(ids sweepIDs) string { return "/v1/conversations/" + bConv + "/items/" + ids.ConvItem }),
		del("conversation item", func(ids sweepIDs) string { return "/v1/conversations/" + ids.Conv + "/items/" + ids.ConvItem }),
		del("conversation", func(ids sweepIDs) string { return "/v1/conversations/" + ids.Conv }),
	)
	// B's own objects made with ids of A's items: they must neither
	// collide with A's nor be refused for them.
	with := func(name, path string, body func(ids sweepIDs) string) sweepCase {
		return sweepCase{name: "POST " + path + " " + name, req: func(ids sweepIDs) (string, string, string) { return http.MethodPost, path, body(ids) }}
	}
	cases = append(cases,
		with("message with A's input item id", "/v1/responses", func(ids sweepIDs) string {
			return `{"input":[{"type":"message","id":"` + ids.PlainIn + `","role":"user","content":"x"}]}`
		}),
		with("message with A's output item id", "/v1/responses", func(ids sweepIDs) string {
			return `{"input":[{"type":"message","id":"` + ids.PlainOut + `","role":"assistant","content":"x"},{"role":"user","content":"y"}]}`
		}),
		with("call with A's call ids", "/v1/responses", func(ids sweepIDs) string {
			return `{"tools":[` + weatherToolJSON + `],"input":[{"type":"function_call","id":"` + ids.PendingFC + `","call_id":"` + ids.CallID +
				`","name":"get_weather","arguments":"{}"},{"type":"function_call_output","call_id":"` + ids.CallID + `","output":"sunny"}]}`
		}),
		with("in B's conversation with A's item id", "/v1/responses", func(ids sweepIDs) string {
			return `{"conversation":"` + bConv + `","input":[{"type":"message","id":"` + ids.ConvItem + `","role":"user","content":"x"}]}`
		}),
		with("with A's item id", "/v1/conversations", func(ids sweepIDs) string {
			return `{"items":[{"type":"message","id":"` + ids.ConvItem + `","role":"user","content":"x"}]}`
		}),
		with("with A's response item id", "/v1/conversations/"+bConv+"/items", func(ids sweepIDs) string {
			return `{"items":[{"type":"message","id":"` + ids.PlainOut + `","role":"user","content":"x"}]}`
		}),
		with("with a reference to A's item", "/v1/conversations", func(ids sweepIDs) string {
			return `{"items":[{"type":"item_reference","id":"` + ids.PlainOut + `"}]}`
		}),
		with("with a reference to A's item", "/v1/conversations/"+bConv+"/items", func(ids sweepIDs) string {
			return `{"items":[{"type":"item_reference","id":"` + ids.ConvItem + `"}]}`
		}),
		with("with A's compaction", "/v1/conversations", func(ids sweepIDs) string {
			return `{"items":[{"type":"compaction","encrypted_content":"` + ids.Blob + `"}]}`
		}),
		with("with A's compaction", "/v1/conversations/"+bConv+"/items", func(ids sweepIDs) string {
			return `{"items":[{"type":"compaction","encrypted_content":"` + ids.Blob + `"}]}`
		}),
		with("in B's conversation holding A's compaction", "/v1/responses", func(sweepIDs) string {
			return `{"conversation":"` + bConv + `","input":"What is my name?"}`
		}),
		get("B's conversation item of A's id, B's", func(ids sweepIDs) string { return "/v1/conversations/" + bConv + "/items/" + ids.ConvItem }),
		get("B's conversation item of A's response item id, B's", func(ids sweepIDs) string { return "/v1/conversations/" + bConv + "/items/" + ids.PlainOut }),
	)
	for _, kind := range kinds {
		id := responseIDs[kind]
		cases = append(cases,
			sweepCase{name: "POST cancel " + kind, req: func(ids sweepIDs) (string, string, string) {
				return http.MethodPost, "/v1/responses/" + id(ids) + "/cancel", ""
			}},
			del("response "+kind, func(ids sweepIDs) string { return "/v1/responses/" + id(ids) }),
		)
	}
	return cases
}

// itemRef is an input of a user message and a reference to id.
func itemRef(id string) string {
	return `"input":[{"role":"user","content":"hi"},{"type":"item_reference","id":"` + id + `"}]`
}

// sweepAnswer is what B gets for c built from ids: the status, the
// headers but Date and x-request-id, and the body; over WebSocket, the
// first message (or, if it starts a response, the word and its type).
func sweepAnswer(t *testing.T, g *gateway, ws *wsConn, c sweepCase, ids sweepIDs) string {
	t.Helper()
	method, path, body := c.req(ids)
	if c.ws {
		ws.send(body)
		first := ws.read()
		var probe struct {
			Type string          `json:"type"`
			Seq  json.RawMessage `json:"sequence_number"`
		}
		require.NoError(t, json.Unmarshal(first, &probe), "%s", first)
		if probe.Type == "error" && probe.Seq == nil {
			return requestIDField.ReplaceAllString(string(first), `"request_id":"…"`)
		}
		ws.turn() // the rest of the response
		return "a response: " + probe.Type
	}
	return sweepHTTP(t, g.http, g.srv.URL, method, path, body)
}

// sweepHTTP is what tenant B (key wsKeyB) gets for a request to the
// gateway at base: the status, the headers but Date and x-request-id,
// and the body (of a successful POST, a create, none: it holds new ids
// and times).
func sweepHTTP(t *testing.T, client *http.Client, base, method, path, body string) string {
	t.Helper()
	// A stream of another tenant's running response would not end: a
	// bound, so that the sweep reports it.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+wsKeyB)
	res, err := client.Do(req)
	if err != nil {
		return "no answer: " + err.Error()
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return fmt.Sprintf("%d, then %v", res.StatusCode, err)
	}
	status, hdr := res.StatusCode, res.Header
	if status == http.StatusOK && method == http.MethodPost {
		b = []byte("(a success)")
		hdr.Del("Content-Length")
	}
	hdr.Del("Date")
	hdr.Del("X-Request-Id")
	var head bytes.Buffer
	require.NoError(t, hdr.Write(&head))
	return fmt.Sprintf("%d\n%s%s", status, head.String(), b)
}

// requestIDField is the request_id of a WebSocket error envelope.
var requestIDField = regexp.MustCompile(`"request_id":"[^"]*"`)

// maskIDs replaces every id of a and of fresh in s by its field's name.
func maskIDs(s string, a, fresh sweepIDs) string {
	var pairs []string
	for _, ids := range []sweepIDs{a, fresh} {
		for name, id := range ids.fields() {
			if id != "" {
				pairs = append(pairs, id, "<"+name+">")
			}
		}
	}
	return strings.NewReplacer(pairs...).Replace(s)
}

// The sweep of POST /v1/responses/input_tokens where it reads what its
// request names (Bedrock counts; the OpenAI-compatible provider answers
// 501 before reading anything): tenant B's count naming A's response,
// conversation, items or compaction blob answers as one naming nothing,
// and never reaches CountTokens. Not parallel: the Bedrock gateway sets
// the AWS environment.
func TestTenantSweepInputTokens(t *testing.T) {
	fake := fakebedrock.New(fakebedrock.Turn{Text: "Hello."}, fakebedrock.Turn{Text: summary})
	base := newBedrockGatewayWith(t, fake, map[string]string{
		"LAMBENT_API_KEYS":        "acme=" + wsKeyA + ",globex=" + wsKeyB,
		"LAMBENT_COMPACTION_KEYS": compactionKeys("k1"),
	})
	asA := func(method, path, body string) any {
		t.Helper()
		status, _, b := doWithKey(t, method, base+path, wsKeyA, body)
		require.Equal(t, http.StatusOK, status, "%s %s: %s", method, path, b)
		var v any
		require.NoError(t, json.Unmarshal(b, &v))
		return v
	}
	field := func(v any, path ...any) string {
		t.Helper()
		for _, p := range path {
			switch k := p.(type) {
			case string:
				v = v.(map[string]any)[k]
			case int:
				v = v.([]any)[k]
			}
		}
		return v.(string)
	}

	var a sweepIDs
	r := asA(http.MethodPost, "/responses", `{"input":"My name is Ada"}`)
	a.Plain, a.PlainOut = field(r, "id"), field(r, "output", 0, "id")
	a.PlainIn = field(asA(http.MethodGet, "/responses/"+a.Plain+"/input_items", ""), "data", 0, "id")
	a.Conv = field(asA(http.MethodPost, "/conversations", `{"items":[{"type":"message","role":"user","content":"My name is Cy"}]}`), "id")
	a.ConvItem = field(asA(http.MethodGet, "/conversations/"+a.Conv+"/items", ""), "data", 0, "id")
	a.Blob = field(asA(http.MethodPost, "/responses/compact", `{"input":"I am Ada."}`), "output", 1, "encrypted_content")
	// A counts with each: the count reads them.
	for _, body := range []string{
		`{"previous_response_id":"` + a.Plain + `","input":"hi"}`,
		`{"conversation":"` + a.Conv + `","input":"hi"}`,
		`{"input":[{"type":"item_reference","id":"` + a.PlainOut + `"},{"role":"user","content":"hi"}]}`,
		`{"input":[{"type":"compaction","encrypted_content":"` + a.Blob + `"},{"role":"user","content":"hi"}]}`,
	} {
		asA(http.MethodPost, "/responses/input_tokens", body)
	}
	counts := len(fake.Counts())

	fresh := a.fresh(t)
	var failures []string
	for name, body := range map[string]func(ids sweepIDs) string{
		"previous_response_id": func(ids sweepIDs) string { return `{"previous_response_id":"` + ids.Plain + `","input":"hi"}` },
		"conversation":         func(ids sweepIDs) string { return `{"conversation":"` + ids.Conv + `","input":"hi"}` },
		"conversation object":  func(ids sweepIDs) string { return `{"conversation":{"id":"` + ids.Conv + `"},"input":"hi"}` },
		"item_reference in":    func(ids sweepIDs) string { return "{" + itemRef(ids.PlainIn) + "}" },
		"item_reference out":   func(ids sweepIDs) string { return "{" + itemRef(ids.PlainOut) + "}" },
		"item_reference conv":  func(ids sweepIDs) string { return "{" + itemRef(ids.ConvItem) + "}" },
		"compaction": func(ids sweepIDs) string {
			return `{"input":[{"type":"compaction","encrypted_content":"` + ids.Blob + `"},{"role":"user","content":"hi"}]}`
		},
	} {
		real := maskIDs(sweepHTTP(t, http.DefaultClient, base, http.MethodPost, "/responses/input_tokens", body(a)), a, fresh)
		other := maskIDs(sweepHTTP(t, http.DefaultClient, base, http.MethodPost, "/responses/input_tokens", body(fresh)), a, fresh)
		if real != other || strings.HasPrefix(real, "200") {
			failures = append(failures, fmt.Sprintf("%s:\n  A's id: %s\n  fresh:  %s", name, real, other))
		}
	}
	require.Empty(t, failures, "B's counts naming A's objects differ from those naming nothing:\n%s", strings.Join(failures, "\n"))
	require.Len(t, fake.Counts(), counts, "none of B's counts reached Bedrock")
}
