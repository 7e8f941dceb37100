// Package convert turns Flagger's flagger.app/v1beta1 Canary, MetricTemplate and AlertProvider
// manifests into Sluice objects and reports, field by field, what it dropped or changed and why.
//
// Completeness of the report is structural: the Flagger input is decoded into typed structs
// whose every field is a pointer (so a field set to false or 0 is still seen), each conversion
// step clears the fields it carried over, and whatever is still set at the end is reported as
// dropped; fields outside Flagger's schema are found by comparing the input with the typed
// decoding. No field of the input leaves without a line in the report unless it was carried over.
package convert
