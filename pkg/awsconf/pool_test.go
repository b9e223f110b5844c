package awsconf_test

import (
	"context"
	"fmt"
	"hash/crc32"
	"net/http"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/lambent/lambent/internal/testing/conncount"
	"github.com/lambent/lambent/pkg/awsconf"
	"github.com/lambent/lambent/pkg/awsjson"
	"github.com/lambent/lambent/pkg/store/dynamodb"
)

// concurrentCalls is a turn's fan-out: its hosted calls run at once, and
// each may store, put events or invoke.
const concurrentCalls = 32

// The clients made from the configuration keep the connections a turn's
// concurrent calls opened to an AWS endpoint for the next turn: DynamoDB
// (the SDK's client kept 10 idle connections a host by default) and the
// awsjson clients of SQS, EventBridge, SSM and hook Lambdas (net/http's
// default client, which keeps 2). Two rounds of 32 concurrent calls open
// 32 connections, not 32 and then 22 or 30 more (each a TLS handshake on
// AWS).
func TestClientsKeepConnectionsForConcurrentCalls(t *testing.T) {
	env := map[string]string{"AWS_ACCESS_KEY_ID": "AKIDPOOL", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_REGION": "eu-west-1"}
	for name, load := range map[string]func(t *testing.T, endpoint string) aws.Config{
		"lambda build": func(t *testing.T, endpoint string) aws.Config {
			env["AWS_ENDPOINT_URL"] = endpoint
			cfg, err := awsconf.FromEnvironment(func(k string) string { return env[k] })
			if err != nil {
				t.Fatal(err)
			}
			return cfg
		},
		"sdk build": func(t *testing.T, endpoint string) aws.Config {
			lambdaEnv(t, env)
			t.Setenv("AWS_ENDPOINT_URL", endpoint)
			cfg, err := awsconf.Load(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			return cfg
		},
	} {
		t.Run(name+"/eventbridge", func(t *testing.T) {
			srv := startAWS(t, `{"FailedEntryCount":0,"Entries":[{"EventId":"e1"}]}`)
			eb, err := awsjson.NewEventBridge(load(t, srv.URL))
			if err != nil {
				t.Fatal(err)
			}
			in := awsjson.PutEventsInput{Entries: []awsjson.PutEventsEntry{{Source: "lambent", DetailType: "t", Detail: "{}"}}}
			checkRounds(t, srv, func() error { _, err := eb.PutEvents(context.Background(), in); return err })
		})
		t.Run(name+"/dynamodb", func(t *testing.T) {
			srv := startAWS(t, `{}`)
			c := dynamodb.NewClient(load(t, srv.URL))
			in := &ddb.PutItemInput{TableName: aws.String("t"), Item: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "k"}}}
			checkRounds(t, srv, func() error { _, err := c.PutItem(context.Background(), in); return err })
		})
	}
}

// startAWS is an AWS JSON endpoint answering every call with answer (and
// its CRC32, as DynamoDB sends it) once a round of concurrent calls has
// arrived.
func startAWS(t *testing.T, answer string) *conncount.Server {
	b := conncount.NewBarrier(concurrentCalls)
	srv := conncount.Start(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		b.Wait()
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(answer))), 10))
		fmt.Fprint(w, answer)
	}))
	return srv
}

// checkRounds runs two rounds of concurrent calls and checks they opened
// one round's connections.
func checkRounds(t *testing.T, srv *conncount.Server, call func() error) {
	t.Helper()
	if err := conncount.Rounds(2, concurrentCalls, call); err != nil {
		t.Fatal(err)
	}
	if n := srv.Opened(); n != concurrentCalls {
		t.Errorf("2 rounds of %d concurrent calls opened %d connections, want %d", concurrentCalls, n, concurrentCalls)
	}
}
