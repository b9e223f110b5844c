package main

// Prompt caching figures (`make bench`, -cache): a 10-turn agentic loop
// through the gateway (app.Build, memory store) on each provider's fake,
// per turn the input tokens billed as plain input, read from the cache and
// written to it, and the bytes sent upstream; Bedrock with cache points
// (LAMBENT_BEDROCK_CACHE_POINTS=auto) beside the same loop without them
// (off), the reference, in the same run.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/lambent/lambent/internal/testing/fakebedrock"
	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/pkg/app"
)

const (
	cacheTurns    = 10
	cacheModel    = "us.anthropic.claude-sonnet-4-20250514-v1:0"
	novaModel     = "us.amazon.nova-pro-v1:0"
	cacheGoal     = 0.80
	readPrice     = 0.10 // Claude on Bedrock: a cache read costs 0.1× the input price,
	writePrice    = 1.25 // a cache write (5-minute TTL) 1.25×
	bytesPerToken = 4    // the fakes' token estimate
)

// agentInstructions are an agent's instructions, about 6 KB, the size of a
// coding or support agent's system prompt.
var agentInstructions = strings.Repeat("You are an operations agent. Plan before you act, use the tools for every figure you report, "+
	"quote the pages you fetch, and answer in short paragraphs with the figures you computed. ", 32)

// agentTools are the client's function tools beside the hosted ones.
func agentTools() []any {
	tools := []any{map[string]any{"type": "lambent:calculator"}, map[string]any{"type": "lambent:fetch_url"}}
	for _, name := range []string{"create_ticket", "update_ticket", "search_tickets", "send_email", "schedule_meeting", "lookup_customer"} {
		tools = append(tools, map[string]any{"type": "function", "name": name,
			"description": "Operations tool " + name + ": see the runbook for when to use it.",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{
				"id": map[string]any{"type": "string", "description": "the record's id"}, "text": map[string]any{"type": "string"}},
				"required": []string{"id"}}})
	}
	return tools
}

// turnFigures are one model call's figures.
type turnFigures struct {
	bytes                int // request body sent upstream
	input, read, written int // input tokens: all, read from the cache, written to it
}

func (f turnFigures) uncached() int { return f.input - f.read - f.written }

// loopResult is one run of the loop.
type loopResult struct {
	turns []turnFigures
	// usage is the response's usage and lambent.usage.
	inputTokens, cachedTokens, cacheWrites int
}

// readShare is the share of input tokens read from the cache from turn 2 on.
func (l loopResult) readShare() float64 {
	var in, read int
	for _, t := range l.turns[1:] {
		in += t.input
		read += t.read
	}
	return float64(read) / float64(max(in, 1))
}

// priceRatio is the input price of the loop relative to ref's, at Claude's
// cache prices.
func (l loopResult) priceRatio(ref loopResult) float64 {
	var cost, base float64
	for _, t := range l.turns {
		cost += float64(t.uncached()) + readPrice*float64(t.read) + writePrice*float64(t.written)
	}
	for _, t := range ref.turns {
		base += float64(t.input)
	}
	return cost / base
}

