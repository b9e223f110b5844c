// Package dynamotest makes DynamoDB stores on DynamoDB Local for tests
// (see internal/testing/dynamolocal for starting it).
package dynamotest

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/lambent/lambent/internal/testing/dynamolocal"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/store/dynamodb"
)

// Client returns a DynamoDB client for DynamoDB Local with dummy
// credentials; optFns adjust its options (a ddbmeter.Meter's Options).
func Client(tb testing.TB, optFns ...func(*ddb.Options)) *ddb.Client {
	return ddb.New(ddb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(dynamolocal.Endpoint(tb)),
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
	}, optFns...)
}

// NewStore returns a DynamoDB store on a fresh table (deleted at cleanup).
// Two stores built with the same table name share it (two instances).
func NewStore(tb testing.TB, table string) *dynamodb.Store {
	tb.Helper()
	return NewStoreWith(tb, dynamodb.Config{Table: table})
}

// NewStoreWith is NewStore with the store's configuration; an empty
// cfg.Table is a fresh table. optFns adjust the client's options.
func NewStoreWith(tb testing.TB, cfg dynamodb.Config, optFns ...func(*ddb.Options)) *dynamodb.Store {
	tb.Helper()
	c := Client(tb, optFns...)
	if cfg.Table == "" {
		cfg.Table = "lambent_test_" + api.NewID("")[24:]
	}
	table := cfg.Table
	st, err := dynamodb.New(c, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	if err := st.EnsureTable(ctx); err != nil {
		tb.Fatalf("create table %s: %v", table, err)
	}
	tb.Cleanup(func() {
		_, _ = c.DeleteTable(context.Background(), &ddb.DeleteTableInput{TableName: aws.String(table)})
	})
	return st
}
