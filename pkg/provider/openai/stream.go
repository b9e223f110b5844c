package openai

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"sync"

	"github.com/lambent/lambent/internal/chatwire"
	"github.com/lambent/lambent/internal/wirejson"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
)

// maxLine bounds one SSE line (and one event's data).
const maxLine = 64 << 20

// readError is a failure to read the stream body; the caller decides
// whether it was a cancellation or a cut.
type readError struct{ err error }

func (e *readError) Error() string { return "reading the stream: " + e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// sseReader splits an SSE body into events' data. It is pooled.
type sseReader struct {
	br   *bufio.Reader
	long []byte // a line longer than br's buffer
	data []byte // the data of the event being read
	has  bool   // data holds at least one data line
	ev   []byte // the event field of the event being read
}

var sseReaders = sync.Pool{New: func() any {
	return &sseReader{br: bufio.NewReaderSize(nil, 32<<10)}
}}

func getSSEReader(r io.Reader) *sseReader {
	s := sseReaders.Get().(*sseReader)
	s.br.Reset(r)
	return s
}

func putSSEReader(s *sseReader) {
	s.br.Reset(nil)
	if cap(s.long) > 1<<20 {
		s.long = nil
	}
	if cap(s.data) > 1<<20 {
		s.data = nil
	}
	s.data, s.ev, s.has = s.data[:0], s.ev[:0], false
	sseReaders.Put(s)
}

var errLineTooLong = errors.New("SSE line too long")

// pending reports whether the bytes already read hold the end of another
// event (a blank line), so that the next call of next returns without
// reading the body.
func (s *sseReader) pending() bool {
	b, _ := s.br.Peek(s.br.Buffered())
	return bytes.Contains(b, []byte("\n\n")) || bytes.Contains(b, []byte("\n\r\n"))
}

// line reads one line without its line ending. At the end of the body it
// returns the last (unterminated) line with io.EOF. The slice is valid
// until the next call.
func (s *sseReader) line() ([]byte, error) {
	line, err := s.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		s.long = append(s.long[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = s.br.ReadSlice('\n')
			s.long = append(s.long, line...)
			if len(s.long) > maxLine {
				return nil, errLineTooLong
			}
		}
		line = s.long
	}
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
		if n > 1 && line[n-2] == '\r' {
			line = line[:n-2]
		}
	}
	return line, err
}

// next returns the data of the next event and its event name (empty for
// the default "message" event). At the end of the body it returns io.EOF,
// or a dispatched final event that was not followed by a blank line first.
func (s *sseReader) next() (data, event []byte, err error) {
	s.data, s.ev, s.has = s.data[:0], s.ev[:0], false
	for {
		line, rerr := s.line()
		if rerr != nil && rerr != io.EOF {
			return nil, nil, rerr
		}
		if len(line) == 0 {
			if s.has {
				return s.data, s.ev, nil
			}
			if rerr == io.EOF {
				return nil, nil, io.EOF
			}
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			if s.has {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, value...)
			s.has = true
			if len(s.data) > maxLine {
				return nil, nil, errLineTooLong
			}
		case "event":
			s.ev = append(s.ev[:0], value...)
		}
		// Comments (field "") and other fields (id, retry) are ignored.
		if rerr == io.EOF {
			if s.has {
				return s.data, s.ev, nil
			}
			return nil, nil, io.EOF
		}
	}
}

// streamResult is a stream's result, with a note when it was accepted
// although it did not end cleanly.
type streamResult struct {
	provider.Result
	warn string
}

// callAcc accumulates one streamed tool call.
type callAcc struct {
	upstream int // the backend's index (-1: none given)
	id, name string
	args     strings.Builder
}

// streamState accumulates a streamed completion.
type streamState struct {
	fn        func(provider.Delta) error
	text      strings.Builder
	refusal   strings.Builder
	reasoning strings.Builder
	calls     []*callAcc
	usage     *chatwire.Usage
	model     string
	finish    string
	done      bool
	// size is the bytes of the answer so far (grow).
	size int
	// more is the Delta.More of the deltas of the chunk being decoded.
	more bool
	// c is the chunk being decoded, reused for every chunk; its first
	// choice is choice (the decoder would make room for ten).
	c      chatwire.Chunk
	choice [1]chatwire.ChunkChoice
}

var doneMarker = []byte("[DONE]")

// decodeStream reads a Chat Completions SSE stream, calling fn for every
// delta. Its errors are fn's error as is, a *readError, or an *api.Error.
func decodeStream(body io.Reader, model string, fn func(provider.Delta) error) (*streamResult, error) {
	sr := getSSEReader(body)
	defer putSSEReader(sr)
	st := &streamState{fn: fn, model: model}
	st.c.Choices = st.choice[:0]
	for {
		data, event, err := sr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if err == errLineTooLong {
				return nil, provider.BadResponse(err, "the model provider sent an SSE line longer than %d bytes", maxLine)
			}
			if st.finish != "" {
				// The answer is complete; only [DONE] (and maybe usage) is missing.
				return st.result("read error after finish_reason: " + err.Error())
			}
			return nil, &readError{err}
		}
		if len(data) == 0 {
			continue
		}
		if bytes.Equal(data, doneMarker) || bytes.Equal(bytes.TrimSpace(data), doneMarker) {
			st.done = true
			break
		}
		if len(event) > 0 && string(event) == "error" {
			return nil, eventError(data)
		}
		st.more = sr.pending()
		if err := st.chunk(data); err != nil {
			return nil, err
		}
	}
	if !st.done {
		if st.finish == "" {
			return nil, provider.StreamCut(io.ErrUnexpectedEOF, "the model provider's stream ended before the answer was complete")
		}
		return st.result("stream ended without [DONE]")
	}
	return st.result("")
}

