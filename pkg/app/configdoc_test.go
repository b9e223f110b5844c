package app

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestEverySettingIsDocumented: every LAMBENT_* setting that code of the
// repository reads (a string literal in a non-test Go file or a script)
// has a row in the configuration table, docs/configuration.md.
func TestEverySettingIsDocumented(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	setting := regexp.MustCompile(`\bLAMBENT_[A-Z0-9_]*[A-Z0-9]\b`)
	seen := map[string][]string{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".cache", ".git", "node_modules", "testdata", ".aws-sam", "bin":
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		if !(strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") || strings.HasSuffix(name, ".sh")) {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, s := range setting.FindAllString(string(b), -1) {
			seen[s] = append(seen[s], path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) < 40 {
		t.Fatalf("found only %d settings: the walk is broken", len(seen))
	}
	var missing []string
	for s, where := range seen {
		if !strings.Contains(string(doc), "| `"+s+"` |") {
			missing = append(missing, s+" (read in "+where[0]+")")
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("docs/configuration.md has no row for %s", m)
	}
}
