// Package promtest runs a real Prometheus server for tests, demos and end-to-end runs.
//
// Start launches the `prometheus` binary (Debian's package, installed by
// hack/install-prometheus.sh) on a free 127.0.0.1 port with its own temporary data folder, waits
// until /-/ready answers, and returns a Server; Stop kills it and removes the folder. StartT does
// the same for a test and stops the server in t.Cleanup, also when the test fails.
//
// Two ways to feed it, usable together:
//
//   - Backfill: Config.Series (or raw Config.OpenMetrics documents) are written as OpenMetrics
//     text and turned into TSDB blocks with `promtool tsdb create-blocks-from openmetrics` before
//     the server starts. Query them with an explicit time inside the backfilled range. Prometheus
//     applies time retention relative to the newest block, not the wall clock; Start also sets
//     --storage.tsdb.retention.time to Config.Retention (default 100y) so old backfilled blocks
//     survive once live samples are compacted too.
//   - Live: Config.ScrapeTargets are scraped every Config.ScrapeInterval (default 1s). The first
//     samples arrive a few seconds after start; Server.WaitForQuery waits for them.
package promtest