func runCache() error {
	pages, stopPages, err := serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "Status report %s\n", r.URL.Path)
		for i := range 24 {
			fmt.Fprintf(w, "Line %d of report %s: queue depth nominal, error rate 0.%d %%, latency p99 %d ms.\n", i, r.URL.Path, i%10, 100+i)
		}
	}))
	if err != nil {
		return err
	}
	defer stopPages()

	fmt.Printf("Prompt caching: one response running a %d-turn agentic loop through the gateway (memory store),\n", cacheTurns)
	fmt.Printf("each turn a model call asking for 2 hosted calls (calculator, fetch_url of a %s page), the last one answering;\n", "1.9 KB")
	fmt.Printf("instructions %.1f KB, 8 tools; tokens are the fakes' estimate (%d bytes a token). bytes up: the model call's request body.\n\n",
		float64(len(agentInstructions))/1000, bytesPerToken)

	auto, err := bedrockRun(cacheModel, "auto", "", pages)
	if err != nil {
		return err
	}
	off, err := bedrockRun(cacheModel, "off", "", pages)
	if err != nil {
		return err
	}
	fmt.Printf("Bedrock (fakebedrock, %s, hosted items mcp_call (the default); the fake caches by cache point:\n", cacheModel)
	fmt.Printf("reads, writes, Claude's look-back of 20 blocks, a 1,024-token minimum, a 5-minute TTL)\n")
	fmt.Printf("    %-4s | %-56s | %s\n", "", "cache points auto (LAMBENT_BEDROCK_CACHE_POINTS)", "off (reference)")
	fmt.Printf("    %-4s | %9s %7s %7s %7s %8s %6s | %9s %7s %8s\n", "turn", "bytes up", "input", "read", "written", "uncached", "read%", "bytes up", "input", "uncached")
	for i, t := range auto.turns {
		o := off.turns[i]
		fmt.Printf("    %-4d | %9d %7d %7d %7d %8d %5.1f%% | %9d %7d %8d\n", i+1, t.bytes, t.input, t.read, t.written, t.uncached(),
			100*float64(t.read)/float64(t.input), o.bytes, o.input, o.uncached())
	}
	share := auto.readShare()
	fmt.Printf("    turns 2-%d: %.1f %% of input tokens read from the cache (off: %.1f %%)   goal ≥ %.0f %%: %s\n",
		cacheTurns, 100*share, 100*off.readShare(), 100*cacheGoal, verdict(share >= cacheGoal))
	fmt.Printf("    input price, cache reads at %.2f× and writes at %.2f× (Claude): %.2f of the reference's\n", readPrice, writePrice, auto.priceRatio(off))
	fmt.Printf("    response usage: input_tokens %d, cached_tokens %d, lambent.usage.cache_write_input_tokens %d (off: %d, %d, %d)\n",
		auto.inputTokens, auto.cachedTokens, auto.cacheWrites, off.inputTokens, off.cachedTokens, off.cacheWrites)

	fmt.Printf("    %-59s %-14s turns 2-%d read\n", "the same loop with cache points auto on", "hosted items", cacheTurns)
	for _, v := range []struct{ model, items, note string }{
		{cacheModel, "function_call", ""},
		{novaModel, "", " (Nova: no look-back)"},
		{novaModel, "function_call", " (Nova: no look-back)"},
	} {
		r, err := bedrockRun(v.model, "auto", v.items, pages)
		if err != nil {
			return err
		}
		fmt.Printf("      %-56s %-14s %5.1f %%   goal ≥ %.0f %%: %s\n", v.model+v.note, cmp.Or(v.items, "mcp_call"), 100*r.readShare(), 100*cacheGoal, verdict(r.readShare() >= cacheGoal))
	}
	fmt.Println()

	llm, err := openaiLoop(pages)
	if err != nil {
		return fmt.Errorf("openai-compatible: %w", err)
	}
	fmt.Printf("OpenAI-compatible (fakellm; cached_tokens from an automatic prefix cache as OpenAI's: the longest prefix of\n")
	fmt.Printf("tools and messages shared with an earlier prompt, from 1,024 tokens in steps of 128; no cache writes)\n")
	fmt.Printf("    %-4s | %9s %7s %7s %7s %8s %6s\n", "turn", "bytes up", "input", "read", "written", "uncached", "read%")
	for i, t := range llm.turns {
		fmt.Printf("    %-4d | %9d %7d %7d %7d %8d %5.1f%%\n", i+1, t.bytes, t.input, t.read, t.written, t.uncached(), 100*float64(t.read)/float64(t.input))
	}
	fmt.Printf("    turns 2-%d: %.1f %% of input tokens read from the cache\n", cacheTurns, 100*llm.readShare())
	fmt.Printf("    response usage: input_tokens %d, cached_tokens %d\n", llm.inputTokens, llm.cachedTokens)
	return nil
}

