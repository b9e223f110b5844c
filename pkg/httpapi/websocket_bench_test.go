package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/internal/testing/ssecheck"
)

// chainLength is how many turns a benchmark continues one conversation
// before it starts a new one, so that both transports see histories of the
// same lengths whatever b.N is.
const chainLength = 20

// BenchmarkContinuationTurn measures one continuation turn (previous_response_id
// plus a new user message, streamed, fake model) over one WebSocket against
// the same turn as a new HTTP request (SSE, keep-alive client). Run:
// go test -run '^$' -bench ContinuationTurn -benchtime 400x ./pkg/httpapi/
func BenchmarkContinuationTurn(b *testing.B) {
	fake := fakellm.NewHandler(func(fakellm.Request) fakellm.Turn { return fakellm.Turn{Text: "A short answer of a few words."} })
	fake.SetRecording(false)
	g := newGatewayWith(b, fake, map[string]string{"LAMBENT_LOG_LEVEL": "error"}, nil)
	body := func(prev string, i int) string {
		if prev == "" || i%chainLength == 0 {
			return fmt.Sprintf(`"input":"Turn %d"`, i)
		}
		return fmt.Sprintf(`"previous_response_id":%q,"input":"Turn %d"`, prev, i)
	}

	b.Run("websocket", func(b *testing.B) {
		c, _, err := websocket.Dial(b.Context(), wsURL(g.srv), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer c.CloseNow()
		c.SetReadLimit(-1)
		prev := ""
		i := 0
		for b.Loop() {
			if err := c.Write(b.Context(), websocket.MessageText, []byte(`{"type":"response.create",`+body(prev, i)+`}`)); err != nil {
				b.Fatal(err)
			}
			for {
				_, data, err := c.Read(b.Context())
				if err != nil {
					b.Fatal(err)
				}
				ev, err := ssecheck.Decode(data)
				if err != nil {
					b.Fatalf("%v: %s", err, data)
				}
				if ev.Type == "response.completed" {
					prev = ev.Response.ID
					break
				}
			}
			i++
		}
	})

	b.Run("http", func(b *testing.B) {
		client := g.srv.Client()
		prev := ""
		i := 0
		for b.Loop() {
			req, err := http.NewRequestWithContext(b.Context(), http.MethodPost, g.srv.URL+"/v1/responses", strings.NewReader(`{"stream":true,`+body(prev, i)+`}`))
			if err != nil {
				b.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			res, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			evs, _, err := ssecheck.Parse(res.Body)
			res.Body.Close()
			if err != nil || len(evs) == 0 {
				b.Fatalf("%v (%d events)", err, len(evs))
			}
			var last struct {
				Response struct{ ID, Status string } `json:"response"`
			}
			if err := json.Unmarshal(evs[len(evs)-1].Data, &last); err != nil || last.Response.Status != "completed" {
				b.Fatalf("last event %s: %v", evs[len(evs)-1].Data, err)
			}
			prev = last.Response.ID
			i++
		}
	})
}
