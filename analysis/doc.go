// Package analysis evaluates a Canary's metrics at one step and returns a verdict per metric:
// Pass, Fail, NoData, Error or Skipped, with the value, the threshold range and the rendered query.
//
// Empty results, NaN and ±Inf are NoData, never a pass. The canary engine counts a failed check
// when Check.Failed reports one.
package analysis