// scriptTurn is the fake model's answer at turn n: two hosted calls, or
// at the last turn the answer.
func scriptTurn(n int, pages string) fakebedrock.Turn {
	if n >= cacheTurns {
		return fakebedrock.Turn{Text: "All reports are nominal; the computed totals are above.", Usage: fakebedrock.Usage{OutputTokens: 12}}
	}
	return fakebedrock.Turn{Text: fmt.Sprintf("Step %d: fetching report %d and computing its total.", n, n), ToolUses: []fakebedrock.ToolUse{
		{Name: "fetch_url", Input: fmt.Sprintf(`{"url":"http://%s/report/%d"}`, pages, n)},
		{Name: "calculator", Input: fmt.Sprintf(`{"expression":"%d*17+%d"}`, n, n*3)},
	}, Usage: fakebedrock.Usage{OutputTokens: 60}}
}

// bedrockRun runs the loop on model through a gateway on a fresh fake
// Bedrock, with cache points in mode and hosted tool items items (empty:
// the default), and returns its figures.
func bedrockRun(model, mode, items, pages string) (loopResult, error) {
	fake := fakebedrock.NewHandler(func(r fakebedrock.Request) fakebedrock.Turn {
		results := 0
		for _, m := range r.Messages {
			for _, b := range m.Content {
				if b.ToolResult != nil {
					results++
				}
			}
		}
		return scriptTurn(results/2+1, pages)
	})
	defer fake.Close()
	res, err := bedrockLoop(fake, map[string]string{"LAMBENT_PROVIDER": "bedrock", "LAMBENT_DEFAULT_MODEL": model,
		"LAMBENT_BEDROCK_CACHE_POINTS": mode, "LAMBENT_HOSTED_TOOL_ITEMS": items}, pages)
	if err != nil {
		return res, fmt.Errorf("bedrock %s, cache points %s: %w", model, mode, err)
	}
	return res, nil
}

// bedrockLoop runs the loop through a gateway on fake with env and
// returns its figures.
func bedrockLoop(fake *fakebedrock.Server, env map[string]string, pages string) (loopResult, error) {
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL_BEDROCK_RUNTIME": fake.URL, "AWS_REGION": fakebedrock.Region,
		"AWS_ACCESS_KEY_ID": "AKIDFAKEBEDROCK", "AWS_SECRET_ACCESS_KEY": "fake-secret", "AWS_SESSION_TOKEN": "",
		"AWS_PROFILE": "", "AWS_EC2_METADATA_DISABLED": "true",
	} {
		if err := os.Setenv(k, v); err != nil {
			return loopResult{}, err
		}
	}
	res, err := runLoop(env, pages)
	if err != nil {
		return res, err
	}
	for _, r := range fake.Requests() {
		m := r.Metered
		res.turns = append(res.turns, turnFigures{bytes: len(r.Body), input: m.InputTokens + m.CacheReadInputTokens + m.CacheWriteInputTokens,
			read: m.CacheReadInputTokens, written: m.CacheWriteInputTokens})
	}
	return res, res.check()
}

// check compares the response's usage with the sum of its calls'.
func (l loopResult) check() error {
	if len(l.turns) != cacheTurns {
		return fmt.Errorf("%d model calls, want %d", len(l.turns), cacheTurns)
	}
	var in, read, written int
	for _, t := range l.turns {
		in, read, written = in+t.input, read+t.read, written+t.written
	}
	if in != l.inputTokens || read != l.cachedTokens || written != l.cacheWrites {
		return fmt.Errorf("the response's usage (input %d, cached %d, cache writes %d) is not the sum of its model calls' (%d, %d, %d)",
			l.inputTokens, l.cachedTokens, l.cacheWrites, in, read, written)
	}
	return nil
}

