package analysis

import (
	"errors"
	"fmt"
)

// Errors returned (wrapped) by the analysis package; test them with errors.Is.
var (
	// ErrInvalidSpec means the Canary's analysis cannot be evaluated as written (duplicate metric
	// names, an unparsable interval, a minRequestCount on a MetricTemplate metric, an unknown
	// mesh). The spec must change; retrying does not help.
	ErrInvalidSpec = errors.New("invalid analysis spec")

	// ErrTooManyServers means a Canary's metrics use more distinct metrics servers than the
	// engine allows (Options.MaxMetricsServers). It wraps ErrInvalidSpec.
	ErrTooManyServers = fmt.Errorf("%w: too many metrics servers", ErrInvalidSpec)

	// ErrIntervalTooShort means a metric window is shorter than twice the Prometheus scrape
	// interval, so rate() over it returns nothing.
	ErrIntervalTooShort = errors.New("metric interval too short")

	// ErrUnreachable means a metrics server did not answer (network error, timeout, or an HTTP
	// error such as 401).
	ErrUnreachable = errors.New("metrics server unreachable")

	// ErrNoMetricsServer means no address is configured for a metric: none on its MetricTemplate,
	// none in spec.metricsServer and no controller default.
	ErrNoMetricsServer = errors.New("no metrics server address configured")

	// ErrTemplate means a MetricTemplate could not be read, parsed or rendered (missing template
	// or Secret, a template syntax error, an unknown variable).
	ErrTemplate = errors.New("metric template error")

	// ErrInvalidQuery means a metric's query can never be judged (ValidateQueries): its
	// MetricTemplate is InvalidQuery, it does not render with the metric's templateVariables, or
	// Prometheus's parser rejects it or types it as a range vector or a string.
	ErrInvalidQuery = errors.New("invalid metric query")

	// ErrPartial means Prometheus answered with warnings: the result may be partial (a remote
	// store or shard did not answer) and is not judged.
	ErrPartial = errors.New("partial query result")

	// ErrNoData means a query returned no series, NaN or ±Inf.
	ErrNoData = errors.New("no data")

	// ErrResult means a query returned something that is not one number: several series, a range
	// vector or a string.
	ErrResult = errors.New("unusable query result")
)
