package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// apiserverProfile takes a CPU profile of the kube-apiserver (its /debug/pprof, on by default)
// for length, after waiting delay, and writes it to dir/name.prof (creating dir), so where the
// shared apiserver spends a phase can be read with `go tool pprof -top bin/kube-apiserver FILE`.
// It runs in the background; done receives the file's path or the error (nil when dir is "").
func apiserverProfile(ctx context.Context, a *apiserverScraper, dir, name string, delay, length time.Duration) <-chan string {
	done := make(chan string, 1)
	if dir == "" {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		body, err := a.rest.Get().AbsPath("/debug/pprof/profile").Param("seconds", fmt.Sprint(int(length.Seconds()))).
			Timeout(length + time.Minute).DoRaw(ctx)
		path := filepath.Join(dir, name+".prof")
		if err == nil {
			err = os.MkdirAll(dir, 0o755)
		}
		if err == nil {
			err = os.WriteFile(path, body, 0o644)
		}
		if err != nil {
			done <- fmt.Sprintf("%s: %v", name, err)
			return
		}
		done <- path
	}()
	return done
}