// openaiLoop runs the loop on fakellm, with an OpenAI-like automatic
// prefix cache computing its usage.
func openaiLoop(pages string) (loopResult, error) {
	var mu sync.Mutex
	var seen [][]byte
	var turns []turnFigures
	fake := fakellm.NewHandler(func(r fakellm.Request) fakellm.Turn {
		prompt, _ := json.Marshal(struct {
			Tools    any `json:"tools"`
			Messages any `json:"messages"`
		}{r.Tools, r.Messages})
		mu.Lock()
		defer mu.Unlock()
		shared := 0
		for _, p := range seen {
			n := 0
			for n < len(p) && n < len(prompt) && p[n] == prompt[n] {
				n++
			}
			shared = max(shared, n)
		}
		seen = append(seen, prompt)
		input, cached := tokensOf(len(prompt)), 0
		if t := shared / bytesPerToken; t >= 1024 {
			cached = 1024 + (t-1024)/128*128
		}
		turns = append(turns, turnFigures{bytes: len(r.Body), input: input, read: cached})
		results := 0
		for _, m := range r.Messages {
			if m.Role == "tool" {
				results++
			}
		}
		bt := scriptTurn(results/2+1, pages)
		t := fakellm.Turn{Text: bt.Text, Usage: fakellm.Usage{PromptTokens: input, CachedTokens: cached, CompletionTokens: bt.Usage.OutputTokens}}
		for _, tu := range bt.ToolUses {
			t.ToolCalls = append(t.ToolCalls, fakellm.ToolCall{Name: tu.Name, Arguments: tu.Input})
		}
		return t
	})
	defer fake.Close()
	fake.SetRecording(false)
	res, err := runLoop(map[string]string{"LAMBENT_PROVIDER_URL": fake.URL}, pages)
	if err != nil {
		return res, err
	}
	mu.Lock()
	res.turns = turns
	mu.Unlock()
	return res, res.check()
}

func tokensOf(bytes int) int { return (bytes + bytesPerToken - 1) / bytesPerToken }

// runLoop builds a gateway with env (over the bench's defaults), runs one
// response of the loop and returns its usage.
func runLoop(env map[string]string, pages string) (loopResult, error) {
	vars := map[string]string{
		"LAMBENT_DEFAULT_MODEL":     cacheModel,
		"LAMBENT_STORE":             "memory",
		"LAMBENT_LOG_LEVEL":         "error",
		"LAMBENT_MAX_TURNS":         fmt.Sprint(cacheTurns),
		"LAMBENT_FETCH_ALLOW_HOSTS": strings.Split(pages, ":")[0],
	}
	for k, v := range env {
		vars[k] = v
	}
	var res loopResult
	cfg, err := app.FromEnv(func(k string) string { return vars[k] })
	if err != nil {
		return res, err
	}
	ctx := context.Background()
	gw, err := app.Build(ctx, cfg, app.Logger(cfg, io.Discard), nil)
	if err != nil {
		return res, err
	}
	defer gw.Close()
	addr, stop, err := serve(gw.Handler)
	if err != nil {
		return res, err
	}
	defer stop()
	body, err := json.Marshal(map[string]any{"instructions": agentInstructions, "tools": agentTools(),
		"input": "Check the status reports one by one, fetching each and computing its total, then summarise."})
	if err != nil {
		return res, err
	}
	resp, err := http.Post("http://"+addr+"/v1/responses", "application/json", bytes.NewReader(body))
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return res, err
	}
	var out struct {
		Status string `json:"status"`
		Output []struct {
			Type string `json:"type"`
		} `json:"output"`
		Usage struct {
			InputTokens        int `json:"input_tokens"`
			InputTokensDetails struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"input_tokens_details"`
		} `json:"usage"`
		Lambent struct {
			Usage struct {
				CacheWriteInputTokens int `json:"cache_write_input_tokens"`
			} `json:"usage"`
		} `json:"lambent"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || resp.StatusCode != http.StatusOK || out.Status != "completed" {
		return res, fmt.Errorf("the loop did not complete (HTTP %d, %v): %.300s", resp.StatusCode, err, raw)
	}
	res.inputTokens, res.cachedTokens, res.cacheWrites = out.Usage.InputTokens, out.Usage.InputTokensDetails.CachedTokens, out.Lambent.Usage.CacheWriteInputTokens
	return res, nil
}
