// Command jepsen is metad's Jepsen-style fault harness (jepsen/README.md): it
// builds metad with the fault hooks (-tags metad_faults), runs 3 or 5 real
// server processes on loopback, drives concurrent recording clients through
// the public gRPC API only, injects faults from a seeded schedule, and
// checks the history against a model of GUARANTEES.md written here.
//
//	go run ./jepsen --nodes 3 --nemesis partition,kill,pause --time-limit 60s --seed 7
//	go run ./jepsen --matrix smoke        # every nemesis x workload cell
//
// The pieces, each in its own package:
//
//	cluster/   processes, and a proxy per directed link and protocol (raft,
//	           gRPC forwarding, gossip UDP+TCP) wired in with --dial-map, so
//	           partitions and slow links need no root; the object store
//	           (--store local, or s3: weed mini behind an S3 proxy)
//	nemesis/   the seeded schedule (pure) and the runner that injects it:
//	           kill -9, SIGSTOP, Jepsen's partition shapes, membership churn,
//	           clock skew, slow links, the object store stopped, objects
//	           that vanish and return, bytes that rot in place (a byte of
//	           a committed range flipped), an amnesiac voter (wiped while it
//	           holds a committed entry another voter lacks), a long
//	           partition under the default removal policy
//	workload/  recording clients: a writer per stream (every append and
//	           record with its data checksum; keys re-uploaded as new
//	           versions), readers resolving, reading bytes under the
//	           target's identity and checking them against its data
//	           checksum, and watchers following streams with Watch in
//	           resumed sessions; stream-set writers committing one object
//	           with appends to 2–50 streams (CommitObject)
//	history/   the record of operations and faults, JSON Lines
//	model/     the model and every checker: porcupine (G1) per stream with
//	           indeterminate operations, G2 durability with a final
//	           read-back, G3 monotonicity, G5/G6 outcome shapes, G7 newest
//	           admissible pinned target, G8 bytes (payloads and the data
//	           checksum their writer committed), G9 pins vs GC, G10
//	           false reports and intact offsets readable, G12 quarantine
//	           that heals, G14 watch sessions, G16 a stream-set
//	           object's appends in all of its streams or in none, the
//	           Raft configuration
//	           around membership faults
//	report/    history.html, latency.svg, summary.json/txt per run
//
// jepsen never imports metad's server packages (the architecture test keeps
// it so): a model that shared code with the server could share its bugs.
// README.md explains every nemesis and checker and keeps the track record
// of bugs the harness found.
package main
