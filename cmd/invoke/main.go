// Command invoke runs a Lambda function's bootstrap locally against a fake
// Lambda Runtime API (internal/testing/lambdarun) with one event, and prints the
// reply, a streamed one chunk by chunk as the chunks arrive. It needs
// neither SAM nor Docker (`make invoke FN=gateway EVENT=events/<file>.json`).
//
// It builds ./functions/<fn> for the host (-tags lambda.norpc,lambent_lambda, as for
// Lambda) unless -bin names a bootstrap, and starts it with the environment
// Lambda gives a custom runtime plus the caller's LAMBENT_* and AWS_*
// variables. When LAMBENT_PROVIDER_URL is unset it starts a fake Chat
// Completions model (internal/testing/fakellm) and points the function at it; when
// LAMBENT_STORE is unset it uses the memory store (Lambda's default is
// DynamoDB).
//
// With -runs N it measures instead: N times, a fresh process is started and
// given the event at once, and it prints the median time from process start
// to the first invocation served (its reply complete) and to the first
// event taken (the end of the function's init). As in AWS, each process
// starts with role credentials in its environment and reads its provider
// key and API keys from SSM (here a fake on loopback, internal/testing/fakessm)
// through the Lambda build's configuration (awsconf.FromEnvironment); the
// caller's LAMBENT_* and AWS_* variables (but AWS_CA_BUNDLE, which Lambda
// does not set) override that set-up.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/internal/testing/fakesqs"
	"github.com/lambent/lambent/internal/testing/fakessm"
	"github.com/lambent/lambent/internal/testing/lambdarun"
	"github.com/lambent/lambent/pkg/lambdaio"
)

func main() {
	var o options
	flag.StringVar(&o.fn, "fn", "gateway", "function: the main package under ./functions/")
	flag.StringVar(&o.event, "event", "", "event JSON file (required)")
	flag.StringVar(&o.bin, "bin", "", "bootstrap to run instead of building ./functions/<fn>")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "invocation timeout (the deadline the function gets)")
	flag.BoolVar(&o.fakeModel, "fake-model", true, "start a fake model when LAMBENT_PROVIDER_URL is unset")
	flag.IntVar(&o.runs, "runs", 0, "measure start-up over this many fresh processes instead of printing the reply")
	flag.IntVar(&o.target, "target-ms", 15, "start-up target printed with -runs, in milliseconds")
	flag.Parse()
	if o.event == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: invoke -fn <function> -event <file.json> [-runs N]")
		flag.PrintDefaults()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "invoke:", err)
		os.Exit(1)
	}
}

type options struct {
	fn, event, bin string
	timeout        time.Duration
	fakeModel      bool
	runs, target   int
}

func run(ctx context.Context, o options) error {
	payload, err := os.ReadFile(o.event)
	if err != nil {
		return err
	}
	if !json.Valid(payload) {
		return fmt.Errorf("%s is not JSON", o.event)
	}
	bin := o.bin
	if bin == "" {
		dir, err := os.MkdirTemp("", "lambent-invoke-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		bin = filepath.Join(dir, "bootstrap")
		// As for Lambda (static, stripped), for the host's OS and architecture.
		if err := lambdarun.Build(ctx, ".", "./functions/"+o.fn, bin, []string{"CGO_ENABLED=0"}, "-trimpath", "-ldflags=-s -w"); err != nil {
			return err
		}
	}
	env, notes := functionEnv()
	if os.Getenv("LAMBENT_PROVIDER_URL") == "" && o.fakeModel {
		fake := fakellm.NewHandler(func(req fakellm.Request) fakellm.Turn {
			return fakellm.Turn{
				Text:  "Hello from Lambent running under the fake Lambda Runtime API (this is a fake model).",
				Usage: fakellm.Usage{PromptTokens: 24, CompletionTokens: 16},
			}
		})
		defer fake.Close()
		env = append(env, "LAMBENT_PROVIDER_URL="+fake.URL)
		notes = append(notes, "LAMBENT_PROVIDER_URL unset: a fake model answers at "+fake.URL)
	}
	rt := lambdarun.New(lambdarun.Options{FunctionName: o.fn, Region: os.Getenv("AWS_REGION")})
	defer rt.Close()
	if o.runs > 0 {
		return measure(ctx, o, rt, bin, env, payload)
	}
	for _, n := range notes {
		fmt.Fprintln(os.Stderr, "==", n)
	}
	return invokeOnce(ctx, o, rt, bin, env, payload)
}

// functionEnv returns the caller's variables the function gets (LAMBENT_*
// and AWS_* but the Lambda-reserved ones), with the memory store unless one
// is chosen.
func functionEnv() (env, notes []string) {
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "AWS_LAMBDA_"), k == "AWS_REGION", k == "AWS_DEFAULT_REGION":
		case strings.HasPrefix(k, "LAMBENT_"), strings.HasPrefix(k, "AWS_"):
			env = append(env, kv)
		}
	}
	if os.Getenv("LAMBENT_STORE") == "" {
		env = append(env, "LAMBENT_STORE=memory")
		notes = append(notes, "LAMBENT_STORE unset: the memory store (set LAMBENT_STORE=dynamodb for DynamoDB)")
	}
	return env, notes
}

