// Command lambdazip prints the size of each function's bootstrap as Lambda
// ships it: a zip archive holding the executable "bootstrap", compressed
// with Deflate at the best compression (as zip -9). Deployment package
// quotas and download time at cold start count this size, not the
// executable's (`make lambda-metrics`).
//
//	lambdazip -dir bin -limit gateway=6 -limit 'tools/*=2.5' gateway worker tools/calculator
//
// reads bin/<function>/bootstrap for each function named, as `make build`
// writes them, and prints each size beside the limit of the first -limit
// pattern (path.Match) its name matches, in MB of the zipped archive.
package main

import (
	"archive/zip"
	"compress/flate"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

func main() {
	dir := flag.String("dir", "bin", "directory holding <function>/bootstrap")
	var limits limitFlags
	flag.Var(&limits, "limit", "`pattern=MB`: the zipped size limit of the functions the pattern matches (repeatable)")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: lambdazip [-dir bin] <function>...")
		os.Exit(2)
	}
	for _, fn := range flag.Args() {
		raw, zipped, err := zippedSize(filepath.Join(*dir, fn, "bootstrap"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "lambdazip:", err)
			os.Exit(1)
		}
		verdict := ""
		if mb, ok := limits.of(fn); ok {
			verdict = fmt.Sprintf(", limit <= %.2f MB: within", mb)
			if float64(zipped)/1e6 > mb {
				verdict = fmt.Sprintf(", limit <= %.2f MB: OVER", mb)
			}
		}
		fmt.Printf("%-20s bootstrap zipped: %5.2f MB (%d bytes; unzipped %.2f MB)%s\n", fn, float64(zipped)/1e6, zipped, float64(raw)/1e6, verdict)
	}
}

// limit is a size limit of the functions whose names match pattern.
type limit struct {
	pattern string
	mb      float64
}

// limitFlags is the -limit flag: pattern=MB, repeatable.
type limitFlags []limit

func (l *limitFlags) String() string { return fmt.Sprint(*l) }

func (l *limitFlags) Set(v string) error {
	pattern, mb, ok := strings.Cut(v, "=")
	if !ok {
		return fmt.Errorf("want pattern=MB, got %q", v)
	}
	if _, err := path.Match(pattern, ""); err != nil {
		return fmt.Errorf("pattern %q: %w", pattern, err)
	}
	n, err := strconv.ParseFloat(mb, 64)
	if err != nil || n <= 0 {
		return fmt.Errorf("limit %q: want a positive number of MB", mb)
	}
	*l = append(*l, limit{pattern, n})
	return nil
}

// of returns the limit of the first pattern fn matches.
func (l limitFlags) of(fn string) (float64, bool) {
	for _, x := range l {
		if ok, _ := path.Match(x.pattern, fn); ok {
			return x.mb, true
		}
	}
	return 0, false
}

// zippedSize returns the size of the file at path and of a zip archive
// holding it as an executable named bootstrap.
func zippedSize(path string) (raw, zipped int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	var n counter
	if raw, err = writeZip(&n, f); err != nil {
		return 0, 0, fmt.Errorf("zip %s: %w", path, err)
	}
	return raw, int64(n), nil
}

// writeZip writes to w a zip archive holding r's bytes as the executable
// bootstrap, Deflate-compressed at the best compression, and returns how
// many bytes it read.
func writeZip(w io.Writer, r io.Reader) (int64, error) {
	zw := zip.NewWriter(w)
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(w, flate.BestCompression)
	})
	hdr := &zip.FileHeader{Name: "bootstrap", Method: zip.Deflate}
	hdr.SetMode(0o755)
	fw, err := zw.CreateHeader(hdr)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(fw, r)
	if err != nil {
		return n, err
	}
	return n, zw.Close()
}

// counter is an io.Writer that counts the bytes written to it.
type counter int64

func (c *counter) Write(p []byte) (int, error) {
	*c += counter(len(p))
	return len(p), nil
}
