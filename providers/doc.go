// Package providers defines the Router interface through which the canary engine shifts traffic
// between a Canary's primary and canary backends, and what every provider shares: the weights
// type, the A/B rule name prefix, and the error contract. A provider wraps every error that says
// "this route or spec can never work as it is" in a sentinel made with Permanent (matching
// ErrInvalidRoute); the controller stalls the Canary on those (IsPermanent, with the sentinel's
// reason) and retries every other error with backoff, so it never needs to know a concrete
// provider. Implementations live in providers/gatewayapi (HTTPRoute) and providers/istio
// (VirtualService). The Canary's Service names come from the API (sluicev1.Canary.ServiceNames).
package providers