func invokeOnce(ctx context.Context, o options, rt *lambdarun.Runtime, bin string, env []string, payload []byte) error {
	p, err := rt.Start(bin, lambdarun.ProcessConfig{Env: env, Stdout: os.Stderr, Stderr: os.Stderr})
	if err != nil {
		return err
	}
	defer p.Stop()
	inv := rt.Invoke(payload, invokeOptions(o, payload))
	fmt.Printf("== invoke %s with %s (request %s)\n", o.fn, o.event, inv.ID)

	ctx, cancel := context.WithTimeout(ctx, o.timeout+10*time.Second)
	defer cancel()
	go func() {
		select {
		case <-p.Exited():
			// A process that dies leaves the invocation unanswered.
			select {
			case <-inv.Done():
			case <-time.After(time.Second):
				cancel()
			}
		case <-ctx.Done():
		}
	}()

	select {
	case <-inv.Taken():
	case <-ctx.Done():
		return fmt.Errorf("the function did not take the event: %w (process: %v)", ctx.Err(), exitState(p))
	}
	start := time.Now()
	var (
		prelude  []byte
		inBody   bool
		n, total int
		first    = true
	)
	for {
		c, err := inv.NextChunk(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("reading the reply: %w (process: %v)", err, exitState(p))
		}
		if first {
			first = false
			res := inv.Snapshot()
			if res.ContentType == lambdarun.ContentTypeHTTPIntegration {
				fmt.Printf("== streamed reply (%s)\n", res.ContentType)
			} else {
				inBody = true
				fmt.Printf("== reply (%s)\n", res.ContentType)
			}
		}
		n++
		total += len(c)
		if !inBody {
			prelude = append(prelude, c...)
			pre, rest, err := lambdarun.SplitPrelude(prelude)
			if err != nil {
				continue
			}
			inBody = true
			fmt.Printf("== prelude (chunk %d): %s\n", n, pre)
			if len(rest) == 0 {
				continue
			}
			c = rest
		}
		fmt.Printf("-- chunk %d, +%s, %d bytes\n", n, time.Since(start).Round(time.Millisecond), len(c))
		os.Stdout.Write(c)
		if !strings.HasSuffix(string(c), "\n") {
			fmt.Println()
		}
	}
	res, err := inv.Wait(ctx)
	if err != nil {
		return err
	}
	switch {
	case res.Kind == "error":
		fmt.Printf("== function error %s: %s\n%s\n", res.Error.Type, res.Error.Message, res.Error.Body)
	case res.Error != nil:
		fmt.Printf("== the stream failed midway: %s: %s\n", res.Error.Type, res.Error.Message)
	}
	fmt.Printf("== done in %s: %d chunks, %d bytes\n", res.Finished.Sub(res.Taken).Round(time.Millisecond), n, total)
	if res.Kind == "error" {
		return errors.New("the invocation failed")
	}
	return nil
}

