package fakebedrock

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"hash"
	"strings"
	"time"
)

// Prompt caching, as Bedrock documents it ("Prompt caching for faster
// model inference": supported models, Regions, and limits) and answers it.
//
// A request's prompt is, in this order, its toolConfig tools, its system
// blocks and its messages' content blocks; a cachePoint block marks the
// end of a prefix. The fake estimates tokens deterministically, one token
// per 4 bytes of each block's JSON (a message's role counts too), and
// caches by cache point: the prefix up to each point is hashed with the
// model id; a point whose prefix is shorter than the model's minimum is
// ignored (Bedrock caches nothing there, without an error); the furthest
// point whose prefix is in the cache (used within CacheTTL) is read, its
// tokens are cacheReadInputTokens; the tokens from there to the last point
// are cacheWriteInputTokens; the rest are inputTokens. Every point's
// prefix is then cached, or its TTL renewed. On Claude models a point
// also reads a prefix cached at one of the 20 block boundaries before it
// (Bedrock's "simplified cache management": it looks back about 20
// content blocks for a hit); Nova reads at explicit points only.

// CacheTTL is how long a cached prefix lives after its last use
// (Bedrock's default; a cachePoint with ttl "1h" asks for an hour).
const CacheTTL = 5 * time.Minute

// caching is what a model supports of prompt caching.
type caching struct {
	// max is the cache points of one request; 0: no caching.
	max int
	// minTokens is the prefix a point needs to be cached.
	minTokens int
	// tools says the toolConfig tools list accepts a cachePoint.
	tools bool
	// lookback is how many block boundaries before a point are checked
	// for a cached prefix.
	lookback int
}

// claudeLookback is how far Claude looks back from a cache point.
const claudeLookback = 20

// modelCaching is the documented support of model (a model id, an
// inference profile id or an ARN naming either).
func modelCaching(model string) caching {
	id := model
	if strings.HasPrefix(id, "arn:") {
		id = id[strings.LastIndexByte(id, '/')+1:]
	}
	if _, rest, ok := strings.Cut(id, "."); ok && (strings.HasPrefix(rest, "anthropic.") || strings.HasPrefix(rest, "amazon.")) {
		id = rest // a cross-region inference profile: us., eu., apac., global., ...
	}
	for _, m := range []struct {
		prefix string
		min    int
	}{
		{"anthropic.claude-opus-4-5", 4096}, {"anthropic.claude-opus-4-6", 4096}, {"anthropic.claude-opus-4-7", 4096},
		{"anthropic.claude-sonnet-4-5", 4096}, {"anthropic.claude-haiku-4-5", 4096},
		{"anthropic.claude-sonnet-4", 1024}, {"anthropic.claude-opus-4", 1024},
		{"anthropic.claude-3-7-sonnet", 1024}, {"anthropic.claude-3-5-haiku", 2048},
	} {
		if strings.HasPrefix(id, m.prefix) {
			return caching{max: 4, minTokens: m.min, tools: true, lookback: claudeLookback}
		}
	}
	for _, p := range []string{"amazon.nova-micro", "amazon.nova-lite", "amazon.nova-pro", "amazon.nova-premier"} {
		if strings.HasPrefix(id, p) {
			return caching{max: 4, minTokens: 1000}
		}
	}
	return caching{}
}

// validateCache checks the request's cache points as Bedrock does and
// returns the exception type and message, or "", "".
func validateCache(model string, in *Input) (string, string) {
	c := modelCaching(model)
	n := 0
	check := func(cp *CachePoint, at string) string {
		n++
		if cp.Type != "default" {
			return fmt.Sprintf("1 validation error detected: Value '%s' at '%s.cachePoint.type' failed to satisfy constraint: Member must satisfy enum value set: [default]", cp.Type, at)
		}
		if cp.TTL != "" && cp.TTL != "5m" && cp.TTL != "1h" {
			return fmt.Sprintf("1 validation error detected: Value '%s' at '%s.cachePoint.ttl' failed to satisfy constraint: Member must satisfy enum value set: [5m, 1h]", cp.TTL, at)
		}
		return ""
	}
	if tc := in.ToolConfig; tc != nil {
		for i, t := range tc.Tools {
			if t.CachePoint == nil {
				continue
			}
			if msg := check(t.CachePoint, fmt.Sprintf("toolConfig.tools.%d", i)); msg != "" {
				return "ValidationException", msg
			}
			if c.max > 0 && !c.tools {
				return "ValidationException", fmt.Sprintf("Malformed input request: #/toolConfig/tools/%d: extraneous key [cachePoint] is not permitted, please reformat your input and try again.", i)
			}
		}
	}
	for i, b := range in.System {
		if b.CachePoint != nil {
			if msg := check(b.CachePoint, fmt.Sprintf("system.%d", i)); msg != "" {
				return "ValidationException", msg
			}
		}
	}
	for i, m := range in.Messages {
		for j, b := range m.Content {
			if b.CachePoint == nil {
				continue
			}
			if msg := check(b.CachePoint, fmt.Sprintf("messages.%d.content.%d", i, j)); msg != "" {
				return "ValidationException", msg
			}
			if j > 0 && m.Content[j-1].ReasoningContent != nil {
				return "ValidationException", "Cache point cannot be inserted after reasoning block. Please remove the invalid cache point and try again."
			}
		}
	}
	switch {
	case n == 0:
		return "", ""
	case c.max == 0:
		return "AccessDeniedException", "You invoked an unsupported model or your request did not allow prompt caching. See the documentation for more information."
	case n > c.max:
		return "ValidationException", fmt.Sprintf("A maximum of %d blocks with cache_control may be provided. Found %d.", c.max, n)
	}
	return "", ""
}

