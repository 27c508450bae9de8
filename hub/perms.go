package hub

import "github.com/nats-io/nats-server/v2/server"

// inboxPrefix is where user name's replies arrive: its own, so that no
// other user of the hub can subscribe to them.
func inboxPrefix(name string) string { return "_INBOX_" + name }

// permissions are what a user of role may publish and subscribe to. A box
// writes its own pending and result keys and reads the decisions made for
// it; a console reads everything and writes decisions. Neither can change
// or remove the buckets, and a box decides nothing.
func permissions(role, name string) *server.Permissions {
	kv := func(bucket, key string) string { return "$KV." + bucket + "." + key }
	api := func(op, stream string) string { return "$JS.API." + op + ".KV_" + stream }
	common := []string{"$JS.API.INFO", "$JS.FC.>",
		api("STREAM.INFO", BucketPending), api("STREAM.INFO", BucketDecisions), api("STREAM.INFO", BucketResults)}
	switch role {
	case RoleBox:
		return &server.Permissions{
			Publish: &server.SubjectPermission{Allow: append(common,
				kv(BucketPending, name+".>"), kv(BucketResults, name+".>"),
				// Watching its own decisions: the create request names
				// its filter, so a box cannot read another's.
				api("CONSUMER.CREATE", BucketDecisions)+".*."+kv(BucketDecisions, name+".>"),
				api("CONSUMER.DELETE", BucketDecisions)+".*",
				api("CONSUMER.CREATE", BucketPending)+".*."+kv(BucketPending, name+".>"),
				api("CONSUMER.DELETE", BucketPending)+".*",
				"$JS.API.DIRECT.GET.KV_"+BucketDecisions+"."+kv(BucketDecisions, name+".>"),
				"$JS.API.DIRECT.GET.KV_"+BucketPending+"."+kv(BucketPending, name+".>"),
				"$JS.API.DIRECT.GET.KV_"+BucketResults+"."+kv(BucketResults, name+".>"),
				"sluice.out."+name+".>",
			)},
			Subscribe: &server.SubjectPermission{Allow: []string{inboxPrefix(name) + ".>"}},
		}
	default:
		return &server.Permissions{
			Publish: &server.SubjectPermission{Allow: append(common,
				kv(BucketDecisions, "*.*"),
				// The client creates a watch's consumer on the legacy
				// endpoint (no name or filter in the subject) now and
				// then, after the hub restarted: refused, a console's
				// watch hangs. A console reads every key anyway.
				api("CONSUMER.CREATE", BucketPending), api("CONSUMER.CREATE", BucketDecisions), api("CONSUMER.CREATE", BucketResults),
				api("CONSUMER.CREATE", BucketPending)+".>", api("CONSUMER.DELETE", BucketPending)+".*",
				api("CONSUMER.CREATE", BucketDecisions)+".>", api("CONSUMER.DELETE", BucketDecisions)+".*",
				api("CONSUMER.CREATE", BucketResults)+".>", api("CONSUMER.DELETE", BucketResults)+".*",
				"$JS.API.DIRECT.GET.KV_"+BucketPending+".>", "$JS.API.DIRECT.GET.KV_"+BucketDecisions+".>",
				"$JS.API.DIRECT.GET.KV_"+BucketResults+".>",
			)},
			Subscribe: &server.SubjectPermission{Allow: []string{inboxPrefix(name) + ".>", "sluice.out.>"}},
		}
	}
}