// invokeOptions invokes a function URL or REST API event streamed, as the
// template's front doors do (InvokeMode RESPONSE_STREAM, ResponseTransferMode
// STREAM), and any other event buffered, with Lambda's reply size limit.
func invokeOptions(o options, payload []byte) lambdarun.InvokeOptions {
	k := lambdaio.Detect(payload)
	return lambdarun.InvokeOptions{Timeout: o.timeout, Stream: k == lambdaio.EventFunctionURL || k == lambdaio.EventREST}
}

func exitState(p *lambdarun.Process) string {
	select {
	case <-p.Exited():
		return fmt.Sprintf("exited: %v", p.Err())
	default:
		return "running"
	}
}

// measure starts o.runs fresh processes, each given the event at once, and
// prints the median time from process start to the invocation served.
func measure(ctx context.Context, o options, rt *lambdarun.Runtime, bin string, env []string, payload []byte) error {
	ssm := fakessm.Start(fakessm.Options{Params: map[string]string{
		"/lambent/provider-api-key": "sk-lambda-metrics",
		"/lambent/api-keys":         "sk-lambda-metrics-0123456789",
	}})
	defer ssm.Close()
	if o.fn == "websocket" {
		// Its routes put messages on the turns queue: a fake SQS takes them.
		q := fakesqs.Start()
		defer q.Close()
		env = append(env, "AWS_ENDPOINT_URL_SQS="+q.URL, "LAMBENT_WEBSOCKET_TABLE=lambent-metrics",
			"LAMBENT_WEBSOCKET_QUEUE_URL="+q.URL+"/000000000000/lambent-metrics.fifo")
	}
	pre := []string{
		"AWS_ACCESS_KEY_ID=AKIDLAMBDAMETRICS",
		"AWS_SECRET_ACCESS_KEY=lambda-metrics",
		"AWS_SESSION_TOKEN=lambda-metrics",
		"AWS_ENDPOINT_URL_SSM=" + ssm.URL,
		"LAMBENT_PROVIDER_API_KEY_SSM=/lambent/provider-api-key",
	}
	// The front doors read the API keys, as template.yaml configures them
	// (the worker gets LAMBENT_WORKER_REQUIRE_TENANT instead).
	if o.fn == "gateway" || o.fn == "websocket" {
		pre = append(pre, "LAMBENT_API_KEYS_SSM=/lambent/api-keys")
	}
	// AWS_CA_BUNDLE passed through from the caller (a sandbox or corporate
	// proxy's bundle) is not part of Lambda's environment: the SDK would
	// parse the whole bundle at start-up (about 4 ms), a cost no function
	// pays in AWS.
	env = slices.DeleteFunc(append(pre, env...), func(kv string) bool { return strings.HasPrefix(kv, "AWS_CA_BUNDLE=") })
	var served, taken []time.Duration
	for i := 0; i < o.runs; i++ {
		inv := rt.Invoke(payload, invokeOptions(o, payload))
		var logs bytes.Buffer
		p, err := rt.Start(bin, lambdarun.ProcessConfig{Env: env, Stdout: &logs, Stderr: &logs})
		if err != nil {
			return err
		}
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		res, err := inv.Wait(rctx)
		cancel()
		p.Stop()
		if err != nil {
			return fmt.Errorf("run %d: %w\n%s", i+1, err, logs.String())
		}
		if res.Kind != "response" || res.Error != nil || res.Err != nil {
			return fmt.Errorf("run %d: the invocation failed: %+v\n%s", i+1, res.Error, logs.String())
		}
		served = append(served, res.Finished.Sub(p.Started))
		taken = append(taken, res.Taken.Sub(p.Started))
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
	med := median(served)
	verdict := "within"
	if med > time.Duration(o.target)*time.Millisecond {
		verdict = "OVER"
	}
	fmt.Printf("%-16s start-up, process start -> first invocation served (%s, native %s/%s, %d runs): median %s (min %s, max %s), target <= %d ms: %s\n",
		o.fn, filepath.Base(o.event), runtime.GOOS, runtime.GOARCH, o.runs, ms(med), ms(slices.Min(served)), ms(slices.Max(served)), o.target, verdict)
	fmt.Printf("%-16s init, process start -> first event taken: median %s (SSM parameters read per start: %.0f)\n", o.fn, ms(median(taken)), float64(len(ssm.Requests()))/float64(o.runs))
	return nil
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
