package dashboard

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"regexp"
	"strings"
)

// assets holds the page's files: plain HTML, CSS and JavaScript modules, no build step.
//
//go:embed assets
var assets embed.FS

// pageTemplates holds the HTML of the live page and of a report.
//
//go:embed templates
var pageTemplates embed.FS

var templates = template.Must(template.ParseFS(pageTemplates, "templates/*.html"))

// assetHandler serves the embedded assets under /assets/.
func assetHandler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err)
	}
	files := http.FileServer(http.FS(sub))
	return http.StripPrefix("/assets/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	}))
}

// serveIndex serves the page, with the process's CSRF token unless read-only.
func (s *Server) serveIndex(w http.ResponseWriter, _ *http.Request) {
	data := struct {
		Token    string
		ReadOnly bool
	}{ReadOnly: s.opts.ReadOnly}
	if !s.opts.ReadOnly {
		data.Token = s.token
	}
	var buf bytes.Buffer
	if err := templates.ExecuteTemplate(&buf, "index.html", data); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(buf.Bytes())
}

// reportModules are the modules a report inlines, each after the ones it imports.
var reportModules = []string{"js/util.js", "js/charts.js", "js/canary.js", "js/report.js"}

var (
	importLine = regexp.MustCompile(`(?m)^import [^\n]*;\n`)
	exportWord = regexp.MustCompile(`(?m)^export `)
)

// reportScript concatenates the report's modules into one script: a report is a single file
// that must work offline, so it cannot load modules. The modules import only one another, with
// one-line imports; their top-level names are unique, so stripping the import lines and the
// export keywords leaves the same program.
func reportScript() (string, error) {
	var b strings.Builder
	for _, name := range reportModules {
		data, err := assets.ReadFile("assets/" + name)
		if err != nil {
			return "", err
		}
		src := importLine.ReplaceAllString(string(data), "")
		if strings.Contains(src, "import ") && regexp.MustCompile(`(?m)^\s*import\s`).MatchString(src) {
			return "", fmt.Errorf("%s has an import the report cannot inline", name)
		}
		b.WriteString("// " + name + "\n")
		b.WriteString(exportWord.ReplaceAllString(src, ""))
		b.WriteString("\n")
	}
	return b.String(), nil
}

// reportStyle is the page's style sheet.
func reportStyle() (string, error) {
	data, err := assets.ReadFile("assets/style.css")
	return string(data), err
}
