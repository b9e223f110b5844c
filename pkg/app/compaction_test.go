package app

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/lambent/lambent/pkg/compaction"
)

// Configured keys are used as they are; without any, a local run gets a
// per-process key (and says so), a Lambda function none (compaction off).
func TestCompactionKeysChoice(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	configured, err := compaction.ParseKeys("k=" + compactionKey)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := compactionKeys(Config{Security: SecurityConfig{CompactionKeys: configured}, InLambda: true}, log); err != nil || got != configured {
		t.Fatalf("configured keys: %v, %v", got, err)
	}
	if logs.Len() != 0 {
		t.Errorf("configured keys logged %q", logs.String())
	}

	local, err := compactionKeys(Config{}, log)
	if err != nil || local == nil || local.SealingKeyID() != "dev" {
		t.Fatalf("local run: %v, %v; want a generated dev key", local, err)
	}
	if !strings.Contains(logs.String(), "restart") {
		t.Errorf("the generated key was not announced: %q", logs.String())
	}

	logs.Reset()
	if got, err := compactionKeys(Config{InLambda: true}, log); err != nil || got != nil {
		t.Fatalf("Lambda without keys: %v, %v; want none", got, err)
	}
	if !strings.Contains(logs.String(), "CompactionKeysParameter") {
		t.Errorf("disabled compaction not explained: %q", logs.String())
	}
}
