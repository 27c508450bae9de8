package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// RootsFlag collects repeated --root flags.
type RootsFlag []string

// HostsFlag collects repeated --host flags.
type HostsFlag []string

func (r *RootsFlag) String() string { return strings.Join(*r, ",") }

func (r *RootsFlag) Set(v string) error {
	abs, err := filepath.Abs(v)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", v)
	}
	*r = append(*r, abs)
	return nil
}

func (h *HostsFlag) String() string { return strings.Join(*h, ",") }

func (h *HostsFlag) Set(v string) error {
	*h = append(*h, v)
	return nil
}
