package sandbox

import (
	"os"
	"reflect"
	"testing"

	"github.com/sluice-dev/sluice/exec/sandbox/internal/seccompasm"
)

// TestSeccompGenerated: the programs compiled into sluice are the ones
// the library assembles today; after a change to the filter,
// 'go generate ./exec/sandbox' brings them up to date.
func TestSeccompGenerated(t *testing.T) {
	got, err := programs()
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		want, err := seccompasm.Assemble(i)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got[i], want) {
			t.Errorf("generated program %d differs from the assembled one: run 'go generate ./exec/sandbox'", i)
		}
	}
	src, err := seccompasm.Render("amd64")
	if err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile("seccomp_gen_linux_amd64.go")
	if err != nil {
		t.Fatal(err)
	}
	if string(file) != src {
		t.Error("seccomp_gen_linux_amd64.go differs from what go generate writes: run 'go generate ./exec/sandbox'")
	}
}
