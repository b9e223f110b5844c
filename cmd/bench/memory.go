package main

// Memory figures (`make bench`, -memory): the gateway binary as its own
// process on DynamoDB Local (what a Lambda instance holds), its peak
// resident memory (VmHWM from /proc) over one streamed response running a
// long agentic loop — memTurns turns of memCalls hosted calls (an MCP
// server's work tool) returning memToolBytes each, then the answer —
// beside the 128 MB of the smallest Lambda; then, as `make load` measures
// it, its resident memory with 100 streams open on the memory store,
// beside the 64 MiB goal.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/internal/testing/mcptest"
	"github.com/lambent/lambent/internal/testing/schema"
	"github.com/lambent/lambent/internal/testing/ssecheck"
	"github.com/lambent/lambent/pkg/api"
)

const (
	memTurns     = 50
	memCalls     = 8
	memToolBytes = 100_000
	// memLambdaMB is the memory of the smallest Lambda.
	memLambdaMB = 128
	memAnswer   = "Fifty rounds of checks are done; every report is in the conversation above."
)

// memoryOptions configure the memory mode.
type memoryOptions struct {
	// env is added to the gateway's environment (K=V, comma-separated).
	env string
	// also lists more tool output sizes to run the loop with, beside
	// memToolBytes (comma-separated bytes): where the limit lies.
	also string
}

func runMemory(lo loadOptions, mo memoryOptions) error {
	if lo.gateway == "" {
		return errors.New("-memory needs -gateway <path of the gateway binary>")
	}
	stop, err := ensureDynamoDBLocal()
	if err != nil {
		return err
	}
	defer stop()
	fmt.Printf("Memory: one streamed response through the gateway binary (its own process, DynamoDB Local, LAMBENT_MAX_TURNS=%d,\n", memTurns+1)
	fmt.Printf("GOMEMLIMIT %d MiB as the gateway sets it in a %d MB Lambda), %d turns of %d hosted calls (an MCP server's tool), then the answer\n",
		memLambdaMB*8/10, memLambdaMB, memTurns, memCalls)
	met, err := memoryLoop(lo, mo, memToolBytes)
	if err != nil {
		return err
	}
	for _, f := range strings.Split(mo.also, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			if _, err := memoryLoop(lo, mo, n); err != nil {
				return err
			}
		}
	}
	fmt.Println()

	// 100 open streams, as make load measures them.
	v, err := schema.New()
	if err != nil {
		return err
	}
	ph, err := loadPhase(lo, v, "memory", lo.rssStreams)
	if err != nil {
		return fmt.Errorf("%d streams: %w", lo.rssStreams, err)
	}
	fmt.Printf("Open streams (as make load): ")
	ph.print(lo, true)
	if !met || ph.lost() > 0 || ph.rssOpen > lo.rssLimit<<20 {
		return errors.New("a memory goal was missed (see above)")
	}
	return nil
}

// memoryLoop runs the long loop with tool outputs of toolBytes through a
// gateway of its own and prints its peak memory; met: the response is
// whole and stored, and the peak within a 128 MB Lambda.
func memoryLoop(lo loadOptions, mo memoryOptions, toolBytes int) (met bool, err error) {
	mcp := mcptest.StartStreamable(mcptest.Options{Work: true})
	defer mcp.Close()
	args := fmt.Sprintf(`{"ms":0,"bytes":%d}`, toolBytes)
	model := fakellm.NewHandler(loopModel(memTurns, memCalls, "work", args, memAnswer, 0))
	defer model.Close()
	model.SetRecording(false)

	table := "lambent_memory_" + api.NewID("")[24:]
	env := append(gatewayEnv(model.URL, "dynamodb", table),
		"LAMBENT_MAX_TURNS="+strconv.Itoa(memTurns+1),
		"LAMBENT_FETCH_ALLOW_HOSTS="+strings.TrimPrefix(mcp.URL, "http://"),
		// The memory limit the gateway sets itself in a 128 MB Lambda
		// (app.Config.Server.MemoryLimit; it runs outside Lambda here).
		"GOMEMLIMIT="+strconv.Itoa(memLambdaMB<<20*8/10))
	if mo.env != "" {
		env = append(env, strings.Split(mo.env, ",")...)
	}
	g, err := startGateway(lo.gateway, env)
	if err != nil {
		return false, err
	}
	defer dropTable(table)
	defer g.stop()
	pid := g.cmd.Process.Pid
	idle := procMem(pid, "VmRSS")

	t0 := time.Now()
	body := `{"input":"Run the fifty rounds of checks.","stream":true,"tools":[{"type":"mcp","server_label":"ops","server_url":"` + mcp.Endpoint + `","require_approval":"never"}]}`
	client := &http.Client{Timeout: 10 * time.Minute}
	res, err := client.Post("http://"+g.addr+"/v1/responses", "application/json", strings.NewReader(body))
	if err != nil {
		return false, err
	}
	stream, err := io.ReadAll(res.Body)
	res.Body.Close()
	elapsed := time.Since(t0)
	peak := procMem(pid, "VmHWM")
	if err != nil {
		return false, fmt.Errorf("reading the stream: %w", err)
	}
	if res.StatusCode != http.StatusOK {
		return false, fmt.Errorf("status %d: %.500s", res.StatusCode, stream)
	}
	evs, ok, err := ssecheck.Parse(bytes.NewReader(stream))
	if err != nil || !ok {
		return false, fmt.Errorf("stream (done %v): %w", ok, err)
	}
	var last struct {
		Response struct {
			ID     string            `json:"id"`
			Status string            `json:"status"`
			Output []json.RawMessage `json:"output"`
		} `json:"response"`
	}
	if err := json.Unmarshal(evs[len(evs)-1].Data, &last); err != nil {
		return false, err
	}
	r := last.Response
	whole := r.Status == string(api.StatusCompleted) && len(r.Output) >= memTurns*memCalls+1 && bytes.Contains(evs[len(evs)-1].Data, []byte(memAnswer))
	// Read it back: the stored response is whole too.
	stored := false
	if whole {
		res, err := client.Get("http://" + g.addr + "/v1/responses/" + r.ID)
		if err == nil {
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			stored = res.StatusCode == http.StatusOK && bytes.Contains(b, []byte(memAnswer))
		}
	}
	met = whole && stored && peak > 0 && peak <= memLambdaMB*1000*1000
	fmt.Printf("    tool outputs %3d KB (%4.1f MB in all; the response's JSON %.1f MB, MCP outputs kept to 64 KiB): response %s, %d output items, %.1f MB streamed in %s, stored and read back %v;\n",
		toolBytes/1000, float64(memTurns*memCalls*toolBytes)/1e6, float64(len(evs[len(evs)-1].Data))/1e6, r.Status, len(r.Output), float64(len(stream))/1e6, elapsed.Round(time.Millisecond), stored)
	fmt.Printf("        gateway RSS %s idle, peak (VmHWM) %s   goal ≤ %d MB (a 128 MB Lambda): %s\n", mib(idle), mib(peak), memLambdaMB, verdict(met))
	return met, nil
}
