package main

import (
	"archive/zip"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// The archive is what Lambda expects (an executable named bootstrap, its
// bytes intact, Deflate) and zippedSize counts exactly its bytes.
func TestZipHoldsTheBootstrap(t *testing.T) {
	content := bytes.Repeat([]byte("\x7fELF lambent bootstrap "), 4096)
	path := filepath.Join(t.TempDir(), "bootstrap")
	if err := os.WriteFile(path, content, 0o755); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := writeZip(&buf, bytes.NewReader(content)); err != nil {
		t.Fatal(err)
	}
	raw, zipped, err := zippedSize(path)
	if err != nil {
		t.Fatal(err)
	}
	if raw != int64(len(content)) || zipped != int64(buf.Len()) || zipped >= raw {
		t.Fatalf("raw %d zipped %d, want %d and %d (smaller)", raw, zipped, len(content), buf.Len())
	}
	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if len(zr.File) != 1 {
		t.Fatalf("%d files in the archive", len(zr.File))
	}
	f := zr.File[0]
	if f.Name != "bootstrap" || f.Method != zip.Deflate || f.Mode().Perm()&0o111 == 0 {
		t.Errorf("entry %s, method %d, mode %v: want an executable bootstrap, deflated", f.Name, f.Method, f.Mode())
	}
	rc, err := f.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil || !bytes.Equal(got, content) {
		t.Fatalf("unzipped %d bytes (%v), want the bootstrap's %d", len(got), err, len(content))
	}
}

// A function's limit is the first pattern its name matches; a function no
// pattern matches has none.
func TestLimits(t *testing.T) {
	t.Parallel()
	var l limitFlags
	for _, v := range []string{"gateway=6", "tools/*=2.5", "*=9"} {
		if err := l.Set(v); err != nil {
			t.Fatal(err)
		}
	}
	for fn, want := range map[string]float64{"gateway": 6, "tools/fetch_url": 2.5, "worker": 9} {
		if got, ok := l.of(fn); !ok || got != want {
			t.Errorf("%s: limit %v, %v; want %v", fn, got, ok, want)
		}
	}
	for _, bad := range []string{"gateway", "gateway=0", "gateway=x", "[=6"} {
		if err := new(limitFlags).Set(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, ok := limitFlags(nil).of("gateway"); ok {
		t.Error("a limit without any -limit")
	}
}
