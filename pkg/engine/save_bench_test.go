package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
)

// textProvider answers with a fixed text.
type textProvider struct{ text string }

func (p textProvider) Complete(context.Context, *provider.Request) (*provider.Result, error) {
	return &provider.Result{Text: p.text, FinishReason: provider.FinishStop, Usage: api.Usage{InputTokens: 12, OutputTokens: 16}}, nil
}

func (p textProvider) Stream(ctx context.Context, req *provider.Request, fn func(provider.Delta) error) (*provider.Result, error) {
	res, _ := p.Complete(ctx, req)
	_ = fn(provider.Delta{Kind: provider.DeltaText, Text: res.Text})
	return res, nil
}

// lastResponse keeps the response written to it.
type lastResponse struct{ resp *api.Response }

func (*lastResponse) WriteEvent(*api.StreamEvent) error     { return nil }
func (w *lastResponse) WriteResponse(r *api.Response) error { w.resp = r; return nil }

// BenchmarkSave measures what storing a response costs the request path
// with the memory store: checkSize before the model call and save after
// it, for the response BenchmarkGateway/complete stores (a one-line input,
// a 14-word answer). The store holds its default 10000 entries at most,
// so that once full every save evicts one, as a busy gateway's does.
// cpu-ns/op is the process's CPU time (its garbage collector's included)
// an operation: steadier than ns/op on a busy machine.
func BenchmarkSave(b *testing.B) {
	e, st := newEngineB(b, textProvider{text: "Hello! This is a short answer from the fake backend, sent word by word."}, nil)
	ctx := context.Background()
	req, err := api.DecodeCreateRequest([]byte(`{"input":"Say hello"}`))
	if err != nil {
		b.Fatal(err)
	}
	w := &lastResponse{}
	if err := e.CreateResponse(ctx, req, w); err != nil {
		b.Fatal(err)
	}
	done, err := st.Get(ctx, w.resp.ID)
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]string, 20000) // twice the store's entries: a reused id is long evicted
	for i := range ids {
		ids[i] = fmt.Sprintf("resp_bench_%d", i)
	}
	b.ReportAllocs()
	i := 0
	cpu := processCPU()
	for b.Loop() {
		resp := *done.Response
		resp.ID, resp.Output = ids[i%len(ids)], nil
		i++
		r := &run{req: req, resp: &resp, input: done.Input}
		if err := e.checkSize(r); err != nil {
			b.Fatal(err)
		}
		resp.Output = done.Response.Output
		if err := e.save(ctx, r, nil); err != nil {
			b.Fatal(err)
		}
	}
	if cpu := processCPU() - cpu; cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}
