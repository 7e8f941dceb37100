// Package view derives what the plugin's commands print and the dashboard shows from a Canary or
// DataPlane: the phase as a person reads it, the maximum weight, the next step, the gate that
// holds a run and the requests the controller has not handled yet. The commands and the
// dashboard share it, so a terminal and a browser say the same thing.
package view
