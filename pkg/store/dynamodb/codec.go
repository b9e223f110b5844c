package dynamodb

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/lambent/lambent/internal/wirejson"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/store"
)

// formatJSONGzip names the body encoding: the record's JSON, gzip-compressed.
const formatJSONGzip = "json+gzip"

// compressionLevel is the gzip level. Measured on this machine (see
// BenchmarkCodec and the package doc): level 4 keeps about 90% of the size
// saving of the default level 6 over level 1 on text-heavy records at a
// quarter of level 6's CPU time; on normal records every level gives the
// same capacity units.
const compressionLevel = 4

// wireRecord is the stored form of a store.Record (ExpiresAt lives in the
// item's TTL attribute).
type wireRecord struct {
	Response *api.Response `json:"response"`
	Input    []api.Item    `json:"input"`
	Context  []api.Item    `json:"context"`
	Job      *store.Job    `json:"job,omitempty"`
	// Hidden holds the items' fields beyond their wire shape, by item id
	// (api.ItemHidden).
	Hidden map[string]api.ItemHidden `json:"hidden,omitempty"`
	// ForcedMCP marks a tool_choice forcing an MCP server's tool, in the
	// response and the job's request, stored as asAllowedTools writes it.
	ForcedMCP bool `json:"forced_mcp,omitempty"`
	// Cut is store.Record.Cut: a field the releases before it ignore
	// (they start a continuation uncut).
	Cut string `json:"cut,omitempty"`
	// Rendered is store.Record.Rendered: a field the releases before it
	// ignore (a continuation then estimates the size alone).
	Rendered int `json:"rendered,omitempty"`
}

// codec encodes records. It pools gzip writers and readers, whose
// compression tables are costly to allocate for every record.
type codec struct {
	maxRaw  int
	level   int
	writers sync.Pool // *gzip.Writer
	readers sync.Pool // *gzip.Reader
}

func newCodec(maxRaw, level int) *codec {
	return &codec{maxRaw: maxRaw, level: level}
}

// errTooLargeRaw marks the limitWriter's refusal.
var errTooLargeRaw = errors.New("record exceeds the size limit")

// limitWriter counts the bytes offered to it and fails past max.
type limitWriter struct {
	w   io.Writer
	n   int
	max int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	l.n += len(p)
	if l.n > l.max {
		return 0, errTooLargeRaw
	}
	return l.w.Write(p)
}

// wire returns the stored form of rec: its response's output and tool
// choice, and its job's request's, in shapes the previous release reads
// (asCommentary, asAllowedTools).
func wire(rec *store.Record) wireRecord {
	resp := rec.Response
	out := asCommentary(resp.Output)
	forced := resp.ToolChoice.Type == api.ToolMCP
	if out != nil || forced {
		c := *resp
		if out != nil {
			c.Output = out
		}
		if forced {
			c.ToolChoice = asAllowedTools(c.ToolChoice)
		}
		resp = &c
	}
	job := rec.Job
	if job != nil && job.Request != nil && job.Request.ToolChoice != nil && job.Request.ToolChoice.Type == api.ToolMCP {
		j, req, choice := *job, *job.Request, asAllowedTools(*job.Request.ToolChoice)
		req.ToolChoice = &choice
		j.Request, job, forced = &req, &j, true
	}
	return wireRecord{Response: resp, Input: rec.Input, Context: rec.Context, Job: job, ForcedMCP: forced, Cut: rec.Cut, Rendered: rec.Rendered,
		Hidden: api.HiddenByID(rec.Context, rec.Input, rec.Response.Output)}
}

// asAllowedTools returns c, a tool_choice forcing a tool of an MCP server
// ({"type":"mcp"}), in the form of the releases before it, which refuse
// that type and with it the whole record: allowed_tools, required, naming
// that server's tool (or without a name its tools), which they run as a
// forced call of it. fromAllowedTools undoes it.
func asAllowedTools(c api.ToolChoice) api.ToolChoice {
	return api.ToolChoice{Type: "allowed_tools", Mode: api.ToolChoiceRequired,
		Tools: []api.ToolRef{{Type: api.ToolMCP, ServerLabel: c.ServerLabel, Name: c.Name}}}
}