func (st *streamState) chunk(data []byte) error {
	c := &st.c
	c.Reset()
	if err := wirejson.Unmarshal(data, c); err != nil {
		return provider.BadResponse(err, "the model provider sent a malformed stream chunk")
	}
	if hasError(c.Error) {
		return embeddedError(c.Error)
	}
	if c.Model != "" {
		st.model = c.Model
	}
	if u := c.ChunkUsage(); u != nil {
		st.usage = u
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue
		}
		d := &ch.Delta
		r, t := reasoning(d.ReasoningContent, d.Reasoning)+d.Content.Reasoning(), d.Content.String()
		if err := st.grow(len(r) + len(t) + len(d.Refusal)); err != nil {
			return err
		}
		if r != "" {
			st.reasoning.WriteString(r)
			if err := st.fn(provider.Delta{Kind: provider.DeltaReasoning, Text: r, More: st.more}); err != nil {
				return err
			}
		}
		if t != "" {
			st.text.WriteString(t)
			if err := st.fn(provider.Delta{Kind: provider.DeltaText, Text: t, More: st.more}); err != nil {
				return err
			}
		}
		if d.Refusal != "" {
			st.refusal.WriteString(d.Refusal)
			if err := st.fn(provider.Delta{Kind: provider.DeltaRefusal, Text: d.Refusal, More: st.more}); err != nil {
				return err
			}
		}
		for j := range d.ToolCalls {
			if err := st.toolCall(&d.ToolCalls[j]); err != nil {
				return err
			}
		}
		if ch.FinishReason != "" {
			st.finish = ch.FinishReason
		}
	}
	return nil
}

// toolCall accumulates one tool-call fragment. Calls are keyed by the
// backend's index; a new id at a known index (backends that number every
// call 0) or at no index starts a new call.
func (st *streamState) toolCall(tc *chatwire.ToolCall) error {
	up := -1
	if tc.Index != nil {
		up = *tc.Index
	}
	pos := -1
	if up >= 0 {
		for i := len(st.calls) - 1; i >= 0; i-- {
			if st.calls[i].upstream == up {
				pos = i
				break
			}
		}
	} else if n := len(st.calls); n > 0 {
		pos = n - 1
	}
	if pos >= 0 && tc.ID != "" && st.calls[pos].id != tc.ID {
		pos = -1
	}
	if err := st.grow(len(tc.ID) + len(tc.Function.Name) + len(tc.Function.Arguments)); err != nil {
		return err
	}
	d := provider.Delta{Kind: provider.DeltaToolCall, Text: string(tc.Function.Arguments), More: st.more}
	var c *callAcc
	if pos < 0 {
		id := tc.ID
		if id == "" {
			id = api.NewCallID()
		}
		c = &callAcc{upstream: up, id: id, name: tc.Function.Name}
		pos = len(st.calls)
		st.calls = append(st.calls, c)
		d.ToolCallID, d.ToolName = c.id, c.name
	} else {
		c = st.calls[pos]
		if c.name == "" && tc.Function.Name != "" {
			c.name = tc.Function.Name
			d.ToolName = c.name
		}
		if d.Text == "" && d.ToolName == "" {
			return nil
		}
	}
	d.ToolIndex = pos
	c.args.WriteString(d.Text)
	return st.fn(d)
}

// grow counts n more bytes of the answer: a streamed answer is bounded
// as a non-streaming one is (maxResponseBody), or a backend streaming
// without end (or a model repeating itself with no max_tokens) would grow
// the gateway's memory until the deadline.
func (st *streamState) grow(n int) error {
	st.size += n
	if st.size > maxResponseBody {
		return answerTooLong("streamed answer")
	}
	return nil
}

// result is the accumulated answer, or the error of a finish_reason that
// broke it off (interrupted).
func (st *streamState) result(warn string) (*streamResult, error) {
	if err := interrupted(st.finish); err != nil {
		return nil, err
	}
	r := &streamResult{warn: warn}
	r.Text = st.text.String()
	r.Refusal = st.refusal.String()
	r.Reasoning = st.reasoning.String()
	r.Model = st.model
	if len(st.calls) > 0 {
		r.ToolCalls = make([]api.Item, len(st.calls))
		for i, c := range st.calls {
			args := c.args.String()
			if args == "" {
				args = "{}"
			}
			r.ToolCalls[i] = api.Item{Type: api.ItemFunctionCall, CallID: c.id, Name: c.name, Arguments: args}
		}
	}
	if st.usage != nil {
		r.Usage = usageToAPI(st.usage)
	}
	r.FinishReason = mapFinish(st.finish, len(st.calls) > 0)
	return r, nil
}