// prefix walks a prompt in cache order, hashing and counting its bytes.
type prefix struct {
	h     hash.Hash
	bytes int
	// bounds are the prefixes ending at each block boundary so far.
	bounds []cachedPrefix
	// points are the cache points met: the index of their boundary in
	// bounds, and their TTL.
	points []cachePointAt
}

// cachedPrefix is a prefix: its hash and its tokens.
type cachedPrefix struct {
	key    string
	tokens int
}

type cachePointAt struct {
	bound int
	ttl   time.Duration
}

func tokens(bytes int) int { return (bytes + 3) / 4 }

// add hashes and counts one block (its JSON).
func (p *prefix) add(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("fakebedrock: encoding a block: %v", err))
	}
	p.h.Write(b)
	p.bytes += len(b)
	p.bounds = append(p.bounds, cachedPrefix{key: string(p.h.Sum(nil)), tokens: tokens(p.bytes)})
}

// point marks the end of a prefix.
func (p *prefix) point(cp *CachePoint) {
	ttl := CacheTTL
	if cp.TTL == "1h" {
		ttl = time.Hour
	}
	if len(p.bounds) > 0 {
		p.points = append(p.points, cachePointAt{bound: len(p.bounds) - 1, ttl: ttl})
	}
}

// meter is the usage of a request to model (without output tokens),
// updating the cache (see the comment at the top of this file).
func (s *Server) meter(model string, in *Input) Usage {
	p := measure(model, in)
	total := tokens(p.bytes)
	c := modelCaching(model)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	for k, exp := range s.cache {
		if !now.Before(exp) {
			delete(s.cache, k)
		}
	}
	// Look every point up first (what this request writes is not there
	// for its own later points), then cache them all.
	read, last := 0, 0
	var used []cachePointAt // the hits and the points, with their TTL
	for _, pt := range p.points {
		if p.bounds[pt.bound].tokens < c.minTokens || c.max == 0 {
			continue
		}
		for b := pt.bound; b >= 0 && b >= pt.bound-c.lookback; b-- {
			if _, ok := s.cache[p.bounds[b].key]; ok {
				read = max(read, p.bounds[b].tokens)
				used = append(used, cachePointAt{bound: b, ttl: pt.ttl})
				break
			}
		}
		last = max(last, p.bounds[pt.bound].tokens)
		used = append(used, pt)
	}
	for _, u := range used {
		s.cache[p.bounds[u.bound].key] = now.Add(u.ttl)
	}
	write := max(last-read, 0)
	return Usage{InputTokens: total - read - write, CacheReadInputTokens: read, CacheWriteInputTokens: write}
}

// measure hashes and counts the blocks of in, a request to model, as
// prefixes ending at its cache points.
func measure(model string, in *Input) *prefix {
	p := &prefix{h: sha256.New()}
	p.h.Write([]byte(model + "\x00"))
	if tc := in.ToolConfig; tc != nil {
		for _, t := range tc.Tools {
			if t.CachePoint != nil {
				p.point(t.CachePoint)
			} else {
				p.add(t)
			}
		}
	}
	for _, b := range in.System {
		if b.CachePoint != nil {
			p.point(b.CachePoint)
		} else {
			p.add(b)
		}
	}
	for _, m := range in.Messages {
		p.add(m.Role)
		for _, b := range m.Content {
			if b.CachePoint != nil {
				p.point(b.CachePoint)
			} else {
				p.add(b)
			}
		}
	}
	return p
}

// SetClock sets the clock of the cache's TTLs (default time.Now).
func (s *Server) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
}

// clock is the time now; s.mu is held.
func (s *Server) clock() time.Time {
	if s.now != nil {
		return s.now()
	}
	return time.Now()
}