// fromAllowedTools restores c, read from a record marked ForcedMCP, when
// asAllowedTools wrote it.
func fromAllowedTools(c *api.ToolChoice) {
	if c != nil && c.Type == "allowed_tools" && c.Mode == api.ToolChoiceRequired && len(c.Tools) == 1 && c.Tools[0].Type == api.ToolMCP {
		*c = api.ToolChoice{Type: api.ToolMCP, ServerLabel: c.Tools[0].ServerLabel, Name: c.Tools[0].Name}
	}
}

// phaseCommentary is the phase the releases before api.ItemHidden.Aside
// gave an assistant message validated output set aside.
const phaseCommentary = "commentary"

// asCommentary returns a copy of output whose assistant messages set aside
// (api.ItemHidden.Aside) are in the shape the releases before that field
// gave them: phase "commentary", output_text parts as "text" parts (their
// annotations and logprobs, which the model does not read, not kept). A
// release that does not know Aside (during a rolling deploy, or after a
// rollback) reads such a record as one of its own: those messages are
// commentary, which output_text leaves out. nil when output holds none;
// fromCommentary undoes it.
func asCommentary(output []api.Item) []api.Item {
	var out []api.Item
	for i := range output {
		if !asideAnswer(&output[i]) {
			continue
		}
		if out == nil {
			out = slices.Clone(output)
		}
		it := &out[i]
		it.Phase, it.Content = phaseCommentary, slices.Clone(it.Content)
		for j := range it.Content {
			if it.Content[j].Type == api.PartOutputText {
				it.Content[j] = api.ContentPart{Type: api.PartText, Text: it.Content[j].Text}
			}
		}
	}
	return out
}

// fromCommentary restores the set-aside assistant messages of output,
// read back with their hidden fields, that asCommentary wrote (the model
// writes no phase and no "text" part).
func fromCommentary(output []api.Item) {
	for i := range output {
		it := &output[i]
		if !asideAnswer(it) || it.Phase != phaseCommentary {
			continue
		}
		it.Phase = ""
		for j := range it.Content {
			if it.Content[j].Type == api.PartText {
				it.Content[j].Type = api.PartOutputText
			}
		}
	}
}

// asideAnswer reports whether it is an assistant message set aside.
func asideAnswer(it *api.Item) bool {
	return it.Hidden.Aside && it.Type == api.ItemMessage && it.Role == api.RoleAssistant
}

// writeRecord writes rec's stored form to w: its JSON as writeJSON writes
// it, but for HTML characters outside the items, which are escaped (as
// they always were in items). The items — the response's output, the input
// and the context, nearly all of a long conversation's record — are
// encoded one at a time (wirejson.Stream), so that the record is never
// held encoded whole, only compressed.
func writeRecord(w io.Writer, rec *store.Record) error {
	v := wire(rec)
	shell := v
	var arrays []wirejson.Array
	shell.Response, arrays = v.Response.StoredShell()
	if v.Input != nil {
		shell.Input = []api.Item{}
		arrays = append(arrays, api.ItemsArray("input", v.Input))
	}
	if v.Context != nil {
		shell.Context = []api.Item{}
		arrays = append(arrays, api.ItemsArray("context", v.Context))
	}
	s, err := wirejson.NewStream(&v, &shell, arrays...)
	if err != nil {
		return err
	}
	if _, err := s.WriteTo(w); err != nil {
		return err
	}
	_, err = w.Write(newline)
	return err
}

var newline = []byte{'\n'}

// encode returns the compressed JSON of rec and the size of the JSON; a
// *store.TooLargeError past c.maxRaw bytes of JSON.
func (c *codec) encode(rec *store.Record) ([]byte, int, error) {
	body, n, err := c.compress(func(w io.Writer) error { return writeRecord(w, rec) })
	switch {
	case errors.Is(err, errTooLargeRaw):
		return nil, 0, fmt.Errorf("dynamodb: response %s: %w", rec.Response.ID, c.tooLarge(n))
	case err != nil:
		return nil, 0, fmt.Errorf("dynamodb: encode response %s: %w", rec.Response.ID, err)
	}
	return body, n, nil
}

