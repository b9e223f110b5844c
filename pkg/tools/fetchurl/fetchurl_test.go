package fetchurl

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lambent/lambent/pkg/egress"
	"github.com/lambent/lambent/pkg/tools"
)

// serve starts an allow-listed test server and returns it with a tool that
// may reach it.
func serve(t *testing.T, cfg Config, h http.HandlerFunc) (*httptest.Server, tools.Hosted) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	cfg.AllowHosts = append(cfg.AllowHosts, srv.Listener.Addr().String())
	return srv, Tool(cfg)
}

const page = `<!DOCTYPE html>
<html>
<head>
  <meta charset="utf-8">
  <title>  Example   Page </title>
  <style>body { color: red; }</style>
  <script>var secret = "do not show";</script>
</head>
<body>
  <nav><a href="/">Home</a> <a href="/about">About</a></nav>
  <noscript>Enable JavaScript</noscript>
  <svg><title>icon</title><text>svg text</text></svg>
  <h1>Main   heading</h1>
  <p>First paragraph with a <a href="https://example.com/x">link&nbsp;text</a> and
     <b>bold</b>&amp;<i>italic</i> words.</p>
  <p>Second<br>line after br</p>
  <div hidden>hidden text</div>
  <ul>
    <li>one</li>
    <li>two <em>items</em></li>
    <li></li>
  </ul>
  <table>
    <tr><th>Name</th><th>Age</th></tr>
    <tr><td>Ann</td><td>42</td></tr>
  </table>
  <pre>code  line 1
    indented</pre>
  <template>template text</template>
  <script>alert("x")</script>
  <footer>Footer &copy; 2024</footer>
</body>
</html>`

const pageText = `Home About

# Main heading

First paragraph with a link text and bold&italic words.

Second
line after br

- one
- two items

Name | Age
Ann | 42

code  line 1
    indented

Footer © 2024`

func TestFetchHTML(t *testing.T) {
	var gotUA, gotMethod string
	srv, tool := serve(t, Config{}, func(w http.ResponseWriter, r *http.Request) {
		gotUA, gotMethod = r.UserAgent(), r.Method
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(page))
	})
	out, err := call(t, tool, srv.URL+"/page#frag")
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	want := "URL: " + srv.URL + "/page\nTitle: Example Page\n\n" + pageText
	if out != want {
		t.Fatalf("output mismatch\n--- got ---\n%s\n--- want ---\n%s", out, want)
	}
	if gotUA != "Lambent-fetch_url/1" {
		t.Errorf("User-Agent = %q", gotUA)
	}
	if gotMethod != http.MethodGet {
		t.Errorf("method = %q", gotMethod)
	}
}

func TestExtractHTMLDetails(t *testing.T) {
	tests := []struct {
		name, html, title, text string
	}{
		{"no title", `<p>hi</p>`, "", "hi"},
		{"inline elements keep words apart", `<p>a <span>b</span> c</p>`, "", "a b c"},
		{"inline elements join words", `<p>un<b>break</b>able</p>`, "", "unbreakable"},
		{"divs become lines", `<div>a</div><div>b</div>`, "", "a\nb"},
		{"list items", `<ul><li>x</li><li>y</li></ul>`, "", "- x\n- y"},
		{"paragraphs in list items", `<ul><li><p>x</p></li><li>y</li></ul>`, "", "- x\n\n- y"},
		{"headings", `<h2>Sub</h2><p>t</p>`, "", "## Sub\n\nt"},
		{"entities", `<p>&lt;tag&gt; &quot;q&quot; caf&eacute;</p>`, "", `<tag> "q" café`},
		{"aria hidden", `<p>a<span aria-hidden="true">X</span>b</p>`, "", "ab"},
		{"comments dropped", `<p>a<!-- c -->b</p>`, "", "ab"},
		{"unclosed tags", `<p>one<p>two<div>three`, "", "one\n\ntwo\n\nthree"},
		{"title only", `<title>T</title>`, "T", ""},
		{"empty", ``, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			title, text := extractHTML(tt.html, 1<<20)
			if title != tt.title || text != tt.text {
				t.Fatalf("extractHTML = (%q, %q), want (%q, %q)", title, text, tt.title, tt.text)
			}
		})
	}
}

