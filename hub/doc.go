// Package hub links many machines' sluice to one place to decide from,
// over NATS JetStream.
//
// A hub is a NATS server with JetStream (embedded by 'sluice hub serve',
// or an existing cluster) and the hub's Service. Three key-value buckets
// carry the fleet's state: sluice-pending holds each box's requests that
// wait for a person (key BOX.ID), sluice-decided the decisions (the first
// one for a key wins: a create, not a put), and sluice-results what each
// box did with them. Each box and each console has an NKey the hub issued;
// its permissions let a box write only its own pending and result keys,
// read only its own keys of each bucket (never a stream's info, which
// lists every box's keys) and decide nothing. A console reads everything
// but writes no decision itself: it asks the Service on its own subject,
// and the Service records the decision by the console's name, so that no
// console decides in another's. The Service also bounds the pending
// bucket, by age and per box.
//
// The bridge of a box (Box) watches the box's own spool and audit log: a
// request its engine left for a person is published; a decision for it is
// applied through the box's own sluice ('sluice approve' or 'sluice
// deny'), so that the claim, the confinement and the audit chain are the
// box's, exactly as if a person had decided at the box. A decision names
// the digest of the request it was made on; a request that changed since
// is not run.
//
// The hub's code lives in its own program (cmd/sluice-hub), which
// 'sluice hub' runs: the NATS packages' start-up would otherwise be paid by
// every agent's hook.
package hub
