package hub

import "github.com/nats-io/nats-server/v2/server"

// inboxPrefix is where user name's replies arrive: its own, so that no
// other user of the hub can subscribe to them.
func inboxPrefix(name string) string { return "_INBOX_" + name }

// permissions are what a user of role may publish and subscribe to.
//
// A box writes its own pending and result keys, reads its own keys of
// each bucket and watches its own decisions; it may not ask for a
// stream's info (which can list every subject in it: every box's request
// ids), list keys, or watch anything but its own, and it decides nothing.
//
// A console reads everything, and decides only through the hub's decision
// service, on its own subject (DecideSubject): the service records the
// decision with the console's name from the subject. It may not write the
// decisions bucket itself. Its publish to the retired bucket's subjects
// (a console of an earlier version deciding) reaches only the service,
// which answers that it must be upgraded. Neither role can change or
// remove a bucket.
func permissions(role, name string) *server.Permissions {
	kv := func(bucket, key string) string { return "$KV." + bucket + "." + key }
	api := func(op, stream string) string { return "$JS.API." + op + ".KV_" + stream }
	direct := func(bucket, key string) string { return "$JS.API.DIRECT.GET.KV_" + bucket + "." + kv(bucket, key) }
	switch role {
	case RoleBox:
		return &server.Permissions{
			Publish: &server.SubjectPermission{Allow: []string{
				kv(BucketPending, name+".>"), kv(BucketResults, name+".>"),
				// Watching its own decisions: the create request names
				// its filter (the server checks the consumer's filter is
				// that one), so a box cannot read another's.
				api("CONSUMER.CREATE", BucketDecisions) + ".*." + kv(BucketDecisions, name+".>"),
				api("CONSUMER.DELETE", BucketDecisions) + ".*",
				api("CONSUMER.CREATE", BucketPending) + ".*." + kv(BucketPending, name+".>"),
				api("CONSUMER.DELETE", BucketPending) + ".*",
				direct(BucketDecisions, name+".>"), direct(BucketPending, name+".>"), direct(BucketResults, name+".>"),
				"$JS.FC.>", // the watch's flow control
				"sluice.out." + name + ".>",
			}},
			Subscribe: &server.SubjectPermission{Allow: []string{inboxPrefix(name) + ".>"}},
		}
	default:
		var pub []string
		for _, b := range []string{BucketPending, BucketDecisions, BucketResults} {
			pub = append(pub, api("STREAM.INFO", b),
				// The client creates a watch's consumer on the legacy
				// endpoint (no name or filter in the subject) now and
				// then, after the hub restarted: refused, a console's
				// watch hangs. A console reads every key anyway.
				api("CONSUMER.CREATE", b), api("CONSUMER.CREATE", b)+".>", api("CONSUMER.DELETE", b)+".*",
				"$JS.API.DIRECT.GET.KV_"+b+".>")
		}
		pub = append(pub, "$JS.API.INFO", "$JS.FC.>", DecideSubject(name),
			// An earlier version's console: it opens the retired bucket,
			// looks a decision up in it, and writes its decision there,
			// which the service refuses with a word to upgrade.
			api("STREAM.INFO", bucketRetired), "$JS.API.DIRECT.GET.KV_"+bucketRetired+".>", kv(bucketRetired, "*.*"))
		return &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: pub},
			Subscribe: &server.SubjectPermission{Allow: []string{inboxPrefix(name) + ".>", "sluice.out.>", DroppedSubject}},
		}
	}
}