// TestExtractHTMLDeepNesting covers documents the tree parser rejects
// (more than 512 open elements): the tokenizer fallback takes over.
func TestExtractHTMLDeepNesting(t *testing.T) {
	doc := "<title>Deep</title><script>var x = '<div>';</script><embed src=x><p>top</p>" +
		strings.Repeat("<div>", 2000) + "deep<style>p{}</style>" + strings.Repeat("</div>", 2000) +
		"<ul><li>a</li><li>b</li></ul>"
	title, text := extractHTML(doc, 1<<20)
	if title != "Deep" || text != "top\n\ndeep\n\n- a\n- b" {
		t.Fatalf("extractHTML = (%q, %q)", title, text)
	}
}

// TestExtractTokensMatchesTree runs the fallback on the sample page.
func TestExtractTokensMatchesTree(t *testing.T) {
	title, text := extractTokens(page, 1<<20)
	if title != "Example Page" || text != pageText {
		t.Fatalf("extractTokens title %q, text:\n%s", title, text)
	}
}

func TestFetchContentTypes(t *testing.T) {
	tests := []struct {
		name        string
		contentType string // "-" means no Content-Type header at all
		body        []byte
		want        string // expected text after the header block
		wantErr     string
	}{
		{"plain text as is", "text/plain; charset=utf-8", []byte("  line 1\r\n  <b>not html</b>\n"), "line 1\n  <b>not html</b>", ""},
		{"json as is", "application/json", []byte(`{"a": [1, 2]}`), `{"a": [1, 2]}`, ""},
		{"vendor json", "application/vnd.api+json", []byte(`{"x":1}`), `{"x":1}`, ""},
		{"csv", "text/csv", []byte("a,b\n1,2"), "a,b\n1,2", ""},
		{"xml", "application/xml", []byte("<a>1</a>"), "<a>1</a>", ""},
		{"latin-1 text", "text/plain; charset=iso-8859-1", []byte("caf\xe9"), "café", ""},
		{"latin-1 html meta", "text/html", []byte(`<meta charset="iso-8859-1"><p>caf` + "\xe9</p>"), "café", ""},
		{"windows-1252 html http-equiv", "text/html", []byte(`<head><META HTTP-EQUIV="Content-Type" CONTENT="text/html; charset=windows-1252"></head><p>` + "\xc3\xa9</p>"), "Ã©", ""},
		{"utf-8 html without charset", "text/html", []byte(strings.Repeat("<p>ascii</p>", 200) + "<p>café</p>"), strings.TrimSuffix(strings.Repeat("ascii\n\n", 200), "\n\n") + "\n\ncafé", ""},
		{"sniffed html without header", "-", []byte("<!DOCTYPE html><html><body><p>sniffed</p></body></html>"), "sniffed", ""},
		{"sniffed html from octet-stream", "application/octet-stream", []byte("<html><body><p>sniffed</p></body></html>"), "sniffed", ""},
		{"sniffed text from octet-stream", "application/octet-stream", []byte("just text"), "just text", ""},
		{"png", "image/png", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), "", `unsupported content type "image/png"`},
		{"pdf", "application/pdf", []byte("%PDF-1.4"), "", `unsupported content type "application/pdf"`},
		{"sniffed binary", "-", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), "", `unsupported content type "image/png"`},
		{"octet-stream binary", "application/octet-stream", []byte{0, 1, 2, 3, 0xff}, "", `unsupported content type "application/octet-stream"`},
		{"empty body", "text/plain", nil, "(no text content)", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, tool := serve(t, Config{}, func(w http.ResponseWriter, _ *http.Request) {
				if tt.contentType == "-" {
					w.Header()["Content-Type"] = nil // suppress the server's own sniffing
				} else {
					w.Header().Set("Content-Type", tt.contentType)
				}
				_, _ = w.Write(tt.body)
			})
			out, err := call(t, tool, srv.URL+"/r")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got (%q, %v), want error containing %q", out, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("fetch: %v", err)
			}
			want := "URL: " + srv.URL + "/r\n\n" + tt.want
			if out != want {
				t.Fatalf("output = %q, want %q", out, want)
			}
		})
	}
}

