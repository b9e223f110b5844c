package openai

import (
	"encoding/json"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// The fast decoder reads completions and stream chunks straight into
// chatPayload, several times faster than encoding/json (which validates
// the input in a first pass and matches keys case-insensitively). It
// validates what it reads and skips, and gives up (returns false) on
// anything it does not decode exactly as encoding/json would: a value of
// an unexpected type, a lone surrogate escape, invalid UTF-8, deep nesting.
// decodePayload then falls back to encoding/json. Known keys match
// exactly, as every real backend spells them.

const fastMaxDepth = 1000

type fastDec struct {
	b     []byte
	i     int
	depth int
	model string // the previous chunk's model
}

func fastDecode(b []byte, p *chatPayload) bool {
	// A reused payload keeps its choices array, and its model string when
	// the next chunk names the same model.
	d := fastDec{b: b, model: p.Model}
	*p = chatPayload{Choices: p.Choices[:0]}
	if d.peek() != '{' || !d.object(func(k []byte) bool { return d.payloadField(k, p) }) {
		return false
	}
	d.ws()
	return d.i == len(d.b)
}

func (d *fastDec) payloadField(k []byte, p *chatPayload) bool {
	switch string(k) {
	case "model":
		if m := d.model; m != "" && len(d.b)-d.i >= len(m)+2 && d.b[d.i] == '"' &&
			string(d.b[d.i+1:d.i+1+len(m)]) == m && d.b[d.i+1+len(m)] == '"' {
			p.Model = m
			d.i += len(m) + 2
			return true
		}
		return d.strField(&p.Model)
	case "choices":
		return objectList(d, &p.Choices, d.choiceField)
	case "usage":
		if d.null() {
			p.Usage = nil
			return true
		}
		// Like encoding/json, a repeated key decodes into what is there.
		if p.Usage == nil {
			p.Usage = &chatUsage{}
		}
		return d.object(func(k []byte) bool { return d.usageField(k, p.Usage) })
	case "error":
		start := d.i
		if !d.skip() {
			return false
		}
		p.Error = json.RawMessage(append([]byte(nil), d.b[start:d.i]...))
		return true
	}
	return d.skip()
}

// usageField decodes one field of a usage object.
func (d *fastDec) usageField(k []byte, u *chatUsage) bool {
	switch string(k) {
	case "prompt_tokens":
		return d.intField(&u.PromptTokens)
	case "completion_tokens":
		return d.intField(&u.CompletionTokens)
	case "total_tokens":
		return d.intField(&u.TotalTokens)
	case "prompt_tokens_details":
		return detailsField(d, &u.PromptTokensDetails, "cached_tokens", func(p *promptDetails) *int { return &p.CachedTokens })
	case "completion_tokens_details":
		return detailsField(d, &u.CompletionTokensDetails, "reasoning_tokens", func(c *completionDetails) *int { return &c.ReasoningTokens })
	}
	return d.skip()
}

// objectList decodes an array of objects (or null) into *dst, each
// object's fields by field.
func objectList[T any](d *fastDec, dst *[]T, field func(k []byte, x *T) bool) bool {
	if d.null() {
		*dst = nil
		return true
	}
	*dst = (*dst)[:0]
	return d.array(func() bool {
		var x T
		if !d.object(func(k []byte) bool { return field(k, &x) }) {
			return false
		}
		*dst = append(*dst, x)
		return true
	})
}

// detailsField decodes a usage details object holding one counter into
// *dst (null clears it; a repeated key decodes into what is there, as
// encoding/json does).
func detailsField[T any](d *fastDec, dst **T, key string, counter func(*T) *int) bool {
	if d.null() {
		*dst = nil
		return true
	}
	if *dst == nil {
		*dst = new(T)
	}
	return d.object(func(k []byte) bool {
		if string(k) == key {
			return d.intField(counter(*dst))
		}
		return d.skip()
	})
}

func (d *fastDec) choiceField(k []byte, c *chatChoice) bool {
	switch string(k) {
	case "index":
		return d.intField(&c.Index)
	case "message":
		return d.msgObject(&c.Message)
	case "delta":
		return d.msgObject(&c.Delta)
	case "finish_reason":
		return d.strField(&c.FinishReason)
	}
	return d.skip()
}

func (d *fastDec) msgObject(m *chatOutMessage) bool {
	if d.null() {
		return true
	}
	return d.object(func(k []byte) bool {
		switch string(k) {
		case "content":
			return d.strField(&m.Content)
		case "refusal":
			return d.strField(&m.Refusal)
		case "reasoning_content":
			return d.strField(&m.ReasoningContent)
		case "reasoning":
			return d.strField(&m.Reasoning)
		case "tool_calls":
			return objectList(d, &m.ToolCalls, d.callField)
		}
		return d.skip()
	})
}

func (d *fastDec) callField(k []byte, tc *chatOutCall) bool {
	switch string(k) {
	case "index":
		if d.null() {
			tc.Index = nil
			return true
		}
		var n int
		if !d.intField(&n) {
			return false
		}
		tc.Index = &n
		return true
	case "id":
		return d.strField(&tc.ID)
	case "function":
		if d.null() {
			return true
		}
		return d.object(func(k []byte) bool {
			switch string(k) {
			case "name":
				return d.strField(&tc.Function.Name)
			case "arguments":
				switch d.peek() {
				case '"':
					s, ok := d.str()
					tc.Function.Arguments = argText(s)
					return ok
				case 'n':
					tc.Function.Arguments = ""
					return d.null()
				}
				start := d.i
				if !d.skip() {
					return false
				}
				tc.Function.Arguments = argText(d.b[start:d.i])
				return true
			}
			return d.skip()
		})
	}
	return d.skip()
}

// strField reads a string or null (left unchanged, as encoding/json does).
func (d *fastDec) strField(dst *string) bool {
	switch d.peek() {
	case '"':
		s, ok := d.str()
		*dst = s
		return ok
	case 'n':
		return d.null()
	}
	return false
}

// intField reads an integer or null (left unchanged).
func (d *fastDec) intField(dst *int) bool {
	if d.null() {
		return true
	}
	start := d.i
	if !d.number() {
		return false
	}
	n, neg := 0, false
	for j, c := range d.b[start:d.i] {
		switch {
		case c == '-' && j == 0:
			neg = true
		case c >= '0' && c <= '9':
			n = n*10 + int(c-'0')
			if n > 1<<40 {
				return false
			}
		default:
			return false // a fraction or exponent
		}
	}
	if neg {
		n = -n
	}
	*dst = n
	return true
}

func (d *fastDec) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// peek skips white space and returns the next byte (0 at the end).
func (d *fastDec) peek() byte {
	if d.i < len(d.b) && d.b[d.i] > ' ' {
		return d.b[d.i]
	}
	d.ws()
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

func (d *fastDec) lit(s string) bool {
	if len(d.b)-d.i >= len(s) && string(d.b[d.i:d.i+len(s)]) == s {
		d.i += len(s)
		return true
	}
	return false
}

// null consumes a null literal if one is next.
func (d *fastDec) null() bool { return d.peek() == 'n' && d.lit("null") }

// object walks an object whose fields are decoded; field is called with
// the key and d at the value, which it must consume. A key with upper case
// or non-ASCII letters makes it give up: encoding/json would match it
// case-insensitively to a known field.
func (d *fastDec) object(field func(key []byte) bool) bool {
	return d.walkObject(field, true)
}

func (d *fastDec) walkObject(field func(key []byte) bool, exactKeys bool) bool {
	if d.peek() != '{' {
		return false
	}
	d.i++
	if d.depth++; d.depth > fastMaxDepth {
		return false
	}
	defer func() { d.depth-- }()
	if d.peek() == '}' {
		d.i++
		return true
	}
	for {
		if d.peek() != '"' {
			return false
		}
		key, ok := d.key()
		if !ok || d.peek() != ':' {
			return false
		}
		if exactKeys {
			for _, c := range key {
				if c >= 'A' && c <= 'Z' || c >= 0x80 {
					return false
				}
			}
		}
		d.i++
		d.ws()
		if !field(key) {
			return false
		}
		switch d.peek() {
		case ',':
			d.i++
		case '}':
			d.i++
			return true
		default:
			return false
		}
	}
}

// array walks an array; elem must consume one element.
func (d *fastDec) array(elem func() bool) bool {
	if d.peek() != '[' {
		return false
	}
	d.i++
	if d.depth++; d.depth > fastMaxDepth {
		return false
	}
	defer func() { d.depth-- }()
	if d.peek() == ']' {
		d.i++
		return true
	}
	for {
		d.ws()
		if !elem() {
			return false
		}
		switch d.peek() {
		case ',':
			d.i++
		case ']':
			d.i++
			return true
		default:
			return false
		}
	}
}

// skip consumes and validates any value.
func (d *fastDec) skip() bool {
	switch d.peek() {
	case '"':
		return d.skipStr()
	case '{':
		return d.walkObject(func([]byte) bool { return d.skip() }, false)
	case '[':
		return d.array(d.skip)
	case 't':
		return d.lit("true")
	case 'f':
		return d.lit("false")
	case 'n':
		return d.lit("null")
	}
	return d.number()
}

// key reads an object key; keys without escapes are returned in place.
func (d *fastDec) key() ([]byte, bool) {
	start := d.i + 1
	for j := start; j < len(d.b); j++ {
		switch c := d.b[j]; {
		case c == '"':
			d.i = j + 1
			return d.b[start:j], true
		case c == '\\' || c < 0x20 || c >= 0x80:
			s, ok := d.str()
			return []byte(s), ok
		}
	}
	return nil, false
}

// str reads a string value.
func (d *fastDec) str() (string, bool) {
	start := d.i + 1
	esc, high := false, false
	j := start
	for ; j < len(d.b); j++ {
		c := d.b[j]
		if c == '"' {
			break
		}
		switch {
		case c == '\\':
			esc = true
			j++
		case c < 0x20:
			return "", false
		case c >= 0x80:
			high = true
		}
	}
	if j >= len(d.b) {
		return "", false
	}
	raw := d.b[start:j]
	d.i = j + 1
	if high && !utf8.Valid(raw) {
		return "", false // encoding/json replaces invalid bytes
	}
	if !esc {
		return string(raw), true
	}
	return unescape(raw)
}

func (d *fastDec) skipStr() bool {
	for j := d.i + 1; j < len(d.b); j++ {
		switch c := d.b[j]; {
		case c == '"':
			d.i = j + 1
			return true
		case c == '\\':
			j++
			if j >= len(d.b) {
				return false
			}
			switch d.b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if _, ok := hex4(d.b[j+1:]); !ok {
					return false
				}
				j += 4
			default:
				return false
			}
		case c < 0x20:
			return false
		}
	}
	return false
}

// number consumes a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *fastDec) number() bool {
	b, i := d.b, d.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		s := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == s {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		s := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == s {
			return false
		}
	}
	d.i = i
	return true
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// unescape decodes the body of a string with escapes.
func unescape(raw []byte) (string, bool) {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(raw) {
			return "", false
		}
		i += 2
		switch raw[i-1] {
		case '"', '\\', '/':
			out = append(out, raw[i-1])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(raw[i:])
			if !ok {
				return "", false
			}
			i += 4
			if utf16.IsSurrogate(r) {
				if i+6 > len(raw) || raw[i] != '\\' || raw[i+1] != 'u' {
					return "", false
				}
				r2, ok := hex4(raw[i+2:])
				if !ok {
					return "", false
				}
				if r = utf16.DecodeRune(r, r2); r == unicode.ReplacementChar {
					return "", false
				}
				i += 6
			}
			out = utf8.AppendRune(out, r)
		default:
			return "", false
		}
	}
	return string(out), true
}