func (c *codec) tooLarge(n int) error {
	return &store.TooLargeError{Size: int64(n), Limit: int64(c.maxRaw)}
}

// checkSize returns a *store.TooLargeError when rec's JSON is longer than
// c.maxRaw bytes: what encode would refuse, without compressing.
func (c *codec) checkSize(rec *store.Record) error {
	lw := &limitWriter{w: io.Discard, max: c.maxRaw}
	err := writeRecord(lw, rec)
	switch {
	case errors.Is(err, errTooLargeRaw):
		return c.tooLarge(lw.n)
	case err != nil:
		return fmt.Errorf("dynamodb: encode response %s: %w", rec.Response.ID, err)
	}
	return nil
}

// writeJSON writes v's JSON to w as the store keeps it.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// compressJSON returns v's JSON, gzip-compressed, and the JSON's length;
// errTooLargeRaw past c.maxRaw bytes of JSON (the length is then the
// length offered so far).
func (c *codec) compressJSON(v any) ([]byte, int, error) {
	return c.compress(func(w io.Writer) error { return writeJSON(w, v) })
}

// compress returns what write writes, gzip-compressed, and its length;
// errTooLargeRaw past c.maxRaw bytes (as compressJSON).
func (c *codec) compress(write func(io.Writer) error) ([]byte, int, error) {
	var buf bytes.Buffer
	zw, _ := c.writers.Get().(*gzip.Writer)
	if zw == nil {
		var err error
		if zw, err = gzip.NewWriterLevel(&buf, c.level); err != nil {
			return nil, 0, fmt.Errorf("gzip: %w", err)
		}
	} else {
		zw.Reset(&buf)
	}
	defer c.writers.Put(zw)
	lw := &limitWriter{w: zw, max: c.maxRaw}
	if err := write(lw); err != nil {
		return nil, lw.n, err
	}
	if err := zw.Close(); err != nil {
		return nil, 0, err
	}
	return buf.Bytes(), lw.n, nil
}

// decompressJSON decodes gzip-compressed JSON from body into v, reading to
// the end so that gzip verifies its CRC-32 and length: a body reassembled
// from the wrong chunks fails here. Errors are reported as text: the JSON
// decoders of api types return *api.Error values meant for client input.
func (c *codec) decompressJSON(body io.Reader, v any) error {
	zr, _ := c.readers.Get().(*gzip.Reader)
	var err error
	if zr == nil {
		zr, err = gzip.NewReader(body)
	} else {
		err = zr.Reset(body)
	}
	if err != nil {
		return fmt.Errorf("%w: gzip: %v", store.ErrCorrupt, err)
	}
	defer c.readers.Put(zr)
	if err := json.NewDecoder(zr).Decode(v); err != nil {
		return fmt.Errorf("%w: json: %v", store.ErrCorrupt, err)
	}
	if _, err := io.Copy(io.Discard, zr); err != nil {
		return fmt.Errorf("%w: gzip: %v", store.ErrCorrupt, err)
	}
	return nil
}

// decode reads a record from its compressed JSON. Errors are
// store.ErrCorrupt: a stored record that cannot be read is the store's
// fault, never the client's.
func (c *codec) decode(id string, body io.Reader) (*store.Record, error) {
	var w wireRecord
	if err := c.decompressJSON(body, &w); err != nil {
		return nil, fmt.Errorf("dynamodb: response %s: %w", id, err)
	}
	if w.Response == nil || w.Response.ID != id {
		return nil, fmt.Errorf("dynamodb: response %s: %w: it holds another response", id, store.ErrCorrupt)
	}
	api.SetHidden(w.Hidden, w.Context, w.Input, w.Response.Output)
	fromCommentary(w.Response.Output)
	if w.ForcedMCP {
		fromAllowedTools(&w.Response.ToolChoice)
		if w.Job != nil && w.Job.Request != nil {
			fromAllowedTools(w.Job.Request.ToolChoice)
		}
	}
	return &store.Record{Response: w.Response, Input: w.Input, Context: w.Context, Job: w.Job, Cut: w.Cut, Rendered: w.Rendered}, nil
}
