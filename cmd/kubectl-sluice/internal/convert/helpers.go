package convert

import (
	"fmt"
	"math"
)

// The take helpers read a field of the Flagger input and clear it: whatever is left set after a
// conversion was not carried over (see residue).

func takeString(p **string) string {
	if *p == nil {
		return ""
	}
	v := **p
	*p = nil
	return v
}

func takeBool(p **bool) bool {
	if *p == nil {
		return false
	}
	v := **p
	*p = nil
	return v
}

// takeInt reads a JSON number field as an int32; a fraction is rounded and reported.
func takeInt(r *ObjectReport, field string, p **float64) (int32, bool) {
	if *p == nil {
		return 0, false
	}
	v := **p
	*p = nil
	n := math.Round(v)
	if n != v {
		r.change(field, "%v is not a whole number: rounded to %v", v, n)
	}
	if n > math.MaxInt32 || n < math.MinInt32 {
		r.drop(field, "%v is out of range", v)
		return 0, false
	}
	return int32(n), true
}

func fieldf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
