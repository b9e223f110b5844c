package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/lambent/lambent/pkg/tools"
	"github.com/lambent/lambent/pkg/tools/fetchurl"
	"github.com/lambent/lambent/pkg/tools/lambdatool"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// examplePage answers every request with a small HTML page, standing in for
// the internet.
type examplePage struct{ got chan string }

func (e examplePage) RoundTrip(r *http.Request) (*http.Response, error) {
	e.got <- r.URL.String()
	return &http.Response{
		StatusCode: 200,
		Status:     "200 OK",
		Header:     http.Header{"Content-Type": {"text/html; charset=utf-8"}},
		Body:       io.NopCloser(strings.NewReader(`<html><head><title>Example Domain</title></head><body><h1>Example Domain</h1><p>This domain is for use in documentation examples.</p></body></html>`)),
		Request:    r,
	}, nil
}

// TestSampleEvent runs events/tool-fetch_url.json (the sample for `sam local
// invoke -e`) through the function's handler.
func TestSampleEvent(t *testing.T) {
	reply, got := runSample(t, "tool-fetch_url.json")
	if reply.IsError || !strings.Contains(reply.Output, "Example Domain") || !strings.Contains(reply.Output, "documentation examples") {
		t.Fatalf("reply = %+v, want the page's text", reply)
	}
	if u := <-got; u != "https://example.com/" {
		t.Fatalf("fetched %q, want the event's URL", u)
	}
}

func TestConfig(t *testing.T) {
	env := map[string]string{"LAMBENT_FETCH_ALLOW_HOSTS": " 127.0.0.1:8080, localhost ,,10.0.0.0/8"}
	cfg := config(func(k string) string { return env[k] })
	if want := []string{"127.0.0.1:8080", "localhost", "10.0.0.0/8"}; !reflect.DeepEqual(cfg.AllowHosts, want) {
		t.Fatalf("AllowHosts = %q, want %q", cfg.AllowHosts, want)
	}
	if cfg := config(func(string) string { return "" }); cfg.AllowHosts != nil {
		t.Fatalf("AllowHosts = %q, want none", cfg.AllowHosts)
	}
}

// TestSampleEventRefused runs events/tool-fetch_url-refused.json: its URL
// is a loopback address, which the SSRF guard refuses without fetching;
// the refusal is an is_error result for the model, not a function error.
func TestSampleEventRefused(t *testing.T) {
	reply, got := runSample(t, "tool-fetch_url-refused.json")
	if !reply.IsError || !strings.Contains(reply.Output, "not allowed") {
		t.Fatalf("reply = %+v, want a refusal", reply)
	}
	select {
	case u := <-got:
		t.Fatalf("fetched %q", u)
	default:
	}
}

// runSample runs the events/ sample name through the function's handler,
// its fetches answered by examplePage (each URL fetched is sent on got).
func runSample(t *testing.T, name string) (reply tools.ToolResult, got chan string) {
	t.Helper()
	event, err := os.ReadFile("../../../events/" + name)
	if err != nil {
		t.Fatal(err)
	}
	got = make(chan string, 1)
	cfg := config(func(string) string { return "" })
	cfg.Client = &http.Client{Transport: examplePage{got}}
	out, err := lambdatool.Handle(context.Background(), fetchurl.Tool(cfg), event)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &reply); err != nil {
		t.Fatal(err)
	}
	return reply, got
}
