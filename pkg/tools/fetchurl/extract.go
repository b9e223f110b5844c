package fetchurl

import (
	"strings"
	"unicode"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// extractHTML turns an HTML document into readable plain text and returns
// its title and text. Invisible and non-content elements are dropped, block
// elements become line breaks, whitespace is collapsed (except inside <pre>),
// link text is kept. Extraction stops once about limit bytes were produced.
//
// The document is parsed into a tree with golang.org/x/net/html; when the
// parser gives up (it refuses documents nested more than 512 deep), a
// streaming tokenizer pass produces the text instead.
func extractHTML(doc string, limit int) (title, text string) {
	root, err := html.Parse(strings.NewReader(doc))
	if err != nil {
		return extractTokens(doc, limit)
	}
	r := &renderer{w: &textWriter{limit: limit}}
	r.walk(root)
	return findTitle(root), r.w.String()
}

// findTitle returns the collapsed text of the first HTML <title> element.
// The traversal is iterative so that deeply nested documents cannot exhaust
// the stack.
func findTitle(root *html.Node) string {
	for n := root; n != nil; n = nextNode(n, root, true) {
		if n.Type == html.ElementNode && n.DataAtom == atom.Title && n.Namespace == "" {
			var b strings.Builder
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				if c.Type == html.TextNode {
					b.WriteString(c.Data)
				}
			}
			return strings.Join(strings.Fields(b.String()), " ")
		}
	}
	return ""
}

// nextNode returns the node after n in document order, descending into n's
// children when descend is set, or nil at the end of root's subtree.
func nextNode(n, root *html.Node, descend bool) *html.Node {
	if descend && n.FirstChild != nil {
		return n.FirstChild
	}
	for n != nil && n != root {
		if n.NextSibling != nil {
			return n.NextSibling
		}
		n = n.Parent
	}
	return nil
}

// skipped reports elements whose content is not readable page text.
func skipped(n *html.Node) bool {
	if n.Type != html.ElementNode {
		return n.Type == html.CommentNode || n.Type == html.DoctypeNode
	}
	if skippedTag(n.DataAtom, n.Data) {
		return true
	}
	return hiddenAttr(n.Attr)
}

// hiddenAttr reports the hidden or aria-hidden="true" attribute.
func hiddenAttr(attrs []html.Attribute) bool {
	for _, a := range attrs {
		if a.Namespace == "" && (a.Key == "hidden" || (a.Key == "aria-hidden" && a.Val == "true")) {
			return true
		}
	}
	return false
}

// isVoid reports elements that never have content or an end tag.
func isVoid(a atom.Atom) bool {
	switch a {
	case atom.Area, atom.Base, atom.Br, atom.Col, atom.Embed, atom.Hr, atom.Img,
		atom.Input, atom.Link, atom.Meta, atom.Source, atom.Track, atom.Wbr:
		return true
	}
	return false
}

// skippedTag reports elements that never contain readable page text.
func skippedTag(a atom.Atom, name string) bool {
	switch a {
	case atom.Head, atom.Script, atom.Style, atom.Noscript, atom.Svg, atom.Template,
		atom.Iframe, atom.Object, atom.Embed, atom.Canvas, atom.Audio, atom.Video:
		return true
	}
	return name == "svg"
}

// blockBreaks is how many line breaks a block element puts around itself
// (0 for inline elements).
func blockBreaks(a atom.Atom) int {
	switch a {
	case atom.P, atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6,
		atom.Blockquote, atom.Pre, atom.Table, atom.Ul, atom.Ol, atom.Dl,
		atom.Hr, atom.Section, atom.Article, atom.Figure, atom.Details:
		return 2
	case atom.Address, atom.Aside, atom.Body, atom.Caption, atom.Dd, atom.Dialog,
		atom.Div, atom.Dt, atom.Fieldset, atom.Figcaption, atom.Footer, atom.Form,
		atom.Header, atom.Hgroup, atom.Legend, atom.Li, atom.Main, atom.Nav,
		atom.Option, atom.Summary, atom.Tbody, atom.Tfoot, atom.Thead, atom.Tr:
		return 1
	}
	return 0
}

func headingLevel(a atom.Atom) int {
	switch a {
	case atom.H1:
		return 1
	case atom.H2:
		return 2
	case atom.H3:
		return 3
	case atom.H4:
		return 4
	case atom.H5:
		return 5
	case atom.H6:
		return 6
	}
	return 0
}

// renderer maps elements and text onto a textWriter. It is shared by the
// tree walk and the tokenizer fallback.
type renderer struct {
	w     *textWriter
	pre   int // depth of open <pre> elements
	cells int // cells seen in the current table row
}

func (r *renderer) text(s string) {
	if r.pre > 0 {
		r.w.raw(s)
	} else {
		r.w.text(s)
	}
}

func (r *renderer) start(a atom.Atom) {
	if b := blockBreaks(a); b > 0 {
		r.w.lineBreak(b)
	}
	switch a {
	case atom.Pre:
		r.pre++
	case atom.Br:
		r.w.hardBreak()
	case atom.Li:
		r.w.literal("- ")
	case atom.Tr:
		r.cells = 0
	case atom.Td, atom.Th:
		if r.cells > 0 {
			r.w.space = true
			r.w.literal("| ")
		}
		r.cells++
	default:
		if l := headingLevel(a); l > 0 {
			r.w.literal(strings.Repeat("#", l) + " ")
		}
	}
}

