// Package dashboard serves `kubectl sluice dashboard`: a local web UI of the Canaries and
// DataPlanes made with the user's own credentials. One informer per kind (a list, then a watch)
// feeds Server-Sent Events to the open pages; JSON endpoints answer the same views; the levers
// are the plugin's own functions, passed in by package plugin. The page is plain HTML, CSS and
// JavaScript modules built into the binary (go:embed). Report writes a Canary's page as one
// self-contained HTML file.
package dashboard
