package dynamodb

import (
	"bytes"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/store/storetest"
)

// benchRecords are the records the benchmarks store: a normal response; the
// last record of a 50-turn chain (about a thousand tokens each way per
// turn); a tool-heavy one (a 300 KB JSON tool output); and 1 MB and 5 MB of
// random output text (which compresses poorly).
func benchRecords() []struct {
	name string
	rec  *store.Record
} {
	rng := mrand.New(mrand.NewPCG(42, 42))
	normal := storetest.NewRecord(api.NewID(api.PrefixResponse), api.StatusCompleted)

	chain := storetest.NewRecord(api.NewID(api.PrefixResponse), api.StatusCompleted)
	chain.Context = nil
	for turn := range 49 {
		chain.Context = append(chain.Context,
			api.Item{Type: api.ItemMessage, ID: fmt.Sprintf("msg_in_%d", turn), Role: api.RoleUser,
				Content: []api.ContentPart{{Type: api.PartInputText, Text: storetest.Words(rng, 4<<10)}}},
			api.Item{Type: api.ItemFunctionCall, ID: fmt.Sprintf("fc_%d", turn), Status: api.ItemCompleted, CallID: fmt.Sprintf("call_%d", turn), Name: "search", Arguments: `{"q":"x"}`},
			api.Item{Type: api.ItemMessage, ID: fmt.Sprintf("msg_out_%d", turn), Status: api.ItemCompleted, Role: api.RoleAssistant,
				Content: []api.ContentPart{{Type: api.PartOutputText, Text: storetest.Words(rng, 4<<10)}}})
	}

	tool := storetest.NewRecord(api.NewID(api.PrefixResponse), api.StatusCompleted)
	var rows bytes.Buffer
	rows.WriteString("[")
	for i := range 3000 {
		if i > 0 {
			rows.WriteString(",")
		}
		fmt.Fprintf(&rows, `{"id":%d,"name":%q,"price":%.2f,"in_stock":%t}`, i, storetest.Words(rng, 30), rng.Float64()*100, rng.IntN(2) == 0)
	}
	rows.WriteString("]")
	tool.Input = append(tool.Input, api.Item{Type: api.ItemFunctionCallOutput, ID: "fco_rows", CallID: "call_rows", Output: rows.String()})

	random := func(n int) *store.Record {
		r := storetest.NewRecord(api.NewID(api.PrefixResponse), api.StatusCompleted)
		r.Response.Output = append(r.Response.Output, api.Item{Type: api.ItemMessage, ID: "msg_big", Status: api.ItemCompleted, Role: api.RoleAssistant,
			Content: []api.ContentPart{{Type: api.PartOutputText, Text: storetest.RandomText(rng, n)}}})
		return r
	}
	return []struct {
		name string
		rec  *store.Record
	}{{"normal", normal}, {"chain50", chain}, {"tool300KB", tool}, {"random1MB", random(1 << 20)}, {"random5MB", random(5 << 20)}}
}

// BenchmarkCodec measures the record encoding at several gzip levels:
// time to encode and decode, and the compressed size (bytes/record and
// percent of the JSON). Run: go test -run '^$' -bench Codec ./pkg/store/dynamodb/
func BenchmarkCodec(b *testing.B) {
	for _, r := range benchRecords() {
		for _, level := range []int{1, 2, 4, 6, 9} {
			c := newCodec(DefaultMaxRecordBytes, level)
			body, raw, err := c.encode(r.rec)
			require.NoError(b, err)
			b.Run(fmt.Sprintf("%s/level%d/encode", r.name, level), func(b *testing.B) {
				b.SetBytes(int64(raw))
				for b.Loop() {
					if _, _, err := c.encode(r.rec); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(body)), "bytes/record")
				b.ReportMetric(100*float64(len(body))/float64(raw), "%ofJSON")
			})
			if level != compressionLevel {
				continue
			}
			b.Run(fmt.Sprintf("%s/level%d/decode", r.name, level), func(b *testing.B) {
				b.SetBytes(int64(raw))
				for b.Loop() {
					if _, err := c.decode(r.rec.Response.ID, bytes.NewReader(body)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkDynamoDB measures store operations against DynamoDB Local
// (latency per operation, with p50 and p99): create and get of a normal
// response, a continuation (get the previous response, create the next),
// a checkpoint update, and create/get of large records. Run:
// go test -run '^$' -bench DynamoDB ./pkg/store/dynamodb/
func BenchmarkDynamoDB(b *testing.B) {
	s := newStore(b)
	ctx := b.Context()
	records := benchRecords()
	lat := func(b *testing.B, fn func(i int) error) {
		var ds []time.Duration
		i := 0
		for b.Loop() {
			start := time.Now()
			if err := fn(i); err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(start))
			i++
		}
		slices.Sort(ds)
		b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds())/1000, "p99-ms")
	}
	withID := func(rec *store.Record, id string, st api.Status) *store.Record {
		r := *rec
		resp := *rec.Response
		resp.ID, resp.Status = id, st
		r.Response = &resp
		return &r
	}
	for _, r := range records {
		if r.name == "tool300KB" {
			continue
		}
		var ids []string
		b.Run("create/"+r.name, func(b *testing.B) {
			lat(b, func(int) error {
				id := api.NewID(api.PrefixResponse)
				ids = append(ids, id)
				return s.Create(ctx, withID(r.rec, id, api.StatusCompleted))
			})
		})
		b.Run("get/"+r.name, func(b *testing.B) {
			lat(b, func(i int) error {
				_, err := s.Get(ctx, ids[i%len(ids)])
				return err
			})
		})
	}
	normal := records[0].rec
	prev := api.NewID(api.PrefixResponse)
	require.NoError(b, s.Create(ctx, withID(normal, prev, api.StatusRequiresAction)))
	b.Run("continuation/normal", func(b *testing.B) {
		lat(b, func(int) error {
			p, err := s.Get(ctx, prev)
			if err != nil {
				return err
			}
			next := withID(normal, api.NewID(api.PrefixResponse), api.StatusCompleted)
			next.Context = p.Conversation()
			return s.Create(ctx, next)
		})
	})
	// An update is measured as a progress checkpoint (in_progress to
	// in_progress), which may repeat on one record.
	running := withID(normal, api.NewID(api.PrefixResponse), api.StatusInProgress)
	require.NoError(b, s.Create(ctx, running))
	b.Run("update/normal", func(b *testing.B) {
		lat(b, func(int) error {
			return s.Update(ctx, running, api.StatusInProgress) // increments running.Version
		})
	})
}
