// Package plugin implements kubectl-sluice, the kubectl plugin for Sluice Canaries: get, status,
// watch, the operator's levers promote, abort, retry, pause and resume, and dashboard and report
// (package dashboard), whose levers are this package's functions.
//
// The levers act only through the Canary's annotations and spec (JSON merge patches), the same
// API a GitOps user has; the controller reacts to them:
//
//	sluice.dev/promote: "true"       approve the gates and skip to promotion
//	sluice.dev/abort: "true"         roll the run back now
//	sluice.dev/retry: <RFC 3339>     re-run the failed revision
//	spec.suspend: true | false       pause | resume
//
// Every command is a function taking a controller-runtime client and an io.Writer, so tests drive
// them against a real apiserver; NewRootCommand wires them into cobra.
package plugin
