package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/engine"
	"github.com/lambent/lambent/pkg/pacing"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/store"
)

// wordsProvider streams a sentence word by word, each delta on its own
// (provider.Delta.More unset): the fake model of BenchmarkGateway.
type wordsProvider struct{ words []string }

func (p wordsProvider) Complete(context.Context, *provider.Request) (*provider.Result, error) {
	return &provider.Result{Text: strings.Join(p.words, ""), FinishReason: provider.FinishStop, Usage: api.Usage{InputTokens: 12, OutputTokens: 16, TotalTokens: 28}}, nil
}

func (p wordsProvider) Stream(ctx context.Context, req *provider.Request, fn func(provider.Delta) error) (*provider.Result, error) {
	for _, w := range p.words {
		if err := fn(provider.Delta{Kind: provider.DeltaText, Text: w}); err != nil {
			return nil, err
		}
	}
	return p.Complete(ctx, req)
}

// flushDiscard is an http.ResponseWriter that flushes and keeps nothing,
// counting its writes and flushes.
type flushDiscard struct {
	header          http.Header
	writes, flushes int
	bytes           int
}

func (w *flushDiscard) Header() http.Header { return w.header }
func (w *flushDiscard) WriteHeader(int)     {}
func (w *flushDiscard) Write(p []byte) (int, error) {
	w.writes++
	w.bytes += len(p)
	return len(p), nil
}
func (w *flushDiscard) Flush() { w.flushes++ }

// BenchmarkStreamWrite measures the streamed path of BenchmarkGateway/stream
// without the network and the model's decoding: the engine runs a
// response whose model streams a 14-word sentence a word at a time, its
// 22 events going through the handler's pacing.Writer and responseWriter
// to a ResponseWriter that discards them.
func BenchmarkStreamWrite(b *testing.B) {
	words := strings.SplitAfter("Hello! This is a short answer from the fake backend, sent word by word.", " ")
	e, err := engine.New(engine.Config{Provider: wordsProvider{words: words}, Store: store.NewMemory(store.MemoryConfig{}),
		DefaultModel: "test-model", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	req, err := api.DecodeCreateRequest([]byte(`{"input":"Say hello","stream":true}`))
	if err != nil {
		b.Fatal(err)
	}
	h := &Handler{}
	cfg := pacing.Config{}.WithDefaults()
	w := &flushDiscard{header: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		rw := &responseWriter{h: h, w: w}
		pw := pacing.New(rw, cfg)
		if err := e.CreateResponse(context.Background(), req, pw); err != nil {
			b.Fatal(err)
		}
		pw.Close()
		rw.done()
		rw.release()
	}
	b.ReportMetric(float64(w.writes)/float64(b.N), "writes/op")
	b.ReportMetric(float64(w.flushes)/float64(b.N), "flushes/op")
}
