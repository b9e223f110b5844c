package store

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/lambent/lambent/pkg/api"
)

// filler sets fields of values to values that refer to something, each
// string and slice of a length (and capacity) of its own, so that a field
// counted twice or not at all changes the sum.
type filler struct {
	rng *rand.Rand
	// p is the chance that a field is set.
	p float64
	n int
}

func (f *filler) next() int { f.n++; return f.n }

// text returns a string of a length of its own (among the next 250).
func (f *filler) text() string { return string(make([]byte, 1+f.next()%250)) }

// fill sets v (settable), depth levels deep at most (types that contain
// themselves, such as a namespace tool's tools).
func (f *filler) fill(v reflect.Value, depth int) {
	if depth > 14 {
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(f.text())
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(f.next()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		v.SetUint(uint64(f.next() % 200))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(f.next()))
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		f.fill(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Interface:
		if s := reflect.TypeFor[string](); s.Implements(v.Type()) {
			v.Set(reflect.ValueOf(f.text()))
		}
	case reflect.Slice:
		n := 1 + f.next()%3
		s := reflect.MakeSlice(v.Type(), n, n+f.next()%5)
		for i := range n {
			f.fill(s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			f.fill(v.Index(i), depth+1)
		}
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for range 1 + f.next()%3 {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			f.fill(k, depth+1)
			f.fill(e, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		if v.Type() == timeType {
			v.Set(reflect.ValueOf(time.Unix(int64(f.next()), 0)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && f.rng.Float64() < f.p {
				f.fill(v.Field(i), depth+1)
			}
		}
	}
}

// TestRecordBytesMatchesSizeOf holds recordBytes (and itemBytes, the
// conversations'), which name the fields of a response's record, to sizeOf, which walks every field by
// reflection: on a record with every field set (a field added to a type
// of the record and not counted by recordBytes fails it), and on records
// with some fields set (nil pointers and slices, empty slices).
func TestRecordBytesMatchesSizeOf(t *testing.T) {
	for seed := range 300 {
		p := 1.0
		if seed > 0 {
			p = float64(seed%10) / 10
		}
		f := &filler{rng: rand.New(rand.NewPCG(uint64(seed), 27)), p: p}
		var rec Record
		f.fill(reflect.ValueOf(&rec).Elem(), 0)
		if rec.Response == nil {
			rec.Response = &api.Response{}
		}
		if seed%7 == 3 {
			// Non-nil slices with no room, which sizeOf does not count.
			rec.Input, rec.Response.Output = []api.Item{}, make([]api.Item, 0)
		}
		want := sizeOf(reflect.ValueOf(&rec).Elem())
		if got := recordBytes(&rec); got != want {
			t.Fatalf("seed %d (p %.1f): recordBytes = %d, sizeOf = %d", seed, p, got, want)
		}
		var wantItems int64
		for i := range rec.Input {
			wantItems += sizeOf(reflect.ValueOf(&rec.Input[i]).Elem())
		}
		if got := itemBytes(rec.Input); got != wantItems {
			t.Fatalf("seed %d (p %.1f): itemBytes = %d, sizeOf of each = %d", seed, p, got, wantItems)
		}
		if seed == 0 {
			t.Logf("a record with every field set: %d bytes", want)
		}
	}
	if got, want := recordBytes(&Record{}), sizeOf(reflect.ValueOf(&Record{}).Elem()); got != want {
		t.Fatalf("empty record: recordBytes = %d, sizeOf = %d", got, want)
	}
}

// TestFillerSetsEveryField checks the test's own filler: with p = 1 every
// exported field of a record's types it reaches is set, so
// TestRecordBytesMatchesSizeOf sees each of them.
func TestFillerSetsEveryField(t *testing.T) {
	f := &filler{rng: rand.New(rand.NewPCG(0, 27)), p: 1}
	var rec Record
	f.fill(reflect.ValueOf(&rec).Elem(), 0)
	var check func(v reflect.Value, path string, depth int)
	check = func(v reflect.Value, path string, depth int) {
		if depth > 12 {
			return
		}
		switch v.Kind() {
		case reflect.Pointer:
			if v.IsNil() {
				t.Errorf("%s is nil", path)
				return
			}
			check(v.Elem(), path, depth+1)
		case reflect.Slice:
			if v.Len() == 0 {
				t.Errorf("%s is empty", path)
				return
			}
			check(v.Index(0), path+"[0]", depth+1)
		case reflect.Map:
			if v.Len() == 0 {
				t.Errorf("%s is empty", path)
			}
		case reflect.String:
			if v.Len() == 0 {
				t.Errorf("%s is empty", path)
			}
		case reflect.Struct:
			if v.Type() == timeType {
				return
			}
			for i := range v.NumField() {
				if sf := v.Type().Field(i); sf.IsExported() {
					check(v.Field(i), path+"."+sf.Name, depth+1)
				}
			}
		}
	}
	check(reflect.ValueOf(rec), "Record", 0)
}

// BenchmarkRecordBytes sizes the record of BenchmarkGateway/complete's
// response (a one-line input, a 14-word answer, usage and timing) by
// recordBytes ("named") and by walking it with sizeOf ("reflect"), as the
// store did before; the two run in one process, so their ratio holds on a
// busy machine.
func BenchmarkRecordBytes(b *testing.B) {
	done, started := int64(1700000002), time.Unix(1700000000, 0).UTC()
	rec := &Record{
		Response: &api.Response{
			ID: "resp_18ec10a0c7cb0b87f32390f1fb7a96e42fae0bc8ea9d900a", Object: "response", CreatedAt: 1700000000,
			CompletedAt: &done, Status: api.StatusCompleted, Model: "test-model",
			Output: []api.Item{{Type: api.ItemMessage, ID: "msg_18ec10a0c7cb0b87f32390f1fb7a96e42fae0bc8ea9d900a", Status: api.ItemCompleted, Role: api.RoleAssistant,
				Content: []api.ContentPart{{Type: api.PartOutputText, Text: "Hello! This is a short answer from the fake backend, sent word by word.", Annotations: []json.RawMessage{}}}}},
			ToolChoice: api.ToolChoice{Mode: api.ToolChoiceAuto}, Truncation: "disabled", ParallelToolCalls: true,
			Text: api.TextConfig{Format: api.TextFormat{Type: api.FormatText}}, TopP: 1, Temperature: 1,
			Usage: &api.Usage{InputTokens: 12, OutputTokens: 16, TotalTokens: 28}, Store: true, ServiceTier: "default",
			Lambent: &api.LambentInfo{Timing: &api.Timing{StartedAt: started, EndedAt: started.Add(time.Millisecond), DurationMS: 1}},
		},
		Input: []api.Item{{Type: api.ItemMessage, ID: "msg_18ec10a0c7cb0b87f32390f1fb7a96e42fae0bc8ea9d900b", Role: api.RoleUser,
			Content: []api.ContentPart{{Type: api.PartInputText, Text: "Say hello"}}}},
	}
	if recordBytes(rec) != sizeOf(reflect.ValueOf(rec).Elem()) {
		b.Fatal("recordBytes and sizeOf differ")
	}
	b.Run("named", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			recordBytes(rec)
		}
	})
	b.Run("reflect", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sizeOf(reflect.ValueOf(rec).Elem())
		}
	})
	b.Run("copy", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			copyRecord(rec)
		}
	})
}
