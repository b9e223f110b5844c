package app_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/app"
)

// TestMemoryLimit: inside Lambda the Go memory limit is 80% of the
// function's memory, unless GOMEMLIMIT is set; outside Lambda none.
func TestMemoryLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  map[string]string
		want int64
	}{
		{"128 MB function", map[string]string{"AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9001", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "128"}, 128 << 20 * 8 / 10},
		{"1024 MB function", map[string]string{"AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9001", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024"}, 1024 << 20 * 8 / 10},
		{"GOMEMLIMIT set", map[string]string{"AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9001", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "128", "GOMEMLIMIT": "100MiB"}, 0},
		{"no memory size", map[string]string{"AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9001"}, 0},
		{"not a number", map[string]string{"AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9001", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "lots"}, 0},
		{"outside Lambda", map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "128"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := app.FromEnv(func(k string) string { return tc.env[k] })
			require.NoError(t, err)
			require.Equal(t, tc.want, cfg.Server.MemoryLimit)
		})
	}
}
