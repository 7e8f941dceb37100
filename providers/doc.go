// Package providers defines the Router interface through which the canary engine shifts traffic
// between a Canary's primary and canary backends, and the helpers every provider shares.
// Implementations live in providers/gatewayapi (HTTPRoute) and providers/istio (VirtualService).
package providers