func TestFetchNon2xx(t *testing.T) {
	for _, code := range []int{http.StatusNotFound, http.StatusForbidden, http.StatusInternalServerError, http.StatusNotModified} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			srv, tool := serve(t, Config{}, func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(code)
				_, _ = w.Write([]byte("error page"))
			})
			_, err := call(t, tool, srv.URL+"/missing")
			want := "fetch " + srv.URL + "/missing: HTTP " + http.StatusText(code)
			if err == nil || !strings.Contains(err.Error(), want[:strings.Index(want, "HTTP")+4]) ||
				!strings.Contains(err.Error(), http.StatusText(code)) {
				t.Fatalf("err = %v, want %q", err, want)
			}
		})
	}
}

// TestFetchBodyCap serves an endless body: the fetch must stop after
// MaxBytes (otherwise it would never return) and say it truncated.
func TestFetchBodyCap(t *testing.T) {
	srv, tool := serve(t, Config{MaxBytes: 1000, MaxOutput: 1 << 20}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		chunk := []byte(strings.Repeat("abcdefghij", 100))
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	out, err := call(t, tool, srv.URL+"/endless")
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	body := strings.TrimPrefix(out, "URL: "+srv.URL+"/endless\n\n")
	text, note, ok := strings.Cut(body, "\n\n[truncated]")
	if !ok {
		t.Fatalf("no truncation note in %q", out)
	}
	if len(text) != 1000 || !strings.Contains(note, "larger than 1000 bytes") {
		t.Fatalf("text length = %d, note = %q", len(text), note)
	}
}

func TestFetchOutputCap(t *testing.T) {
	const maxOut = 300
	srv, tool := serve(t, Config{MaxOutput: maxOut}, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<title>Big</title>" + strings.Repeat("<p>word é word</p>", 1000)))
	})
	out, err := call(t, tool, srv.URL+"/")
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	if len(out) > maxOut {
		t.Fatalf("output is %d bytes, want at most %d", len(out), maxOut)
	}
	if !strings.HasPrefix(out, "URL: "+srv.URL+"/\nTitle: Big\n\nword é word") {
		t.Fatalf("unexpected start: %q", out)
	}
	if !strings.Contains(out, "\n\n[truncated] ") || !strings.Contains(out, "limited to 300 bytes") {
		t.Fatalf("no truncation note: %q", out)
	}
	if !strings.Contains(out, "word") || strings.ContainsRune(out, '\uFFFD') {
		t.Fatalf("bad cut: %q", out)
	}
}

// TestFetchTimeout uses a handler that blocks until the client gives up; the
// test asserts the error, not the wall time.
func TestFetchTimeout(t *testing.T) {
	release := make(chan struct{})
	srv, tool := serve(t, Config{Timeout: 50 * time.Millisecond}, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(release) }) // runs before srv.Close
	_, err := call(t, tool, srv.URL+"/slow")
	if err == nil {
		t.Fatal("fetch succeeded, want timeout")
	}
	if !strings.Contains(err.Error(), "timed out after 50ms") || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a wrapped deadline exceeded naming the timeout", err)
	}
}

// TestFetchBodyTimeout covers a server that sends headers, then stalls.
func TestFetchBodyTimeout(t *testing.T) {
	release := make(chan struct{})
	srv, tool := serve(t, Config{Timeout: 50 * time.Millisecond}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("partial"))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(release) })
	_, err := call(t, tool, srv.URL+"/stall")
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("err = %v, want timeout", err)
	}
}

