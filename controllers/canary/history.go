package canary

import (
	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/history"
	"sluice.dev/sluice/controllers/canary/plan"
)

// recordHistory updates the run history in the Canary's status (status.run, status.runs) from
// what the tick's decision d changed; the images of the target and the primary are read from the
// tick's observation when a run starts.
func recordHistory(canary *sluicev1.Canary, obs *observation, d plan.Decision) {
	t := history.Tick{Spec: canary.Spec, Prev: obs.o.Status, Events: d.Events, Now: obs.o.Now}
	if start := canary.Status.RunStartTime; start != nil && !start.Equal(obs.o.Status.RunStartTime) {
		t.Images, t.PrimaryImages = images(obs.target), images(obs.primary)
	}
	history.Record(&canary.Status, t)
}

// images lists the containers' images of w's pod template; nil for no workload.
func images(w workload) []sluicev1.ContainerImage {
	if w == nil {
		return nil
	}
	var out []sluicev1.ContainerImage
	for _, c := range w.podTemplate().Spec.Containers {
		out = append(out, sluicev1.ContainerImage{Container: c.Name, Image: c.Image})
	}
	return out
}
