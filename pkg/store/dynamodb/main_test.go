package dynamodb

import (
	"os"
	"testing"

	"github.com/lambent/lambent/internal/testing/dynamolocal"
)

// TestMain makes DynamoDB Local available (see internal/testing/dynamolocal): in
// CI without AWS_ENDPOINT_URL_DYNAMODB every test fails; it never skips.
func TestMain(m *testing.M) {
	os.Exit(dynamolocal.Main(m.Run))
}

// endpoint returns DynamoDB Local's URL, failing tb when there is none.
func endpoint(tb testing.TB) string {
	tb.Helper()
	return dynamolocal.Endpoint(tb)
}
