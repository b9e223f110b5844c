package api_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/api"
)

// Cache writes add up in lambent.usage, which appears only once there are
// some, and a clone keeps what it had.
func TestAddCacheWrites(t *testing.T) {
	t.Parallel()
	r := &api.Response{ID: "resp_1"}
	r.AddCacheWrites(0)
	require.Nil(t, r.Lambent)
	r.AddCacheWrites(120)
	c := r.Clone()
	r.AddCacheWrites(30)
	require.Equal(t, 150, r.Lambent.Usage.CacheWriteInputTokens)
	require.Equal(t, 120, c.Lambent.Usage.CacheWriteInputTokens)
	b, err := json.Marshal(r)
	require.NoError(t, err)
	var got struct {
		Lambent map[string]any `json:"lambent"`
	}
	require.NoError(t, json.Unmarshal(b, &got))
	require.Equal(t, map[string]any{"usage": map[string]any{"cache_write_input_tokens": 150.0}}, got.Lambent)
}
