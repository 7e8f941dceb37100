package v1alpha1

// Kind names of the root types, as they appear in TypeMeta and in notifications.
const (
	KindCanary    = "Canary"
	KindDataPlane = "DataPlane"
)