func TestFetchCanceledByCaller(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	srv, tool := serve(t, Config{}, func(w http.ResponseWriter, r *http.Request) {
		close(started)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(release) })
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	_, err := tool.Handler(ctx, tools.ToolCall{Arguments: `{"url":"` + srv.URL + `/"}`})
	if !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "timed out") {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestFetchBadArguments(t *testing.T) {
	tool := Tool(Config{})
	tests := []struct {
		args, wantErr string
	}{
		{`{"url":"ftp://example.com/file"}`, `unsupported URL scheme "ftp"`},
		{`{"url":"file:///etc/passwd"}`, `unsupported URL scheme "file"`},
		{`{"url":"javascript:alert(1)"}`, `unsupported URL scheme "javascript"`},
		{`{"url":"data:text/plain,hi"}`, `unsupported URL scheme "data"`},
		{`{"url":"example.com/page"}`, "must be absolute"},
		{`{"url":"/relative"}`, "must be absolute"},
		{`{"url":"http://"}`, "no host"},
		{`{"url":"http://exa mple.com/"}`, "invalid URL"},
		{`{"url":""}`, `missing required argument "url"`},
		{`{}`, `missing required argument "url"`},
		{`{"url":42}`, "invalid arguments"},
		{`not json`, "invalid arguments"},
		{`{"url":"https://example.com/` + strings.Repeat("a", 9000) + `"}`, "URL too long"},
	}
	for _, tt := range tests {
		t.Run(tt.wantErr, func(t *testing.T) {
			out, err := tool.Handler(context.Background(), tools.ToolCall{Arguments: tt.args})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("got (%q, %v), want error containing %q", out, err, tt.wantErr)
			}
		})
	}
}

// TestFetchWithTLSClient passes the test server's own client (trusting its
// certificate): the transport is cloned with the guard installed.
func TestFetchWithTLSClient(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("over tls"))
	}))
	t.Cleanup(srv.Close)

	tool := Tool(Config{Client: srv.Client(), AllowHosts: []string{srv.Listener.Addr().String()}})
	out, err := call(t, tool, srv.URL+"/")
	if err != nil || !strings.HasSuffix(out, "\n\nover tls") {
		t.Fatalf("got (%q, %v)", out, err)
	}

	tool = Tool(Config{Client: srv.Client()})
	_, err = call(t, tool, srv.URL+"/")
	var be *egress.BlockedError
	if !errors.As(err, &be) {
		t.Fatalf("without allow-list: err = %v, want blocked", err)
	}
}

func TestToolDefinition(t *testing.T) {
	tool := Tool(Config{})
	d := tool.Definition
	if d.Name != Name || d.Description == "" || tool.Handler == nil {
		t.Fatalf("unexpected definition: %+v", d)
	}
	var schema struct {
		Type                 string                     `json:"type"`
		Properties           map[string]json.RawMessage `json:"properties"`
		Required             []string                   `json:"required"`
		AdditionalProperties *bool                      `json:"additionalProperties"`
	}
	if err := json.Unmarshal(d.Parameters, &schema); err != nil {
		t.Fatalf("parameters are not valid JSON: %v", err)
	}
	if schema.Type != "object" || schema.Properties["url"] == nil ||
		len(schema.Required) != 1 || schema.Required[0] != "url" ||
		schema.AdditionalProperties == nil || *schema.AdditionalProperties {
		t.Fatalf("unexpected schema: %s", d.Parameters)
	}
}

func TestConfigDefaults(t *testing.T) {
	f := newFetcher(Config{}, nil)
	if f.timeout != DefaultTimeout || f.maxBytes != DefaultMaxBytes || f.maxOutput != DefaultMaxOutput {
		t.Fatalf("defaults = %v, %d, %d", f.timeout, f.maxBytes, f.maxOutput)
	}
	if f.client.CheckRedirect == nil {
		t.Fatal("no redirect policy")
	}
	tr, ok := f.client.Transport.(*http.Transport)
	if !ok || tr.Proxy != nil || tr.DialContext == nil || !tr.DisableKeepAlives {
		t.Fatalf("transport not guarded: %#v", f.client.Transport)
	}
}
