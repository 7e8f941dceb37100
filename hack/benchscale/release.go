package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sluice.dev/sluice/test/managerproc"
)

// release gives every target a new image at once and follows the runs to their end.
func release(ctx context.Context, c config, k client.Client, tr *tracker, m *managerproc.Proc, s *sampler, as []app, r *report) error {
	say("releasing a new image to all %d targets at once", len(as))
	if err := tr.startRelease(ctx, as); err != nil {
		return err
	}
	before, err := m.Scrape()
	if err != nil {
		return err
	}
	apiBefore, err := r.apiserver.requests(ctx)
	if err != nil {
		return err
	}
	p0, err := m.Stats()
	if err != nil {
		return err
	}
	s.resetPeak()
	cpu0 := cpuNow(r.pids)
	r.profiles = append(r.profiles, apiserverProfile(ctx, r.apiserver, c.profiles, "apiserver-release", 40*time.Second, 30*time.Second))
	var mu sync.Mutex
	changed := map[client.ObjectKey]time.Time{}
	start := time.Now()
	if err := forEach(ctx, as, c.workers, func(ctx context.Context, a app) error {
		if err := setImage(ctx, k, a, imageV2); err != nil {
			return err
		}
		mu.Lock()
		changed[a.key()] = time.Now()
		mu.Unlock()
		return nil
	}); err != nil {
		return err
	}
	r.releasePatched = time.Since(start)
	if err := waitFor(ctx, c.timeout, "release", m, func() (bool, string) {
		ended, failed := tr.ended()
		return ended == len(as), fmt.Sprintf("%d/%d runs ended (%d failed), phases %v", ended, len(as), failed, tr.phases(ctx))
	}); err != nil {
		r.releaseErr = err
	}
	r.releaseWall = time.Since(start)
	r.releaseCPUByProcess = cpuShare(cpu0, cpuNow(r.pids), r.releaseWall, r.cores)
	for _, a := range as {
		end, ok := tr.endTime(a)
		if !ok {
			continue
		}
		at := changed[a.key()]
		r.runs = append(r.runs, end.Sub(at))
		r.stepGaps = append(r.stepGaps, tr.stepGaps(a)...)
		progressing, promoting := tr.phaseTimes(a)
		if !progressing.IsZero() && !promoting.IsZero() {
			r.toProgressing = append(r.toProgressing, progressing.Sub(at))
			r.steps = append(r.steps, promoting.Sub(progressing))
			r.promotions = append(r.promotions, end.Sub(promoting))
		}
		if canaryReady, stepped, rolled := tr.clusterTimes(a); !progressing.IsZero() && !canaryReady.IsZero() && !stepped.IsZero() &&
			!promoting.IsZero() && !rolled.IsZero() {
			r.split.add(progressing.Sub(at), canaryReady.Sub(progressing), stepped.Sub(canaryReady), promoting.Sub(stepped),
				rolled.Sub(promoting), end.Sub(rolled))
		}
	}
	_, r.runsFailed = tr.ended()
	r.rssReleasePeak = s.peak().RSSBytes
	p1, err := m.Stats()
	if err != nil {
		return err
	}
	r.releaseCPU = p1.CPU - p0.CPU
	apiAfter, err := r.apiserver.requests(ctx)
	if err != nil {
		return err
	}
	if _, err := waitQuiet(ctx, m, 5*time.Second, time.Minute); err != nil {
		return err
	}
	after, err := m.Scrape()
	if err != nil {
		return err
	}
	r.releaseRequests = delta(before, after)
	r.releaseFailures = failures(before, after)
	r.releaseThrottled = throttledBetween(before, after)
	r.releaseQueue = canaryQueue(before, after)
	r.releaseAPIServer = apiserverShare(apiBefore, apiAfter, r.releaseRequests.canaryTotal(), float64(len(as)), "rollout")
	r.eventsEmitted = after.Sum("sluice_events_emitted_total") - before.Sum("sluice_events_emitted_total")
	r.eventsWritten = after.Sum("sluice_events_written_total") - before.Sum("sluice_events_written_total")
	r.eventsRejected = after.Sum("sluice_events_rejected_total") - before.Sum("sluice_events_rejected_total")
	r.eventsRetried = after.Sum("sluice_events_retried_total") - before.Sum("sluice_events_retried_total")
	r.eventsStored, r.eventsByReason, err = storedEvents(ctx, k, namespaces(as), start)
	if err != nil {
		return err
	}
	return r.releaseErr
}

// storedEvents counts the occurrences of events about Canaries the apiserver holds since start
// (an event series counts its occurrences), in total and by reason.
func storedEvents(ctx context.Context, k client.Client, nss []string, start time.Time) (int, map[string]int, error) {
	total, byReason := 0, map[string]int{}
	for _, ns := range nss {
		list := &eventsv1.EventList{}
		if err := k.List(ctx, list, client.InNamespace(ns)); err != nil {
			return 0, nil, fmt.Errorf("listing events in %s: %w", ns, err)
		}
		for i := range list.Items {
			e := &list.Items[i]
			if e.Regarding.Kind != "Canary" || e.EventTime.Time.Before(start) {
				continue
			}
			n := 1
			if e.Series != nil && e.Series.Count > 1 {
				n = int(e.Series.Count)
			}
			total += n
			byReason[e.Reason] += n
		}
	}
	return total, byReason, nil
}
