package main

import (
	"strings"
	"testing"
)

// Without sluice-hub beside it or on PATH, --hub says how to install it.
func TestConsoleHubWithoutSluiceHub(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := startHubLink("nats://127.0.0.1:1", "")
	if err == nil || !strings.Contains(err.Error(), "sluice-hub") || !strings.Contains(err.Error(), "make build") {
		t.Fatalf("err %v", err)
	}
}
