package view

import (
	"strings"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// Declared is the version (Linkerd) or revision (Istio) the DataPlane declares.
func Declared(dp *sluicev1.DataPlane) string {
	if dp.Spec.Mesh == sluicev1.MeshIstio {
		return dp.Spec.Revision
	}
	return dp.Spec.Version
}

// DataPlanePhase is the phase, "Stalled" when the controller cannot act, "-" before it looked,
// with "(paused)" when suspended.
func DataPlanePhase(dp *sluicev1.DataPlane) string {
	p := string(dp.Status.Phase)
	for _, c := range dp.Status.Conditions {
		if c.Type == sluicev1.ConditionStalled && c.Status == "True" {
			p = "Stalled"
		}
	}
	if p == "" {
		p = "-"
	}
	if dp.Spec.Suspend {
		p += " (paused)"
	}
	return p
}

// DataPlaneRequests lists the request annotations on dp the controller has not acted on yet.
func DataPlaneRequests(dp *sluicev1.DataPlane) string {
	var out []string
	for _, k := range []string{sluicev1.AnnotationApproveFleet, sluicev1.AnnotationAbort, sluicev1.AnnotationRetry} {
		if v, ok := dp.Annotations[k]; ok && dp.Status.LastHandledRequests[k] != v {
			out = append(out, k+"="+v)
		}
	}
	return strings.Join(out, ", ")
}