func (r *renderer) end(a atom.Atom) {
	switch a {
	case atom.Pre:
		if r.pre > 0 {
			r.pre--
		}
	case atom.Li, atom.Td, atom.Th, atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		r.w.literal("") // an empty item leaves no marker behind
	}
	if b := blockBreaks(a); b > 0 {
		r.w.lineBreak(b)
	}
}

// walk renders root's subtree without recursion.
func (r *renderer) walk(root *html.Node) {
	enter := func(n *html.Node) bool {
		if skipped(n) {
			return false
		}
		switch n.Type {
		case html.TextNode:
			r.text(n.Data)
			return false
		case html.ElementNode:
			r.start(n.DataAtom)
		}
		return true
	}
	leave := func(n *html.Node) {
		if n.Type == html.ElementNode && !skipped(n) {
			r.end(n.DataAtom)
		}
	}
	n := root
	for n != nil && !r.w.full() {
		if enter(n) && n.FirstChild != nil {
			n = n.FirstChild
			continue
		}
		// Leave n and every ancestor that has no further sibling.
		for n != nil {
			leave(n)
			if n == root {
				n = nil
				break
			}
			if n.NextSibling != nil {
				n = n.NextSibling
				break
			}
			n = n.Parent
		}
	}
}

// extractTokens is the streaming fallback for documents the tree parser
// rejects: same rendering rules, driven by the tokenizer.
func extractTokens(doc string, limit int) (title, text string) {
	z := html.NewTokenizer(strings.NewReader(doc))
	r := &renderer{w: &textWriter{limit: limit}}
	var skipTag string // element whose content is being skipped
	skipDepth := 0
	inTitle, haveTitle := false, false
	var tb strings.Builder
	for !r.w.full() {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		tok := z.Token()
		a := tok.DataAtom
		switch tt {
		case html.TextToken:
			switch {
			case skipDepth > 0:
			case inTitle:
				tb.WriteString(tok.Data)
			default:
				r.text(tok.Data)
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			switch {
			case skipDepth > 0:
				if tok.Data == skipTag && tt == html.StartTagToken {
					skipDepth++
				}
			case a == atom.Title && !haveTitle && tt == html.StartTagToken:
				inTitle = true
			case tt == html.StartTagToken && !isVoid(a) && a != atom.Head &&
				(skippedTag(a, tok.Data) || hiddenAttr(tok.Attr)):
				skipTag, skipDepth = tok.Data, 1
			case isVoid(a) && (skippedTag(a, tok.Data) || hiddenAttr(tok.Attr)):
				// a hidden void element: nothing to render
			default:
				r.start(a)
				if tt == html.SelfClosingTagToken {
					r.end(a)
				}
			}
		case html.EndTagToken:
			switch {
			case skipDepth > 0:
				if tok.Data == skipTag {
					skipDepth--
				}
			case a == atom.Title && inTitle:
				inTitle, haveTitle = false, true
			default:
				r.end(a)
			}
		}
	}
	return strings.Join(strings.Fields(tb.String()), " "), r.w.String()
}

// textWriter accumulates extracted text, collapsing whitespace and merging
// line breaks so that at most one blank line separates blocks.
type textWriter struct {
	b       strings.Builder
	limit   int
	space   bool // a collapsed space is pending
	breaks  int  // line breaks pending (max 2 are written)
	trailNL int  // newlines at the end of b
	prefix  string
}

func (w *textWriter) full() bool { return w.b.Len() >= w.limit }

func (w *textWriter) write(s string) {
	if s == "" {
		return
	}
	w.b.WriteString(s)
	t := strings.TrimRight(s, "\n")
	if t == "" {
		w.trailNL += len(s)
	} else {
		w.trailNL = len(s) - len(t)
	}
}

// flush writes pending separators and any pending prefix before content.
func (w *textWriter) flush() {
	if w.b.Len() > 0 {
		if w.breaks > 0 {
			for n := min(w.breaks, 2) - w.trailNL; n > 0; n-- {
				w.write("\n")
			}
		} else if w.space && w.trailNL == 0 {
			w.write(" ")
		}
	}
	w.space, w.breaks = false, 0
	if w.prefix != "" {
		p := w.prefix
		w.prefix = ""
		w.write(p)
	}
}

// text writes normal-flow text: runs of whitespace become one space.
func (w *textWriter) text(s string) {
	for s != "" {
		i := strings.IndexFunc(s, unicode.IsSpace)
		if i != 0 {
			word := s
			if i > 0 {
				word = s[:i]
			}
			w.flush()
			w.write(word)
			if i < 0 {
				return
			}
		}
		s = s[max(i, 0):]
		j := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsSpace(r) })
		w.space = true
		if j < 0 {
			return
		}
		s = s[j:]
	}
}

// raw writes preformatted text as is (line endings normalized).
func (w *textWriter) raw(s string) {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	if s == "" {
		return
	}
	w.flush()
	w.write(s)
}

// literal sets the marker (list bullet, heading hashes, cell separator) that
// is written just before the next content, replacing any marker not yet
// written, so empty elements leave no trace.
func (w *textWriter) literal(s string) {
	w.prefix = s
}

// lineBreak asks for n line breaks before the next content.
func (w *textWriter) lineBreak(n int) {
	w.breaks = max(w.breaks, n)
	w.space = false
}

// hardBreak is <br>: consecutive ones add up (to at most one blank line).
func (w *textWriter) hardBreak() {
	w.breaks = min(w.breaks+1, 2)
	w.space = false
}

func (w *textWriter) String() string {
	s := w.b.String()
	// Trim trailing spaces on each line.
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRightFunc(l, unicode.IsSpace)
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}
