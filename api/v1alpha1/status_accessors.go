package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// The accessors below let the controllers' shared reconcile scaffolding
// (controllers/internal/reconcilekit.Object) set conditions and write the status of every kind.

// GetConditions returns status.conditions.
func (c *Canary) GetConditions() []metav1.Condition { return c.Status.Conditions }

// SetConditions replaces status.conditions.
func (c *Canary) SetConditions(conditions []metav1.Condition) { c.Status.Conditions = conditions }

// SetObservedGeneration sets status.observedGeneration.
func (c *Canary) SetObservedGeneration(generation int64) { c.Status.ObservedGeneration = generation }

// GetStatus returns a pointer to the status.
func (c *Canary) GetStatus() any { return &c.Status }

// GetConditions returns status.conditions.
func (d *DataPlane) GetConditions() []metav1.Condition { return d.Status.Conditions }

// SetConditions replaces status.conditions.
func (d *DataPlane) SetConditions(conditions []metav1.Condition) { d.Status.Conditions = conditions }

// SetObservedGeneration sets status.observedGeneration.
func (d *DataPlane) SetObservedGeneration(generation int64) {
	d.Status.ObservedGeneration = generation
}

// GetStatus returns a pointer to the status.
func (d *DataPlane) GetStatus() any { return &d.Status }
