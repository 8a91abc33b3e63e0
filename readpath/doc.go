// Package readpath is the plumbing of metad's read path on one node: what
// connects the resolver's pure loop, the repair loop and the garbage
// collector to this node's Raft store and object store. api's handlers and
// node's assembly call into it; the decisions stay in resolver, repair and
// gc.
//
// What lives here:
//
//	store.go     Store[S]: the one adapter over raftstore for every reader of
//	             the replicated state. resolver, repair and gc each declare
//	             the part of the state they read as their own State
//	             interface; Store[resolver.State], Store[repair.State] and
//	             Store[gc.State] hand them the *fsm.Machine through it, from
//	             a linearizable Read, and Propose to the local Raft (repair
//	             and gc run only where they lead). NewStore refuses, at
//	             start, a State the machine does not satisfy.
//	objects.go   Objects: the object store checks, Verify for the resolver
//	             (--verify-objects) and Intact for repair (before a
//	             quarantine is lifted); both, and ConfirmFailure, read a
//	             record's byte range against its data checksum
//	             (objectstore.CheckRange), so a slice that is not the
//	             bytes its writer committed is CORRUPT even where the
//	             whole object still hashes to its identity.
//	resolver.go  Resolver: resolver.Resolver wired to this node. Its Pinner
//	             and Reporter propose through api's forwarding (Deps.Propose:
//	             a follower's pin is committed by the leader); its Repairer
//	             asks the local repair loop and, on a follower, the
//	             leader's through the Peer service (Deps.RepairOnLeader).
//	reports.go   ConfirmFailure: a reader's failure report is checked
//	             against the object store before anything changes (G10);
//	             api's ReportCandidateFailure commits only what it confirms.
//	leases.go    the shared pin leases.
//	cache.go     the resolve cache, a positive-only hint: the
//	             resolver pins a cached candidate and rechecks it
//	             linearizably before trusting it, so a stale entry costs a
//	             pin, never an answer (G1, G7). Nothing negative is stored.
//	metrics.go   metad_resolve_cache_total, metad_pins_held and
//	             metad_pins_oldest_age_seconds (the resolve outcome metrics
//	             stay with api's handler, which observes them).
//
// Shared pins and G9. With Config.SharePins, concurrent resolves of one
// object share one pin instead of writing one each to Raft: the node takes
// a pin of twice the resolve TTL under the holder SharedHolder and hands it
// to every resolve that can still finish its read inside it. G9 (GC
// deletes no object while a committed pin on it is unexpired) still covers
// every reader, because every reader's window — its send time plus the
// resolve TTL, on its own clock — ends before the shared pin's: a lease is offered only while at
// least the resolve TTL plus LeaseMargin of it remains, measured on this
// node's monotonic clock from before the pin was proposed (so the pin's
// committed expiry is later still). The margin is slack for clock-rate
// drift between this node and readers. G7 holds because the pin is
// committed, unexpired and never released — Release ignores a shared pin,
// and api's ReleasePin refuses one, reading linearizably, as api's Pin
// refuses the holder name — and the resolve rechecks after taking it
// unless the pin was already committed in the state it planned from. The
// table is bounded (maxLeases); when full of live leases, a new pin is
// simply not shared.
//
// Config (VerifyObjects, SharePins, LeaseMargin, the resolver's Config) is
// embedded in api.Config, so cmd/metad's flags set it there.
//
// Planted bugs (package faults) enter through one seam, plantedDeps
// (faults_on.go, built only with -tags metad_faults), once, where the
// resolver is built: stale-read hands the resolver a reader of local state
// without a read index, skip-recheck drops the recheck. The production
// build's seam (faults_off.go) changes nothing, so no read branches on a
// fault.
//
// Dependencies: readpath sits between api and the packages it serves —
// node → api → readpath → raftstore → fsm, readpath → {resolver, repair}
// — and node imports it too, to hand repair and gc their Store. It
// imports resolver, repair, raftstore, objectstore and fsm, never api,
// peer or node; what it needs of the node-to-node side (forwarding a
// proposal or a repair to the leader) it takes as functions
// (architecture_test.go).
package readpath
