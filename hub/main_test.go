package hub

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runMain(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// The command line a person uses on the hub machine: issuing
// credentials, listing and removing users, refusing bad names and
// duplicate ones with what to do.
func TestMainUsers(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	code, out, errs := runMain("hub", "add-box", "laptop", "--url", "hub.example:4222", "--store", store)
	if code != 0 || !strings.Contains(out, "box laptop added") || !strings.Contains(out, "sluice serve --hub nats://hub.example:4222") {
		t.Fatalf("add-box: %d\n%s%s", code, out, errs)
	}
	c, err := ReadCreds(filepath.Join(store, "creds", "laptop.creds"))
	if err != nil || c.Hub != "nats://hub.example:4222" || c.Role != RoleBox {
		t.Fatalf("credentials written: %+v, %v", c, err)
	}
	if code, _, errs := runMain("add-box", "laptop", "--store", store); code != 1 || !strings.Contains(errs, "already a box") {
		t.Fatalf("a second box of the same name: %d %s", code, errs)
	}
	if code, _, errs := runMain("add-console", "Bad_Name", "--store", store); code != 1 || !strings.Contains(errs, "lower-case") {
		t.Fatalf("a bad name: %d %s", code, errs)
	}
	if code, _, _ := runMain("add-console", "me", "--store", store); code != 0 {
		t.Fatal("add-console failed")
	}
	code, out, _ = runMain("users", "--store", store)
	if code != 0 || !strings.Contains(out, "laptop") || !strings.Contains(out, "me") || !strings.Contains(out, "console") {
		t.Fatalf("users: %d\n%s", code, out)
	}
	if code, _, _ := runMain("remove", "laptop", "--store", store); code != 0 {
		t.Fatal("remove failed")
	}
	if _, err := os.Stat(filepath.Join(store, "creds", "laptop.creds")); !os.IsNotExist(err) {
		t.Error("the removed box's credentials are still in the store")
	}
	if _, out, _ := runMain("users", "--store", store); strings.Contains(out, "laptop") {
		t.Errorf("removed box still listed:\n%s", out)
	}
	if code, _, errs := runMain("remove", "laptop", "--store", store); code != 1 || !strings.Contains(errs, "not a box or console") {
		t.Fatalf("removing twice: %d %s", code, errs)
	}
}

// Usage errors exit 2 and say what is wrong; --help exits 0.
func TestMainUsage(t *testing.T) {
	if code, out, _ := runMain("--help"); code != 0 || !strings.Contains(out, "sluice hub serve") {
		t.Fatalf("--help: %d", code)
	}
	if code, _, errs := runMain("frobnicate"); code != 2 || !strings.Contains(errs, "unknown command") {
		t.Fatalf("unknown command: %d %s", code, errs)
	}
	if code, _, errs := runMain("approve", "no-slash"); code != 2 || !strings.Contains(errs, "not BOX/ID") {
		t.Fatalf("approve without BOX/ID: %d %s", code, errs)
	}
	if code, out, _ := runMain("add-box", "--help"); code != 0 || !strings.Contains(out, "usage: sluice hub add-box") {
		t.Fatalf("add-box --help: %d %s", code, out)
	}
}

// Credentials another user could read are refused, as ssh refuses a
// readable key; a store others can read too.
func TestCredsAndStoreModes(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	st, err := Open(store)
	if err != nil {
		t.Fatal(err)
	}
	_, path, err := st.Add("b1", RoleBox, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadCreds(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("readable credentials: %v", err)
	}
	if err := os.Chmod(store, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(store); err == nil || !strings.Contains(err.Error(), "chmod 700") {
		t.Fatalf("a store others can read: %v", err)
	}
}
