// Command echo is a small Lambda function for the lambdarun tests, built
// with the real aws-lambda-go runtime client. Its event says what to do:
// {"mode":"buffered"} echoes the invocation's context as JSON (after a GET
// of "gate", when set); {"mode":"stream","chunks":[...],"gate":URL} streams
// the chunks as a function URL response, GETting gate before each chunk
// after the first; {"mode":"fail-midway"} streams one chunk then fails;
// {"mode":"error"} returns an error; {"mode":"big","size":N} returns a
// string of N bytes. With "ignoreDeadline": true the gate is waited for
// past the invocation's deadline (a function that overruns).
package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

type event struct {
	Mode           string   `json:"mode"`
	Chunks         []string `json:"chunks"`
	Gate           string   `json:"gate"`
	Size           int      `json:"size"`
	IgnoreDeadline bool     `json:"ignoreDeadline"`
}

func main() { lambda.Start(handle) }

func handle(ctx context.Context, ev event) (any, error) {
	gateCtx := ctx
	if ev.IgnoreDeadline {
		gateCtx = context.WithoutCancel(ctx)
	}
	switch ev.Mode {
	case "error":
		return nil, errors.New("requested failure")
	case "big":
		return strings.Repeat("x", ev.Size), nil
	case "stream":
		pr, pw := io.Pipe()
		go func() {
			for i, c := range ev.Chunks {
				if i > 0 && ev.Gate != "" {
					if err := get(gateCtx, ev.Gate); err != nil {
						_ = pw.CloseWithError(err)
						return
					}
				}
				if _, err := pw.Write([]byte(c)); err != nil {
					return
				}
			}
			_ = pw.Close()
		}()
		return &events.LambdaFunctionURLStreamingResponse{
			StatusCode: http.StatusCreated,
			Headers:    map[string]string{"Content-Type": "text/plain"},
			Body:       pr,
		}, nil
	case "fail-midway":
		pr, pw := io.Pipe()
		go func() {
			_, _ = pw.Write([]byte("partial"))
			_ = pw.CloseWithError(errors.New("failed midway"))
		}()
		return &events.LambdaFunctionURLStreamingResponse{StatusCode: http.StatusOK, Body: pr}, nil
	}
	if ev.Gate != "" {
		if err := get(gateCtx, ev.Gate); err != nil {
			return nil, err
		}
	}
	lc, _ := lambdacontext.FromContext(ctx)
	deadline, _ := ctx.Deadline()
	return map[string]any{
		"requestId":    lc.AwsRequestID,
		"functionArn":  lc.InvokedFunctionArn,
		"functionName": lambdacontext.FunctionName,
		"memory":       lambdacontext.MemoryLimitInMB,
		"region":       os.Getenv("AWS_REGION"),
		"deadline":     deadline.UnixMilli(),
		"traceId":      ctx.Value("x-amzn-trace-id"),
		"now":          time.Now().UnixMilli(),
	}, nil
}

func get(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}
