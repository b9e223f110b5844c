package httpapi_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/lambent/lambent/internal/testing/fakellm"
)

// BenchmarkGateway measures one request to the gateway as the mains build
// it (memory store, logs at error level) over loopback, the fake model on
// loopback answering a 14-word sentence word by word: what `make bench`
// sends. allocs/op and the CPU profile hold the client's, the gateway's
// and the fake model's together; `make bench` (cmd/bench) sets them beside
// a bare reverse proxy. Run:
// go test -run '^$' -bench Gateway -benchmem -cpuprofile cpu.out ./pkg/httpapi/
// and go tool pprof -focus 'httpapi.\(\*Handler\)' cpu.out for the handler.
func BenchmarkGateway(b *testing.B) {
	fake := fakellm.NewHandler(func(fakellm.Request) fakellm.Turn {
		return fakellm.Turn{Text: "Hello! This is a short answer from the fake backend, sent word by word.", Usage: fakellm.Usage{PromptTokens: 12, CompletionTokens: 16}}
	})
	fake.SetRecording(false)
	g := newGatewayWith(b, fake, nil, nil)
	for _, c := range []struct{ name, body string }{
		{"complete", `{"input":"Say hello"}`},
		{"stream", `{"input":"Say hello","stream":true}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			body := []byte(c.body)
			b.ReportAllocs()
			for b.Loop() {
				res, err := g.http.Post(g.srv.URL+"/v1/responses", "application/json", bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				_, err = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if err != nil || res.StatusCode != http.StatusOK {
					b.Fatalf("status %d, %v", res.StatusCode, err)
				}
			}
		})
	}
}
