package managerproc

import "testing"

// TestFreePortsAreDistinct: the ports of one call never repeat (a manager given the same port for
// its metrics and its probes exits at once: "address already in use").
func TestFreePortsAreDistinct(t *testing.T) {
	for range 500 {
		ports, err := FreePorts(3)
		if err != nil {
			t.Fatal(err)
		}
		if len(ports) != 3 || ports[0] == ports[1] || ports[1] == ports[2] || ports[0] == ports[2] {
			t.Fatalf("FreePorts(3) = %v, want 3 distinct ports", ports)
		}
	}
}
