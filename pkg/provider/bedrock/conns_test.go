package bedrock_test

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/lambent/lambent/internal/testing/fakebedrock"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/provider/bedrock"
)

// Calls one after the other share one connection: a streamed answer's
// event stream is read to its end, so its connection goes back to the
// pool (over the internet each new one is a TLS handshake).
func TestCallsReuseConnection(t *testing.T) {
	fake := fakebedrock.NewHandler(func(fakebedrock.Request) fakebedrock.Turn { return fakebedrock.Turn{Text: "ok"} })
	t.Cleanup(fake.Close)
	var dials atomic.Int64
	d := &net.Dialer{}
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return d.DialContext(ctx, network, addr)
	}}
	defer tr.CloseIdleConnections()
	cfg := fake.AWSConfig()
	cfg.HTTPClient = &http.Client{Transport: tr}
	p := bedrock.New(bedrock.Config{AWS: cfg, CachePoints: bedrock.CachePointsOff})
	req := &provider.Request{Model: claude, Items: []api.Item{user("hi")}}
	for range 3 {
		if _, err := p.Stream(context.Background(), req, func(provider.Delta) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Complete(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("6 calls dialed %d connections, want 1", n)
	}
}
