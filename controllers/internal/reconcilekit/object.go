package reconcilekit

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Object is a Sluice root type the kit reconciles: a client.Object with a status subresource
// that holds conditions and an observed generation. api/v1alpha1 implements it for every kind.
type Object interface {
	client.Object
	// GetConditions returns status.conditions; SetConditions replaces them.
	GetConditions() []metav1.Condition
	SetConditions(conditions []metav1.Condition)
	// SetObservedGeneration records the generation a tick reconciled without error in
	// status.observedGeneration.
	SetObservedGeneration(generation int64)
	// GetStatus returns a pointer to the object's status: Tick.End writes the status only when it
	// differs from the one read at Begin.
	GetStatus() any
}
